# Stores into objects and containers: attributes, subscripts, augmented forms, del, slices,
# and list/dict/set displays.
from poppy_jit import poppy
from _ext import llm, log


class Job:
    def __init__(self, name):
        self.name = name
        self.tries = 0
        self.notes = []


@poppy
def run(names):
    jobs = {}
    for name in names:
        jobs[name] = Job(name)
    stats = {"ok": 0, "bad": 0}
    for name, job in jobs.items():
        job.tries += 1
        job.result = llm(f"count: {name}")
        key = "ok" if int(job.result) % 2 else "bad"
        stats[key] += 1
        job.notes[:0] = [job.result, *job.notes]
    seen = set()
    for job in jobs.values():
        seen |= {job.result}
    ordered = sorted(jobs)[1:-1]
    del jobs[ordered[0]]
    first = jobs[names[0]]
    del first.notes
    log(f"stats {stats} seen {len(seen)}")
    return list(jobs), ordered, stats


print(run(["a", "b", "c", "d", "e"]))
