"""CaMeL-style assistant program (like CaMeL-36): find the vacation-plan file by asking an LLM
about every file, then describe June 13 and write a packing list (two independent LLM calls)."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, create_file, list_files, llm, read_file

PARAMS = {}


@poppy
def main():
    plan = ""
    for name in list_files():
        content = read_file(name)
        if llm(f"camel: yesno is this a vacation plan? {name}: {content}") == "yes":
            plan = content
    june13 = llm(f"camel: what happens on June 13 according to: {plan}")
    packing = llm(f"camel: write a packing list for: {plan}")
    create_file("packing-list.txt", packing)
    print(f"June 13: {june13}")
    return june13


def run():
    return main()


async def run_manual():
    names = list_files()
    contents = [read_file(n) for n in names]
    replies = await asyncio.gather(
        *(allm(f"camel: yesno is this a vacation plan? {n}: {c}") for n, c in zip(names, contents)))
    plan = ""
    for c, r in zip(contents, replies):
        if r == "yes":
            plan = c
    june13, packing = await asyncio.gather(
        allm(f"camel: what happens on June 13 according to: {plan}"),
        allm(f"camel: write a packing list for: {plan}"))
    create_file("packing-list.txt", packing)
    print(f"June 13: {june13}")
    return june13
