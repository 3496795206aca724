# Calls between @poppy functions (inlined by the runtime), returning values.
from poppy_jit import poppy
from _ext import llm


@poppy
def summarize(topic):
    facts = llm(f"list: facts about {topic}", n=2).split("\n")
    parts = []
    for fact in facts:
        parts.append(llm(f"explain {fact}"))
    return " | ".join(parts)


@poppy
def report(topics):
    for topic in topics:
        summary = summarize(topic)
        print(f"{topic}: {summary}")
    return len(topics)


print("topics:", report(["tides", "volcanoes", "lichens"]))
