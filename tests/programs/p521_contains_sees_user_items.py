# `x in lst` on a list the run created is ordered against that list alone while its items are
# atoms (comparing atoms runs no user code). Whether they are is decided when the test is about
# to run, after the earlier operations on the list: here an earlier append, still waiting for its
# value, puts in an object whose __eq__ prints. The test must then keep its place in program
# order, after the slow sequential call before it, as in CPython.
import asyncio

from poppy_jit import poppy, sequential
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


class Loud:
    def __init__(self, tag):
        self.tag = tag

    def __eq__(self, other):
        print("eq", self.tag, other)
        return False

    __hash__ = None


@sequential
async def slow_print(msg):
    await asyncio.sleep(0.03)
    print(msg)


@poppy
def contains_after_a_user_item():
    xs = [1, 2]
    xs.append(Loud(llm("a tag")[:4]))   # pending when the test below is reached
    slow_print("before the test")
    return 3 in xs


@poppy
def not_in_after_a_user_item():
    xs = ["a"]
    xs.insert(0, Loud(llm("another tag")[:4]))
    slow_print("before the other test")
    return "b" not in xs


@poppy
def contains_of_atoms():
    xs = [1, "two", 3.0, None, True]
    slow_print("atoms only")
    return 3 in xs, "two" in xs, 4 not in xs, b"x" in xs


print(contains_after_a_user_item())
print(not_in_after_a_user_item())
print(contains_of_atoms())
