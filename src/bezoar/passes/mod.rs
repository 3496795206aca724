//! Passes over Bezoar, one concern per module. Analyses used by lowering (PopPy §7):
//! `variables` (promotable variables, assigned and deleted sets), `defined` (definite
//! assignment), `fresh` (fresh display operands). Rewrites run by the compile pipeline before
//! lowering: `dead_lets`, `split_getitem`, `regions` (internal stretches run as one generated Python
//! function). `normalize`: the lifter's clean-up of what it translated; `private_iterables`: the
//! lifter marks loops over containers nothing but the function's own reads can reach; `free_reads`: the lifter falls
//! back on a comprehension reading a possibly unbound local.
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
pub use exits::{always_raises, contains_jump, leaves_loop, loop_left_only_by_failure, may_exit, needs_exits};
pub use defined::DefinedSet;
pub use free_reads::unbound_free_read;
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
            _ => vec![],
        };
        for r in used {
            *uses.entry(r).or_insert(0u32) += 1;
        }
    });
    uses
}
