//! The primitives lowering asks for (`PrimFactory`), as Python objects bound to the compiled
//! function's code object and globals: constants, intrinsics, lowering helpers, the global loader.
use crate::bezoar::{Const, Intrinsic};
use crate::lambda_o::PrimFactory;
use crate::pyobj::{rt_module, GlobalLoader, Obj};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString, PyTuple};

/// Builds the primitives a compiled function needs, bound to its code object and globals.
pub struct PyFactory<'py> {
    pub py: Python<'py>,
    pub rt: Bound<'py, PyModule>,
    pub consts: Bound<'py, PyTuple>,
    pub loader: Obj,
    /// The code object's own constants (and those of the code nested in it), with the `Const`
    /// each was read as: a constant is that very object (so `is` and pickling see CPython's
    /// interned strings and shared tuples), not a copy with the same value.
    pub own: Vec<(Const, Obj)>,
    /// The function's internal regions (`passes::regions`) and its constants, which their code
    /// refers to.
    regions: Vec<crate::bezoar::passes::RegionCode>,
    region_consts: Vec<Const>,
    qualname: String,
    filename: String,
}

impl<'py> PyFactory<'py> {
    pub fn new(py: Python<'py>, func: &Bound<'py, PyAny>) -> PyResult<Self> {
        let rt = rt_module(py)?;
        let code = func.getattr("__code__")?;
        let consts = code.getattr("co_consts")?.downcast_into::<PyTuple>()?;
        let globals = func.getattr("__globals__")?.downcast_into::<PyDict>()?;
        let loader = Py::new(py, GlobalLoader::new(py, globals)?)?.into_any();
        Ok(PyFactory {
            py,
            rt,
            consts,
            loader,
            own: Vec::new(),
            regions: Vec::new(),
            region_consts: Vec::new(),
            qualname: String::new(),
            filename: String::new(),
        })
    }

    /// The regions `intrinsic(Region(k))` builds, formed on `f`.
    pub fn set_regions(&mut self, f: &crate::bezoar::Function, regions: Vec<crate::bezoar::passes::RegionCode>) {
        self.regions = regions;
        self.region_consts = f.consts.clone();
        self.qualname = f.qualname.clone();
        self.filename = f.filename.clone();
    }

    /// The callable of region `k` (`poppy_jit._regions.make`): its source compiled once, with
    /// its constants as the function's globals.
    fn region(&mut self, k: u32) -> Obj {
        let r = self.regions[k as usize].clone();
        let py = self.py;
        let consts = PyDict::new_bound(py);
        for &i in &r.consts {
            let c = self.region_consts[i as usize].clone();
            let o = self.constant(&c);
            consts.set_item(format!("k{i}"), o).expect("a str key");
        }
        let label = format!("<poppy region {}#{k} {}:{}>", self.qualname, self.filename, r.line);
        py.import_bound("poppy_jit._regions")
            .and_then(|m| m.call_method1("make", (&r.name, &r.source, label, consts, r.reads.clone())))
            .expect("poppy_jit._regions.make builds every region")
            .unbind()
    }

    /// Index the constants of `info` (read from `code`) and of the code nested in it.
    pub fn index_constants(&mut self, info: &crate::py311::CodeInfo, code: &Bound<'py, PyAny>) {
        let Ok(objs) = code.getattr("co_consts").and_then(|c| Ok(c.downcast_into::<PyTuple>()?)) else { return };
        for (i, c) in info.consts.iter().enumerate() {
            let Ok(o) = objs.get_item(i) else { continue };
            if let Some(child) = info.children.get(&(i as u32)) {
                self.index_constants(child, &o);
            } else if !matches!(c, Const::Opaque { .. } | Const::Nested { .. } | Const::Globals)
                && !self.own.iter().any(|(k, _)| same_const(k, c))
            {
                self.own.push((c.clone(), o.unbind()));
            }
        }
    }

    fn rt_attr(&self, name: &str) -> Obj {
        self.rt.getattr(name).expect("poppy_jit._rt attribute").unbind()
    }
}

/// The same constant: same kind and value, floats bit for bit (`0.0` is not `-0.0`).
fn same_const(a: &Const, b: &Const) -> bool {
    match (a, b) {
        (Const::Float(x), Const::Float(y)) => x.to_bits() == y.to_bits(),
        (Const::Tuple(xs), Const::Tuple(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_const(x, y)),
        (Const::Tuple(_), _) | (_, Const::Tuple(_)) | (Const::Float(_), _) | (_, Const::Float(_)) => false,
        _ => a == b,
    }
}

pub fn const_to_py(py: Python<'_>, consts: &Bound<'_, PyTuple>, c: &Const) -> Obj {
    match c {
        Const::None => py.None(),
        Const::Bool(b) => PyBool::new_bound(py, *b).to_owned().into_any().unbind(),
        Const::Int(i) => i.into_py(py),
        Const::Float(f) => PyFloat::new_bound(py, *f).into_any().unbind(),
        Const::Str(s) => PyString::intern_bound(py, s).into_any().unbind(),
        Const::Tuple(items) => {
            let v: Vec<Obj> = items.iter().map(|i| const_to_py(py, consts, i)).collect();
            PyTuple::new_bound(py, v).into_any().unbind()
        }
        Const::Opaque { co_index, .. } => consts.get_item(*co_index as usize).expect("co_consts index").unbind(),
        Const::Nested { path, .. } => {
            let mut c = consts.get_item(path[0] as usize).expect("co_consts index");
            for &i in &path[1..] {
                c = c.getattr("co_consts").and_then(|cs| cs.get_item(i)).expect("nested co_consts index");
            }
            c.unbind()
        }
        Const::Globals => unreachable!("PyFactory::constant resolves the globals"),
    }
}

impl<'py> PrimFactory for PyFactory<'py> {
    type Prim = Obj;

    fn constant(&mut self, c: &Const) -> Obj {
        if let Const::Globals = c {
            let loader = self.loader.bind(self.py).downcast::<GlobalLoader>().expect("the global loader");
            return loader.get().globals().clone_ref(self.py).into_any();
        }
        if let Some((_, o)) = self.own.iter().find(|(k, _)| same_const(k, c)) {
            return o.clone_ref(self.py);
        }
        const_to_py(self.py, &self.consts, c)
    }

    fn string(&mut self, s: &str) -> Obj {
        // Names (globals, attributes) as CPython has them: interned.
        PyString::intern_bound(self.py, s).into_any().unbind()
    }

    fn intrinsic(&mut self, i: &Intrinsic) -> Obj {
        if let Intrinsic::Region(k) = i {
            return self.region(*k);
        }
        self.rt
            .getattr("intrinsic")
            .and_then(|f| f.call1((i.key(),)))
            .expect("every Intrinsic has a callable in poppy_jit._rt.INTRINSICS")
            .unbind()
    }

    fn intrinsic_fresh(&mut self, i: &Intrinsic, fresh: u32) -> Obj {
        self.rt
            .getattr("intrinsic_fresh")
            .and_then(|f| f.call1((i.key(), fresh)))
            .expect("poppy_jit._rt.intrinsic_fresh wraps every intrinsic")
            .unbind()
    }

    fn global_loader(&mut self) -> Obj {
        self.loader.clone_ref(self.py)
    }

    fn bound_check(&mut self) -> Obj {
        self.rt_attr("bound_check")
    }

    fn helper(&mut self, name: &str) -> Obj {
        self.rt
            .getattr("HELPERS")
            .and_then(|h| h.get_item(name))
            .expect("poppy_jit._rt.HELPERS has every lowering helper")
            .unbind()
    }
}
