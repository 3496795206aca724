"""CaMeL-style assistant program: two independent LLM questions about one file."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, read_file

PARAMS = {"name": "meeting-notes-may.txt"}


@poppy
def main(name):
    notes = read_file(name)
    decision = llm(f"camel: what was decided in: {notes}")
    owners = llm(f"camel: who owns what in: {notes}")
    print(f"decision: {decision}")
    print(f"owners: {owners}")
    return decision


def run(name):
    return main(name)


async def run_manual(name):
    notes = read_file(name)
    decision, owners = await asyncio.gather(allm(f"camel: what was decided in: {notes}"),
                                            allm(f"camel: who owns what in: {notes}"))
    print(f"decision: {decision}")
    print(f"owners: {owners}")
    return decision
