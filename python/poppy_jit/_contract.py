"""What the Rust runtime (`_core`) and the Python side must agree on, defined once.

Plain Python: plain mode never imports `_core`, but the decorators and the annotation library use
these too. `_core` reads this module when it is imported (src/pyobj/contract.rs) and refuses to
load if its reordering classes are not these, in this order; its immutable atoms are `ATOMS`.
"""

# The reordering classes of external calls (PopPy §4.2), from least to most ordered. A class's
# code is its index: what `_annotations.classify` returns to the runtime, and a mutability level
# (the annotation library takes the max of levels, so the order matters). The names are what
# `@unordered` & co., config files, traces and `stats()["external_calls"]` spell.
CLASS_NAMES = ("unordered", "readonly", "sequential")
CLASS_BY_NAME = {name: code for code, name in enumerate(CLASS_NAMES)}
UNORDERED, READONLY, SEQUENTIAL = (CLASS_BY_NAME[n] for n in ("unordered", "readonly", "sequential"))

# Immutable atoms: exact types whose values are immutable and whose hashing and comparison run
# only C code that reads no other state. The runtime decides that a declared @unordered external
# given only atoms is unordered without asking the annotation library (src/host/callee.rs), and
# per-object ordering scopes dict and set operations whose keys are atoms (`_objects`). The
# annotation library's level-0 values are a superset (`_annotations._LEVEL0_ATOMS`).
ATOMS = frozenset((str, int, float, bool, bytes, type(None)))
