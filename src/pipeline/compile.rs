//! One compile: bytecode → Bezoar → Bezoar passes → λO, for a Python function.
use super::factory::PyFactory;
use crate::bezoar::{self, passes, text as bz_text};
use crate::lambda_o::{text as lo_text, Program, ProgramRef};
use crate::lower::{lower, LowerOptions};
use crate::pyobj::Obj;
use crate::lift;
use pyo3::prelude::*;
use std::rc::Rc;

/// A successful translation.
pub struct Compiled {
    pub program: ProgramRef<Obj>,
    /// The Bezoar the program was lowered from (after the passes), and its text.
    pub ir: Rc<bezoar::Function>,
    pub bezoar: String,
    /// The internal regions' Python source (`passes::regions`), for explain.
    pub regions: Vec<String>,
    pub argcount: usize,
    /// Which parameters are cell variables: in the frame (after MAKE_CELL) their slot holds the
    /// cell, and the argument is its contents.
    pub cell_params: Vec<bool>,
    /// Free variables (a @poppy function that is itself a closure): their cells are passed after
    /// the `argcount - nfree` arguments.
    pub nfree: usize,
    /// The parameter names of the free variables (`$cell.x`: the cell; `x`: its value).
    pub free_params: Vec<crate::bezoar::VarName>,
    /// The globals dict the program's global loader reads (a code object shared by functions of
    /// different modules is recompiled for each).
    pub globals: Obj,
    /// `globals::generation()` when compiled: a translation of an older generation may read
    /// eagerly a global the guard has since found rebound, and is made again.
    pub generation: u64,
}

fn force_memory() -> bool {
    std::env::var("PYTHONPOPPY_FORCE_MEMORY").map(|v| v == "1").unwrap_or(false)
}

/// Compile `func` from `code` (its code object, or for a @poppy function the original the
/// interception prologue was added to). Err is the fallback reason.
pub fn compile(py: Python<'_>, func: &Bound<'_, PyAny>, code: &Bound<'_, PyAny>) -> Result<Compiled, String> {
    crate::pyver::compiled_path(code)?;
    let info = crate::bytecode::lifter_code_info(code)?;
    let written_free = super::globals::written_free_vars(py, func, code)?;
    let mut bz = lift::lift_with(&info, &written_free).map_err(|fb| fb.to_string())?;
    if let Some(line) = passes::loop_left_only_by_failure(&bz.body) {
        return Err(format!(
            "a `while` loop that only an exception can leave (no break, return or raise; it would \
             unroll without bound while the failing call is in flight) at line {line}"
        ));
    }
    passes::fuse_split_getitem(&mut bz);
    passes::remove_dead_pure_lets(&mut bz);
    let generation = super::globals::generation();
    let globals_obj = func.getattr("__globals__").map_err(|e| e.to_string())?;
    super::globals::order_global_reads(&mut bz, &super::globals::rebindable(py, &globals_obj)?);
    // After the global reads are ordered: a global read in program order ends a region.
    let regions = if passes::regions_enabled() { passes::form_regions(&mut bz) } else { Vec::new() };
    let mut factory = PyFactory::new(py, func).map_err(|e| e.to_string())?;
    factory.index_constants(&info, code);
    factory.set_regions(&bz, regions.clone());
    let opts = LowerOptions { force_memory: force_memory() };
    let program = lower(&bz, &mut factory, &opts)?;
    let globals = globals_obj.unbind();
    let cell_params =
        bz.params.iter().map(|p| matches!(p.kind(), crate::bezoar::VarKind::Local(n) if info.cellvars.contains(n))).collect();
    let nfree = info.freevars.len();
    let free_params = bz.params[bz.params.len() - nfree..].to_vec();
    Ok(Compiled {
        program: Rc::new(program),
        bezoar: bz_text::print(&bz),
        regions: regions.iter().map(region_text).collect(),
        argcount: bz.params.len(),
        cell_params,
        nfree,
        free_params,
        globals,
        generation,
        ir: Rc::new(bz),
    })
}

/// A region as explain shows it: its live-ins and live-outs, then its source.
/// `reads [..]`: the live-ins it may be given as containers of closed values, which it only reads.
fn region_text(r: &passes::RegionCode) -> String {
    let outs: Vec<&str> = r.outputs.iter().map(|v| v.as_str()).collect();
    let reads: Vec<&str> = r.inputs.iter().zip(&r.reads).filter(|(_, &ok)| ok).map(|(i, _)| i.as_str()).collect();
    format!(
        "# region.{} (line {}): in [{}] out [{}] reads [{}]\n{}",
        r.index,
        r.line,
        r.inputs.join(", "),
        outs.join(", "),
        reads.join(", "),
        r.source
    )
}

/// The λO text of a program, primitives shown by their (shortened) repr.
pub fn program_text(py: Python<'_>, p: &Program<Obj>) -> String {
    lo_text::print_with(p, &|o: &Obj| {
        let s = o.bind(py).repr().map(|r| r.to_string()).unwrap_or_else(|_| "<?>".into());
        if s.len() > 60 {
            format!("{}…", &s[..s.char_indices().nth(57).map(|(i, _)| i).unwrap_or(s.len())])
        } else {
            s
        }
    })
}
