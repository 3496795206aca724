"""`run --why`: at exit, why external calls did not overlap (filled in by the diagnosis)."""
from __future__ import annotations


def report_at_exit() -> None:
    pass
