//! Program-order positions of calls, from the chain of ordering tokens.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    /// A call's position in program order, if its chain of input orders is known (memoised:
    /// amortised O(1)).
    pub(super) fn position_of(&mut self, cid: usize) -> Option<u64> {
        const UNKNOWN: u64 = u64::MAX;
        if self.pos_memo.len() < self.ctrls.len() {
            self.pos_memo.resize(self.ctrls.len(), UNKNOWN);
        }
        let mut chain = Vec::new();
        let mut cur = cid;
        let base = loop {
            if self.pos_memo[cur] != UNKNOWN {
                break self.pos_memo[cur];
            }
            chain.push(cur);
            match self.predecessor(cur) {
                Pred::Call(owner) => {
                    cur = owner;
                    if matches!(self.ctrls[cur].phase, Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. }) {
                        // A call that is being inlined: its order continues through its body's
                        // calls, which are not all known yet.
                        return None;
                    }
                }
                Pred::Start => break 0,
                Pred::Unknown => return None,
            }
        };
        let mut p = base;
        for c in chain.into_iter().rev() {
            p += 1;
            self.pos_memo[c] = p;
        }
        Some(self.pos_memo[cid])
    }

    /// The call whose output order is this call's input order (through inlined calls' bridges).
    pub(super) fn predecessor(&self, cid: usize) -> Pred {
        let ctrl = &self.ctrls[cid];
        // Without `in_tok`, S is still held (see `finish`).
        let tok = match ctrl.in_tok {
            Some(t) => t,
            None => match self.value(ctrl.seq) {
                Some(Value::Seq(t)) => *t,
                _ => return Pred::Unknown,
            },
        };
        match self.fut_owner.get(self.through_bridges(tok.r)).copied().filter(|&o| o != NONE) {
            Some(owner) => Pred::Call(owner as usize),
            None => Pred::Start,
        }
    }

    pub(super) fn through_bridges(&self, mut r: usize) -> usize {
        while let Some(&b) = self.bridge.get(&r) {
            r = b;
        }
        r
    }

    /// Each call's position in program order: 1 + the position of the call that produced its
    /// input token (0 for the run's initial token); None if its input order never became known.
    pub(super) fn positions(&self) -> Vec<Option<u64>> {
        let n = self.ctrls.len();
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
                cur = match self.predecessor(c) {
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
}
