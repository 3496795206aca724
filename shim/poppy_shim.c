/* CPython 3.11 internals for intercepting @poppy functions (the only C, and the only code that
 * includes internal headers).
 *
 * poppy_jit installs no PEP 523 eval-frame function (that would make CPython 3.11 stop inlining
 * Python-to-Python calls and specialising CALL for every Python function). A @poppy function
 * gets a copy of its code with a prologue instead (python/poppy_jit/_prologue.py) whose runtime
 * object reads the running frame through this file: its function and the arguments CPython has
 * already bound in localsplus. The frame stays CPython's, which clears and pops it as usual.
 * Here too: the co_extra index for the per-code translation cache, and frame objects standing for
 * @poppy frames that inlining replaced, for tracebacks.
 */
#include "poppy_shim.h"
#include <stddef.h>
#include "frameobject.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION != 11
#error "poppy_shim.c is written against CPython 3.11's frame layout"
#endif

/* Layout assumptions this file and the Rust side (src/py311: byte offsets = 2 x code units,
 * positions and exception-table encodings read by the lifter) rely on: a mismatch fails the
 * build, not a user's program. */
_Static_assert(sizeof(_Py_CODEUNIT) == 2, "3.11 code units are two bytes (opcode, oparg)");
_Static_assert(offsetof(PyFrameObject, f_frame) > 0, "PyFrameObject keeps its _PyInterpreterFrame pointer");
_Static_assert(sizeof(((_PyInterpreterFrame *)0)->localsplus[0]) == sizeof(PyObject *),
               "localsplus holds object pointers");
_Static_assert(sizeof(((_PyInterpreterFrame *)0)->prev_instr) == sizeof(_Py_CODEUNIT *),
               "prev_instr points at a code unit");

static Py_ssize_t extra_index = -1;

int poppy_shim_init(void (*free_payload)(void *)) {
    if (extra_index >= 0) {
        return 0;
    }
    extra_index = _PyEval_RequestCodeExtraIndex(free_payload);
    return extra_index < 0 ? -1 : 0;
}

int poppy_shim_set_mark(PyObject *code, void *payload) {
    if (extra_index < 0 || !PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "poppy_jit: can only mark code objects");
        return -1;
    }
    return _PyCode_SetExtra(code, extra_index, payload);
}

void *poppy_shim_get_mark(PyObject *code) {
    void *mark = NULL;
    if (extra_index < 0 || !PyCode_Check(code) || _PyCode_GetExtra(code, extra_index, &mark) != 0) {
        PyErr_Clear();
        return NULL;
    }
    return mark;
}

/* A frame object for `func`'s code, standing for a @poppy frame that the λO run replaced, for a
 * traceback entry (the frame CPython would have had on the stack when the external failed).
 * PyFrame_New gives a frame of the right code whose function is a stand-in without closure;
 * it is replaced by `func` itself (f_globals/f_builtins are borrowed from the function in 3.11,
 * so they follow it), so that f_locals works even for code with free variables. The arguments
 * and free variables are filled in as CPython would have them, and the frame is positioned at
 * code unit `lasti / 2` (or at the first unit when lasti < 0) so f_lineno is right. */
PyObject *poppy_shim_frame(PyObject *func, PyObject *const *args, Py_ssize_t nargs, int lasti) {
    if (!PyFunction_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "poppy_jit: frame for a non-function");
        return NULL;
    }
    PyFunctionObject *fn = (PyFunctionObject *)func;
    PyCodeObject *code = (PyCodeObject *)fn->func_code;
    PyFrameObject *f = PyFrame_New(PyThreadState_Get(), code, fn->func_globals, NULL);
    if (f == NULL) {
        return NULL;
    }
    _PyInterpreterFrame *fr = f->f_frame;
    PyFunctionObject *stand_in = fr->f_func;
    fr->f_func = (PyFunctionObject *)Py_NewRef(func);
    fr->f_globals = fn->func_globals;
    fr->f_builtins = fn->func_builtins;
    Py_XDECREF(stand_in);
    if (nargs > code->co_nlocalsplus) {
        nargs = code->co_nlocalsplus;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_XSETREF(fr->localsplus[i], Py_XNewRef(args[i]));
    }
    PyObject *closure = fn->func_closure;
    if (closure != NULL && PyTuple_Check(closure) && PyTuple_GET_SIZE(closure) == code->co_nfreevars) {
        int offset = code->co_nlocals + code->co_nplaincellvars;
        for (int i = 0; i < code->co_nfreevars; i++) {
            Py_XSETREF(fr->localsplus[offset + i], Py_NewRef(PyTuple_GET_ITEM(closure, i)));
        }
    }
    Py_ssize_t units = Py_SIZE(code);
    Py_ssize_t at = lasti >= 0 ? lasti / 2 : 0;
    fr->prev_instr = _PyCode_CODE(code) + (at < units ? at : 0);
    return (PyObject *)f;
}

/* The Python frame currently executing on this thread (the caller of a C function or slot):
 * its function, code and localsplus (all borrowed). Returns -1 if there is none. */
int poppy_shim_current_frame(PyObject **func, PyObject **code, PyObject *const **locals) {
    _PyInterpreterFrame *fr = PyThreadState_Get()->cframe->current_frame;
    if (fr == NULL) {
        return -1;
    }
    *func = (PyObject *)fr->f_func;
    *code = (PyObject *)fr->f_code;
    *locals = fr->localsplus;
    return 0;
}

/* Make the currently executing frame's last instruction the code unit at byte offset `offset`
 * of its code, if that is `code` (so that the traceback entry CPython is about to add for it,
 * when the pending exception leaves the instruction, shows that unit's position). Exception
 * handling is unaffected: CPython 3.11 looks the handler up from the instruction it actually
 * executed (INSTR_OFFSET, from next_instr), not from prev_instr. */
void poppy_shim_point_frame_at(PyObject *code, int offset) {
    _PyInterpreterFrame *fr = PyThreadState_Get()->cframe->current_frame;
    if (fr == NULL || (PyObject *)fr->f_code != code || offset < 0 || offset / 2 >= Py_SIZE(code)) {
        return;
    }
    fr->prev_instr = _PyCode_CODE(fr->f_code) + offset / 2;
}

/* Byte offset of the currently executing frame's last instruction, if its code is `code`. */
int poppy_shim_frame_offset(PyObject *code) {
    _PyInterpreterFrame *fr = PyThreadState_Get()->cframe->current_frame;
    if (fr == NULL || (PyObject *)fr->f_code != code) {
        return -1;
    }
    return (int)(fr->prev_instr - _PyCode_CODE(fr->f_code)) * 2;
}

/* The version tag of a dict (CPython 3.11 `ma_version_tag`): changes whenever the dict is
 * modified. The guard on the globals a run read eagerly compares it (src/host/globals_guard). */
unsigned long long poppy_shim_dict_version(PyObject *dict) {
    return (unsigned long long)((PyDictObject *)dict)->ma_version_tag;
}
