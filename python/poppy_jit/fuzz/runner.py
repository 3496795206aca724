"""Running a generated program plain and with PYTHONPOPPY=1 and judging each case.

A program file holds many cases (`gen.program_text`); it is run once plain and once with
PYTHONPOPPY=1, each in a fresh interpreter (`sys.executable`; PYTHONHASHSEED=0 so that set order
is the same in both; no inherited PYTHONPOPPY* variable; an address-space limit so that an
eagerly consumed infinite iterator ends in MemoryError instead of exhausting the machine; a
timeout). `prelude.run_case` appends one JSON report per call to POPPY_FUZZ_TRACE, and marks on
stderr where each case begins and ends, so that when a run crashes or hangs, the case it was in is
known: that case is judged a crash/timeout (when the plain run completed it), and the program is
run again with POPPY_FUZZ_ONLY set to the cases not reached yet. A case the plain run cannot
complete is `invalid` (a generator bug, reported separately). When both runs completed every
case but differ at process level (exit code, stray output outside any case), the cases are
bisected until one case alone shows it.

Depends on `compare` only (and the standard library); never imports Hypothesis.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .compare import Mismatch, compare_case

MEMORY_LIMIT = 1 << 30   # bytes of address space for a generated program (1 GiB)
CASE_TIMEOUT = 8.0       # seconds one run_case call may take (the prelude's watchdog)
_MARK = re.compile(r"^@@fuzz (begin|end) (\d+)$", re.M)


def child_env(poppy: bool, trace: str | None = None, only=None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHONPOPPY") and not k.startswith("POPPY_FUZZ")}
    env["PYTHONHASHSEED"] = "0"
    env["MALLOC_ARENA_MAX"] = "2"   # few malloc arenas: threads reserve little address space
    if poppy:
        env["PYTHONPOPPY"] = "1"
    if trace:
        env["POPPY_FUZZ_TRACE"] = trace
    env["POPPY_FUZZ_CASE_TIMEOUT"] = str(CASE_TIMEOUT)
    if only is not None:
        env["POPPY_FUZZ_ONLY"] = ",".join(str(i) for i in sorted(only))
    return env


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):
        pass


@dataclass
class Run:
    """One run of a program file."""
    entries: dict            # case number -> [run_case reports]
    rc: int | None           # None: killed by the timeout
    stdout: str              # process stdout (outside run_case: should be empty)
    stderr: str
    begun: list              # case numbers in the order they began
    ended: set               # case numbers whose last call ended
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.rc is None or self.rc == 124

    def culprit(self):
        """The case the run was inside when it stopped (None if it was between cases)."""
        if self.begun and self.begun[-1] not in self.ended:
            return self.begun[-1]
        return None

    def tail(self, n: int = 1500) -> str:
        return self.stderr[-n:]


def run_file(path, poppy: bool, only=None, timeout: float = 60.0) -> Run:
    fd, trace = tempfile.mkstemp(prefix="poppy-fuzz-", suffix=".jsonl")
    os.close(fd)
    start = time.monotonic()
    try:
        try:
            proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                                  env=child_env(poppy, trace, only), timeout=timeout,
                                  preexec_fn=_limit_memory if os.name == "posix" else None,
                                  cwd=str(Path(path).parent))
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc = None
            out = _text(exc.stdout)
            err = _text(exc.stderr)
        entries: dict = {}
        with open(trace) as f:
            for line in f:
                if line.strip():
                    rep = json.loads(line)
                    entries.setdefault(rep["i"], []).append(rep)
    finally:
        os.unlink(trace)
    begun, ended = [], set()
    for kind, num in _MARK.findall(err):
        num = int(num)
        if kind == "begin":
            begun.append(num)
            ended.discard(num)
        else:
            ended.add(num)
    err = _MARK.sub("", err).strip("\n")
    return Run(entries, rc, out, err, begun, ended, time.monotonic() - start)


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


@dataclass
class Verdict:
    """What happened to one case."""
    number: int
    status: str                      # "ok" | "mismatch" | "invalid"
    mismatches: list = field(default_factory=list)
    compiled: bool = False           # the case's @poppy function ran compiled (no fallback)
    fallbacks: list = field(default_factory=list)   # [(function, reason)] under PYTHONPOPPY=1
    note: str = ""
    plain_results: list = field(default_factory=list)  # the plain run's result lines

    @property
    def kinds(self) -> tuple:
        return tuple(sorted({m.kind for m in self.mismatches}))


def _compile_info(reports: list) -> tuple:
    fallbacks, compiled, main_fell_back = [], 0, False
    for rep in reports:
        compiled += rep.get("compiled", 0)
        name = rep.get("function", "?").rsplit(".", 1)[-1]
        for fb in rep.get("fallbacks", []):
            fallbacks.append((fb.get("function"), fb.get("reason")))
            if str(fb.get("function", "")).rsplit(".", 1)[-1] == name:
                main_fell_back = True
    return (compiled > 0 and not main_fell_back), fallbacks


def check_program(path, numbers, timeout: float = 60.0, bisect: bool = True) -> dict:
    """Run the program at `path` (holding cases `numbers`) both ways; {number: Verdict}."""
    verdicts: dict = {}
    pending = set(numbers)
    only = None  # first round: the whole file
    first = True
    while pending:
        plain, popped = _run_both(path, only, timeout)
        progress = False
        for num in sorted(pending):
            a, b = plain.entries.get(num), popped.entries.get(num)
            a_done = a is not None and num in plain.ended
            b_done = b is not None and num in popped.ended
            if not a_done:
                if num == plain.culprit():
                    verdicts[num] = Verdict(num, "invalid", note=(
                        "plain run " + ("timed out" if plain.timed_out else
                                        f"died (exit {plain.rc})") + f": {plain.tail(600)}"))
                    pending.discard(num)
                    progress = True
                continue
            if b_done:
                problems = compare_case(a, b)
                compiled, fallbacks = _compile_info(b)
                verdicts[num] = Verdict(num, "mismatch" if problems else "ok", problems,
                                        compiled, fallbacks,
                                        plain_results=[r["result"] for r in a])
                pending.discard(num)
                progress = True
            elif num == popped.culprit():
                kind = "timeout" if popped.timed_out else "crash"
                detail = ("PYTHONPOPPY=1 run timed out in this case" if popped.timed_out else
                          f"PYTHONPOPPY=1 run died in this case (exit {popped.rc}): "
                          f"{popped.tail(600)}")
                compiled, fallbacks = _compile_info(b or [])
                verdicts[num] = Verdict(num, "mismatch", [Mismatch(kind, detail)], compiled,
                                        fallbacks, plain_results=[r["result"] for r in a])
                pending.discard(num)
                progress = True
        # A case that exhausted memory (or the stack) under PYTHONPOPPY=1 may leave the process
        # unable to run the next ones faithfully: judge the later mismatches again without it.
        poisoned = [num for num in popped.begun if num in verdicts and num not in pending
                    and _exhausted(plain.entries.get(num), popped.entries.get(num))]
        if poisoned:
            later = popped.begun[popped.begun.index(poisoned[0]) + 1:]
            for num in later:
                if num in verdicts and verdicts[num].status == "mismatch" and num != poisoned[0]:
                    del verdicts[num]
                    pending.add(num)
        if first and not pending and bisect and plain.rc == 0 and _process_differs(plain, popped):
            num, detail = _bisect(path, sorted(numbers), timeout)
            v = verdicts[num]
            v.mismatches.append(Mismatch("exit", detail))
            v.status = "mismatch"
        first = False
        if pending and not progress:
            for num in pending:
                verdicts[num] = Verdict(num, "invalid", note="never reached by either run: "
                                        f"plain exit {plain.rc}, poppy exit {popped.rc}")
            break
        only = set(pending)
    return verdicts


_EXHAUSTED = ("MemoryError", "RecursionError")


def _exhausted(plain: list | None, popped: list | None) -> bool:
    def hit(reports):
        return any(r["result"].startswith("!! " + e) for r in reports or () for e in _EXHAUSTED)
    return hit(popped) and not hit(plain)


def _run_both(path, only, timeout: float) -> tuple:
    """The plain and the PYTHONPOPPY=1 run, made at the same time."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        later = pool.submit(run_file, path, True, only, timeout)
        plain = run_file(path, False, only, timeout)
        return plain, later.result()


def _process_differs(plain: Run, popped: Run) -> bool:
    return plain.rc != popped.rc or plain.stdout != popped.stdout


def _describe_process(plain: Run, popped: Run) -> str:
    return (f"process: plain exit {plain.rc}, poppy exit {popped.rc}; stdout outside cases: "
            f"plain {plain.stdout[-300:]!r}, poppy {popped.stdout[-300:]!r}; poppy stderr "
            f"{popped.tail(300)!r}")


def _bisect(path, numbers: list, timeout: float) -> tuple:
    """The case (and a description) that alone makes the two runs differ at process level; the
    first of a group when only the group together does."""
    plain, popped = _run_both(path, set(numbers), timeout)
    detail = _describe_process(plain, popped)
    while len(numbers) > 1:
        half = len(numbers) // 2
        for part in (numbers[:half], numbers[half:]):
            plain, popped = _run_both(path, set(part), timeout)
            if _process_differs(plain, popped):
                numbers, detail = part, _describe_process(plain, popped)
                break
        else:
            return numbers[0], detail + f" (only cases {numbers} together)"
    return numbers[0], detail
