# Loops as orchestration code writes them: break, continue, early return, while, for/else,
# while/else, nested loops with labelled-by-flag exits, loops over dict items and ranges.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def first_yes(questions):
    for q in questions:
        if llm(f"yesno: {q}") == "yes":
            return q
    return "none"


@poppy
def collect_until_stop(topics, stop):
    out = []
    for t in topics:
        if t == stop:
            log(f"stop at {t}")
            break
        if t.startswith("_"):
            continue
        out.append(llm(f"summary of {t}"))
    else:
        log("no stop word")
    return out


@poppy
def poll_until_ready(key, limit):
    tries = 0
    status = lookup(key)
    while not status.endswith("0>") and tries < limit:
        tries += 1
        status = lookup(f"{key}-{tries}")
    else:
        log(f"polled {tries} times")
    return status, tries


@poppy
def grid_search(rows, cols):
    best = None
    for r in rows:
        for c in cols:
            score = int(llm(f"count: cell {r}{c}"))
            if best is None or score > best[0]:
                best = (score, r, c)
    return best


@poppy
def find_pair(rows, cols, target):
    found = None
    for r in rows:
        for c in cols:
            if int(llm(f"count: pair {r}-{c}")) == target:
                found = (r, c)
                break
        if found is not None:
            break
    return found


@poppy
def countdown(n):
    steps = []
    while n > 0:
        n -= 1
        if n % 3 == 0:
            continue
        steps.append(llm(f"step {n}"))
    return steps


@poppy
def scan_dict(config):
    seen = 0
    for key, value in config.items():
        seen += 1
        if value is None:
            log(f"missing {key}")
            continue
        write(key, value)
    return seen, read("limit")


@poppy
def while_true_break(seed):
    i = 0
    while True:
        i += 1
        reply = llm(f"yesno: continue {seed} {i}?")
        if reply == "no" or i >= 5:
            break
    return i


@poppy
def nested_continue(batches):
    totals = []
    for batch in batches:
        total = 0
        for item in batch:
            if item < 0:
                continue
            total += int(llm(f"count: weight of {item}"))
        totals.append(total)
    return totals


@poppy
def range_steps(n):
    out = ""
    for i in range(0, n, 2):
        out += lookup(f"k{i}")
    for i in range(n - 1, 0, -3):
        out += f"|{i}"
    return out


@poppy
def search_else(items, needle):
    for i, item in enumerate(items):
        if llm(f"match {item}") == llm(f"match {needle}"):
            result = i
            break
    else:
        result = -1
    return result


print(first_yes(["is it raining", "is it sunny", "is it late", "is it early"]))
print(first_yes([]))
print(collect_until_stop(["a", "_b", "c", "stop", "d"], "stop"))
print(collect_until_stop(["a", "b"], "stop"))
print(poll_until_ready("job", 4))
print(grid_search("ab", "xyz"))
print(find_pair("abc", "xyz", 5))
print(countdown(7))
print(scan_dict({"mode": "final", "limit": None, "owner": "ana"}))
print(while_true_break("s"))
print(nested_continue([[1, -2, 3], [], [-1], [4, 5]]))
print(range_steps(7))
print(search_else(["x", "y", "z"], "y"))
