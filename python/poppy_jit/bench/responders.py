"""Scripted answers of the simulated service for the benchmark applications.

`respond(messages, model, params)` is a `SimServer` responder. Prompts start with a tag naming
the application and the step (`"tot.propose: ..."`); the models "sim-wiki", "sim-tts" and
"sim-embed" are the tools. Every answer is a deterministic function of the request, and its length
(hence its simulated latency) is realistic for the step: one-number scores are short, paragraphs
long.
"""
from __future__ import annotations

import hashlib

from poppy_jit.sim import LatencyModel, city_excursions

__all__ = ["respond", "LATENCY"]

# Sizing: a short answer takes ~0.25 s, a 60-word paragraph ~0.5 s, at time_scale 1.
LATENCY = LatencyModel(ttft=0.22, per_token=0.005, jitter=0.2, seed=11)

_WORDS = ("river", "stone", "lantern", "orbit", "meadow", "signal", "copper", "harbor",
          "violet", "summit", "thread", "ember", "glacier", "canvas", "quartz", "willow",
          "beacon", "delta", "forge", "prism", "tundra", "anchor", "basalt", "cinder")


def _h(*parts: object) -> bytes:
    return hashlib.sha256(repr(parts).encode()).digest()


def _words(n: int, *seed: object) -> str:
    out = []
    i = 0
    while len(out) < n:
        h = _h(*seed, i)
        out.extend(_WORDS[b % len(_WORDS)] for b in h[: n - len(out)])
        i += 1
    return " ".join(out)


def _last_user(messages: list) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return str(m.get("content", ""))
    return ""


def _fields(body: str) -> list:
    return [f.strip() for f in body.split("|")]


# ---------------------------------------------------------------------------------------------
# Per-application answers: (body of the prompt after "tag:") -> text

def _tot_propose(body: str) -> str:
    # Successor states: the state plus one of a few digits, so different states often propose
    # the same successor (get_values' cache then skips it, as in PopPy Fig. 1).
    task, state = _fields(body)
    h = _h("propose", task, state)
    out = []
    for i in range(5):
        nxt = f"{state}{h[i] % 7}"
        if nxt not in out:
            out.append(nxt)
    return "\n".join(out)


def _tot_value(body: str) -> str:
    task, state, sample = _fields(body)
    return str(_h("value", task, state, sample)[0] % 10 + 1)


def _sot_skeleton(body: str) -> str:
    n = 4 + _h("sot", body)[0] % 3
    return "\n".join(f"{i + 1}. {_words(3, 'sk', body, i)}" for i in range(n))


def _sot_expand(body: str) -> str:
    return _words(40 + _h("exp", body)[0] % 30, "expand", body) + "."


def _bird_factors(body: str) -> str:
    n = 4
    return "\n".join(f"factor {i + 1}: {_words(3, 'bf', body, i)}" for i in range(n))


def _bird_describe(body: str) -> str:
    return _words(25 + _h("bd", body)[0] % 15, "bird-describe", body)


def _bird_assess(body: str) -> str:
    return f"{(_h('ba', body)[0] % 90 + 5) / 100:.2f}"


def _bird_decide(body: str) -> str:
    return ("outcome A" if _h("bdec", body)[0] % 2 else "outcome B") + ": " + \
        _words(12, "bird-decide", body)


_DAE_ANSWERS = ("Paris", "Lyon", "Marseille")


def _dae_answer(body: str) -> str:
    # Agents drift towards the majority in later rounds, so the entropy shrinks.
    h = _h("dae", body)
    rnd = int(body.rsplit("round ", 1)[1].split()[0]) if "round " in body else 0
    idx = 0 if h[0] % (rnd + 2) else h[1] % len(_DAE_ANSWERS)
    return f"{_DAE_ANSWERS[idx]} -- {_words(10 + h[2] % 10, 'dae-why', body)}"


def _traq_answer(body: str) -> str:
    h = _h("traq", body)
    return ("yes" if h[0] % 3 else "no") + ", " + _words(4, "traq", body[:40], h[1] % 2)


def _fact_claims(body: str) -> str:
    return "\n".join(f"claim {i + 1}: {_words(6, 'claim', body, i)}" for i in range(4))


def _fact_step(body: str) -> str:
    # body: "claim | evidence=N". A claim needs 0-2 searches before the model decides.
    claim, evidence = _fields(body)
    n = int(evidence.split("=")[1])
    h = _h("fact", claim)
    if n < h[0] % 3:
        return f"SEARCH: {_words(3, 'q', claim, n)}"
    return "VERDICT: " + ("supported" if h[1] % 2 else "refuted")


def _tts_section(body: str) -> str:
    return _words(30 + _h("tts", body)[0] % 20, "tts-section", body) + "."


def _camel(body: str) -> str:
    if body.startswith("yesno "):
        return "yes" if "vacation" in body.lower() and "ideas" not in body.lower() else "no"
    if body.startswith("category "):
        return ("work", "personal", "billing", "newsletter")[_h("cat", body)[0] % 4]
    if body.startswith("extract email "):
        return "alice@example.com"
    return _words(15 + _h("camel", body)[0] % 25, "camel", body)


_TAGS = {
    "tot.propose": _tot_propose, "tot.value": _tot_value,
    "sot.skeleton": _sot_skeleton, "sot.expand": _sot_expand,
    "bird.factors": _bird_factors, "bird.describe": _bird_describe,
    "bird.assess": _bird_assess, "bird.decide": _bird_decide,
    "dae.answer": _dae_answer, "traq.answer": _traq_answer,
    "fact.claims": _fact_claims, "fact.step": _fact_step,
    "tts.section": _tts_section, "camel": _camel,
}


def _wiki(query: str) -> str:
    return f"[{query}] " + _words(35 + _h("wiki", query)[0] % 20, "wiki", query)


def _tts(text: str) -> str:
    # A "clip id" standing for the audio; the latency grows with the text (synthesis time), so
    # the reply is padded to one token per four words of input.
    pad = " ".join(["~"] * (len(text.split()) // 4))
    return f"clip-{_h('tts', text).hex()[:10]} {pad}".strip()


def _embed(text: str) -> str:
    h = _h("embed", text.lower())
    return ",".join(f"{(b - 128) / 128:.4f}" for b in h[:8])


def respond(messages: list, model: str, params: dict) -> str:
    prompt = _last_user(messages)
    if model == "sim-wiki":
        return _wiki(prompt)
    if model == "sim-tts":
        return _tts(prompt)
    if model == "sim-embed":
        return _embed(prompt)
    tag, sep, body = prompt.partition(":")
    fn = _TAGS.get(tag.strip()) if sep else None
    if fn is not None:
        return fn(body.strip())
    return city_excursions(messages, model, params)
