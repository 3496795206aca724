/* CPython internals for intercepting @poppy functions (the only C, and the only code that
 * includes internal headers). Written for CPython 3.11, 3.12 and 3.13: the frame layout differs
 * between them, and each difference is one `#if` below (see docs/versions.md).
 *
 * poppy_jit installs no PEP 523 eval-frame function (that would make CPython stop inlining
 * Python-to-Python calls and specialising CALL for every Python function). A @poppy function
 * gets a copy of its code with a prologue instead (python/poppy_jit/_prologue.py) whose runtime
 * object reads the running frame through this file: its function and the arguments CPython has
 * already bound in localsplus. The frame stays CPython's, which clears and pops it as usual.
 * Here too: the co_extra index for the per-code translation cache, and frame objects standing for
 * @poppy frames that inlining replaced, for tracebacks.
 *
 * On 3.13 the frame's instruction pointer (`instr_ptr`) is the instruction executing, not the
 * last one executed (3.11/3.12's `prev_instr`): during the prologue both are its BINARY_SUBSCR,
 * so reading and moving it means the same on every version. 3.13 too looks up exception handlers
 * from the instruction actually executed (next_instr), not from `instr_ptr`.
 */
#include "poppy_shim.h"
#include <stddef.h>
#include "frameobject.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 11 || PY_MINOR_VERSION > 13
#error "poppy_shim.c is written against the frame layouts of CPython 3.11, 3.12 and 3.13"
#endif

/* One name per version for the frame fields this file reads and writes. */
#if PY_MINOR_VERSION == 11
#define FRAME_FUNC(fr) ((PyObject *)(fr)->f_func)
#define FRAME_CODE(fr) ((PyObject *)(fr)->f_code)
#define FRAME_INSTR(fr) ((fr)->prev_instr) /* the last instruction executed */
#define CURRENT_FRAME(ts) ((ts)->cframe->current_frame)
#elif PY_MINOR_VERSION == 12
#define FRAME_FUNC(fr) ((fr)->f_funcobj)
#define FRAME_CODE(fr) ((PyObject *)(fr)->f_code)
#define FRAME_INSTR(fr) ((fr)->prev_instr)
#define CURRENT_FRAME(ts) ((ts)->cframe->current_frame)
#else /* 3.13 */
#define FRAME_FUNC(fr) ((fr)->f_funcobj)
#define FRAME_CODE(fr) ((fr)->f_executable)
#define FRAME_INSTR(fr) ((fr)->instr_ptr) /* the instruction executing */
#define CURRENT_FRAME(ts) ((ts)->current_frame)
#endif

#if PY_MINOR_VERSION >= 12
#define REQUEST_CODE_EXTRA_INDEX PyUnstable_Eval_RequestCodeExtraIndex
#define CODE_SET_EXTRA PyUnstable_Code_SetExtra
#define CODE_GET_EXTRA PyUnstable_Code_GetExtra
#else
#define REQUEST_CODE_EXTRA_INDEX _PyEval_RequestCodeExtraIndex
#define CODE_SET_EXTRA _PyCode_SetExtra
#define CODE_GET_EXTRA _PyCode_GetExtra
#endif

/* Layout assumptions this file and the Rust side (src/py311: byte offsets = 2 x code units,
 * positions and exception-table encodings read by the lifter) rely on: a mismatch fails the
 * build, not a user's program. */
_Static_assert(sizeof(_Py_CODEUNIT) == 2, "code units are two bytes (opcode, oparg)");
_Static_assert(offsetof(PyFrameObject, f_frame) > 0, "PyFrameObject keeps its _PyInterpreterFrame pointer");
_Static_assert(sizeof(((_PyInterpreterFrame *)0)->localsplus[0]) == sizeof(PyObject *),
               "localsplus holds object pointers");
_Static_assert(sizeof(FRAME_INSTR((_PyInterpreterFrame *)0)) == sizeof(_Py_CODEUNIT *),
               "the frame's instruction pointer points at a code unit");

static Py_ssize_t extra_index = -1;

int poppy_shim_init(void (*free_payload)(void *)) {
    if (extra_index >= 0) {
        return 0;
    }
    extra_index = REQUEST_CODE_EXTRA_INDEX(free_payload);
    return extra_index < 0 ? -1 : 0;
}

int poppy_shim_set_mark(PyObject *code, void *payload) {
    if (extra_index < 0 || !PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "poppy_jit: can only mark code objects");
        return -1;
    }
    return CODE_SET_EXTRA(code, extra_index, payload);
}

void *poppy_shim_get_mark(PyObject *code) {
    void *mark = NULL;
    if (extra_index < 0 || !PyCode_Check(code) || CODE_GET_EXTRA(code, extra_index, &mark) != 0) {
        PyErr_Clear();
        return NULL;
    }
    return mark;
}

/* A frame object for `func`'s code, standing for a @poppy frame that the λO run replaced, for a
 * traceback entry (the frame CPython would have had on the stack when the external failed).
 * PyFrame_New gives a frame of the right code whose function is a stand-in without closure;
 * it is replaced by `func` itself (f_globals/f_builtins are borrowed from the function in
 * 3.11-3.13, so they follow it), so that f_locals works even for code with free variables. The arguments
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
    PyObject *stand_in = FRAME_FUNC(fr);
#if PY_MINOR_VERSION == 11
    fr->f_func = (PyFunctionObject *)Py_NewRef(func);
#else
    fr->f_funcobj = Py_NewRef(func);
#endif
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
        int offset = code->co_nlocalsplus - code->co_nfreevars;
        for (int i = 0; i < code->co_nfreevars; i++) {
            Py_XSETREF(fr->localsplus[offset + i], Py_NewRef(PyTuple_GET_ITEM(closure, i)));
        }
    }
    Py_ssize_t units = Py_SIZE(code);
    Py_ssize_t at = lasti >= 0 ? lasti / 2 : 0;
    FRAME_INSTR(fr) = _PyCode_CODE(code) + (at < units ? at : 0);
    return (PyObject *)f;
}

/* The Python frame currently executing on this thread (the caller of a C function or slot):
 * its function, code and localsplus (all borrowed). Returns -1 if there is none. */
int poppy_shim_current_frame(PyObject **func, PyObject **code, PyObject *const **locals) {
    _PyInterpreterFrame *fr = CURRENT_FRAME(PyThreadState_Get());
    if (fr == NULL) {
        return -1;
    }
    *func = FRAME_FUNC(fr);
    *code = FRAME_CODE(fr);
    *locals = fr->localsplus;
    return 0;
}

/* Make the currently executing frame's last instruction the code unit at byte offset `offset`
 * of its code, if that is `code` (so that the traceback entry CPython is about to add for it,
 * when the pending exception leaves the instruction, shows that unit's position). Exception
 * handling is unaffected: CPython 3.11 looks the handler up from the instruction it actually
 * executed (INSTR_OFFSET, from next_instr), not from prev_instr. */
void poppy_shim_point_frame_at(PyObject *code, int offset) {
    _PyInterpreterFrame *fr = CURRENT_FRAME(PyThreadState_Get());
    if (fr == NULL || FRAME_CODE(fr) != code || offset < 0 || offset / 2 >= Py_SIZE(code)) {
        return;
    }
    FRAME_INSTR(fr) = _PyCode_CODE((PyCodeObject *)code) + offset / 2;
}

/* Byte offset of the currently executing frame's last instruction, if its code is `code`. */
int poppy_shim_frame_offset(PyObject *code) {
    _PyInterpreterFrame *fr = CURRENT_FRAME(PyThreadState_Get());
    if (fr == NULL || FRAME_CODE(fr) != code) {
        return -1;
    }
    return (int)(FRAME_INSTR(fr) - _PyCode_CODE((PyCodeObject *)code)) * 2;
}

/* A dict's version for the guard on the globals a run read eagerly (src/host/dispatch.rs,
 * GlobalsGuard; src/pipeline/globals.rs): two reads give the same number only if the dict was
 * not modified in between.
 *
 * 3.11: the dict's version tag (`ma_version_tag`), which CPython bumps on every modification.
 *
 * 3.12 and 3.13: a dict watcher (PEP-less API of 3.12, `PyDict_AddWatcher`; the tag is deprecated
 * there and removed in 3.14). The first read of a dict watches it; the watcher's callback runs
 * before every modification of a watched dict (insert, update, delete, clear, clone — by any code:
 * STORE_GLOBAL, `mod.X = …`, PyDict_SetItem) and gives the dict a new number from one counter.
 * A dict deallocated leaves the table, and one made at its address later gets a new number when
 * first read, so a number is never reused. If no watcher can be had (CPython has 8 slots), the
 * deprecated tag is read as before. POPPY_DICT_GUARD=tag (read once) selects the tag on purpose:
 * for measuring one against the other (docs/versions.md). Called with the GIL held. */
#if PY_MINOR_VERSION >= 12
static unsigned long long dict_tag(PyObject *dict) {
    _Pragma("GCC diagnostic push")
    _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
    return (unsigned long long)((PyDictObject *)dict)->ma_version_tag;
    _Pragma("GCC diagnostic pop")
}

/* Open addressing, linear probing, keyed by the dict's address; tombstones on removal. */
typedef struct {
    PyObject *dict; /* NULL: empty; TOMBSTONE: removed */
    unsigned long long version;
} watched_t;
#define TOMBSTONE ((PyObject *)1)
static watched_t *watched = NULL;
static size_t watched_cap = 0, watched_used = 0; /* used: live entries and tombstones */
static unsigned long long watch_counter = 0;
static int watcher_id = -1; /* -1: not yet tried; -2: none to be had (the tag is read) */

static size_t slot_of(PyObject *dict) {
    size_t mask = watched_cap - 1, i = ((size_t)dict >> 4) * 0x9E3779B97F4A7C15ull & mask;
    while (watched[i].dict != NULL && watched[i].dict != dict) {
        i = (i + 1) & mask;
    }
    return i;
}

/* The entry of `dict`, or NULL. */
static watched_t *find(PyObject *dict) {
    if (watched_cap == 0) {
        return NULL;
    }
    size_t mask = watched_cap - 1, i = ((size_t)dict >> 4) * 0x9E3779B97F4A7C15ull & mask;
    for (size_t n = 0; n < watched_cap && watched[i].dict != NULL; n++, i = (i + 1) & mask) {
        if (watched[i].dict == dict) {
            return &watched[i];
        }
    }
    return NULL;
}

/* A new entry for `dict` (not in the table), or NULL when out of memory. */
static watched_t *insert(PyObject *dict) {
    if (2 * (watched_used + 1) > watched_cap) {
        size_t old_cap = watched_cap, cap = old_cap ? old_cap * 2 : 64, live = 0;
        watched_t *old = watched;
        for (size_t i = 0; i < old_cap; i++) {
            live += old[i].dict != NULL && old[i].dict != TOMBSTONE;
        }
        while (2 * (live + 1) > cap) {
            cap *= 2;
        }
        watched = PyMem_RawCalloc(cap, sizeof(watched_t));
        if (watched == NULL) {
            watched = old;
            return NULL;
        }
        watched_cap = cap;
        watched_used = 0;
        for (size_t i = 0; i < old_cap; i++) {
            if (old[i].dict != NULL && old[i].dict != TOMBSTONE) {
                watched[slot_of(old[i].dict)] = old[i];
                watched_used++;
            }
        }
        PyMem_RawFree(old);
    }
    watched_t *e = &watched[slot_of(dict)];
    e->dict = dict;
    watched_used++;
    return e;
}

static int on_dict_event(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value) {
    (void)key;
    (void)new_value;
    watched_t *e = find(dict);
    if (e == NULL) {
        return 0; /* watched by this watcher id before its entry could be made: never read */
    }
    if (event == PyDict_EVENT_DEALLOCATED) {
        e->dict = TOMBSTONE;
    } else {
        e->version = ++watch_counter;
    }
    return 0;
}

static int use_watcher(void) {
    if (watcher_id == -1) {
        const char *env = getenv("POPPY_DICT_GUARD");
        if (env != NULL && strcmp(env, "tag") == 0) {
            watcher_id = -2;
        } else {
            watcher_id = PyDict_AddWatcher(on_dict_event);
            if (watcher_id < 0) {
                PyErr_Clear();
                watcher_id = -2;
            }
        }
    }
    return watcher_id >= 0;
}
#endif

unsigned long long poppy_shim_dict_version(PyObject *dict) {
#if PY_MINOR_VERSION >= 12
    if (!use_watcher()) {
        return dict_tag(dict);
    }
    watched_t *e = find(dict);
    if (e != NULL) {
        return e->version;
    }
    e = insert(dict);
    if (e == NULL || PyDict_Watch(watcher_id, dict) < 0) {
        /* Out of memory: a number never given before and never given again, so the guard
         * always takes the dict for modified (it then compares every name it read). */
        PyErr_Clear();
        if (e != NULL) {
            e->dict = TOMBSTONE;
        }
        return ++watch_counter | (1ull << 63);
    }
    e->version = ++watch_counter;
    return e->version;
#else
    return (unsigned long long)((PyDictObject *)dict)->ma_version_tag;
#endif
}
