/* Test-only PEP 523 user: counts the frames it sees and passes them on to whatever evaluator was
 * installed before it. Used to check that poppy_jit chains with another eval-frame function. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static _PyFrameEvalFunction previous = NULL;
static long long frames = 0;

static PyObject *counting_eval(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag) {
    frames++;
    return previous(ts, f, throwflag);
}

static PyObject *install(PyObject *self, PyObject *unused) {
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    previous = _PyInterpreterState_GetEvalFrameFunc(interp);
    _PyInterpreterState_SetEvalFrameFunc(interp, counting_eval);
    Py_RETURN_NONE;
}

static PyObject *uninstall(PyObject *self, PyObject *unused) {
    _PyInterpreterState_SetEvalFrameFunc(PyThreadState_Get()->interp, previous);
    Py_RETURN_NONE;
}

static PyObject *count(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(frames); }

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, NULL},
    {"uninstall", uninstall, METH_NOARGS, NULL},
    {"count", count, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "chainer", NULL, -1, methods};

PyMODINIT_FUNC PyInit_chainer(void) { return PyModule_Create(&module); }
