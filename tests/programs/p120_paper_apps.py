# Shapes of the PopPy evaluation apps (compact versions): skeleton-of-thought (outline, then all
# points expanded in parallel), a multi-agent debate with an entropy-like disagreement score,
# query decomposition for a SQL agent, text-to-speech chunks, and a CaMeL-style email triage.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, lookup, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def skeleton(question, points):
    outline = llm(f"list: outline for {question}", n=points).split("\n")
    expanded = []
    for i, p in enumerate(outline):
        expanded.append(f"{i + 1}. {llm(f'expand {p} of {question}')}")
    return "\n".join(expanded)


@poppy
def debate(question, agents, rounds):
    answers = {}
    for a in agents:
        answers[a] = llm(f"count: {a} answers {question}")
    for r in range(rounds):
        new = {}
        for a in agents:
            others = ""
            for b in agents:
                if b != a:
                    others += answers[b] + ","
            new[a] = llm(f"count: {a} revises given {others} round {r}")
        answers = new
    distinct = len(set(answers.values()))
    return distinct, sorted(answers.items())


@poppy
def decompose(question):
    parts = llm(f"list: sub-questions of {question}", n=3).split("\n")
    sql = []
    for p in parts:
        table = lookup(f"schema/{p}")
        sql.append(f"SELECT * FROM {table.strip('<>').split(':')[0]} -- {p}")
    return sql


@poppy
def tts_chunks(text, size):
    words = text.split()
    audio = []
    i = 0
    while i < len(words):
        chunk = " ".join(words[i:i + size])
        audio.append(lookup(f"tts/{chunk}"))
        i += size
    log(f"{len(audio)} chunks")
    return audio


@poppy
def triage(emails):
    urgent, later = [], []
    for sender, subject in emails:
        verdict = llm(f"yesno: is '{subject}' from {sender} urgent")
        if verdict == "yes":
            urgent.append(subject)
            write(f"flag/{subject}", True)
        else:
            later.append(subject)
    return urgent, later, read("mode")


@poppy
def digest(emails):
    urgent, later, mode = triage(emails)
    summary = llm(f"summary of {len(urgent)} urgent and {len(later)} other in {mode}")
    print(f"{'URGENT':<8}{len(urgent):>3}")
    print(f"{'later':<8}{len(later):>3}")
    return summary


@poppy
def factcheck_claims(text):
    claims = llm(f"list: claims in {text}", n=3).split("\n")
    verdicts = []
    for c in claims:
        ev = lookup(f"wiki/{c}")
        verdicts.append((c, llm(f"yesno: {ev} supports {c}")))
    supported = 0
    for _, v in verdicts:
        if v == "yes":
            supported += 1
    return supported, len(verdicts)


@poppy
def city_excursions(n):
    cities = llm(f"list: {n} cities", n=n).split("\n")
    plan = {}
    for c in cities:
        print(c)
        plan[c] = llm(f"list: excursions in {c}", n=2).split("\n")
        print(plan[c])
    return len(plan)


print(skeleton("how to learn rust", 4))
print(debate("7*6", ["a1", "a2", "a3"], 2))
print(decompose("top customers by region"))
print(tts_chunks("one two three four five six seven", 3))
print(digest([("boss", "deadline"), ("shop", "sale"), ("it", "outage")]))
print(factcheck_claims("the moon is made of cheese"))
print(city_excursions(3))
