//! Passes over Bezoar, one concern per module. Analyses used by lowering (PopPy §7):
//! `variables` (promotable variables, assigned and deleted sets), `defined` (definite
//! assignment), `fresh` (fresh display operands). Rewrites run by the compile pipeline before
//! lowering: `dead_lets`, `split_getitem`, `regions` (internal stretches run as one generated Python
//! function). `normalize`: the lifter's clean-up of what it translated; `private_iterables`: the
//! lifter marks loops over containers nothing but the function's own reads can reach; `free_reads`: which locals a
//! comprehension reads as free variables where they may be unbound (NameError, not
//! UnboundLocalError), or the lifter's fallback when a local is read both ways.
//!
//! Depends on `bezoar::ir` only.
use super::ir::*;

mod dead_lets;
mod exits;
mod defined;
mod free_reads;
mod fresh;
mod normalize;
mod private_iterables;
mod regions;
mod split_getitem;
mod variables;

pub use dead_lets::remove_dead_pure_lets;
pub use exits::{always_raises, contains_jump, leaves_loop, loop_left_only_by_failure, may_exit, may_raise, needs_exits, speculative_iterations, stops_loop};
pub use defined::DefinedSet;
pub use free_reads::free_unbound;
pub use fresh::fresh_operands;
pub use normalize::{
    always_leaves, drop_tail_continues, has_return, nest_after_exits, returns_in_loops, tail_returns_to,
    tail_returns_to_local, tidy,
};
pub use private_iterables::private_iterables;
pub use regions::{form_regions, regions_enabled, RegionCode};
pub use split_getitem::fuse_split_getitem;
pub use variables::{assigned, deleted, promotable, variables};

/// Call `f` on every statement of `b`, nested blocks included (pre-order).
pub fn visit(b: &[Stmt], f: &mut impl FnMut(&StmtKind)) {
    for s in b {
        f(&s.kind);
        for b in s.kind.blocks() {
            visit(b, f);
        }
    }
}

/// Registers and how many times each is used as an operand anywhere in the function.
pub(super) fn use_counts(f: &Function) -> std::collections::HashMap<Reg, u32> {
    let mut uses = std::collections::HashMap::new();
    visit(&f.body, &mut |k| {
        let used: Vec<Reg> = match k {
            StmtKind::Let(_, Expr::Call { func, args, .. }) => std::iter::once(*func).chain(args.iter().copied()).collect(),
            StmtKind::Let(_, Expr::Op(_, args)) => args.clone(),
            StmtKind::Store(_, r) | StmtKind::Return(r) | StmtKind::Raise(r) => vec![*r],
            StmtKind::If { cond, .. } => vec![*cond],
            StmtKind::For { iter, item, .. } => vec![*iter, *item],
            StmtKind::Try { handlers, .. } => handlers.iter().filter_map(|h| h.test.as_ref().map(|t| t.1)).collect(),
            _ => vec![],
        };
        for r in used {
            *uses.entry(r).or_insert(0u32) += 1;
        }
    });
    uses
}

/// The arms of `Try` in the passes, on Bezoar text.
#[cfg(test)]
mod try_tests {
    use super::*;
    use crate::bezoar::text::parse;

    const HEADER: &str = "def f(xs):  # qualname \"f\" file \"t.py\" line 1 nregs 20\n";

    fn func(body: &str) -> Function {
        parse(&format!("{HEADER}{body}")).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A loop of arithmetic on a closed value (a region candidate), inside a try body or not.
    const ARITH: &str = "  r0 := const 0
  store n r0
  r1 := global range
  r2 := r1(r0)
  r3 := op iter_snapshot(r2)
  for r4 in r3:
    r5 := load n
    r6 := op binary.add(r5, r4)
    store n r6
";

    #[test]
    fn regions_are_formed_inside_a_try_body_its_handlers_and_its_else() {
        let consts = "  const 0 = 10\n";
        let mut outside = func(&format!("{consts}{ARITH}  r7 := load n\n  return r7\n"));
        assert_eq!(form_regions(&mut outside).len(), 1, "the same code outside a try is a region");
        let indented: String = ARITH.lines().map(|l| format!("  {l}\n")).collect();
        let text = format!("{consts}  try:\n{indented}  except:\n{indented}  else:\n{indented}  r7 := load n\n  return r7\n");
        let mut inside = func(&text);
        let regions = form_regions(&mut inside);
        assert_eq!(regions.len(), 3, "one in the body, one in the handler, one in the else");
        // The statement stays a try with one handler, each part now the region's rewrite
        // (`r := op region.K(..)`, then `if`), the stretch kept as its fallback.
        let [Stmt { kind: StmtKind::Try { body, handlers, orelse, .. }, .. }, ..] = &inside.body[..] else {
            panic!("the try is still the first statement: {inside:?}");
        };
        assert_eq!(handlers.len(), 1);
        for (block, k) in [(body, 0u32), (&handlers[0].body, 1), (orelse, 2)] {
            let has_region = block.iter().any(|s| matches!(&s.kind, StmtKind::Let(_, Expr::Op(Intrinsic::Region(i), _)) if *i == k));
            assert!(has_region, "region {k} in its block: {block:?}");
            assert!(block.iter().any(|s| matches!(s.kind, StmtKind::If { .. })));
        }
    }

    #[test]
    fn handler_names_are_assigned_and_deleted_and_tests_are_uses() {
        let f = func(
            "  const 0 = 1\n  try:\n    store a r0\n  except r1 as e:\n    r1 := const 0\n  then:\n    del b\n  else:\n    store c r0\n  return r0\n",
        );
        let names = |s: BTreeSetOf| s.into_iter().map(|v| v.as_str().to_string()).collect::<Vec<_>>();
        type BTreeSetOf = std::collections::BTreeSet<VarName>;
        assert_eq!(names(assigned(&f.body)), ["a", "b", "c", "e"]);
        assert_eq!(names(deleted(&f.body)), ["b", "e"]);
        assert!(variables(&f).contains(&VarName::local("e")));
        // The handler's test register is used: its constant is not dead.
        let mut g = f.clone();
        remove_dead_pure_lets(&mut g);
        assert_eq!(g, f);
        assert_eq!(use_counts(&f).get(&1), Some(&1));
    }

    #[test]
    fn a_try_needs_exits_and_may_exit() {
        let f = func("  try:\n    r0 := load xs\n  except:\n    pass\n  r1 := load xs\n  return r1\n");
        assert!(needs_exits(&f.body));
        assert!(may_exit(&f.body[0]));
        assert!(!always_raises(&f.body[..1]));
    }

    #[test]
    fn continues_ending_a_try_are_kept() {
        let mut f = func(
            "  r0 := load xs\n  for r1 in r0:\n    try:\n      continue\n    except:\n      continue\n    else:\n      store y r1\n",
        );
        let before = f.clone();
        drop_tail_continues(&mut f.body, false);
        assert_eq!(f, before);
        // A return in a try counts as one in a loop (the status is threaded).
        let g = func("  try:\n    r0 := load xs\n    return r0\n  except:\n    pass\n  r1 := load xs\n  return r1\n");
        assert!(returns_in_loops(&g.body, false));
        assert!(has_return(&g.body[..1].to_vec()));
    }
}
