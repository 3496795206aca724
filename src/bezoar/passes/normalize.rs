//! Normalisations the lifter applies to the Bezoar it translated (and to inlined function
//! bodies): statements after an `if` one of whose branches always leaves move into the other
//! branch; a `continue` at the tail of a loop body is dropped; and when no return is inside a
//! loop, the returns of a tail `if` store `$ret`, returned at the end (so loop-free functions
//! need no exit status in lowering).
use crate::bezoar::ir::*;

/// The three normalisations above, on a function body with `nregs` registers.
pub fn tidy(body: &mut Block, nregs: &mut u32) {
    nest_after_exits(body);
    drop_tail_continues(body, false);
    if !returns_in_loops(body, false) && matches!(body.last(), Some(Stmt { kind: StmtKind::If { .. }, .. })) {
        // Every return is at the tail of the trailing `if` (the nesting above put the rest of a
        // block after an `if` that returns into its other branch): store `$ret` there instead.
        let mut line = 0;
        if tail_returns_to_local(body, &mut line) {
            let r = *nregs;
            *nregs += 1;
            body.push(Stmt { kind: StmtKind::Let(r, Expr::Load(VarKind::Ret.into())), line });
            body.push(Stmt { kind: StmtKind::Return(r), line });
        }
    }
}

pub fn has_return(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => has_return(then_body) || has_return(else_body),
        StmtKind::For { body, .. } | StmtKind::Loop { body } => has_return(body),
        StmtKind::Try { .. } => s.kind.blocks().into_iter().any(has_return),
        _ => false,
    })
}

/// Whether every path through `block` ends in a return, break or continue (a `try` never
/// counts: conservatively, it may fall through).
pub fn always_leaves(block: &Block) -> bool {
    match block.last().map(|s| &s.kind) {
        Some(StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue) => true,
        Some(StmtKind::If { then_body, else_body, .. }) => always_leaves(then_body) && always_leaves(else_body),
        _ => false,
    }
}

/// `if c: A else: B; R` where A always leaves becomes `if c: A else: B; R` with R inside the
/// else branch (and symmetrically), everywhere.
pub fn nest_after_exits(block: &mut Block) {
    let mut i = 0;
    while i < block.len() {
        if i + 1 < block.len() {
            if let StmtKind::If { then_body, else_body, .. } = &block[i].kind {
                let target = match (always_leaves(then_body), always_leaves(else_body)) {
                    (true, false) => Some(false),
                    (false, true) => Some(true),
                    _ => None,
                };
                if let Some(into_then) = target {
                    let rest = block.split_off(i + 1);
                    if let StmtKind::If { then_body, else_body, .. } = &mut block[i].kind {
                        if into_then { then_body } else { else_body }.extend(rest);
                    }
                }
            }
        }
        match &mut block[i].kind {
            StmtKind::If { then_body, else_body, .. } => {
                nest_after_exits(then_body);
                nest_after_exits(else_body);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => nest_after_exits(body),
            StmtKind::Try { .. } => block[i].kind.blocks_mut().into_iter().for_each(nest_after_exits),
            _ => {}
        }
        i += 1;
    }
}

/// Drops `continue`s at the tail of loop bodies (`tail`: `block` ends an iteration).
pub fn drop_tail_continues(block: &mut Block, tail: bool) {
    if tail && matches!(block.last(), Some(Stmt { kind: StmtKind::Continue, .. })) {
        block.pop();
    }
    let n = block.len();
    for (i, s) in block.iter_mut().enumerate() {
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                drop_tail_continues(then_body, tail && i + 1 == n);
                drop_tail_continues(else_body, tail && i + 1 == n);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => drop_tail_continues(body, true),
            // A `continue` ending a try body skips the else; one ending a handler still runs the
            // handler's cleanup: none is dropped.
            StmtKind::Try { .. } => s.kind.blocks_mut().into_iter().for_each(|b| drop_tail_continues(b, false)),
            _ => {}
        }
    }
}

pub fn returns_in_loops(block: &Block, in_loop: bool) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => in_loop,
        StmtKind::If { then_body, else_body, .. } => {
            returns_in_loops(then_body, in_loop) || returns_in_loops(else_body, in_loop)
        }
        StmtKind::For { body, .. } | StmtKind::Loop { body } => returns_in_loops(body, true),
        // A return inside a `try` counts as one in a loop: it needs the exit status threaded.
        StmtKind::Try { .. } => s.kind.blocks().into_iter().any(|b| returns_in_loops(b, true)),
        _ => false,
    })
}

/// Whether every return in `block` is at its tail (through `if`s); if so, turns them into
/// `store $ret` (`line`: the line of the last one).
pub fn tail_returns_to_local(block: &mut Block, line: &mut u32) -> bool {
    tail_returns_to(block, line, &VarKind::Ret.into())
}

/// `tail_returns_to_local` storing into the local `ret`.
pub fn tail_returns_to(block: &mut Block, line: &mut u32, ret: &VarName) -> bool {
    fn all_at_tail(block: &Block) -> bool {
        block.iter().enumerate().all(|(i, s)| match &s.kind {
            StmtKind::Return(_) => i + 1 == block.len(),
            StmtKind::If { then_body, else_body, .. } => {
                if i + 1 == block.len() {
                    all_at_tail(then_body) && all_at_tail(else_body)
                } else {
                    !returns_in_loops(then_body, true) && !returns_in_loops(else_body, true)
                }
            }
            StmtKind::Try { .. } => !s.kind.blocks().into_iter().any(has_return),
            _ => true,
        })
    }
    fn convert(block: &mut Block, line: &mut u32, ret: &VarName) {
        if let Some(s) = block.last_mut() {
            match &mut s.kind {
                StmtKind::Return(r) => {
                    *line = s.line;
                    s.kind = StmtKind::Store(ret.clone(), *r);
                }
                StmtKind::If { then_body, else_body, .. } => {
                    convert(then_body, line, ret);
                    convert(else_body, line, ret);
                }
                _ => {}
            }
        }
    }
    if !all_at_tail(block) {
        return false;
    }
    convert(block, line, ret);
    true
}
