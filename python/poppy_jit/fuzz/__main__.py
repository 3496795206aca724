"""`python -m poppy_jit.fuzz`: generate programs, compare plain and PYTHONPOPPY=1, report."""
from __future__ import annotations

import argparse
import sys

from . import CONSTRUCTS, DEFAULT_CONSTRUCTS, KNOWN_GAPS


def parse_constructs(text: str | None, exclude_known: bool) -> tuple:
    """'a,b' (exactly these), '-a,-b' (the defaults without these), '+a' (defaults plus a),
    'all'; then without the known gaps if asked."""
    chosen = list(DEFAULT_CONSTRUCTS)
    if text:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if items == ["all"]:
            chosen = list(CONSTRUCTS)
        elif all(t[0] in "+-" for t in items):
            for t in items:
                name = t[1:]
                if name not in CONSTRUCTS:
                    raise SystemExit(f"unknown construct {name!r}; known: {', '.join(CONSTRUCTS)}")
                if t[0] == "-" and name in chosen:
                    chosen.remove(name)
                elif t[0] == "+" and name not in chosen:
                    chosen.append(name)
        else:
            unknown = [t for t in items if t not in CONSTRUCTS]
            if unknown:
                raise SystemExit(f"unknown construct(s) {unknown}; known: {', '.join(CONSTRUCTS)}")
            chosen = items
    if exclude_known:
        chosen = [c for c in chosen if c not in KNOWN_GAPS]
    return tuple(chosen)


def minimise_files(paths: list, timeout: float) -> int:
    from .driver import classify
    from .minimise import Checker, minimise, reproducer_text
    status = 0
    for path in paths:
        best, verdict = minimise(open(path).read(), Checker(timeout))
        if verdict is None or verdict.status != "mismatch":
            print(f"--- {path}: no mismatch when run alone"
                  + (f" ({verdict.status}: {verdict.note[:200]})" if verdict else ""))
            continue
        status = 1
        print(f"--- {path}\n" + reproducer_text(best, verdict, classify(best, verdict)))
    return status


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m poppy_jit.fuzz", description=__doc__)
    p.add_argument("-n", type=int, default=1000, help="number of programs (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--constructs", help="comma list: exactly these, or -x/+x relative to the "
                   "defaults, or 'all' (defaults: everything but exceptions). Known: "
                   + ", ".join(CONSTRUCTS))
    p.add_argument("--exclude-known-gaps", action="store_true",
                   help=f"leave out the known gaps {', '.join(KNOWN_GAPS) or '(none)'}")
    p.add_argument("--jobs", type=int, default=2, help="program files run at once (default 2)")
    p.add_argument("--batch", type=int, default=50, help="programs per file (default 50)")
    p.add_argument("--out", default="fuzz-repros", help="directory for reproducers")
    p.add_argument("--max-minimise", type=int, default=12,
                   help="mismatches to minimise (distinct classes first; default 12)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per program file run")
    p.add_argument("--no-sleep", action="store_true", help="externals do not sleep")
    p.add_argument("--list", action="store_true", help="list the construct switches and exit")
    p.add_argument("--minimise", nargs="+", metavar="FILE",
                   help="minimise these standalone programs (e.g. OUT/cases/*.py) and exit")
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args(argv)
    if args.list:
        for name, text in CONSTRUCTS.items():
            mark = "known gap" if name in KNOWN_GAPS else (
                "default" if name in DEFAULT_CONSTRUCTS else "off by default")
            print(f"{name:16s} [{mark}] {text}")
        return 0
    if args.minimise:
        return minimise_files(args.minimise, args.timeout)
    constructs = parse_constructs(args.constructs, args.exclude_known_gaps)
    from .driver import fuzz
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    report = fuzz(args.n, seed=args.seed, constructs=constructs, jobs=args.jobs,
                  batch=args.batch, out_dir=args.out, max_minimise=args.max_minimise,
                  timeout=args.timeout, sleep=0.0 if args.no_sleep else 1.0, log=log)
    print(report.text())
    for f in report.found:
        if f.reproducer and f.path:
            print(f"\n--- {f.path} ({f.klass})\n{open(f.path).read()}")
    return 1 if report.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
