# Mutation and ordering hazards: objects mutated by an unannotated helper between two LLM calls,
# prompts formatted from a list that is appended to afterwards, aliases mutated in loops, a
# sequential call seeing a mutated dict, copies vs aliases. (Mutating an argument of an
# @unordered call after the call: p118, a known bug.)
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, note, read, set_latency_scale, write

set_latency_scale(0.1)


def push(lst, x):
    lst.append(x)


def clear(d):
    d.clear()


@poppy
def helper_between(topic):
    bag = [topic]
    first = llm(f"first {bag}")
    push(bag, first.split()[0])
    second = llm(f"second {bag}")
    return bag, second.split()[-1]


@poppy
def nested_mutation(rows):
    table = [[], []]
    for i, r in enumerate(rows):
        table[i % 2].append(lookup(r))
        if i == 1:
            note(f"table now {table}")
    return table


@poppy
def list_alias_in_loop(n):
    acc = []
    alias = acc
    for i in range(n):
        reply = llm(f"count: alias {i} {len(acc)}")
        alias.append(int(reply))
    return acc, sum(alias)


@poppy
def sequential_sees_mutation(items):
    state = {"done": []}
    for it in items:
        state["done"].append(it)
        log(f"state {state}")
        reply = llm(f"process {it} given {state['done']}")
        state["last"] = reply[:6]
    return state


@poppy
def readonly_then_write(keys):
    out = []
    for k in keys:
        before = read(k)
        write(k, f"{before}+")
        out.append((before, read(k)))
    return out


@poppy
def copy_vs_alias(base):
    copy = list(base)
    alias = base
    alias.append(llm("extra item").split()[0])
    copy.append("copy-only")
    return len(base), len(copy), base is alias


@poppy
def set_ops(a, b):
    sa = set()
    for x in a:
        sa.add(lookup(x))
    sb = set()
    for x in b:
        sb.add(lookup(x))
    return sorted(sa & sb), sorted(sa | sb), sorted(sa - sb), len(sa ^ sb)


@poppy
def tuple_of_lists(x):
    pair = ([x], [])
    pair[1].append(llm(f"a {pair[0]}"))
    pair[0].append(llm(f"b {pair[1][0][:8]}"))
    return pair


base = ["p"]
print(helper_between("sea"))
print(nested_mutation(["r1", "r2", "r3"]))
print(list_alias_in_loop(4))
print(sequential_sees_mutation(["i1", "i2"]))
print(readonly_then_write(["greeting", "mode", "greeting"]))
print(copy_vs_alias(base), base)
print(set_ops(["a", "b", "c"], ["b", "c", "d"]))
print(tuple_of_lists("t"))
