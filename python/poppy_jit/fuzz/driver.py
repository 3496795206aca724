"""A fuzzing session: generate, run in batches, minimise the mismatches, report.

`fuzz(n, seed, constructs, ...)` draws n cases (`gen.generate`), writes them `batch` at a time
into program files, judges every case (`runner.check_program`, `jobs` files at once), then
re-runs each mismatching case alone and minimises up to `max_minimise` of them (distinct
mismatch kinds and construct mixes first, smallest first), classifies each reproducer by the
constructs it uses (`minimise.features`) and writes it to `out_dir`. The other mismatches are
attributed to the class of a reproducer whose constructs they contain, or counted as
unclassified. `Report.text()` is what `python -m poppy_jit.fuzz` prints.
"""
from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import gen, minimise, runner


@dataclass
class Found:
    """A mismatching case and, once minimised, its reproducer and class."""
    number: int
    verdict: object
    source: str                   # the case alone, as a standalone program
    reproducer: str | None = None
    repro_verdict: object = None
    klass: str | None = None
    path: str | None = None
    alone: bool | None = None     # still mismatches when run alone (None: not re-run)


@dataclass
class Report:
    n: int
    seed: int
    constructs: tuple
    seconds: float = 0.0
    verdicts: dict = field(default_factory=dict)
    found: list = field(default_factory=list)
    classes: Counter = field(default_factory=Counter)

    @property
    def mismatches(self) -> list:
        return [v for v in self.verdicts.values() if v.status == "mismatch"]

    def counts(self) -> dict:
        vs = list(self.verdicts.values())
        return {
            "programs": len(vs),
            "ok": sum(v.status == "ok" for v in vs),
            "mismatch": sum(v.status == "mismatch" for v in vs),
            "invalid": sum(v.status == "invalid" for v in vs),
            "compiled": sum(v.compiled for v in vs if v.status != "invalid"),
            "fallback": sum(not v.compiled for v in vs if v.status != "invalid"),
        }

    def fallback_reasons(self) -> Counter:
        """Fallbacks of any function under PYTHONPOPPY=1, by reason without line numbers."""
        out = Counter()
        for v in self.verdicts.values():
            for _fn, reason in {(f, r) for f, r in v.fallbacks}:
                out[_reason_kind(reason)] += 1
        return out

    def text(self) -> str:
        c = self.counts()
        lines = [f"poppy_jit.fuzz: {c['programs']} programs (seed {self.seed}, "
                 f"constructs {','.join(self.constructs)}) in {self.seconds:.0f} s",
                 f"  ok {c['ok']}, mismatch {c['mismatch']}, invalid (plain run failed) "
                 f"{c['invalid']}",
                 f"  the @poppy function compiled in {c['compiled']}, fell back in "
                 f"{c['fallback']}"]
        reasons = self.fallback_reasons()
        if reasons:
            lines.append("  fallbacks by reason (any function):")
            lines += [f"    {k:5d} x {r}" for r, k in reasons.most_common()]
        kinds = Counter(minimise.primary(v.kinds) for v in self.mismatches)
        if kinds:
            lines.append("  mismatches by primary kind: " +
                         ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
        if self.classes:
            lines.append("  mismatches by class:")
            lines += [f"    {n:5d} x {k}" for k, n in self.classes.most_common()]
        for f in self.found:
            if f.path:
                lines.append(f"  reproducer {f.path}: {f.klass}")
        invalid = [v for v in self.verdicts.values() if v.status == "invalid"]
        for v in invalid[:5]:
            lines.append(f"  invalid case {v.number}: {v.note[:200]}")
        return "\n".join(lines)


def _reason_kind(reason: str) -> str:
    kind = re.sub(r"\s*\bat line \d+|\bline \d+", "", reason or "")
    kind = re.sub(r"\s*\((?:[a-z_]\w*(?:, )?)+\)", "", kind)   # variable lists
    return re.sub(r"`[^`]*`", "`_`", kind).strip() or "?"


def run_batches(cases: list, jobs: int = 2, batch: int = 50, timeout: float = 30.0,
                sleep: float = 1.0, workdir: str | None = None, log=None,
                first: int = 0) -> dict:
    """Judge `cases` (numbered first, first+1, ...): {number: Verdict}."""
    groups = [list(range(k, min(k + batch, len(cases)))) for k in range(0, len(cases), batch)]
    verdicts: dict = {}

    def one(idxs):
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = Path(tmp) / f"fuzz_{first + idxs[0]}.py"
            path.write_text(gen.program_text([cases[i] for i in idxs], sleep,
                                             [first + i for i in idxs]))
            return runner.check_program(path, [first + i for i in idxs], timeout)

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for result in pool.map(one, groups):
            verdicts.update(result)
            done += len(result)
            if log:
                bad = sum(v.status == "mismatch" for v in verdicts.values())
                log(f"  {done}/{len(cases)} programs judged, {bad} mismatch(es)")
    return verdicts


def fuzz(n: int, seed: int = 0, constructs=gen.DEFAULT_CONSTRUCTS, jobs: int = 2,
         batch: int = 50, out_dir: str | None = None, max_minimise: int = 12,
         timeout: float = 30.0, sleep: float = 1.0, log=None, minimise_trials: int = 250
         ) -> Report:
    start = time.monotonic()
    constructs = tuple(constructs)
    report = Report(n, seed, constructs)
    if log:
        log(f"generating {n} programs (seed {seed})...")
    cases = gen.generate(n, seed, constructs)
    report.verdicts = run_batches(cases, jobs, batch, timeout, sleep, log=log)
    bad = sorted(report.mismatches, key=lambda v: v.number)
    found = [Found(v.number, v, gen.program_text([cases[v.number]], sleep, [0])) for v in bad]
    # minimise distinct (kinds, constructs used) first, smallest first
    order = sorted(found, key=lambda f: (len(f.source), f.number))
    picked, seen = [], set()
    for f in order:
        sig = (f.verdict.kinds, tuple(minimise.features(f.source)))
        if sig not in seen:
            seen.add(sig)
            picked.append(f)
    picked += [f for f in order if f not in picked]
    picked = picked[:max_minimise]

    def shrink(f: Found):
        checker = minimise.Checker(timeout)
        try:
            best, v = minimise.minimise(f.source, checker, minimise_trials)
        except Exception as exc:  # noqa: BLE001 - one failed minimisation must not end a session
            f.klass = f"minimiser failed ({type(exc).__name__}: {exc})"
            return f
        f.alone = v is not None and v.status == "mismatch"
        if f.alone:
            f.reproducer, f.repro_verdict = best, v
            f.klass = classify(best, v)
        return f

    if picked and log:
        log(f"minimising {len(picked)} of {len(found)} mismatch(es)...")
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(shrink, picked))
    classes = [f for f in picked if f.klass]
    for f in found:
        if f.klass is not None and f.reproducer is None:
            pass  # the minimiser failed
        elif f.klass is None and f.alone is not False:
            feats = set(minimise.features(f.source))
            prim = minimise.primary(f.verdict.kinds)
            match = [c for c in classes if set(minimise.features(c.reproducer)) <= feats
                     and minimise.primary(c.repro_verdict.kinds) == prim]
            f.klass = (min(match, key=lambda c: len(c.reproducer)).klass + " (not minimised)"
                       if match else f"{prim}: unclassified (not minimised)")
        elif f.alone is False:
            f.klass = "does not reproduce alone (interaction with other cases, or flaky)"
        report.classes[f.klass] += 1
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        for f in found:
            if f.reproducer:
                text = minimise.reproducer_text(f.reproducer, f.repro_verdict, f.klass)
                f.path = str(minimise.write_reproducer(out_dir, f"repro_{seed}_{f.number}",
                                                       text))
            # every mismatching case as generated, to minimise later (--minimise FILE)
            minimise.write_reproducer(Path(out_dir) / "cases", f"case_{seed}_{f.number}",
                                      minimise.reproducer_text(f.source, f.verdict, f.klass))
        summary = {"counts": report.counts(), "seed": seed, "constructs": constructs,
                   "mismatches": [{"case": f.number, "class": f.klass,
                                   "kinds": list(f.verdict.kinds), "reproducer": f.path}
                                  for f in found]}
        (Path(out_dir) / f"summary_{seed}.json").write_text(json.dumps(summary, indent=1))
    report.found = found
    report.seconds = time.monotonic() - start
    return report


def classify(source: str, verdict) -> str:
    return f"{minimise.primary(verdict.kinds)}: {', '.join(minimise.features(source)) or '-'}"
