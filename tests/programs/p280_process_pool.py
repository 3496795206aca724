# Externals run by the process pool (executor="process"): arguments and results are pickled
# copies, sequential calls keep program order across worker processes, a remote exception is
# re-raised with its type and message. The externals live in this script, so a worker runs it as
# __mp_main__: the entry point is guarded, as with multiprocessing.
from poppy_jit import poppy, readonly, sequential, unordered
from _ext import llm, log


def digest(text, rounds):
    h = 0
    for _ in range(rounds):
        for ch in text:
            h = (h * 131 + ord(ch)) % 1_000_000_007
    return h


@unordered(executor="process")
def score(doc, rounds=200):
    return {"doc": doc, "score": digest(doc, rounds) % 1000}


@readonly(executor="process")
def rank(scores):
    return sorted(scores, key=lambda s: (-s["score"], s["doc"]))


@sequential(executor="process")
def stamp(label, items):
    items.append(label)  # the worker's copy: the caller's list is unchanged
    return f"{label}:{len(items)}"


@unordered(executor="process")
def parse(text):
    if not text.strip():
        raise ValueError(f"empty document {text!r}")
    return text.split()


@poppy
def main(docs):
    scores = []
    for d in docs:
        scores.append(score(d))
    best = rank(scores)
    log(f"ranked {len(best)}")
    summary = llm(f"summarise {best[0]['doc']}")
    seen = []
    tags = []
    for s in best[:3]:
        tags.append(stamp(s["doc"], seen))
    words = []
    for d in docs + ["  "]:
        try:
            words.append(len(parse(d)))
        except ValueError as e:
            words.append(f"{type(e).__name__}: {e}")
    return best, tags, seen, words + [summary.split("\n")[0]]


if __name__ == "__main__":
    docs = ["alpha beta", "gamma", "delta epsilon zeta", "eta theta", "iota", "kappa lambda mu"]
    best, tags, seen, words = main(docs)
    for s in best:
        print(s["doc"], s["score"])
    print(tags, seen)
    print(words)
