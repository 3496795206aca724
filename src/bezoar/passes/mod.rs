//! Analyses over Bezoar used by lowering (PopPy §7).
//!
//! - `promotable`: which mutable variables can be promoted to SSA values instead of living in the
//!   memory M. A variable qualifies when it is only accessed by this function's own code. Every
//!   Bezoar local does: a Python local that an inner function captures is not a Bezoar local but
//!   a real cell object (held in the local `$cell.x`, read and written by intrinsics), and the
//!   locals of inlined comprehensions are renamed locals of the function. The set is still
//!   computed so that M-threading can be forced (for differential testing of lowering).
//! - `assigned`: the variables a block may store (the values an `ite`/`fold` must thread out).
//! - `DefinedSet`: forward "definitely assigned" analysis, so that a load that may hit an unbound
//!   local raises UnboundLocalError exactly where CPython would.
use super::ir::*;
use std::collections::BTreeSet;

mod normalize;

pub use normalize::{
    always_leaves, drop_tail_continues, has_return, nest_after_exits, returns_in_loops, tail_returns_to,
    tail_returns_to_local, tidy,
};

/// Call `f` on every statement of `b`, nested blocks included (pre-order).
pub fn visit(b: &[Stmt], f: &mut impl FnMut(&StmtKind)) {
    for s in b {
        f(&s.kind);
        match &s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                visit(then_body, f);
                visit(else_body, f);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => visit(body, f),
            _ => {}
        }
    }
}

/// Names of mutable variables stored or loaded anywhere in `f` (parameters included).
pub fn variables(f: &Function) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = f.params.iter().cloned().collect();
    visit(&f.body, &mut |k| {
        if let StmtKind::Let(_, Expr::Load(x)) | StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

/// Variables that lowering keeps as SSA values (all of them unless `force_memory`).
pub fn promotable(f: &Function, force_memory: bool) -> BTreeSet<String> {
    if force_memory {
        BTreeSet::new()
    } else {
        variables(f)
    }
}

/// Variables a block may store (or delete), in a deterministic order.
pub fn assigned(b: &[Stmt]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

/// The set of variables definitely assigned at a program point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefinedSet(pub BTreeSet<String>);

impl DefinedSet {
    pub fn contains(&self, x: &str) -> bool {
        self.0.contains(x)
    }
    pub fn insert(&mut self, x: &str) {
        self.0.insert(x.to_string());
    }
    pub fn remove(&mut self, x: &str) {
        self.0.remove(x);
    }
    /// After an `if`: assigned on both paths.
    pub fn meet(&self, other: &DefinedSet) -> DefinedSet {
        DefinedSet(self.0.intersection(&other.0).cloned().collect())
    }
}

/// Variables a block may delete (`del x`).
pub fn deleted(b: &[Stmt]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

/// Remove `Let`s of pure expressions (constants, loads of promoted variables) whose register is
/// never used. External operations are never removed: they are observable.
pub fn remove_dead_pure_lets(f: &mut Function) {
    let mut used = vec![false; f.nregs as usize];
    visit(&f.body, &mut |k| {
        let mut mark = |r: &Reg| used[*r as usize] = true;
        match k {
            StmtKind::Let(_, Expr::Call { func, args, .. }) => {
                mark(func);
                args.iter().for_each(mark);
            }
            StmtKind::Let(_, Expr::Op(_, args)) => args.iter().for_each(mark),
            StmtKind::Store(_, r) | StmtKind::Return(r) => mark(r),
            StmtKind::If { cond, .. } => mark(cond),
            StmtKind::For { iter, .. } => mark(iter),
            _ => {}
        }
    });
    fn sweep(b: &mut Block, used: &[bool]) {
        b.retain(|s| match &s.kind {
            // A load may raise UnboundLocalError, but only when its value is used by something
            // observable; an unused load of a definitely-unbound local is kept for that reason.
            StmtKind::Let(r, Expr::Const(_)) => used[*r as usize],
            _ => true,
        });
        for s in b.iter_mut() {
            match &mut s.kind {
                StmtKind::If { then_body, else_body, .. } => {
                    sweep(then_body, used);
                    sweep(else_body, used);
                }
                StmtKind::For { body, .. } | StmtKind::Loop { body } => sweep(body, used),
                _ => {}
            }
        }
    }
    sweep(&mut f.body, &used);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(kind: StmtKind) -> Stmt {
        Stmt { kind, line: 0 }
    }

    #[test]
    fn assigned_sees_nested_blocks() {
        let b = vec![
            st(StmtKind::Store("a".into(), 0)),
            st(StmtKind::If {
                cond: 0,
                then_body: vec![st(StmtKind::Store("b".into(), 0))],
                else_body: vec![st(StmtKind::For {
                    iter: 0,
                    item: 1,
                    body: vec![st(StmtKind::Store("c".into(), 1))],
                })],
            }),
        ];
        let got: Vec<_> = assigned(&b).into_iter().collect();
        assert_eq!(got, vec!["a", "b", "c"]);
    }

    #[test]
    fn dead_constants_are_removed_but_externals_kept() {
        let mut f = Function {
            name: "f".into(),
            qualname: "f".into(),
            filename: "t.py".into(),
            firstlineno: 1,
            params: vec![],
            consts: vec![Const::Int(1)],
            body: vec![
                st(StmtKind::Let(0, Expr::Const(0))),
                st(StmtKind::Let(1, Expr::Global("print".into()))),
                st(StmtKind::Let(2, Expr::Call { func: 1, args: vec![], kwnames: vec![] })),
                st(StmtKind::Let(3, Expr::Const(0))),
                st(StmtKind::Return(3)),
            ],
            nregs: 4,
        };
        remove_dead_pure_lets(&mut f);
        assert_eq!(f.body.len(), 4);
        assert!(matches!(f.body[0].kind, StmtKind::Let(1, _)));
    }

    #[test]
    fn defined_meet_is_intersection() {
        let mut a = DefinedSet::default();
        a.insert("x");
        a.insert("y");
        let mut b = DefinedSet::default();
        b.insert("y");
        assert!(a.meet(&b).contains("y"));
        assert!(!a.meet(&b).contains("x"));
    }
}

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
    fn trace(r: Reg, defs: &HashMap<Reg, &Expr>, out: &mut Vec<String>, depth: u32) {
        if depth > 16 {
            return;
        }
        match defs.get(&r) {
            Some(Expr::Load(v)) => out.push(v.clone()),
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
        active: &mut Vec<String>,
    ) {
        for s in b {
            if f_found.is_some() {
                return;
            }
            // A use of a watched container's register in a way that may change it.
            let loaded = |r: &Reg| -> Option<String> {
                match defs.get(r) {
                    Some(Expr::Load(v)) if active.contains(v) => Some(v.clone()),
                    _ => None,
                }
            };
            let mut hit: Option<String> = None;
            match &s.kind {
                StmtKind::Let(_, Expr::Op(op, args)) => match op {
                    Intrinsic::SetItem | Intrinsic::DelItem | Intrinsic::SetAttr(_) | Intrinsic::DelAttr(_) => {
                        hit = args.first().and_then(loaded)
                    }
                    Intrinsic::Binary { inplace: true, .. } => hit = args.first().and_then(loaded),
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
                StmtKind::For { iter, body, .. } => {
                    let mut vars = Vec::new();
                    if let Some(Expr::Op(Intrinsic::IterSnapshot, x)) = defs.get(iter) {
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

/// Operands of intrinsic operations that are *fresh displays*: a list/set/dict built right there
/// (`x in [a, b]`, `cache |= {state}`, `[a] + xs`) whose register has no other use. Nothing else
/// can refer to such an object while the operation runs, so its mutability cannot order the
/// operation: only its items can. Returns, per operation's result register, the bit mask of its
/// fresh operand positions (positions ≥ 32 are ignored).
pub fn fresh_operands(f: &Function) -> std::collections::HashMap<Reg, u32> {
    let uses = use_counts(f);
    let mut displays: BTreeSet<Reg> = BTreeSet::new();
    let mut ops: Vec<(Reg, Vec<Reg>)> = Vec::new();
    visit(&f.body, &mut |k| {
        if let StmtKind::Let(r, Expr::Op(op, args)) = k {
            match op {
                Intrinsic::BuildList | Intrinsic::BuildSet | Intrinsic::BuildMap => {
                    displays.insert(*r);
                }
                Intrinsic::Binary { .. } | Intrinsic::Contains { .. } | Intrinsic::Compare(_) | Intrinsic::GetItem => {
                    ops.push((*r, args.clone()))
                }
                _ => {}
            }
        }
    });
    let mut out = std::collections::HashMap::new();
    for (r, args) in ops {
        let mut mask = 0u32;
        for (i, a) in args.iter().enumerate().take(32) {
            if displays.contains(a) && uses.get(a) == Some(&1) {
                mask |= 1 << i;
            }
        }
        if mask != 0 {
            out.insert(r, mask);
        }
    }
    out
}

/// Registers and how many times each is used as an operand anywhere in the function.
fn use_counts(f: &Function) -> std::collections::HashMap<Reg, u32> {
    let mut uses = std::collections::HashMap::new();
    visit(&f.body, &mut |k| {
        let used: Vec<Reg> = match k {
            StmtKind::Let(_, Expr::Call { func, args, .. }) => std::iter::once(*func).chain(args.iter().copied()).collect(),
            StmtKind::Let(_, Expr::Op(_, args)) => args.clone(),
            StmtKind::Store(_, r) | StmtKind::Return(r) => vec![*r],
            StmtKind::If { cond, .. } => vec![*cond],
            StmtKind::For { iter, item, .. } => vec![*iter, *item],
            _ => vec![],
        };
        for r in used {
            *uses.entry(r).or_insert(0u32) += 1;
        }
    });
    uses
}

/// Fuses `m := getattr.split(x); l := m(consts...); r := getitem(l, k)` — the list used for
/// nothing but the subscript — into `r := split_getitem.split(x, consts..., k)`, for the methods
/// split, rsplit and splitlines. The same getattr, call and subscript happen in the same order
/// (the arguments are constants, so nothing runs between them); as one operation on a str, the
/// intermediate list, which nothing else can see, does not order it as a read of a mutable
/// object (`line.split(": ", 1)[1]` no longer waits for every earlier sequential call).
pub fn fuse_split_getitem(f: &mut Function) {
    use std::collections::HashMap;
    let uses = use_counts(f);
    fn block(b: &mut Vec<Stmt>, uses: &HashMap<Reg, u32>) {
        for s in b.iter_mut() {
            match &mut s.kind {
                StmtKind::If { then_body, else_body, .. } => {
                    block(then_body, uses);
                    block(else_body, uses);
                }
                StmtKind::For { body, .. } | StmtKind::Loop { body } => block(body, uses),
                _ => {}
            }
        }
        let mut defs: HashMap<Reg, usize> = HashMap::new();
        for (i, s) in b.iter().enumerate() {
            if let StmtKind::Let(r, _) = &s.kind {
                defs.insert(*r, i);
            }
        }
        let is_const = |b: &Vec<Stmt>, r: &Reg| {
            defs.get(r).is_some_and(|&i| matches!(b[i].kind, StmtKind::Let(_, Expr::Const(_))))
        };
        let mut remove: Vec<usize> = Vec::new();
        for i in 0..b.len() {
            let StmtKind::Let(_, Expr::Op(Intrinsic::GetItem, args)) = &b[i].kind else { continue };
            let (l, k) = (args[0], args[1]);
            let Some(&li) = defs.get(&l) else { continue };
            let StmtKind::Let(_, Expr::Call { func: m, args: cargs, kwnames }) = &b[li].kind else { continue };
            if !kwnames.is_empty() || uses.get(&l) != Some(&1) || !cargs.iter().all(|a| is_const(b, a)) {
                continue;
            }
            let Some(&mi) = defs.get(m) else { continue };
            let StmtKind::Let(_, Expr::Op(Intrinsic::GetAttr(name), recv)) = &b[mi].kind else { continue };
            if !matches!(name.as_str(), "split" | "rsplit" | "splitlines") || uses.get(m) != Some(&1) {
                continue;
            }
            let k_ok = is_const(b, &k)
                || defs.get(&k).is_some_and(|&ki| matches!(b[ki].kind, StmtKind::Let(_, Expr::Load(_))));
            if !k_ok || mi > li || li > i {
                continue;
            }
            let mut operands = vec![recv[0]];
            operands.extend(cargs.iter().copied());
            operands.push(k);
            let op = Intrinsic::SplitGetItem(name.clone());
            let StmtKind::Let(dst, _) = b[i].kind.clone() else { unreachable!() };
            b[i].kind = StmtKind::Let(dst, Expr::Op(op, operands));
            remove.push(li);
            remove.push(mi);
        }
        remove.sort_unstable();
        for i in remove.into_iter().rev() {
            b.remove(i);
        }
    }
    block(&mut f.body, &uses);
}
