//! Program order among a run's calls, recovered from the chain of ordering tokens: each call's
//! input token F_R was made by the call before it (`Controllers::fut_owner`), or passes through
//! an inlined call's body (`Controllers::bridge`). Used to raise the failure earliest in program
//! order, to not dispatch (and to cancel) calls after a failed one, for per-object ordering's
//! backward walk, and for the positions in call records.
use super::state::{CtrlId, Phase};
use super::env::Env;
use super::FutId;

/// Where a call's input order comes from.
pub enum Pred {
    /// The output order of this controller.
    Call(CtrlId),
    /// The run's initial order.
    Start,
    /// Not known (yet).
    Unknown,
}

/// A call's position in program order, if its chain of input orders is known (memoised:
/// amortised O(1)).
pub fn position_of<E: Env>(e: &mut E, cid: CtrlId) -> Option<u64> {
    const UNKNOWN: u64 = u64::MAX;
    let ctl = e.ctl();
    if ctl.pos_memo.len() < ctl.ctrls.len() {
        ctl.pos_memo.resize(ctl.ctrls.len(), UNKNOWN);
    }
    let mut chain = Vec::new();
    let mut cur = cid;
    let base = loop {
        let memo = e.ctl_ref().pos_memo[cur];
        if memo != UNKNOWN {
            break memo;
        }
        chain.push(cur);
        match predecessor(e, cur) {
            Pred::Call(owner) => {
                cur = owner;
                if matches!(e.ctl_ref()[cur].phase, Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. }) {
                    // A call that is being inlined: its order continues through its body's
                    // calls, which are not all known yet.
                    return None;
                }
            }
            Pred::Start => break 0,
            Pred::Unknown => return None,
        }
    };
    let memo = &mut e.ctl().pos_memo;
    let mut p = base;
    for c in chain.into_iter().rev() {
        p += 1;
        memo[c] = p;
    }
    Some(memo[cid])
}

/// The call whose output order is this call's input order (through inlined calls' bridges).
pub fn predecessor<E: Env>(e: &E, cid: CtrlId) -> Pred {
    let ctrl = &e.ctl_ref()[cid];
    // Without `in_tok`, S is still held (see `finish`).
    let tok = match ctrl.in_tok {
        Some(t) => t,
        None => match e.peek_token(ctrl.seq) {
            Some(t) => t,
            None => return Pred::Unknown,
        },
    };
    match e.ctl_ref().owner(through_bridges(e, tok.r)) {
        Some(owner) => Pred::Call(owner),
        None => Pred::Start,
    }
}

/// The call whose output order is token `tok` (through inlined calls' bridges), or the start.
pub(super) fn pred_of_token<E: Env>(e: &E, tok: super::Token) -> Pred {
    match e.ctl_ref().owner(through_bridges(e, tok.r)) {
        Some(owner) => Pred::Call(owner),
        None => Pred::Start,
    }
}

fn through_bridges<E: Env>(e: &E, mut r: FutId) -> FutId {
    while let Some(&b) = e.ctl_ref().bridge.get(&r) {
        r = b;
    }
    r
}

/// Each call's position in program order: 1 + the position of the call that produced its
/// input token (0 for the run's initial token); None if its input order never became known.
pub fn positions<E: Env>(e: &E) -> Vec<Option<u64>> {
    let n = e.ctl_ref().ctrls.len();
    let mut pos: Vec<Option<Option<u64>>> = vec![None; n];
    for start in 0..n {
        // Walk back along the token chain to a known position, then fill in going forward.
        let mut chain = Vec::new();
        let mut cur = Some(start);
        let mut base: Option<u64> = None;
        while let Some(c) = cur {
            if let Some(p) = pos[c] {
                base = p;
                break;
            }
            chain.push(c);
            cur = match predecessor(e, c) {
                Pred::Call(owner) => Some(owner),
                Pred::Start => {
                    base = Some(0); // the run's initial token
                    None
                }
                Pred::Unknown => {
                    base = None;
                    None
                }
            };
        }
        for c in chain.into_iter().rev() {
            base = base.map(|b| b + 1);
            pos[c] = Some(base);
        }
    }
    pos.into_iter().map(|p| p.flatten()).collect()
}
