# and/or and conditional expressions: the right operand's calls happen only when CPython makes them.
from poppy_jit import poppy
from _ext import llm, log, read


@poppy
def pick(items):
    out = []
    for item in items:
        label = read(item) or llm(f"label for {item}")
        short = item if len(item) < 5 else llm(f"shorten {item}")
        flag = item.startswith("g") and llm(f"yesno: {item}?") == "yes"
        if flag or read("mode") == "final":
            log(f"flagged {item}")
        elif item == "limit" and not flag:
            log("limit seen")
        else:
            out.append((label, short))
        if 2 < len(item) < 6:
            log(f"medium {item}")
    return out


print(pick(["greeting", "limit", "mode", "grape", "kiwi", "gigantic", "x"]))
