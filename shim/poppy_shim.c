/* PEP 523 eval-frame hook for CPython 3.11 (the only file that includes internal headers).
 *
 * Fast path: a frame whose code object has no co_extra costs one pointer test before being handed
 * to whatever evaluator was installed before us (so poppy_jit chains with other PEP 523 users).
 * A marked code object runs through the Rust handler; the handler may decline, and the frame then
 * runs normally. The frame itself is always cleared and popped by CPython's caller
 * (_PyEval_Vector), exactly as for a normally evaluated frame: the handler only borrows the
 * already-bound arguments from localsplus.
 */
#include "poppy_shim.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION != 11
#error "poppy_shim.c is written against CPython 3.11's frame layout"
#endif

static Py_ssize_t extra_index = -1;
static poppy_handler_t handler = NULL;
static _PyFrameEvalFunction previous_eval = NULL;
static int installed = 0;
static char decline_marker;

PyObject *poppy_shim_decline(void) { return (PyObject *)&decline_marker; }

static PyObject *run_previous(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    if (previous_eval != NULL && previous_eval != _PyEval_EvalFrameDefault) {
        return previous_eval(ts, frame, throwflag);
    }
    return _PyEval_EvalFrameDefault(ts, frame, throwflag);
}

static PyObject *poppy_eval_frame(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    PyCodeObject *code = frame->f_code;
    if (code->co_extra != NULL && !throwflag && frame->owner == FRAME_OWNED_BY_THREAD) {
        void *mark = NULL;
        if (_PyCode_GetExtra((PyObject *)code, extra_index, &mark) == 0 && mark != NULL) {
            PyObject *result = handler(mark, (PyObject *)frame->f_func, frame->localsplus);
            if (result != poppy_shim_decline()) {
                return result;
            }
        }
    }
    return run_previous(ts, frame, throwflag);
}

int poppy_shim_init(poppy_handler_t h, void (*free_payload)(void *)) {
    if (extra_index >= 0) {
        return 0;
    }
    handler = h;
    extra_index = _PyEval_RequestCodeExtraIndex(free_payload);
    return extra_index < 0 ? -1 : 0;
}

int poppy_shim_install(void) {
    if (installed) {
        return 0;
    }
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    previous_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
    _PyInterpreterState_SetEvalFrameFunc(interp, poppy_eval_frame);
    installed = 1;
    return 0;
}

int poppy_shim_uninstall(void) {
    if (!installed) {
        return 0;
    }
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != poppy_eval_frame) {
        /* Someone chained on top of us; removing ourselves would evict them. */
        PyErr_SetString(PyExc_RuntimeError,
                        "poppy_jit: another PEP 523 eval-frame function was installed after "
                        "poppy_jit's; uninstall it first");
        return -1;
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
    installed = 0;
    return 0;
}

int poppy_shim_is_installed(void) { return installed; }

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
