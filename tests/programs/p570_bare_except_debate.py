# Bare `except:` in the shapes of a public multi-agent debate script: a loop over questions
# whose answers are aggregated by a helper that raises on an empty list (`try: x =
# most_frequent(xs) ... except: continue`), and a parser helper that tries `float(part)` on each
# word of a reply from the end (`try: answer = float(part); return answer except: continue`,
# inside a `for` loop). Also `except BaseException as e`, a bare `except:` after typed handlers,
# a bare handler that sees the exception through sys.exc_info(), and one around an external
# failing (async llm) with the loop going on: every request of the loop is in flight together.
import sys

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def most_frequent(items):
    counter = 0
    num = items[0]
    for i in items:
        freq = items.count(i)
        if freq > counter:
            counter = freq
            num = i
    return num


def parse_answer(sentence):
    parts = sentence.split(" ")
    for part in parts[::-1]:
        try:
            answer = float(part)
            return answer
        except:
            continue


@poppy
def debate(questions, agents):
    accuracies = []
    for q in questions:
        replies = [llm(f"count: agent {a} on {q}") for a in range(agents)]
        answers = [parse_answer(f"the answer is {r}") for r in replies if int(r) % 3 != 0]
        try:
            pred = most_frequent(answers)
        except:
            log(f"no answer for {q}")
            continue
        accuracies.append((q, pred))
    return accuracies


@poppy
def parse_all(sentences):
    out = []
    for s in sentences:
        out.append(parse_answer(s))
    return out


@poppy
def guarded(prompts):
    got = []
    for p in prompts:
        try:
            reply = llm(p) + p[12]
        except ValueError as e:
            got.append(("value", str(e)))
        except:
            got.append(("other", sys.exc_info()[0].__name__))
        else:
            got.append(("ok", reply))
    return got


@poppy
def base(prompts):
    got = []
    for p in prompts:
        try:
            got.append(int(llm(p)))
        except BaseException as e:
            got.append(type(e).__name__)
            log(f"caught {type(e).__name__}: {e}")
    try:
        got.append(got[100])
    except BaseException:
        got.append(sys.exc_info()[1].args)
    return got


print(debate([f"q{i}" for i in range(12)], 2))
print(parse_all(["it is 42", "nothing here", "3.5 or 7", "", "x 1e3 y"]))
print(guarded(["hello", "fail: nope", "count: c is long enough", "fail: again"]))
print(base(["count: 1", "fail: x", "hello", "count: 2"]))
