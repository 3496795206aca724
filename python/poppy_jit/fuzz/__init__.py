"""Differential fuzzing of poppy_jit with generated Python programs.

Random @poppy functions ("cases", one program each) are built from the constructs the compiler
accepts (`gen`, with Hypothesis), many cases to a program file; each file runs once plain and
once with PYTHONPOPPY=1 (`runner`), and every case's printed output, result (value, or exception
type, message and chain) and trace of external calls are compared modulo the annotations
(`compare`: the rules are in its docstring). A mismatch is shrunk to a minimal standalone
reproducer (`minimise`) and classified by the constructs it uses; `driver.fuzz` ties it together
and `python -m poppy_jit.fuzz -n 10000 [--seed S] [--constructs ...] [--jobs 2]` runs it.

Module map (dependencies point down):

  __main__   command line
  driver     a session: generate, run batches, minimise, report
  gen        Hypothesis strategies of cases; CONSTRUCTS, the switches
  hyp        the one import of Hypothesis (a clear error when it is missing)
  minimise   shrinking by statement deletion and expression simplification; features()
  runner     running a program file both ways, per-case verdicts, crashes and hangs
  compare    the comparison rules (pure)
  prelude    imported by generated programs: recording externals, run_case (no Hypothesis)

Hypothesis is imported only when cases are generated, so `import poppy_jit` (and running a
reproducer) never needs it.
"""
from .gen import CONSTRUCTS, DEFAULT_CONSTRUCTS

# Construct switches whose programs poppy_jit gets wrong today (issue 14). The bounded run in
# tests/test_fuzz.py leaves exactly these out; tests/test_fuzz_known_gaps.py holds one strict
# xfail reproducer per class. Remove a switch here once its class is fixed.
KNOWN_GAPS: tuple = ()
# (iter_mutated was one until every loop over a container the run does not own was iterated
# lazily; the hang once seen with it, seed 2026 case 9382 of a long run, is a regression test.)

__all__ = ["CONSTRUCTS", "DEFAULT_CONSTRUCTS", "KNOWN_GAPS", "fuzz"]


def fuzz(n: int, **kwargs):
    """Run a fuzzing session (see `driver.fuzz`); returns a `driver.Report`."""
    from .driver import fuzz as _fuzz
    return _fuzz(n, **kwargs)
