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
//!   is `reraise(c)`, a sequential call that fails with the original exception (the status is
//!   RAISED: what follows the try is skipped). A handler (entered with the status 0) binds
//!   `as e` to `caught_exception(c)`, runs its body with every call made `handling c` (I5), then
//!   unbinds `e` (CPython's `e = None; del e`), whatever way the body ended.
//!
//! Handlers, their tests and the else are not part of the catching scope: their exceptions are
//! not caught by the same try. Inside an enclosing try body they belong to its scope: their
//! operations are catching (for the outer try), and an exception no handler matches is not
//! re-raised but left as the status RAISED with the same caught value, for the outer handlers.
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
        finally: bool,
        line: u32,
    ) -> Result<(), String> {
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
        // The body is a catching scope; the handlers and the else belong to the enclosing one
        // (inside an outer try body, their operations are catching for the outer try).
        let outer_catching = std::mem::replace(&mut st.catching, true);
        let lowered = self.lower_block(st, body);
        st.catching = outer_catching;
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
        let at_exit = at_raise.clone();
        let except = self.lower_branch_with(st, "except", &vars, line, |lw, inner| {
            inner.defined = at_raise;
            // The chain runs with the status 0 (its own operations may raise, for an enclosing
            // try) and the exception held in `exc`.
            let exit = inner.exit.expect("exit threaded");
            let zero = lw.int(NORMAL, line);
            inner.exit = Some(Exit { status: zero, ..exit });
            lw.lower_handlers(inner, handlers, exit.retval, line)
        })?;
        let body_may_leave = body.iter().any(may_exit);
        let noraise = self.lower_branch_with(st, "noraise", &vars, line, |lw, inner| {
            if orelse.is_empty() {
                return Ok(());
            }
            if !body_may_leave {
                return lw.lower_block(inner, orelse);
            }
            if finally {
                return lw.lower_finally_normal(inner, orelse, at_exit, line);
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

    /// A finally clause's normal copy (`Try::finally`), after a body that completed or left by
    /// break/continue/return: it runs with the status 0 (the body's exit saved), from what is
    /// defined at every way out of the body (`at_exit`: what a handler may assume); then the saved
    /// exit goes on — unless the clause raised (in a catching scope: the status RAISED stays; outside
    /// one the run failed), as CPython discards a pending return or break then.
    fn lower_finally_normal(&mut self, st: &mut State, orelse: &[bz::Stmt], at_exit: DefinedSet, line: u32) -> Result<(), String> {
        let saved = st.exit.expect("exit threaded");
        let zero = self.int(NORMAL, line);
        st.exit = Some(Exit { status: zero, ..saved });
        st.defined = at_exit;
        self.lower_block(st, orelse)?;
        let after = st.exit.expect("exit threaded");
        let args = self.carried(st, &[], line);
        let keep = self.lower_branch(st, "fraised", &[], &[], line)?;
        let restore = self.lower_branch_with(st, "fexit", &[], line, |_, inner| {
            inner.exit = Some(saved);
            Ok(())
        })?;
        self.ite_branches(st, after.status, &keep, &restore, &args, &[], line);
        st.defined = keep.defined.meet(&restore.defined);
        Ok(())
    }

    /// The handler chain from `handlers[0]`, entered with the status 0 and `exc` the caught
    /// value.
    fn lower_handlers(&mut self, st: &mut State, handlers: &[bz::Handler], exc: Loc, line: u32) -> Result<(), String> {
        let Some((h, rest)) = handlers.split_first() else {
            // No handler matched: the same exception propagates, unchanged, with the status
            // RAISED (so nothing after the try runs on this path). Inside an enclosing try body
            // that is all: its handlers get the same caught value. Elsewhere the sequential
            // `reraise` makes it the run's failure.
            let status = self.int(RAISED, line);
            st.exit = Some(Exit { status, retval: exc });
            if !st.catching {
                let f = self.helper("reraise", line);
                self.xcall(st, f, &[exc], &[], "reraise", line);
            }
            return Ok(());
        };
        let Some((test, reg)) = &h.test else {
            // A bare `except:` matches (it is the last handler).
            return self.lower_handler_body(st, h, exc, line);
        };
        let mut vars: BTreeSet<bz::VarName> = BTreeSet::new();
        for r in handlers {
            if let Some((test, _)) = &r.test {
                vars.extend(assigned(test));
            }
            vars.extend(assigned(&r.body));
            vars.extend(r.name.iter().cloned());
        }
        let vars: Vec<bz::VarName> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
        // `except E`: E is evaluated only now, with the exception being handled. (Its match
        // fails, when E is no exception class, at the `except` line: the test's.)
        let tline = test.last().map_or(line, |s| s.line);
        let outer = st.handling.replace(exc);
        if st.catching {
            // Inside an enclosing try body each operation of the test may raise (the status
            // RAISED, for the enclosing try): the rest of the test and the match are gated on
            // it, so E's register is bound in the innermost gate, where the match uses it.
            if test.iter().any(|s| !matches!(s.kind, StmtKind::Let(..))) {
                return Err(format!("an except clause's test that is not straight-line code at line {line}"));
            }
            return self.lower_test_then(st, test, &vars, line, &mut |lw, inner| {
                inner.handling = outer;
                lw.match_handler(inner, h, *reg, rest, exc, &vars, tline)
            });
        }
        let lowered = self.lower_block(st, test);
        st.handling = outer;
        lowered?;
        self.match_handler(st, h, *reg, rest, exc, &vars, tline)
    }

    /// The straight-line statements `test` in a catching scope, each catching operation gating
    /// what follows it (`gate_caught`), then `k` in the innermost gate. `vars`: what `k` assigns.
    fn lower_test_then(
        &mut self,
        st: &mut State,
        test: &[bz::Stmt],
        vars: &[bz::VarName],
        line: u32,
        k: &mut dyn FnMut(&mut Self, &mut State) -> Result<(), String>,
    ) -> Result<(), String> {
        for (i, s) in test.iter().enumerate() {
            self.lower_stmt(st, s)?;
            if let Some(v) = st.caught.take() {
                let rest = &test[i + 1..];
                return self.gate_caught(st, v, vars, s.line, |lw, inner| lw.lower_test_then(inner, rest, vars, line, k));
            }
        }
        k(self, st)
    }

    /// `exc_match(exc, E)` for the handler `h` whose test left E in `reg`, then `h` or the rest
    /// of the chain. `vars`: what the chain from `h` assigns.
    #[allow(clippy::too_many_arguments)]
    fn match_handler(
        &mut self,
        st: &mut State,
        h: &bz::Handler,
        reg: bz::Reg,
        rest: &[bz::Handler],
        exc: Loc,
        vars: &[bz::VarName],
        line: u32,
    ) -> Result<(), String> {
        let class = self.reg(reg)?;
        let f = self.helper("exc_match", line);
        let catch = st.catching;
        let m = self.xcall_with(st, f, &[exc, class], &[], "match", line, catch, Some(exc));
        let choose = |lw: &mut Self, st: &mut State| -> Result<(), String> {
            let args = lw.carried(st, vars, line);
            let this = lw.lower_branch_with(st, "handler", vars, line, |lw, inner| lw.lower_handler_body(inner, h, exc, line))?;
            let next = lw.lower_branch_with(st, "next", vars, line, |lw, inner| lw.lower_handlers(inner, rest, exc, line))?;
            lw.ite_branches(st, m, &this, &next, &args, vars, line);
            // The path of the final re-raise goes on only to be skipped.
            st.defined = if rest.is_empty() { this.defined } else { this.defined.meet(&next.defined) };
            Ok(())
        };
        if catch {
            // Its TypeError (a test that is not an exception class) is caught by the enclosing try.
            self.gate_caught(st, m, vars, line, choose)
        } else {
            choose(self, st)
        }
    }

    /// A matching handler (the status is 0): `as e` bound, the body run with the exception
    /// handled, then `e` unbound.
    fn lower_handler_body(&mut self, st: &mut State, h: &bz::Handler, exc: Loc, line: u32) -> Result<(), String> {
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
