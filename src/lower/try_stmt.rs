//! Lowering `try`/`except`/`else` (docs/design-exceptions.md, stage 1: gated try bodies).
//!
//! The caught exception is an exit status, RAISED (4), next to break/continue/return; while the
//! status is RAISED, the `retval` slot of the exit holds the caught value (`Host::caught`).
//!
//! - **Try body.** Every operation lowered in it is a catching call (`xcall?`, `op_xcall`); the
//!   rest of its block is instantiated only once it finished without raising:
//!   `ite(is_caught(v), raised, rest)` where `raised` sets the status to RAISED and the exit's
//!   value to `v` (`gate_caught`). So no operation after the raising point exists (I2), and the
//!   locals carried out of `raised` are those at the raising point (I4). Loops in the body check
//!   the status before each iteration; a statement that may raise is followed by the usual gate
//!   on the status (`lower_block`).
//! - **After the body.** `ite(is_raised(status), except, noraise)`: `noraise` runs the else
//!   (gated on a status of 0: not after break/continue/return); `except` is the handler chain.
//! - **Handler chain.** For each handler: its test (lowered with the handled exception set),
//!   `exc_match(c, E)`, `ite(match, handler, next)`; a bare handler matches; the end of the chain
//!   is `reraise(c)`, a sequential call that fails with the original exception (the status
//!   stays RAISED: what follows the try is skipped). A handler sets the status back to 0, binds
//!   `as e` to `caught_exception(c)`, runs its body with every call made `handling c` (I5), then
//!   unbinds `e` (CPython's `e = None; del e`), whatever way the body ended.
//!
//! Handlers, their tests and the else are not part of the catching scope: their exceptions are
//! not caught by the same try. A try inside a try body is not lowered yet (the function falls
//! back).
use super::*;
use crate::bezoar::passes::may_exit;

impl<'a, F: PrimFactory> Lowerer<'a, F> {
    /// `ite(is_caught(v), raised, rest; carried)`: the value `v` of a catching call decides
    /// whether `rest` (lowered into the branch's state by `rest`) runs, or the status becomes
    /// RAISED with `v` as the exit's value. `vars`: the promoted variables `rest` may assign.
    pub(super) fn gate_caught(
        &mut self,
        st: &mut State,
        v: Loc,
        vars: &[bz::VarName],
        line: u32,
        rest: impl FnOnce(&mut Self, &mut State) -> Result<(), String>,
    ) -> Result<(), String> {
        if st.exit.is_none() {
            return Err(format!("a catching operation without an exit status at line {line}"));
        }
        let f = self.helper("is_caught", line);
        let c = self.xcall(st, f, &[v], &[], "caught", line);
        let args = self.carried(st, vars, line);
        let raised = self.lower_branch_with(st, "raised", vars, line, |lw, inner| {
            let status = lw.int(RAISED, line);
            inner.exit = Some(Exit { status, retval: v });
            Ok(())
        })?;
        let rest = self.lower_branch_with(st, "ok", vars, line, rest)?;
        self.ite_branches(st, c, &raised, &rest, &args, vars, line);
        // The raised path goes on only to a handler, which starts from what is defined at the
        // raising points (`lower_try`), or is skipped: what follows knows the rest ran.
        st.defined = rest.defined;
        Ok(())
    }

    pub(super) fn lower_try(
        &mut self,
        st: &mut State,
        body: &[bz::Stmt],
        handlers: &[bz::Handler],
        orelse: &[bz::Stmt],
        line: u32,
    ) -> Result<(), String> {
        if st.catching {
            return Err(format!("a try statement inside a try body (line {line}) is not lowered yet"));
        }
        if st.exit.is_none() {
            return Err(format!("a try statement without an exit status at line {line}"));
        }
        // What a handler may assume is defined: what was before the try, less what the body
        // may delete (it may raise at any point).
        let mut at_raise = st.defined.clone();
        for x in deleted(body) {
            at_raise.remove(&x);
        }
        // A statement is reached only with the status 0 (after one that may leave, the rest of
        // the block is skipped unless it is 0; a loop iteration is skipped unless it is 0), or
        // on a path after a failed `reraise` whose run raises anyway. So the body starts from a
        // status of its own: in a loop, its gates then wait for nothing of the iteration before.
        let exit = st.exit.expect("exit threaded");
        let zero = self.int(NORMAL, line);
        st.exit = Some(Exit { status: zero, ..exit });
        st.catching = true;
        let lowered = self.lower_block(st, body);
        st.catching = false;
        lowered?;
        let mut vars: BTreeSet<bz::VarName> = assigned(orelse);
        for h in handlers {
            if let Some((test, _)) = &h.test {
                vars.extend(assigned(test));
            }
            vars.extend(assigned(&h.body));
            vars.extend(h.name.iter().cloned());
        }
        let vars: Vec<bz::VarName> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
        let exit = st.exit.expect("exit threaded");
        let f = self.helper("is_raised", line);
        let raised = self.xcall(st, f, &[exit.status], &[], "raised", line);
        let args = self.carried(st, &vars, line);
        let except = self.lower_branch_with(st, "except", &vars, line, |lw, inner| {
            inner.defined = at_raise;
            let exc = inner.exit.expect("exit threaded").retval;
            lw.lower_handlers(inner, handlers, exc, line)
        })?;
        let body_may_leave = body.iter().any(may_exit);
        let noraise = self.lower_branch_with(st, "noraise", &vars, line, |lw, inner| {
            if orelse.is_empty() {
                return Ok(());
            }
            if !body_may_leave {
                return lw.lower_block(inner, orelse);
            }
            // The else runs only when the body completed normally (status 0).
            let ovars: Vec<bz::VarName> =
                assigned(orelse).into_iter().filter(|v| lw.promoted.contains(v)).collect();
            let args = lw.carried(inner, &ovars, line);
            let skip = lw.lower_branch(inner, "skip", &ovars, &[], line)?;
            let run = lw.lower_branch(inner, "else", &ovars, orelse, line)?;
            let status = inner.exit.expect("exit threaded").status;
            lw.ite_branches(inner, status, &skip, &run, &args, &ovars, line);
            inner.defined = skip.defined.meet(&run.defined);
            Ok(())
        })?;
        self.ite_branches(st, raised, &except, &noraise, &args, &vars, line);
        st.defined = except.defined.meet(&noraise.defined);
        Ok(())
    }

    /// The handler chain from `handlers[0]`, entered with the status RAISED and `exc` the
    /// caught value.
    fn lower_handlers(&mut self, st: &mut State, handlers: &[bz::Handler], exc: Loc, line: u32) -> Result<(), String> {
        let Some((h, rest)) = handlers.split_first() else {
            // No handler matched: the same exception propagates, unchanged. The status stays
            // RAISED, so nothing after the try runs on this path.
            let f = self.helper("reraise", line);
            self.xcall(st, f, &[exc], &[], "reraise", line);
            return Ok(());
        };
        let Some((test, reg)) = &h.test else {
            // A bare `except:` matches (it is the last handler).
            return self.lower_handler_body(st, h, exc, line);
        };
        // `except E`: E is evaluated only now, with the exception being handled.
        let outer = st.handling.replace(exc);
        self.lower_block(st, test)?;
        let class = self.reg(*reg)?;
        let f = self.helper("exc_match", line);
        let m = self.xcall_with(st, f, &[exc, class], &[], "match", line, false, Some(exc));
        st.handling = outer;
        let mut vars: BTreeSet<bz::VarName> = assigned(&h.body);
        vars.extend(h.name.iter().cloned());
        for r in rest {
            if let Some((test, _)) = &r.test {
                vars.extend(assigned(test));
            }
            vars.extend(assigned(&r.body));
            vars.extend(r.name.iter().cloned());
        }
        let vars: Vec<bz::VarName> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
        let args = self.carried(st, &vars, line);
        let this = self.lower_branch_with(st, "handler", &vars, line, |lw, inner| lw.lower_handler_body(inner, h, exc, line))?;
        let next = self.lower_branch_with(st, "next", &vars, line, |lw, inner| lw.lower_handlers(inner, rest, exc, line))?;
        self.ite_branches(st, m, &this, &next, &args, &vars, line);
        // The path of the final re-raise never continues.
        st.defined = if rest.is_empty() { this.defined } else { this.defined.meet(&next.defined) };
        Ok(())
    }

    /// A matching handler: the status back to 0, `as e` bound, the body run with the exception
    /// handled, then `e` unbound.
    fn lower_handler_body(&mut self, st: &mut State, h: &bz::Handler, exc: Loc, line: u32) -> Result<(), String> {
        let exit = st.exit.expect("exit threaded");
        let status = self.int(NORMAL, line);
        st.exit = Some(Exit { status, ..exit });
        if let Some(x) = &h.name {
            let f = self.helper("caught_exception", line);
            let e = self.xcall(st, f, &[exc], &[], x.as_str(), line);
            self.store(st, x, e, line);
            st.defined.insert(x);
        }
        let outer = st.handling.replace(exc);
        let lowered = self.lower_block(st, &h.body);
        st.handling = outer;
        lowered?;
        if let Some(x) = &h.name {
            let u = self.unbound(x, line);
            self.store(st, x, u, line);
            st.defined.remove(x);
        }
        Ok(())
    }
}
