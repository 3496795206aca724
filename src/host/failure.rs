//! A failed run's exception as CPython would show it: traceback entries for the @poppy frames the
//! run replaced (`poppy_jit._traceback`), notes (PEP 678) for what they cannot show, and Python
//! exceptions for the evaluator's own errors.
use super::{PyErrRef, PyHost};
use crate::pyobj::Obj;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

pub(super) fn note_failure<'py>(h: &mut PyHost<'py>, e: PyErrRef, line: u32, later: Vec<Obj>) -> PyErrRef {
    // The @poppy function's frame is not on the stack while λO runs: put the entries CPython
    // would have had into the traceback (poppy_jit._traceback), with a note (PEP 678) for
    // what they cannot show.
    let py = h.py;
    let err = e.to_pyerr(py);
    let value = err.value_bound(py).clone();
    // A fetched error keeps its traceback beside the value until it is raised again.
    if let Some(tb) = err.traceback_bound(py) {
        let _ = value.setattr("__traceback__", tb);
    }
    // An exception a compiled handler caught and no handler matched (`_rt.reraise`): it failed
    // where it was caught, not at the re-raise, with the traceback it had then (the entries
    // `caught` added for the handlers are placed again below).
    let line = match reraised_at(h, &value) {
        Some((at, tb)) => {
            let _ = value.setattr("__traceback__", tb.bind(py));
            at
        }
        None => line,
    };
    let mut notes = Vec::new();
    if line > 0 {
        let placed = match &h.frame {
            Some((func, args)) => py.import_bound("poppy_jit._traceback").and_then(|m| {
                let args = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
                let inlined = pyo3::types::PyList::new_bound(py, h.inlined.iter().map(|(f, _, _)| f.bind(py)));
                m.call_method1("place", (&value, func.bind(py), args, inlined, line, h.frame_on_stack))
            }),
            None => Ok(PyString::new_bound(
                py,
                &format!("poppy_jit: raised by the external call at line {line} of {}", h.run_name),
            )
            .into_any()),
        };
        let placed = placed.and_then(|r| {
            if r.is_instance_of::<PyTuple>() {
                let (note, site): (Bound<'_, PyAny>, Option<(u32, i32)>) = r.extract()?;
                h.top_site = site;
                Ok(note)
            } else {
                Ok(r)
            }
        });
        match placed {
            Ok(note) if note.is_none() => {}
            Ok(note) => notes.push(note.to_string()),
            Err(tb_err) => {
                tb_err.print(py);
                notes.push(format!("poppy_jit: raised by the external call at line {line} of {}", h.run_name));
            }
        }
    }
    if !later.is_empty() {
        let names: Vec<String> = later
            .iter()
            .map(|f| {
                let f = f.bind(py);
                f.getattr("__qualname__")
                    .or_else(|_| f.getattr("__name__"))
                    .and_then(|n| n.extract::<String>())
                    .unwrap_or_else(|_| f.get_type().name().map(|n| n.to_string()).unwrap_or_default())
            })
            .collect();
        notes.push(format!(
            "poppy_jit: this call is @unordered and ran concurrently with {} later ordered \
             call(s) that had already run when it failed: {}",
            names.len(),
            names.join(", ")
        ));
    }
    for note in notes {
        let _ = value.call_method1("add_note", (note,));
    }
    // A fresh PyErr, so that restoring it raises the traceback set on the value.
    PyErrRef::new(PyErr::from_value_bound(value.into_any()))
}

pub(super) fn internal_error<'py>(h: &mut PyHost<'py>, kind: &str, msg: &str) -> PyErrRef {
    let py = h.py;
    let err = py
        .import_bound("builtins")
        .and_then(|b| b.getattr(kind))
        .and_then(|cls| cls.call1((msg,)))
        .map(|e| {
            // CPython names the variable of a NameError it raises (`name`, for the traceback's
            // suggestions): the free variable a comprehension read unbound.
            if let Some(name) = msg.strip_prefix("cannot access free variable '").and_then(|r| r.split('\'').next()) {
                if kind == "NameError" {
                    let _ = e.setattr("name", name);
                }
            }
            PyErr::from_value_bound(e)
        })
        .unwrap_or_else(|e| e);
    PyErrRef::new(err)
}

/// The value of a catching call that failed with `e` at `line`: a `poppy_jit._rt.Caught`
/// holding the exception, with the traceback the fetched error kept beside it set on it.
pub(super) fn caught<'py>(h: &mut PyHost<'py>, e: PyErrRef, line: u32) -> Obj {
    let py = h.py;
    let err = e.to_pyerr(py);
    let value = err.value_bound(py).clone();
    if let Some(tb) = err.traceback_bound(py) {
        let _ = value.setattr("__traceback__", tb);
    }
    let tb = value.getattr("__traceback__").map(|t| t.unbind()).unwrap_or_else(|_| py.None());
    h.caught_at.push((value.clone().into_any().unbind(), line, tb));
    // The handlers see the traceback CPython's would have when the exception reaches them: the
    // entries of the run's @poppy frames down to the raising line first.
    if line > 0 {
        if let Some((func, args)) = &h.frame {
            let placed = py.import_bound("poppy_jit._traceback").and_then(|m| {
                let args = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
                let inlined = pyo3::types::PyList::new_bound(py, h.inlined.iter().map(|(f, _, _)| f.bind(py)));
                m.call_method1("place", (&value, func.bind(py), args, inlined, line, false))
            });
            if let Err(e) = placed {
                e.print(py);
            }
        }
    }
    crate::pyobj::rt_module(py)
        .and_then(|m| m.getattr("Caught"))
        .and_then(|c| c.call1((value, line)))
        .map(|v| v.unbind())
        .expect("poppy_jit._rt.Caught")
}

/// The line where `value` was caught and its traceback then, when it fails now through
/// `_rt.reraise` (the first entry of its traceback); None for any other failure.
fn reraised_at(h: &PyHost<'_>, value: &Bound<'_, PyAny>) -> Option<(u32, Obj)> {
    let py = h.py;
    let code = value.getattr("__traceback__").ok()?.getattr("tb_frame").ok()?.getattr("f_code").ok()?;
    let reraise = h.rt.getattr("RERAISE_CODE").ok()?;
    if !code.is(&reraise) {
        return None;
    }
    h.caught_at.iter().rev().find(|(v, _, _)| v.bind(py).is(value)).map(|(_, line, tb)| (*line, tb.clone_ref(py)))
}
