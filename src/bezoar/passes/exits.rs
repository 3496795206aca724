//! Which statements leave a block early (break, continue, return), and whether a function
//! needs its exit status threaded at all: the shape lowering decides on (`crate::lower`) and the
//! overlap analysis models the same way (`crate::explain`).
use crate::bezoar::ir::{Stmt, StmtKind};

/// Whether a function needs exit-status threading: any loop jump, `while`, `try` (a caught
/// exception is a status), or a return that is not the function's last statement.
pub fn needs_exits(body: &[Stmt]) -> bool {
    fn any(b: &[Stmt], top: bool) -> bool {
        b.iter().enumerate().any(|(i, s)| match &s.kind {
            StmtKind::Break | StmtKind::Continue | StmtKind::Loop { .. } | StmtKind::Try { .. } => true,
            StmtKind::Return(_) => !(top && i + 1 == b.len()),
            StmtKind::If { then_body, else_body, .. } => any(then_body, false) || any(else_body, false),
            StmtKind::For { body, .. } => any(body, false),
            _ => false,
        })
    }
    any(body, true)
}

/// A jump (break/continue) belonging to this loop level, or a return at any depth; with
/// `continue_only`, only `continue`s of this level.
pub fn contains_jump(b: &[Stmt], continue_only: bool) -> bool {
    level_jump(b, &|k| matches!(k, StmtKind::Continue) || (!continue_only && matches!(k, StmtKind::Break)))
}

/// A `break` or `continue` of this loop level (not inside a nested loop) that `pick` accepts.
fn level_jump(b: &[Stmt], pick: &dyn Fn(&StmtKind) -> bool) -> bool {
    b.iter().any(|s| match &s.kind {
        k @ (StmtKind::Continue | StmtKind::Break) => pick(k),
        StmtKind::If { then_body, else_body, .. } => level_jump(then_body, pick) || level_jump(else_body, pick),
        StmtKind::Try { .. } => s.kind.blocks().into_iter().any(|b| level_jump(b, pick)),
        _ => false,
    })
}

fn contains_return(b: &[Stmt]) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => contains_return(then_body) || contains_return(else_body),
        StmtKind::For { body, .. } | StmtKind::Loop { body } => contains_return(body),
        StmtKind::Try { .. } => s.kind.blocks().into_iter().any(|b| contains_return(b)),
        _ => false,
    })
}

/// Whether a loop body can end an iteration early or stop the loop.
pub fn leaves_loop(body: &[Stmt]) -> bool {
    contains_jump(body, false) || contains_return(body)
}

/// Whether a loop body can stop the loop: a `break` of this level or a `return` (a `continue`
/// only ends its iteration).
pub fn stops_loop(body: &[Stmt]) -> bool {
    level_jump(body, &|k| matches!(k, StmtKind::Break)) || contains_return(body)
}

/// Whether a `for` loop with this body runs its iterations speculatively (lowering:
/// `lower::control::lower_speculative_iteration`; the overlap analysis models the same): in a
/// try or with body (`catching`), an iteration that may raise but stop the loop no other way
/// does not wait for the status of the one before it.
pub fn speculative_iterations(catching: bool, body: &[Stmt]) -> bool {
    catching && !stops_loop(body) && body.iter().any(may_raise)
}

/// Whether the status may be non-zero after `s` (so what follows it must be guarded).
pub fn may_exit(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => {
            then_body.iter().any(may_exit) || else_body.iter().any(may_exit)
        }
        StmtKind::For { body, .. } | StmtKind::Loop { body } => contains_return(body),
        // Conservatively: its blocks may break/continue/return, and its lowering threads the
        // caught exception as a status inside the statement.
        StmtKind::Try { .. } => true,
        _ => false,
    }
}

/// Whether lowering `s` inside a try body may make a catching call (an operation, a call, a
/// global look-up, a bound check of a load or `del`), after which the status may be RAISED.
/// Conservative: a load of a definitely assigned local makes none.
pub fn may_raise(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Let(_, e) => !matches!(e, crate::bezoar::ir::Expr::Const(_)),
        StmtKind::Delete(_) => true,
        StmtKind::Store(..) | StmtKind::Unbind(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => false,
        StmtKind::Raise(_) => false,
        StmtKind::If { .. } | StmtKind::For { .. } | StmtKind::Loop { .. } | StmtKind::Try { .. } => {
            s.kind.blocks().into_iter().flatten().any(may_raise)
        }
    }
}

/// Whether every path through `block` ends in a `raise` (such a path never continues: what is
/// assigned on it does not matter after the enclosing `if`).
pub fn always_raises(block: &[Stmt]) -> bool {
    match block.last().map(|s| &s.kind) {
        Some(StmtKind::Raise(_)) => true,
        Some(StmtKind::If { then_body, else_body, .. }) => always_raises(then_body) && always_raises(else_body),
        _ => false,
    }
}

/// The line of a `loop` (a `while True:`) that nothing but an exception can leave: no `break` of
/// its own, no `return`, no `raise` in its body. Its iterations do not wait for one another, so
/// while the call whose failure ends it is in flight (in an inlined callee, say) it would unroll
/// without bound; such a function falls back.
pub fn loop_left_only_by_failure(b: &[Stmt]) -> Option<u32> {
    fn raises(b: &[Stmt]) -> bool {
        b.iter().any(|s| match &s.kind {
            StmtKind::Raise(_) => true,
            StmtKind::If { then_body, else_body, .. } => raises(then_body) || raises(else_body),
            StmtKind::For { body, .. } | StmtKind::Loop { body } => raises(body),
            StmtKind::Try { .. } => s.kind.blocks().into_iter().any(|b| raises(b)),
            _ => false,
        })
    }
    for s in b {
        let found = match &s.kind {
            StmtKind::Loop { body } => {
                if !contains_jump_break(body) && !contains_return(body) && !raises(body) {
                    return Some(s.line);
                }
                loop_left_only_by_failure(body)
            }
            StmtKind::If { then_body, else_body, .. } => {
                loop_left_only_by_failure(then_body).or_else(|| loop_left_only_by_failure(else_body))
            }
            StmtKind::For { body, .. } => loop_left_only_by_failure(body),
            StmtKind::Try { .. } => s.kind.blocks().into_iter().find_map(|b| loop_left_only_by_failure(b)),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Whether `b` has a `break` of the loop it is the body of (not of a nested loop).
fn contains_jump_break(b: &[Stmt]) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If { then_body, else_body, .. } => contains_jump_break(then_body) || contains_jump_break(else_body),
        StmtKind::Try { .. } => s.kind.blocks().into_iter().any(|b| contains_jump_break(b)),
        _ => false,
    })
}
