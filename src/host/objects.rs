//! Per-object ordering, host side: keys (identities) of the lists, dicts and sets a call can
//! reach, which results are fresh containers the run owns, and which calls touch nothing but
//! one owned receiver (`poppy_jit._objects` decides; see `ObjInfo` in the evaluator).
use super::PyHost;
use crate::control::{Partial, Scope};
use crate::pyobj::Obj;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

pub(super) struct ObjectsApi<'py> {
    makers: std::collections::HashSet<usize>,
    /// `MAKERS_WITHOUT_KEYWORDS`: make a fresh object only when called with positional
    /// arguments alone (`json.loads(s)`; its `object_hook=`/`cls=` may return anything).
    positional_makers: std::collections::HashSet<usize>,
    /// `poppy_jit._annotations._ARGUMENTS_UNREAD` (ids, filled when `poppy_jit._rt` defines
    /// the helpers): the runtime's helpers that neither read nor keep their arguments
    /// (`is_caught(v)` after each operation of a try body): handing them a container is no
    /// escape.
    arguments_unread: std::collections::HashSet<usize>,
    fresh_args: Bound<'py, PyAny>,
    scope: Bound<'py, PyAny>,
    scope_pending: Bound<'py, PyAny>,
    read_passes: Bound<'py, PyAny>,
    pending: Bound<'py, PyAny>,
    owned_ok: Bound<'py, PyAny>,
    maker: Bound<'py, PyAny>,
    /// `poppy_jit._regions.Region`: a region call that declines on every container reaches
    /// none, so it is no escape (`object_keys`).
    region: Bound<'py, PyAny>,
    /// `poppy_jit._intrinsics.LazyIter`: a lazy `for` loop's iterator stands for the one
    /// container it reads (`src`), if any (`collect_keys`).
    lazy_iter: Bound<'py, PyAny>,
    /// `poppy_jit._objects.HOLDER_TYPES` (as type addresses) and `held`: an iterator wrapper
    /// stands for the containers it holds.
    holder_types: Vec<usize>,
    held: Bound<'py, PyAny>,
    /// `iter_private` and what replaces it on a container the run owns and has handed to
    /// nobody (`local_variant`): reading the items at once.
    iter_private: Bound<'py, PyAny>,
    iter_fold: Bound<'py, PyAny>,
}

/// The key of an exact list, dict or set (its address), if `o` is one.
fn container_key(o: &Bound<'_, PyAny>) -> Option<u64> {
    use pyo3::types::{PyList, PySet};
    (o.is_exact_instance_of::<PyList>() || o.is_exact_instance_of::<PyDict>() || o.is_exact_instance_of::<PySet>())
        .then(|| o.as_ptr() as u64)
}

/// The key of the list/dict/set a builtin method object is bound to.
fn method_receiver_key(f: &Bound<'_, PyAny>) -> Option<u64> {
    // SAFETY: PyCFunction_Check only reads the type of a live object (GIL held).
    if unsafe { pyo3::ffi::PyCFunction_Check(f.as_ptr()) } == 0 {
        return None;
    }
    // SAFETY: `f` is a live PyCFunction (checked above); its self is a borrowed reference (or
    // NULL for a function without one) that `f` keeps alive while we look at it.
    let slf = unsafe { pyo3::ffi::PyCFunction_GetSelf(f.as_ptr()) };
    let slf = unsafe { Bound::from_borrowed_ptr_or_opt(f.py(), slf) }?;
    container_key(&slf)
}

/// What `collect_keys` sees through: lazy loops' iterators and iterator wrappers.
struct Holders<'py> {
    lazy_iter: Bound<'py, PyAny>,
    types: Vec<usize>,
    held: Bound<'py, PyAny>,
}

/// Keys of the containers among `o` and, inside tuples, their items (`lazy`: the type of a lazy
/// loop's iterator, which stands for the container it reads, and the iterator wrappers that hold
/// one; `subclasses`: inside instances of tuple subclasses too, read at the C level: no user code).
fn collect_keys_in(o: &Bound<'_, PyAny>, lazy: Option<&Holders<'_>>, out: &mut Vec<u64>, depth: u32, subclasses: bool) {
    if let Some(k) = container_key(o) {
        out.push(k);
    } else if let Some(k) = method_receiver_key(o) {
        out.push(k); // `lst.append` given away gives the list away
    } else if lazy.is_some_and(|h| o.get_type().is(&h.lazy_iter)) {
        if let Some(k) = o.getattr(pyo3::intern!(o.py(), "src")).ok().and_then(|s| container_key(&s)) {
            out.push(k);
        }
    } else if let Some(h) = lazy.filter(|h| h.types.contains(&(o.get_type().as_ptr() as usize))) {
        if let Ok(t) = h.held.call1((o,)) {
            if let Ok(t) = t.downcast::<PyTuple>() {
                out.extend(t.iter().filter_map(|c| container_key(&c)));
            }
        }
    } else if depth < 8 {
        let t = if subclasses { o.downcast::<PyTuple>().ok().cloned() } else { o.downcast_exact::<PyTuple>().ok().cloned() };
        if let Some(t) = t {
            for x in t.iter() {
                collect_keys_in(&x, lazy, out, depth + 1, subclasses);
            }
        }
    }
}

fn collect_keys(o: &Bound<'_, PyAny>, lazy: Option<&Holders<'_>>, out: &mut Vec<u64>, depth: u32) {
    collect_keys_in(o, lazy, out, depth, false)
}

fn holders<'py>(h: &mut PyHost<'py>) -> Option<Holders<'py>> {
    h.objects_api().map(|api| Holders { lazy_iter: api.lazy_iter.clone(), types: api.holder_types.clone(), held: api.held.clone() })
}

/// `Host::reach_keys`: the keys `arg_keys` gives, looking into tuple subclasses as well (a
/// region's `Outputs` holds the containers it made; internal code not yet run may take them
/// out). Anything else holding an owned container got it from a call, which was an escape.
pub(super) fn reach_keys<'py>(h: &mut PyHost<'py>, values: &[Obj]) -> Vec<u64> {
    let py = h.py;
    let lazy = holders(h);
    let mut out = Vec::new();
    for a in values {
        collect_keys_in(a.bind(py), lazy.as_ref(), &mut out, 0, true);
    }
    out
}

impl<'py> PyHost<'py> {
    fn objects_api(&mut self) -> Option<&ObjectsApi<'py>> {
        if self.objects.is_none() {
            let m = self.py.import_bound("poppy_jit._objects").ok()?;
            let makers: std::collections::HashSet<usize> = m.getattr("MAKERS").ok()?.extract().ok()?;
            let positional_makers: std::collections::HashSet<usize> =
                m.getattr("MAKERS_WITHOUT_KEYWORDS").ok()?.extract().ok()?;
            self.py.import_bound("poppy_jit._rt").ok()?;
            let arguments_unread: std::collections::HashSet<usize> =
                self.py.import_bound("poppy_jit._annotations").ok()?.getattr("_ARGUMENTS_UNREAD").ok()?.extract().ok()?;
            self.objects = Some(ObjectsApi {
                makers,
                positional_makers,
                arguments_unread,
                fresh_args: m.getattr("FRESH_ARGS").ok()?,
                scope: m.getattr("scope").ok()?,
                scope_pending: m.getattr("scope_pending").ok()?,
                read_passes: m.getattr("read_passes").ok()?,
                pending: m.getattr("PENDING").ok()?,
                owned_ok: m.getattr("owned_ok").ok()?,
                maker: m.getattr("maker").ok()?,
                region: self.py.import_bound("poppy_jit._regions").ok()?.getattr("Region").ok()?,
                holder_types: m
                    .getattr("HOLDER_TYPES")
                    .ok()?
                    .iter()
                    .ok()?
                    .filter_map(|t| t.ok().map(|t| t.as_ptr() as usize))
                    .collect(),
                held: m.getattr("held").ok()?,
                lazy_iter: self.py.import_bound("poppy_jit._intrinsics").ok()?.getattr("LazyIter").ok()?,
                iter_private: self.py.import_bound("poppy_jit._intrinsics").ok()?.getattr("_iter_private").ok()?,
                iter_fold: self.py.import_bound("poppy_jit._intrinsics").ok()?.getattr("_iter_fold").ok()?,
            });
        }
        self.objects.as_ref()
    }
}

pub(super) fn fresh_key<'py>(h: &mut PyHost<'py>, f: &Obj, result: &Obj, keywords: bool) -> Option<u64> {
    let py = h.py;
    let r = result.bind(py);
    let key = container_key(r)?;
    let api = h.objects_api()?;
    let f = f.bind(py);
    let maker = if f.get_type().is(&api.fresh_args) {
        f.getattr("fn").ok().map(|x| x.as_ptr() as usize)
    } else {
        Some(f.as_ptr() as usize)
    };
    // A Python predicate that raises counts as false: the object is then not owned.
    let holds = |pred: &Bound<'py, PyAny>, x: &Bound<'py, PyAny>| pred.call1((x,)).is_ok_and(|b| b.is_truthy().unwrap_or(false));
    let made = maker.is_some_and(|m| api.makers.contains(&m) || (!keywords && api.positional_makers.contains(&m)));
    if !made && !holds(&api.maker, &f) {
        return None;
    }
    if !r.is_exact_instance_of::<pyo3::types::PyList>() && !holds(&api.owned_ok, r) {
        return None;
    }
    h.owned.push(result.clone_ref(py));
    Some(key)
}

pub(super) fn object_keys<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Obj]) -> Vec<u64> {
    let py = h.py;
    let (region, unread) = match h.objects_api() {
        Some(api) => (f.bind(py).get_type().is(&api.region), api.arguments_unread.contains(&(f.as_ptr() as usize))),
        None => (false, false),
    };
    if unread {
        return Vec::new();
    }
    // A region reaches only the containers it may read (`regions::reached`): passing it one it
    // declines on without touching is not an escape (which would put every later operation on
    // that object in the global order).
    if region {
        if let Some(reached) = super::regions::reached(f.bind(py), args) {
            let lazy = holders(h);
            let mut out = Vec::new();
            for a in reached {
                collect_keys(a.bind(py), lazy.as_ref(), &mut out, 0);
            }
            return out;
        }
    }
    let mut out = arg_keys(h, args);
    out.extend(method_receiver_key(f.bind(py)));
    out
}

pub(super) fn arg_keys<'py>(h: &mut PyHost<'py>, args: &[Obj]) -> Vec<u64> {
    let py = h.py;
    let lazy = holders(h);
    let mut out = Vec::new();
    for a in args {
        collect_keys(a.bind(py), lazy.as_ref(), &mut out, 0);
    }
    out
}

pub(super) fn scope<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Obj], kwnames: &[String]) -> Option<Scope<Obj>> {
    let py = h.py;
    let api = h.objects_api()?;
    let args_t = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
    let kw = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    let r = api.scope.call1((f.bind(py), args_t, kw)).ok()?;
    if r.is_none() {
        return None;
    }
    let (recv, write, rest, part, recheck): (Bound<'_, PyAny>, Option<bool>, Bound<'_, PyTuple>, Option<isize>, bool) = r.extract().ok()?;
    let key = container_key(&recv)?;
    Some(Scope { recv: key, write, part: part.map(|h| h as u64), rest: rest.iter().map(|x| x.unbind()).collect(), recheck })
}

/// `scope` for a call with pending arguments, which `poppy_jit._objects.scope_pending` sees as
/// its `PENDING` marker (a tuple with pending items as a tuple of its leaves): (receiver key,
/// writes?, part) when they can only be stored values.
pub(super) fn scope_pending<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Partial<Obj>], kwnames: &[String]) -> Option<(u64, bool, Option<u64>)> {
    let py = h.py;
    let api = h.objects_api()?;
    fn to_py<'py>(py: Python<'py>, pending: &Bound<'py, PyAny>, a: &Partial<Obj>) -> Bound<'py, PyAny> {
        match a {
            Partial::Known(a) => a.bind(py).clone(),
            Partial::Pending => pending.clone(),
            Partial::Tuple(items) => PyTuple::new_bound(py, items.iter().map(|x| to_py(py, pending, x))).into_any(),
        }
    }
    let args_t = PyTuple::new_bound(py, args.iter().map(|a| to_py(py, &api.pending, a)));
    let kw = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    let r = api.scope_pending.call1((f.bind(py), args_t, kw)).ok()?;
    if r.is_none() {
        return None;
    }
    let (recv, write, part): (Bound<'_, PyAny>, bool, Option<isize>) = r.extract().ok()?;
    Some((container_key(&recv)?, write, part.map(|h| h as u64)))
}

/// `Host::read_passes`: `poppy_jit._objects.read_passes(f, args, kwnames, writes)`, each write
/// as (callee, arguments) with pending ones as its `PENDING` marker. A Python error counts as
/// false (the read then waits for the writes, as any readonly call does).
pub(super) fn read_passes<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Obj], kwnames: &[String], writes: &[(Obj, Vec<Partial<Obj>>)]) -> bool {
    let py = h.py;
    let Some(api) = h.objects_api() else { return false };
    let pending = api.pending.clone();
    let ws = writes.iter().map(|(wf, wa)| {
        let items = wa.iter().map(|a| match a {
            Partial::Known(o) => o.bind(py).clone(),
            _ => pending.clone(),
        });
        PyTuple::new_bound(py, [wf.bind(py).clone(), PyTuple::new_bound(py, items).into_any()])
    });
    let ws = PyTuple::new_bound(py, ws);
    let args_t = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
    let kw = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    api.read_passes.call1((f.bind(py), args_t, kw, ws)).is_ok_and(|r| r.is_truthy().unwrap_or(false))
}

/// `Host::local_variant`: a loop's `iter_private` read of a container the run owns and has handed
/// to nobody becomes `_iter_fold` (the body hands it to nobody either:
/// `bezoar::passes::private_iterables`).
pub(super) fn local_variant<'py>(h: &mut PyHost<'py>, f: &Obj) -> Option<Obj> {
    let py = h.py;
    let api = h.objects_api()?;
    f.bind(py).is(&api.iter_private).then(|| api.iter_fold.clone().unbind())
}

/// The key of an argument the run may own from its start: an exact list, or a dict whose keys
/// are all atoms (`owned_ok`), that nothing but the frame's own slot references (`refcnt`, read
/// before the run takes its own references). Lists and dicts cannot be weakly referenced, so
/// no other code can reach it (short of walking the garbage collector's objects or a frame's
/// locals by introspection).
pub(crate) fn private_arg<'py>(h: &mut PyHost<'py>, o: &Bound<'py, PyAny>, refcnt: isize) -> Option<u64> {
    use pyo3::types::PyList;
    if refcnt != 1 || !(o.is_exact_instance_of::<PyList>() || o.is_exact_instance_of::<PyDict>()) {
        return None;
    }
    let api = h.objects_api()?;
    if !o.is_exact_instance_of::<PyList>() && !api.owned_ok.call1((o,)).is_ok_and(|b| b.is_truthy().unwrap_or(false)) {
        return None;
    }
    Some(o.as_ptr() as u64)
}
