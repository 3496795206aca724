"""CaMeL-style assistant program: classify every e-mail with an LLM and count the categories."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, search_emails

PARAMS = {}


@poppy
def main():
    labels = tuple()
    for email in search_emails("@"):
        labels += (llm(f"camel: category of {email[2]}: {email[3]}"),)
    summary = ""
    for label in sorted(set(labels)):
        summary = summary + f"{label}={labels.count(label)} "
    print(summary)
    return labels


def run():
    return main()


async def run_manual():
    emails = search_emails("@")
    labels = tuple(await asyncio.gather(
        *(allm(f"camel: category of {e[2]}: {e[3]}") for e in emails)))
    summary = "".join(f"{label}={labels.count(label)} " for label in sorted(set(labels)))
    print(summary)
    return labels
