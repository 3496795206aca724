"""The reordering classes and the immutable atoms are defined once (`poppy_jit._contract`) and
used by the decorators, the annotation library, per-object ordering and the Rust runtime."""
import pytest

from poppy_jit import _annotations, _contract, _decorators, _objects


def test_python_modules_use_the_contract():
    assert _decorators.KINDS == _contract.CLASS_NAMES
    assert (_annotations.UNORDERED, _annotations.READONLY, _annotations.SEQUENTIAL) == (0, 1, 2)
    assert [_annotations._CLASS_BY_NAME[n] for n in _contract.CLASS_NAMES] == [0, 1, 2]
    assert _objects.ATOMS is _contract.ATOMS
    # The annotation library's level-0 values are the atoms and more (see _annotations).
    assert _contract.ATOMS < _annotations._LEVEL0_ATOMS


def test_runtime_reports_classes_by_contract_name():
    core = pytest.importorskip("poppy_jit._core")
    assert tuple(core.stats()["external_calls"]) == _contract.CLASS_NAMES
