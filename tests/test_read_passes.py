"""`poppy_jit._objects.read_passes`: which readonly reads may run before earlier pending stores
(docs/semantics.md, "Per-object ordering"; the runtime side is `control::objects::read_order`,
the programs p493 and p532)."""
import builtins
import operator

from poppy_jit._intrinsics import _contains, _not_contains, _setitem
from poppy_jit._objects import PENDING, read_passes


class Task:
    def __init__(self):
        self.cache = {}

    def method(self):
        return 1

    @staticmethod
    def static():
        return 2

    @property
    def size(self):
        return len(self.cache)


class Odd:
    def __getattribute__(self, name):
        return object.__getattribute__(self, name)


def store(d, k):
    return (_setitem, (d, k, PENDING))


def test_a_look_up_of_another_key_passes_a_store():
    d = {"a": 1}
    assert read_passes(_contains, ("b", d), (), (store(d, "a"),))
    assert read_passes(_not_contains, ("b", d), (), (store(d, "c"),))
    assert read_passes(operator.getitem, (d, "b"), (), (store(d, "a"),))
    assert read_passes(d.get, ("b",), (), (store(d, "a"),))
    assert read_passes(_contains, ("b", d), (), (store({}, "b"),)), "another dict"


def test_a_look_up_of_the_stored_key_waits():
    d = {}
    assert not read_passes(_contains, ("a", d), (), (store(d, "a"),))
    assert not read_passes(_contains, (1, d), (), (store(d, True),)), "1 == True: one key"
    assert not read_passes(d.get, ("a",), (), (store(d, "b"), store(d, "a")))


def test_a_store_that_releases_an_object_waits():
    d = {"x": object()}
    assert not read_passes(_contains, ("y", d), (), (store(d, "x"),))
    d = {"x": 1}
    assert read_passes(_contains, ("y", d), (), (store(d, "x"),)), "an atom's release runs nothing"


def test_two_stores_into_one_entry_wait():
    d = {}
    assert not read_passes(_contains, ("y", d), (), (store(d, "x"), store(d, "x")))
    assert read_passes(_contains, ("y", d), (), (store(d, "x"), store(d, "z")))


def test_only_exact_dicts_with_atom_keys_and_atom_read_keys():
    class D(dict):
        pass
    assert not read_passes(_contains, ("b", D()), (), (store({}, "a"),))
    assert not read_passes(_contains, ("b", {}), (), (store(D(), "a"),))
    assert not read_passes(_contains, ("b", {(1, 2): 0}), (), (store({}, "a"),))
    assert not read_passes(_contains, ([1], {}), (), (store({}, "a"),))


def test_plain_attribute_reads_pass():
    t = Task()
    assert read_passes(builtins.getattr, (t, "cache"), (), (store(t.cache, "k"),))
    assert read_passes(builtins.getattr, (t, "method"), (), (store(t.cache, "k"),))
    assert read_passes(builtins.getattr, (t, "static"), (), (store(t.cache, "k"),))


def test_attribute_reads_that_run_code_or_read_the_stored_entry_wait():
    t = Task()
    assert not read_passes(builtins.getattr, (t, "size"), (), (store(t.cache, "k"),)), "property"
    assert not read_passes(builtins.getattr, (t, "missing"), (), (store(t.cache, "k"),))
    assert not read_passes(builtins.getattr, (Odd(), "x"), (), (store({}, "k"),))
    t.mode = "start"
    assert not read_passes(builtins.getattr, (t, "mode"), (), (store(t.__dict__, "mode"),))
    assert read_passes(builtins.getattr, (t, "mode"), (), (store(t.__dict__, "other"),))


def test_appends_pass_and_anything_else_waits():
    t, lst = Task(), []
    assert read_passes(builtins.getattr, (t, "cache"), (), ((lst.append, (PENDING,)),))
    assert not read_passes(builtins.getattr, (t, "cache"), (), ((print, (PENDING,)),))
    assert not read_passes(len, ([],), (), (store({}, "a"),)), "not a read it knows"
