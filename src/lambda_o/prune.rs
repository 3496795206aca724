//! Dead-statement pruning on λO templates.
//!
//! Lowering binds every component it might need (`r := prj 1 t` for a call whose result is never
//! used, the loop variable's memory read, ...). A pure statement whose variable nobody reads is
//! removed, and variables are renumbered so an instance allocates no slot for it. This is not
//! only fewer reductions: a frame is kept until its last statement is reduced, so an unused
//! `prj 1 t` of a slow call kept the whole frame (every variable of a loop iteration) alive until
//! the call finished.
//!
//! Pure: aliases, primitives, tuples, projections, closures and memory operations (none has an
//! effect; an error value they would carry is observable only through a use). Calls, `xcall`,
//! `ite` and `fold` are never removed.
use super::term::*;

fn pure<P>(op: &Op<P>) -> bool {
    matches!(
        op,
        Op::Alias(_)
            | Op::Prim(_)
            | Op::Tuple(_)
            | Op::Proj { .. }
            | Op::Fun { .. }
            | Op::MemEmpty
            | Op::MemLoad { .. }
            | Op::MemStore { .. }
    )
}

/// Remove the pure statements no one uses from every function (to a fixpoint) and renumber the
/// variables they bound. Returns the number of statements removed.
pub fn prune<P>(prog: &mut Program<P>) -> usize {
    prog.funcs.iter_mut().map(prune_func).sum()
}

fn prune_func<P>(f: &mut Func<P>) -> usize {
    let n = f.nvars as usize;
    let mut count = vec![0u32; n];
    count[f.ret as usize] += 1;
    for s in &f.body {
        s.op.for_each_var(&mut |v| count[v as usize] += 1);
    }
    let mut alive = vec![true; f.body.len()];
    // Removing a statement drops its uses, which may make its inputs' statements dead in turn;
    // statements only use variables bound by other statements, so walk until nothing changes.
    let mut changed = true;
    while changed {
        changed = false;
        for (i, s) in f.body.iter().enumerate() {
            if alive[i] && pure(&s.op) && count[s.dst as usize] == 0 {
                alive[i] = false;
                changed = true;
                s.op.for_each_var(&mut |v| count[v as usize] -= 1);
            }
        }
    }
    let removed = alive.iter().filter(|a| !**a).count();
    if removed == 0 {
        return 0;
    }
    // Keep captures, parameters and the variables of the remaining statements, in order.
    let fixed = (f.ncaptures + f.nparams) as usize;
    let mut keep = vec![false; n];
    keep[..fixed].iter_mut().for_each(|k| *k = true);
    keep[f.ret as usize] = true;
    for (i, s) in f.body.iter().enumerate() {
        if alive[i] {
            keep[s.dst as usize] = true;
        }
    }
    let mut map = vec![Var::MAX; n];
    let mut names = Vec::new();
    for v in 0..n {
        if keep[v] {
            map[v] = names.len() as Var;
            names.push(std::mem::take(&mut f.var_names[v]));
        }
    }
    let body = std::mem::take(&mut f.body);
    f.body = body
        .into_iter()
        .zip(alive)
        .filter(|(_, a)| *a)
        .map(|(s, _)| Stmt { dst: map[s.dst as usize], op: s.op.map_vars(&|v| map[v as usize]), line: s.line })
        .collect();
    f.ret = map[f.ret as usize];
    f.nvars = names.len() as u32;
    f.var_names = names;
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lambda_o::testhost::TPrim;
    use crate::lambda_o::text;

    fn parse(src: &str) -> Program<TPrim> {
        text::parse::<TPrim>(src).expect("parses")
    }

    #[test]
    fn unused_pure_statements_go_and_variables_are_renumbered() {
        let src = "fun main/0(S, x):\n  \
                   a := prim 1\n  f := prim @f\n  \
                   t := xcall S f(a)\n  \
                   S.1 := prj 0 t\n  \
                   r := prj 1 t\n  \
                   unused := (r, x)\n  \
                   also := prj 0 unused\n  \
                   out := (S.1, x)\n  \
                   ret out\n";
        let mut prog = parse(src);
        let before = prog.funcs[0].body.len();
        assert_eq!(prune(&mut prog), 3);
        let f = &prog.funcs[0];
        assert_eq!(f.body.len(), before - 3);
        assert_eq!(f.nvars, 2 + 5, "S, x, a, f, t, S.1, out");
        let printed = text::print(&prog);
        assert!(!printed.contains("unused") && !printed.contains("also") && !printed.contains("r :="), "{printed}");
        // The pruned program still parses and means the same (the call and its order are kept).
        let again = parse(&printed);
        assert_eq!(again.funcs[0].body.len(), f.body.len());
        assert!(printed.contains("xcall S f(a)"), "{printed}");
    }

    #[test]
    fn effects_are_never_removed() {
        let src = "fun main/0(S, c):\n  \
                   g := fun g/1\n  \
                   dead := g()\n  \
                   h := prim @h\n  t := xcall S h()\n  \
                   out := (S, c)\n  \
                   ret out\n\
                   fun g/1():\n  \
                   z := prim 0\n  \
                   ret z\n";
        let mut prog = parse(src);
        assert_eq!(prune(&mut prog), 0);
        let printed = text::print(&prog);
        assert!(printed.contains("dead := g()") && printed.contains("xcall S h()"), "{printed}");
    }
}
