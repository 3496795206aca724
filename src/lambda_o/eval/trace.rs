//! Call records for `Host::record_calls`, and the count of speculative calls at the end of a run.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    /// Records of every call whose arguments became known, with its position in program order.
    pub(super) fn call_records(&mut self) -> Vec<CallRecord<H::Prim>> {
        let pos = control::order::positions(self);
        let failed: std::collections::HashSet<usize> = self.ctl.failures.iter().map(|(c, _)| *c).collect();
        let mut out = Vec::new();
        for (cid, c) in self.ctl.ctrls.iter_mut().enumerate() {
            let (Some(ready), Some(func)) = (c.ready_at, c.func.clone()) else { continue };
            out.push(CallRecord {
                position: pos[cid],
                func,
                args: std::mem::take(&mut c.argv),
                kwnames: c.kwnames.clone(),
                class: c.class,
                queued: c.times.as_ref().and_then(|t| t.queued).unwrap_or(ready),
                ready,
                dispatched: c.times.as_ref().and_then(|t| t.dispatched),
                done: c.times.as_ref().and_then(|t| t.done),
                ok: c.done && !failed.contains(&cid),
                line: c.line,
                object_ordered: c.obj.is_some(),
            });
        }
        out
    }

    /// Speculative calls, once the run is over. A call whose input order S was never bound came
    /// right after a loop iteration's gate that was never passed (`lower::control`, speculative
    /// iterations of a try or with body), and the calls after it in its iteration chain from
    /// it: their place in program order never became known. The dispatched ones ran although
    /// their iteration was discarded; counted are the program's own calls among them
    /// (catching: every operation of a try or with body is, the runtime's helpers are not) of
    /// declared externals. (Every other call's order is known by then, or ends at an error
    /// value after a failure.)
    pub(super) fn speculative_calls(&mut self) -> u64 {
        let slots = &self.slots;
        if !self.ctl.ctrls.iter().any(|c| c.in_tok.is_none() && matches!(slots[c.seq], Slot::Pending(_))) {
            return 0;
        }
        let pos = control::order::positions(self);
        let funcs: Vec<H::Prim> = self
            .ctl
            .ctrls
            .iter()
            .zip(&pos)
            .filter(|(c, p)| c.dispatched && c.catch && p.is_none())
            .filter_map(|(c, _)| c.func.clone())
            .collect();
        funcs.iter().filter(|f| self.host.is_declared(f)).count() as u64
    }
}
