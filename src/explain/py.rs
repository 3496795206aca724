//! The Python entry of the overlap analysis, and its oracle: the Python host's own
//! classification applied to stand-in values.
//!
//! `_core.overlaps(fn)` compiles `fn` with the runtime's pipeline (`hook::compile_function`),
//! parses the Bezoar text it produces back into the IR and analyses that; `_core.overlaps(text,
//! globals)` analyses Bezoar text against a globals dict. Callees are resolved in the globals
//! (then builtins) and asked about with the same code a run uses: `PyHost`'s `classify_callee`,
//! `classify`, `result_hint`, `fresh_key`, `object_keys` and `scope` (the `Host` trait),
//! `hook::compile_function` for @poppy callees (inlined when they compile), `pool::timer_duration` for `time.sleep`. Values are
//! stand-ins: `""` for plain data, a fresh `[]`/`{}`/`set()` per container the run creates (so
//! per-object ordering sees distinct objects), bound methods of those for `x.append`.
//! Whether an external runs off the evaluator thread is read from its `__poppy_external__`
//! spec (`is_async`, `blocking`) as `host::describe` does.
use super::oracle::*;
use super::overlap::analyse;
use crate::bezoar::{self as bz, Const};
use crate::host::PyHost;
use crate::pyobj::Obj;
use crate::lambda_o::Host;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyFunction, PyList, PyModule, PySet, PyString, PyTuple, PyType};
use std::collections::HashMap;

struct PyOracle<'py> {
    py: Python<'py>,
    host: PyHost<'py>,
    rt: Bound<'py, PyModule>,
    globals: Bound<'py, PyDict>,
    /// Resolved values (`AVal::Known`).
    known: Vec<Obj>,
    by_name: HashMap<String, AVal>,
    /// The stand-in of each owned container, and the reverse map by address.
    owned: HashMap<ObjId, Obj>,
    owned_by_key: HashMap<u64, ObjId>,
    /// (callee, nargs, kwnames) → whether a run inlines such a call (`inlined`).
    internal: HashMap<(usize, usize, Vec<String>), (Obj, bool)>,
}

impl<'py> PyOracle<'py> {
    fn new(py: Python<'py>, globals: Bound<'py, PyDict>) -> PyResult<Self> {
        Ok(PyOracle {
            py,
            host: PyHost::new(py, "explain")?,
            rt: crate::pyobj::rt_module(py)?,
            globals,
            known: Vec::new(),
            by_name: HashMap::new(),
            owned: HashMap::new(),
            owned_by_key: HashMap::new(),
            internal: HashMap::new(),
        })
    }

    fn know(&mut self, o: Bound<'py, PyAny>) -> AVal {
        self.known.push(o.unbind());
        AVal::Known(self.known.len() as u32 - 1)
    }

    fn empty(&self, ty: Ctype) -> Bound<'py, PyAny> {
        let py = self.py;
        match ty {
            Ctype::List => PyList::empty_bound(py).into_any(),
            Ctype::Dict => PyDict::new_bound(py).into_any(),
            Ctype::Set => PySet::empty_bound(py).expect("an empty set").into_any(),
        }
    }

    /// A value of the kind `v` describes, if there is one.
    fn stand_in(&mut self, v: &AVal) -> Option<Bound<'py, PyAny>> {
        let py = self.py;
        Some(match v {
            AVal::Atom => PyString::new_bound(py, "").into_any(),
            AVal::Tuple(items) => {
                let items: Option<Vec<_>> = items.iter().map(|i| self.stand_in(i)).collect();
                PyTuple::new_bound(py, items?).into_any()
            }
            AVal::Items(e) => PyTuple::new_bound(py, [self.stand_in(e)?]).into_any(),
            AVal::Obj(o, ty) => {
                if !self.owned.contains_key(o) {
                    let c = self.empty(*ty);
                    self.owned_by_key.insert(c.as_ptr() as u64, *o);
                    self.owned.insert(*o, c.unbind());
                }
                self.owned[o].bind(py).clone()
            }
            AVal::Foreign(ty) => self.empty(*ty),
            AVal::Known(h) => self.known[*h as usize].bind(py).clone(),
            AVal::Method(recv, name) => self.method(recv, name)?,
            AVal::Any(_) => return None,
        })
    }

    /// `recv.name` on a stand-in receiver (plain data: the first atom type that has it).
    fn method(&mut self, recv: &AVal, name: &str) -> Option<Bound<'py, PyAny>> {
        let py = self.py;
        if let AVal::Atom = recv {
            let atoms: [Bound<'py, PyAny>; 4] = [
                PyString::new_bound(py, "").into_any(),
                0i64.into_py(py).into_bound(py),
                PyFloat::new_bound(py, 0.0).into_any(),
                PyBytes::new_bound(py, b"").into_any(),
            ];
            return atoms.iter().find_map(|a| a.getattr(name).ok());
        }
        if let AVal::Known(_) = recv {
            return None; // attributes of real objects are resolved by the getattr itself
        }
        self.stand_in(recv)?.getattr(name).ok()
    }

    fn objects_of(&self, keys: Vec<u64>) -> Vec<ObjId> {
        keys.iter().filter_map(|k| self.owned_by_key.get(k).copied()).collect()
    }

    fn static_operand(&self, c: &Const) -> Bound<'py, PyAny> {
        let py = self.py;
        match c {
            Const::Str(s) => PyString::new_bound(py, s).into_any(),
            Const::Int(i) => i.into_py(py).into_bound(py),
            Const::Bool(b) => b.into_py(py).into_bound(py),
            _ => py.None().into_bound(py),
        }
    }

    /// The callable the runtime would call.
    fn callee(&mut self, callee: &Callee<'_>) -> Option<Bound<'py, PyAny>> {
        match callee {
            Callee::Value(v) => match v {
                AVal::Known(h) => Some(self.known[*h as usize].bind(self.py).clone()),
                AVal::Method(recv, name) => self.method(recv, name),
                _ => None,
            },
            Callee::Intrinsic(op, fresh) => {
                let r = if *fresh != 0 {
                    self.rt.getattr("intrinsic_fresh").and_then(|f| f.call1((op.key(), *fresh)))
                } else {
                    self.rt.getattr("intrinsic").and_then(|f| f.call1((op.key(),)))
                };
                r.ok()
            }
            Callee::Helper(name) => self.rt.getattr("HELPERS").and_then(|h| h.get_item(*name)).ok(),
            Callee::BoundCheck => self.rt.getattr("bound_check").ok(),
        }
    }

    /// Whether a run inlines a call of `f` with `nargs` arguments (the last `kwnames.len()` by
    /// keyword): a @poppy function, or a function of a module named internal, that compiles, is
    /// not a closure, takes no `*args`/`**kwargs`, and whose parameters the call binds
    /// (`host::inlinable`, what the run's `inline_binding` checks; explain may run without
    /// PYTHONPOPPY=1, so the mark of an enabled runtime is not required here).
    fn inlined(&mut self, f: &Bound<'py, PyAny>, nargs: usize, kwnames: &[String]) -> bool {
        let py = self.py;
        if !f.is_instance_of::<PyFunction>() {
            return false;
        }
        let key = (f.as_ptr() as usize, nargs, kwnames.to_vec());
        if let Some((_, yes)) = self.internal.get(&key) {
            return *yes;
        }
        let yes = crate::host::inlinable(py, f, nargs, kwnames);
        self.internal.insert(key, (f.clone().unbind(), yes));
        yes
    }

    /// The `__poppy_external__` spec of a decorated external, read as `host::describe` does.
    fn external_spec(&self, f: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
        if !f.is_instance_of::<PyFunction>() {
            return None;
        }
        let d = f.getattr("__dict__").ok()?.downcast_into::<PyDict>().ok()?;
        d.get_item("__poppy_external__").ok().flatten()
    }

    /// Runs off the evaluator thread: an async or blocking external, or `time.sleep(x)` (a
    /// timer of the runtime's executor).
    fn concurrent(&self, f: &Bound<'py, PyAny>, spec: Option<&Bound<'py, PyAny>>, args: &[AVal], kwnames: &[String]) -> bool {
        if let Some(spec) = spec {
            let flag = |n: &str| spec.getattr(n).and_then(|v| v.is_truthy()).unwrap_or(false);
            return flag("is_async") || flag("blocking");
        }
        if args.len() == 1 && matches!(args[0], AVal::Atom) {
            let one: Obj = PyFloat::new_bound(self.py, 1.0).into_any().unbind();
            return crate::host::pool::timer_duration(self.py, &f.clone().unbind(), &[one], kwnames).is_some();
        }
        false
    }

    /// The kind of container calling `f` returns, when it makes a fresh one (`fresh_key`).
    fn makes(&mut self, callee: &Callee<'_>, f: &Bound<'py, PyAny>) -> Option<Ctype> {
        let py = self.py;
        let ty = match callee {
            Callee::Intrinsic(bz::Intrinsic::BuildMap, _) => Ctype::Dict,
            Callee::Intrinsic(bz::Intrinsic::BuildSet, _) => Ctype::Set,
            Callee::Intrinsic(bz::Intrinsic::BuildList, _) => Ctype::List,
            Callee::Intrinsic(..) | Callee::Helper(_) | Callee::BoundCheck => return None,
            Callee::Value(_) => {
                if f.is(&py.get_type_bound::<PyDict>()) {
                    Ctype::Dict
                } else if f.is(&py.get_type_bound::<PySet>()) {
                    Ctype::Set
                } else {
                    Ctype::List
                }
            }
        };
        let result = self.empty(ty).unbind();
        self.host.fresh_key(&f.clone().unbind(), &result).map(|_| ty)
    }
}

impl<'py> Oracle for PyOracle<'py> {
    fn global(&mut self, name: &str) -> AVal {
        if let Some(v) = self.by_name.get(name) {
            return v.clone();
        }
        let found = match self.globals.get_item(name) {
            Ok(Some(v)) => Some(v),
            _ => self.py.import_bound("builtins").ok().and_then(|b| b.getattr(name).ok()),
        };
        let v = match found {
            Some(o) => self.know(o),
            None => AVal::any(), // a NameError at run time
        };
        self.by_name.insert(name.to_string(), v.clone());
        v
    }

    fn call(&mut self, callee: &Callee<'_>, args: &[AVal], kwnames: &[String]) -> CallInfo {
        let py = self.py;
        let mut info = CallInfo::unknown();
        let Some(f) = self.callee(callee) else { return info };
        let fo: Obj = f.clone().unbind();
        if let Callee::Value(_) = callee {
            if self.inlined(&f, args.len(), kwnames) {
                info.internal = true;
                return info;
            }
        }
        // Arguments: stand-ins, then the static operands of an operation.
        let mut stand_ins: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(|a| self.stand_in(a)).collect();
        if let Callee::Intrinsic(op, _) = callee {
            for c in op.static_operands() {
                stand_ins.push(Some(self.static_operand(&c)));
            }
        }
        let complete = stand_ins.iter().all(|a| a.is_some());
        let argv: Vec<Obj> = stand_ins.iter().map(|a| a.as_ref().map_or_else(|| py.None(), |a| a.clone().unbind())).collect();
        info.early = self.host.classify_callee(&fo);
        if complete {
            info.class = Some(self.host.classify(&fo, &argv, kwnames));
        }
        let spec = self.external_spec(&f);
        info.external = spec.is_some();
        info.concurrent = self.concurrent(&f, spec.as_ref(), args, kwnames);
        if !matches!(callee, Callee::Intrinsic(..)) {
            let opt: Vec<Option<Obj>> = vec![None; argv.len()];
            info.result_hint = self.host.result_hint(&fo, &opt, kwnames).is_some();
        }
        info.makes = self.makes(callee, &f);
        // An attribute of a module or a class is resolved now (globals are single-assignment
        // reads, PopPy §7).
        if let (Callee::Intrinsic(bz::Intrinsic::GetAttr(name), _), Some(AVal::Known(h))) = (callee, args.first()) {
            let owner = self.known[*h as usize].bind(py).clone();
            if owner.is_instance_of::<PyModule>() || owner.is_instance_of::<PyType>() {
                if let Ok(v) = owner.getattr(name.as_str()) {
                    info.value = Some(self.know(v));
                }
            }
        }
        let keys = self.host.object_keys(&fo, &argv);
        info.objects.keys = self.objects_of(keys);
        if complete {
            if let Some(crate::control::Scope { recv: k, write, rest, part, .. }) = self.host.scope(&fo, &argv, kwnames) {
                if let Some(&o) = self.owned_by_key.get(&k) {
                    let rest_keys = self.host.arg_keys(&rest);
                    info.objects.scope = Some((o, write, self.objects_of(rest_keys)));
                    info.objects.keyed = part.is_some();
                }
            }
        }
        info
    }
}

/// `overlaps(fn)` or `overlaps(bezoar_text, globals)`: the call sites of a function and which
/// of them may be in flight at once (see docs/observability.md); `pairs=False`: the sites alone
/// (what the one-at-a-time warning needs after a run, without the search per pair).
#[pyfunction]
#[pyo3(signature = (target, globals=None, pairs=true))]
fn overlaps(
    py: Python<'_>,
    target: &Bound<'_, PyAny>,
    globals: Option<Bound<'_, PyDict>>,
    pairs: bool,
) -> PyResult<Py<PyDict>> {
    let (text, globals) = if let Ok(s) = target.downcast::<PyString>() {
        let g = globals.ok_or_else(|| PyValueError::new_err("overlaps(text, globals): the globals dict is needed"))?;
        (s.to_string(), g)
    } else {
        // The pipeline could hand over the IR itself; it hands over its printed form, which
        // parses back exactly (bezoar::text round-trips).
        let c = crate::pipeline::compile_function(py, target)
            .map_err(|why| PyValueError::new_err(format!("falls back, not compiled: {why}")))?;
        let g = target.getattr("__globals__")?.downcast_into::<PyDict>()?;
        (c.bezoar, g)
    };
    let f = bz::text::parse(&text).map_err(|e| PyValueError::new_err(format!("Bezoar text: {e}")))?;
    let mut oracle = PyOracle::new(py, globals)?;
    let a = analyse(&f, &mut oracle, pairs);
    let out = PyDict::new_bound(py);
    let sites = PyList::empty_bound(py);
    for s in &a.sites {
        let d = PyDict::new_bound(py);
        d.set_item("index", s.index)?;
        d.set_item("line", s.line)?;
        d.set_item("callee", &s.callee)?;
        d.set_item("class", &s.class)?;
        d.set_item("concurrent", s.concurrent)?;
        d.set_item("in_loop", s.in_loop)?;
        d.set_item("gated_by", s.gated_by)?;
        d.set_item("gated_loop_by", s.gated_loop_by)?;
        d.set_item("waits_for", s.waits_for.clone())?;
        // The other sites it may be in flight with, and those it never is (with the reason).
        let other = |x: u32, y: u32| if x == s.index { y } else { x };
        let mine = |x: u32, y: u32| x == s.index || y == s.index;
        let may: Vec<(u32, &str)> =
            a.pairs.iter().filter(|p| mine(p.0, p.1)).map(|p| (other(p.0, p.1), p.2.name())).collect();
        let never: Vec<(u32, &str)> =
            a.never.iter().filter(|p| mine(p.0, p.1)).map(|p| (other(p.0, p.1), p.2.as_str())).collect();
        d.set_item("may_overlap", may)?;
        d.set_item("never", never)?;
        sites.append(d)?;
    }
    out.set_item("sites", sites)?;
    let pairs: Vec<(u32, u32, &str)> = a.pairs.iter().map(|&(x, y, w)| (x, y, w.name())).collect();
    out.set_item("pairs", pairs)?;
    out.set_item("never", a.never.clone())?;
    out.set_item("undecided", a.undecided.clone())?;
    out.set_item("unroll", a.unroll)?;
    out.set_item("report", a.report())?;
    Ok(out.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(overlaps, m)?)?;
    Ok(())
}

