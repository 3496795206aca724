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


# A `print` of plain data, and reads of whole arguments by a declared @unordered external.

import io
import sys

from poppy_jit import unordered
from poppy_jit._declared import JSON, Typed


@unordered(blocking=True)
def _chat(messages):
    return messages[-1]["content"]


def _printing(*args):
    return (builtins.print, args)


def _with_stdout(stream, fn):
    saved = sys.stdout
    sys.stdout = stream
    try:
        return fn()
    finally:
        sys.stdout = saved


def _file_stdout(tmp_path, fn):
    f = open(tmp_path / "out.txt", "w")
    try:
        return _with_stdout(f, fn)
    finally:
        f.close()


def test_a_chat_call_passes_prints_of_plain_data(tmp_path):
    mine = [{"role": "user", "content": "q"}]
    other = {"choices": [{"message": {"content": "a"}}]}
    printed = (_printing("message:", {"role": "user", "content": "x"}), _printing(other))
    assert _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), printed))
    # A pending value printed: only its declared type's stand-in (plain data) lets it pass.
    assert not _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), (_printing(PENDING),)))
    assert _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), (_printing(Typed(JSON)),)))


def test_a_print_that_may_run_code_is_no_store(tmp_path):
    mine = [{"role": "user", "content": "q"}]

    class Loud:
        def __repr__(self):
            mine.append("changed")  # what a print of it runs may change what the call reads
            return "loud"
    assert not _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), (_printing(Loud()),)))
    assert not _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), (_printing([Loud()]),)))
    # sys.stdout replaced by an object whose write is Python code.
    assert not _with_stdout(io.StringIO(), lambda: read_passes(_chat, (mine,), (), (_printing("x"),)))

    class Tee(io.TextIOWrapper):
        pass
    assert not _with_stdout(Tee(io.BytesIO()), lambda: read_passes(_chat, (mine,), (), (_printing("x"),)))
    # With keyword arguments (`file=`, `sep=`) a print is no store either (the runtime passes
    # no call with keywords), nor is any other builtin.
    assert not _file_stdout(tmp_path, lambda: read_passes(_chat, (mine,), (), ((len, ("x",)),)))


def test_a_chat_call_waits_for_a_store_into_what_it_reads(tmp_path):
    inner = {"role": "user", "content": "q"}
    mine = [inner]
    assert not read_passes(_chat, (mine,), (), ((mine.append, (PENDING,)),))
    assert not read_passes(_chat, (mine,), (), (store(inner, "content"),)), "a nested dict"
    assert read_passes(_chat, (mine,), (), (store({}, "content"),)), "another dict"
    assert read_passes(_chat, (mine,), (), (([].append, (PENDING,)),)), "another list"

    class Obj:
        pass
    assert not read_passes(_chat, ([Obj()],), (), (store({}, "k"),)), "not plain data"
    undecorated = _chat.__wrapped__ if hasattr(_chat, "__wrapped__") else (lambda m: m)
    assert not read_passes(undecorated, (mine,), (), (store({}, "k"),))


def test_a_list_item_read_passes_appends_and_list_addition_does_not():
    a, b = [1, 2], [3]
    assert read_passes(operator.getitem, (a, 1), (), ((a.append, (PENDING,)),))
    assert not read_passes(operator.getitem, (a, 2), (), ((a.append, (PENDING,)),)), "not there yet"
    assert not read_passes(operator.getitem, (a, -1), (), ((a.append, (PENDING,)),)), "the last item"
    assert not read_passes(operator.add, (a, b), (), ((a.append, (PENDING,)),))
    assert read_passes(operator.add, (a, b), (), (([].append, (PENDING,)),))
    assert read_passes(operator.add, (a, b), (), (store({}, "k"),))
