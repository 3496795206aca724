# An attribute error on a value derived from LLM replies (a dict lookup that returns None, then
# `.split`), inside a helper called in a loop: same output before it, same AttributeError.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, read, set_latency_scale

set_latency_scale(0.1)


@poppy
def words_of(key):
    text = read(key)
    return text.split("e")


@poppy
def all_words(keys):
    out = []
    for k in keys:
        out.append(words_of(k))
        log(f"done {k}")
        llm(f"about {k}")
    return out


print(all_words(["greeting", "mode"]))
print(all_words(["greeting", "missing", "mode"]))
print("not reached")
