"""The external functions the benchmark applications call, annotated for poppy_jit.

Slow externals go to the simulated LLM service (`OPENAI_BASE_URL`, a `SimServer` running
`poppy_jit.bench.responders.respond`) through the official SDK:

* `llm(prompt)`        — a chat completion (`poppy_jit.ai.llm`), `@unordered`;
* `embed(text)`        — an embedding vector: `poppy_jit.ai.embed` when the package has it,
                         otherwise a chat call to the model "sim-embed" that answers with numbers;
* `wiki(query)`        — a search tool (model "sim-wiki"), `@unordered`;
* `synthesize(text)`   — text to speech (model "sim-tts"), `@unordered`; `play(audio)` is
                         `@sequential` (the speaker plays clips in program order).

The CaMeL-style programs use an in-process fake workspace (files, e-mails, calendar): reads are
`@readonly`, writes (`create_file`, `send_email`, `create_event`) `@sequential`. They are fast,
so a program that calls only them measures the runtime's overhead.

With POPPY_BENCH_ALL_SEQUENTIAL=1 every external here is annotated `@sequential` instead (the
overhead configuration of PopPy §8.3). The coroutine functions `allm`, `aembed`, `awiki` and
`asynthesize` are the same calls for the hand-written asyncio ("manual") versions.

Every call is counted (`counts()`), whichever way it was made.
"""
from __future__ import annotations

import inspect
import os

from poppy_jit import ai, readonly, sequential, unordered

ALL_SEQUENTIAL = os.environ.get("POPPY_BENCH_ALL_SEQUENTIAL", "") == "1"
# Prefer the package's embedding call when it exists (an `async def` under its annotation).
HAVE_AI_EMBED = inspect.iscoroutinefunction(getattr(getattr(ai, "embed", None), "__wrapped__", None))

_counts: dict = {}


def _count(name: str) -> None:
    _counts[name] = _counts.get(name, 0) + 1


def counts() -> dict:
    """External calls made since the last `reset()`, by name."""
    return dict(_counts)


def _annotate(kind: str):
    """The decorator for class `kind`, or @sequential in the all-sequential configuration."""
    return sequential if ALL_SEQUENTIAL else {"unordered": unordered, "readonly": readonly,
                                              "sequential": sequential}[kind]


# ---------------------------------------------------------------------------------------------
# Slow externals (the simulated service)

_raw_llm = ai.llm.__wrapped__  # the coroutine function behind poppy_jit.ai.llm


async def allm(prompt: str, model: str = "sim-1") -> str:
    _count("llm")
    return await _raw_llm(prompt, model=model, temperature=0)


async def awiki(query: str) -> str:
    _count("wiki")
    return await _raw_llm(query, model="sim-wiki")


async def asynthesize(text: str) -> str:
    _count("tts")
    return await _raw_llm(text, model="sim-tts")


if HAVE_AI_EMBED:
    _raw_embed = ai.embed.__wrapped__

    async def aembed(text: str) -> tuple:
        _count("embed")
        return tuple(await _raw_embed(text))
else:
    async def aembed(text: str) -> tuple:
        """An embedding from a chat call: the simulator's "sim-embed" model answers with
        comma-separated numbers."""
        _count("embed")
        reply = await _raw_llm(text, model="sim-embed")
        return tuple(float(x) for x in reply.split(","))


llm = _annotate("unordered")(allm)
wiki = _annotate("unordered")(awiki)
synthesize = _annotate("unordered")(asynthesize)
embed = _annotate("unordered")(aembed)


# ---------------------------------------------------------------------------------------------
# Pure helpers the applications use as library functions (PopPy Fig. 1's `topk`)

@_annotate("unordered")
def topk(states: tuple, values: tuple, k: int) -> tuple:
    """The k states with the highest values (ties: earlier first)."""
    _count("lib")
    order = sorted(range(len(states)), key=lambda i: (-values[i], i))
    return tuple(states[i] for i in order[:k])


@_annotate("unordered")
def entropy(labels: tuple) -> float:
    """Shannon entropy (bits) of the empirical distribution of `labels`, rounded to 6 places."""
    import math

    _count("lib")
    n = len(labels)
    out = 0.0
    for lab in sorted(set(labels)):
        p = labels.count(lab) / n
        out -= p * math.log2(p)
    return round(out, 6)


# ---------------------------------------------------------------------------------------------
# Speaker (TextToSpeech)

_played: list = []


@_annotate("sequential")
def play(audio: str) -> int:
    """Play a clip: the speaker is a shared device, so clips play in program order."""
    _count("play")
    _played.append(audio)
    return len(_played)


# ---------------------------------------------------------------------------------------------
# Fake workspace (CaMeL-style programs). Values are immutable tuples, as tool results would be
# deserialised into frozen records.

_FILES0 = {
    "vacation-plans-2024.docx": "Trip to Lisbon June 10-17. June 13: day trip to Sintra, "
                                "Pena Palace, hiking. Need swimwear, hiking boots, adapter.",
    "q2-budget.xlsx": "Marketing 12000; Engineering 45000; Travel 8000; Training 3000.",
    "team-feedback.txt": "Alice: 4/5 great mentor. Bob: 3/5 needs clearer goals. "
                         "Chen: 5/5 excellent. Dana: 4/5 reliable.",
    "meeting-notes-may.txt": "Decided to move launch to July. Owners: Bob (docs), Dana (QA).",
    "recipes.md": "Pasta al limone; shakshuka; miso soup; banana bread.",
    "old-vacation-ideas.txt": "Maybe Iceland someday, or a cabin in Norway.",
    "contacts.csv": "Alice Ng,alice@example.com\nBob Ruiz,bob@example.com\n"
                    "Chen Wu,chen@example.com\nDana Park,dana@example.com",
    "roadmap.md": "Q3: search revamp. Q4: mobile offline mode. 2025: plugins.",
}
_EMAILS0 = (
    # (id, sender, subject, body, unread)
    (1, "alice@example.com", "Lunch Friday?", "Are you free for lunch on Friday at noon?", True),
    (2, "bob@example.com", "Docs draft", "The launch docs draft is in the shared drive.", True),
    (3, "news@example.org", "Weekly digest", "Ten things you missed this week.", False),
    (4, "chen@example.com", "Security review", "Please review the auth change before Tuesday.",
     True),
    (5, "alice@example.com", "Re: Lunch Friday?", "Or Thursday works too.", True),
    (6, "dana@example.com", "QA plan", "QA starts June 20; I need two more testers.", False),
    (7, "billing@example.org", "Invoice 2291", "Your invoice of 120 EUR is due June 30.", True),
)
_EVENTS0 = (
    # (id, day, start, minutes, title, participants)
    (1, "2024-06-13", "09:00", 30, "Standup", ("bob@example.com", "dana@example.com")),
    (2, "2024-06-13", "11:00", 60, "Design review", ("chen@example.com",)),
    (3, "2024-06-13", "15:30", 45, "1:1 with Alice", ("alice@example.com",)),
    (4, "2024-06-14", "10:00", 90, "Planning", ("bob@example.com", "chen@example.com")),
    (5, "2024-06-14", "14:00", 30, "Dentist", ()),
)

_files: dict = {}
_sent: list = []
_events: list = []


def reset() -> None:
    """Restore the workspace, the speaker and the call counts (between benchmark runs)."""
    _files.clear()
    _files.update(_FILES0)
    _sent.clear()
    _events.clear()
    _events.extend(_EVENTS0)
    _played.clear()
    _counts.clear()


def effects() -> dict:
    """What the programs did to the world (compared between configurations like stdout)."""
    return {"files": sorted(_files.items()), "sent": list(_sent), "events": list(_events),
            "played": list(_played)}


@_annotate("readonly")
def list_files() -> tuple:
    _count("tool")
    return tuple(sorted(_files))


@_annotate("readonly")
def read_file(name: str) -> str:
    _count("tool")
    return _files[name]


@_annotate("sequential")
def create_file(name: str, content: str) -> str:
    _count("tool")
    _files[name] = content
    return name


@_annotate("readonly")
def search_emails(query: str) -> tuple:
    """E-mails whose sender, subject or body contains `query` (case-insensitive)."""
    _count("tool")
    q = query.lower()
    return tuple(e for e in _EMAILS0 if q in (e[1] + " " + e[2] + " " + e[3]).lower())


@_annotate("readonly")
def unread_emails() -> tuple:
    _count("tool")
    return tuple(e for e in _EMAILS0 if e[4])


@_annotate("sequential")
def send_email(to: str, subject: str, body: str) -> int:
    _count("tool")
    _sent.append((to, subject, body))
    return len(_sent)


@_annotate("readonly")
def day_events(day: str) -> tuple:
    _count("tool")
    return tuple(e for e in _events if e[1] == day)


@_annotate("readonly")
def search_events(query: str) -> tuple:
    _count("tool")
    return tuple(e for e in _events if query.lower() in e[4].lower())


@_annotate("sequential")
def create_event(day: str, start: str, minutes: int, title: str, participants: tuple) -> int:
    _count("tool")
    new_id = max(e[0] for e in _events) + 1 if _events else 1
    _events.append((new_id, day, start, minutes, title, tuple(participants)))
    return new_id


reset()
