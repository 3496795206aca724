/* The C side of poppy_jit's PEP 523 hook. Everything that touches CPython 3.11's internal frame
 * layout is in poppy_shim.c; Rust sees only this interface. */
#ifndef POPPY_SHIM_H
#define POPPY_SHIM_H
#include <Python.h>

/* Called for a frame whose code object carries a poppy mark. `payload` is the mark, `func` the
 * function object (borrowed), `locals` the frame's localsplus array (borrowed; the arguments are
 * already bound by CPython). Returns a new reference, NULL with an exception set, or
 * poppy_shim_decline() to let the frame run normally. */
typedef PyObject *(*poppy_handler_t)(void *payload, PyObject *func, PyObject *const *locals);

int poppy_shim_init(poppy_handler_t handler, void (*free_payload)(void *));
int poppy_shim_install(void);
int poppy_shim_uninstall(void);
int poppy_shim_is_installed(void);
int poppy_shim_set_mark(PyObject *code, void *payload);
void *poppy_shim_get_mark(PyObject *code);
PyObject *poppy_shim_decline(void);
/* A frame object standing for `func`'s frame stopped at byte offset `lasti` with the given
 * arguments (a traceback entry for a frame the runtime replaced). New reference or NULL. */
PyObject *poppy_shim_frame(PyObject *func, PyObject *const *args, Py_ssize_t nargs, int lasti);
/* The currently executing Python frame's function, code and localsplus (borrowed); -1 if none. */
int poppy_shim_current_frame(PyObject **func, PyObject **code, PyObject *const **locals);
/* Point the currently executing frame (if its code is `code`) at byte offset `offset`. */
void poppy_shim_point_frame_at(PyObject *code, int offset);
#endif
