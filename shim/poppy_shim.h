/* The C side of poppy_jit's interception of @poppy frames. Everything that touches CPython's
 * internal frame layout (3.11, 3.12, 3.13) is in poppy_shim.c; Rust sees only this interface. */
#ifndef POPPY_SHIM_H
#define POPPY_SHIM_H
#include <Python.h>

/* Reserve the co_extra index (once); `free_payload` frees a mark with its code object. */
int poppy_shim_init(void (*free_payload)(void *));
int poppy_shim_set_mark(PyObject *code, void *payload);
void *poppy_shim_get_mark(PyObject *code);
/* A frame object standing for `func`'s frame stopped at byte offset `lasti` with the given
 * arguments (a traceback entry for a frame the runtime replaced). New reference or NULL. */
PyObject *poppy_shim_frame(PyObject *func, PyObject *const *args, Py_ssize_t nargs, int lasti);
/* The currently executing Python frame's function, code and localsplus (borrowed); -1 if none. */
int poppy_shim_current_frame(PyObject **func, PyObject **code, PyObject *const **locals);
/* Point the currently executing frame (if its code is `code`) at byte offset `offset`. */
void poppy_shim_point_frame_at(PyObject *code, int offset);
/* Byte offset of the currently executing frame's last instruction if its code is `code`, else -1. */
int poppy_shim_frame_offset(PyObject *code);
#endif
