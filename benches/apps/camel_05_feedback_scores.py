"""CaMeL-style assistant program (one LLM call, like CaMeL-28): extract the feedback scores from a
document. Nothing to parallelise: poppy can only add overhead."""
from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, read_file

PARAMS = {"name": "team-feedback.txt"}


@poppy
def main(name):
    scores = llm(f"camel: extract the scores as name=score pairs from: {read_file(name)}")
    print(scores)
    return scores


def run(name):
    return main(name)


async def run_manual(name):
    scores = await allm(f"camel: extract the scores as name=score pairs from: {read_file(name)}")
    print(scores)
    return scores
