//! Loops whose body may change the container they iterate (a builtin container is iterated as a
//! snapshot, so such a function falls back).
use crate::bezoar::ir::*;

/// A `for` loop runs over a snapshot of its iterable (PopPy §5.2 `fold`), which is what CPython
/// does only while the body leaves the iterated container alone. This finds loops whose body may
/// change it — mutating it in place (`q.append(x)`, `d[k] = v`, `q += [..]`), passing it to a
/// call that is not a known read-only builtin (a helper that appends, `next(it)`), or aliasing it
/// — and gives the fallback reason (what, line). The iterable is traced through
/// `enumerate`/`zip`/`reversed`/`iter`/`map`/`filter` and `.items()/.keys()/.values()`; copies
/// (`sorted(xs)`, `list(xs)`, `xs.copy()`) and values derived from it (`range(len(xs))`) are not
/// the container itself. Plain reads in the body (`xs[i]`, `len(xs)`, `x in xs`) are fine.
pub fn loop_iterable_changed(f: &Function) -> Option<(String, u32)> {
    use std::collections::HashMap;
    let mut defs: HashMap<Reg, &Expr> = HashMap::new();
    fn collect<'a>(b: &'a [Stmt], defs: &mut HashMap<Reg, &'a Expr>) {
        for s in b {
            match &s.kind {
                StmtKind::Let(r, e) => {
                    defs.insert(*r, e);
                }
                StmtKind::If { then_body, else_body, .. } => {
                    collect(then_body, defs);
                    collect(else_body, defs);
                }
                StmtKind::For { body, .. } | StmtKind::Loop { body } => collect(body, defs),
                StmtKind::Try { .. } => s.kind.blocks().into_iter().for_each(|b| collect(b, defs)),
                _ => {}
            }
        }
    }
    collect(&f.body, &mut defs);
    const PASS_THROUGH: [&str; 6] = ["enumerate", "zip", "reversed", "iter", "map", "filter"];
    const VIEWS: [&str; 3] = ["items", "keys", "values"];
    const SAFE_CALLEES: [&str; 27] = [
        "len", "str", "repr", "print", "isinstance", "bool", "int", "float", "sorted", "list", "tuple", "set",
        "frozenset", "min", "max", "sum", "any", "all", "enumerate", "zip", "range", "hash", "id", "type",
        "format", "dict", "abs",
    ];
    const READ_METHODS: [&str; 15] = [
        "get", "keys", "values", "items", "count", "index", "copy", "issubset", "issuperset", "isdisjoint",
        "union", "intersection", "difference", "symmetric_difference", "__contains__",
    ];
    // The variables whose container the register `r` is (or iterates over).
    fn trace(r: Reg, defs: &HashMap<Reg, &Expr>, out: &mut Vec<VarName>, depth: u32) {
        if depth > 16 {
            return;
        }
        match defs.get(&r) {
            Some(Expr::Load(v)) => out.push(v.clone()),
            // A local that lives in a real cell (an inner function captures it) is read
            // through it: the same variable.
            Some(Expr::Op(Intrinsic::CellGet { name, .. }, _)) => out.push(VarName::local(name)),
            Some(Expr::Call { func, args, .. }) => match defs.get(func) {
                Some(Expr::Global(g)) if PASS_THROUGH.contains(&g.as_str()) => {
                    for a in args {
                        trace(*a, defs, out, depth + 1);
                    }
                }
                Some(Expr::Op(Intrinsic::GetAttr(m), obj)) if VIEWS.contains(&m.as_str()) && args.is_empty() => {
                    trace(obj[0], defs, out, depth + 1);
                }
                _ => {}
            },
            _ => {}
        }
    }
    fn scan(
        b: &[Stmt],
        defs: &HashMap<Reg, &Expr>,
        f_found: &mut Option<(String, u32)>,
        active: &mut Vec<VarName>,
    ) {
        for s in b {
            if f_found.is_some() {
                return;
            }
            // A use of a watched container's register in a way that may change it.
            let loaded = |r: &Reg| -> Option<VarName> {
                match defs.get(r) {
                    Some(Expr::Load(v)) if active.contains(v) => Some(v.clone()),
                    Some(Expr::Op(Intrinsic::CellGet { name, .. }, _)) if active.contains(&VarName::local(name)) => {
                        Some(VarName::local(name))
                    }
                    _ => None,
                }
            };
            let mut hit: Option<VarName> = None;
            match &s.kind {
                StmtKind::Let(_, Expr::Op(op, args)) => match op {
                    Intrinsic::SetItem | Intrinsic::DelItem | Intrinsic::SetAttr(_) | Intrinsic::DelAttr(_) => {
                        hit = args.first().and_then(loaded)
                    }
                    Intrinsic::Binary { inplace: true, .. } => hit = args.first().and_then(loaded),
                    // stored into a real cell: aliased under another name
                    Intrinsic::CellSet => hit = args.get(1).and_then(loaded),
                    _ => {}
                },
                StmtKind::Let(_, Expr::Call { func, args, .. }) => {
                    let callee_safe = matches!(defs.get(func), Some(Expr::Global(g)) if SAFE_CALLEES.contains(&g.as_str()));
                    if !callee_safe {
                        hit = args.iter().find_map(loaded);
                    }
                    if hit.is_none() {
                        if let Some(Expr::Op(Intrinsic::GetAttr(m), obj)) = defs.get(func) {
                            if !READ_METHODS.contains(&m.as_str()) {
                                hit = obj.first().and_then(loaded);
                            }
                        }
                    }
                }
                StmtKind::Store(v2, r) => {
                    if let Some(v) = loaded(r) {
                        if &v != v2 {
                            hit = Some(v); // aliased under another name
                        }
                    }
                }
                _ => {}
            }
            if let Some(v) = hit {
                *f_found = Some((
                    format!("the loop over `{v}` may change it in its body (a loop runs over a snapshot of its iterable)"),
                    s.line,
                ));
                return;
            }
            match &s.kind {
                StmtKind::If { then_body, else_body, .. } => {
                    scan(then_body, defs, f_found, active);
                    scan(else_body, defs, f_found, active);
                }
                StmtKind::Loop { body } => scan(body, defs, f_found, active),
                StmtKind::Try { .. } => {
                    for b in s.kind.blocks() {
                        scan(b, defs, f_found, active);
                        if f_found.is_some() {
                            return;
                        }
                    }
                }
                StmtKind::For { iter, body, .. } => {
                    let mut vars = Vec::new();
                    if let Some(Expr::Op(Intrinsic::IterSnapshot | Intrinsic::IterPrivate, x)) = defs.get(iter) {
                        trace(x[0], defs, &mut vars, 0);
                    }
                    let n = active.len();
                    active.extend(vars);
                    scan(body, defs, f_found, active);
                    active.truncate(n);
                }
                _ => {}
            }
        }
    }
    let mut found = None;
    scan(&f.body, &defs, &mut found, &mut Vec::new());
    found
}
