//! Call records for `Host::record_calls`.
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
}
