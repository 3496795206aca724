//! Lowering control flow: `if` as `ite` over two branch closures (S, M and the exit status
//! bypass a branch that leaves them unchanged), `while` loops as self-capturing recursive
//! closures, `for` loops as a `fold` or a lazy loop chosen at run time. Which functions need the exit
//! status threaded at all is `bezoar::passes::exits`.
//!
//! `for`: the lifter cannot know whether an iterable is safe to read at once (a list) or must be
//! iterated one `next` at a time (a generator: its side effects interleave with the body's, a
//! `break` stops pulling items, `itertools.count()` never ends); that is known only at run time.
//! So the loop's `iter_snapshot` value decides, by `ite`, between a `fold` over the tuple and a
//! lazy loop; both run the same body closure, so the body is lowered once and the `fold` path
//! of a loop over a range, list, tuple or str costs one `ite` per loop over what it cost before.
//! The alternative, a `loop` with `next_or_stop` for every `for`, would serialise the hot loops
//! (each `next` is a call in program order) and lose the fold's all-iterations-at-once overlap.
use super::*;
use crate::bezoar::passes::{contains_jump, leaves_loop, may_raise, speculative_iterations};

impl<'a, F: PrimFactory> Lowerer<'a, F> {
    /// `res := ite(cond, then_f, else_f; args)` and rebind the carried state from `res`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ite(&mut self, st: &mut State, cond: Loc, then_f: Loc, else_f: Loc, args: &[Loc], vars: &[bz::VarName], line: u32) {
        let cond = self.resolve(cond);
        let args = args.iter().map(|l| self.resolve(*l)).collect();
        let then_f = self.resolve(then_f);
        let else_f = self.resolve(else_f);
        let res = self.emit("ite", Op::Ite { cond, then_f, else_f, args }, line);
        self.uncarry(st, vars, res, line);
    }

    /// `for item in iter: body`. `iter` is the loop's `iter_snapshot`: a tuple of the items when
    /// materialising them was safe, else a (falsy) lazy iterator — known only at run time, so
    /// the loop is both, chosen by `ite` on that value:
    ///
    /// ```text
    /// body := fun(e, acc) -> acc'                 the body, shared by both loops
    /// all  := fun(acc) = fold(iter, body, acc)    every iteration at once (PopPy §5.2)
    /// lazy := fun(acc) =                          one `next` per iteration, in program order
    ///     one := next_or_stop(iter)               (item,) or (); a call threaded on S
    ///     acc' := fold(one, body, acc)            the body once, or not at all
    ///     ite(one, more, stop; acc')              more: lazy(acc') unless the body left the loop
    /// res := ite(iter, all, lazy; (S, [M,] vars, [status, retval]))
    /// ```
    ///
    /// The body is lowered once; an empty tuple also takes the lazy loop, whose `next_or_stop`
    /// on it is unordered and stops at once.
    pub(super) fn lower_for(&mut self, st: &mut State, iter: bz::Reg, item: bz::Reg, body: &[bz::Stmt], line: u32) -> Result<(), String> {
        // A variable the body deletes may be unbound in any iteration and after the loop.
        for x in deleted(body) {
            st.defined.remove(&x);
        }
        let seq = self.reg(iter)?;
        let vars: Vec<bz::VarName> = assigned(body).into_iter().filter(|v| self.promoted.contains(v)).collect();
        let carried = self.carried(st, &vars, line);
        let acc0 = self.tuple("acc", &carried, line);
        let bf = self.lower_for_body(st, item, body, &vars, line)?;
        // all(acc) = fold(iter, body, acc)
        let all_f = {
            let locs = self.push_builder("all".into(), &["acc"]);
            let seq = self.resolve(seq);
            let body_v = self.resolve(bf);
            let acc = self.resolve(locs[0]);
            let res = self.emit("fold", Op::Fold { seq, body: body_v, acc }, line);
            let (fid, captures) = self.pop_builder(res);
            self.emit("all", Op::Fun { func: fid, captures }, line)
        };
        let lazy_f = self.lower_lazy_loop(st, seq, bf, &vars, self.leaves(st, body), line)?;
        let cond = self.resolve(seq);
        let then_f = self.resolve(all_f);
        let else_f = self.resolve(lazy_f);
        let acc = self.resolve(acc0);
        let res = self.emit("for", Op::Ite { cond, then_f, else_f, args: vec![acc] }, line);
        self.uncarry(st, &vars, res, line);
        if contains_jump(body, false) {
            self.map_status(st, "loop_exit", line); // break → 0; return stays
        }
        // The loop may run zero times: nothing it assigns is definitely assigned after it.
        Ok(())
    }

    /// Whether an iteration of a loop with this body may leave it: break/return, or (in a try
    /// body) a raise — then each iteration first checks the status.
    fn leaves(&self, st: &State, body: &[bz::Stmt]) -> bool {
        leaves_loop(body) || (st.catching && body.iter().any(may_raise))
    }

    /// One iteration of a `for` loop in a catching scope, instantiated without waiting for the
    /// status `status_k` the iterations before it left (`passes::speculative_iterations`: no
    /// `break` or `return` in the body; a `continue` only ends the iteration). CPython runs it only
    /// if that status is 0 (an earlier iteration raised: the loop is over), so:
    ///
    /// ```text
    /// S'  := ite(status_k, never, pass; S)        pending until status_k is known; never bound
    ///                                             when it is RAISED
    /// out := iter(S', vars.., 0, retval)          the body, from the status 0
    /// acc := ite(status_k, skip, take; acc_k, out)  acc_k (the raising point's state) or out
    /// ```
    ///
    /// Every ordered call of the iteration waits for S' (its F_R/F_W, per-object ordering's walk
    /// back along program order, a read's): none runs before the iterations before it are known
    /// not to have raised, and none ever runs after one that raised. Its unordered calls do not
    /// wait for the order: they start at once, overlapping the earlier iterations — the
    /// speculation issue 16 allows. When an earlier iteration raised, such a call may already
    /// have run although CPython never makes it; its place in program order never becomes known
    /// (its S is never bound), which is how the run's records mark it (`speculative`).
    fn lower_speculative_iteration(&mut self, st: &mut State, body: &[bz::Stmt], vars: &[bz::VarName], line: u32) -> Result<(), String> {
        let exit = st.exit.expect("exit threaded");
        let items = self.carried(st, vars, line);
        let acc_k = self.tuple("acc", &items, line);
        // S' := ite(status_k, never, pass; S)
        let never_f = {
            self.push_builder("never".into(), &["S"]);
            let never = self.reserve("never");
            let (fid, captures) = self.pop_builder(never);
            self.emit("never", Op::Fun { func: fid, captures }, line)
        };
        let pass_f = {
            let locs = self.push_builder("pass".into(), &["S"]);
            let (fid, captures) = self.pop_builder(locs[0]);
            self.emit("pass", Op::Fun { func: fid, captures }, line)
        };
        let cond = self.resolve(exit.status);
        let then_f = self.resolve(never_f);
        let else_f = self.resolve(pass_f);
        let s = self.resolve(st.s);
        let gated_s = self.emit("S", Op::Ite { cond, then_f, else_f, args: vec![s] }, line);
        // out := iter(S', vars.., 0, retval)
        let run = self.lower_branch(st, "iter", vars, body, line)?;
        let mut args = items;
        args[0] = gated_s;
        let n = args.len();
        args[n - 2] = self.int(NORMAL, line);
        let func = self.resolve(run.f);
        let args: Vec<Var> = args.iter().map(|l| self.resolve(*l)).collect();
        let out = self.emit("out", Op::Call { func, args }, line);
        // acc := ite(status_k, skip, take; acc_k, out)
        let pick = |lw: &mut Self, name: &str, which: usize| -> Loc {
            let locs = lw.push_builder(name.into(), &["acc", "out"]);
            let (fid, captures) = lw.pop_builder(locs[which]);
            lw.emit(name, Op::Fun { func: fid, captures }, line)
        };
        let skip_f = pick(self, "skip", 0);
        let take_f = pick(self, "take", 1);
        let cond = self.resolve(exit.status);
        let then_f = self.resolve(skip_f);
        let else_f = self.resolve(take_f);
        let a = self.resolve(acc_k);
        let o = self.resolve(out);
        let res = self.emit("acc", Op::Ite { cond, then_f, else_f, args: vec![a, o] }, line);
        self.uncarry(st, vars, res, line);
        Ok(())
    }

    /// The body of a `for` loop as `fun body(e, acc) -> acc'` (acc in carried layout); after a
    /// break or return an iteration is skipped, a `continue` ends it with status 0.
    fn lower_for_body(&mut self, st: &State, item: bz::Reg, body: &[bz::Stmt], vars: &[bz::VarName], line: u32) -> Result<Loc, String> {
        let locs = self.push_builder("body".into(), &["e", "acc"]);
        let mut inner = st.clone();
        self.uncarry(&mut inner, vars, locs[1], line);
        self.regs[item as usize] = Some(locs[0]);
        if speculative_iterations(st.catching, body) {
            self.lower_speculative_iteration(&mut inner, body, vars, line)?;
            if contains_jump(body, true) {
                self.map_status(&mut inner, "loop_next", line); // continue → 0
            }
        } else if self.leaves(st, body) {
            // Skip the iteration if an earlier one broke or returned (status != 0).
            let args = self.carried(&inner, vars, line);
            let skip = self.lower_branch(&inner, "skip", vars, &[], line)?;
            let run = self.lower_branch(&inner, "iter", vars, body, line)?;
            let status = inner.exit.expect("exit threaded").status;
            self.ite_branches(&mut inner, status, &skip, &run, &args, vars, line);
            if contains_jump(body, true) {
                self.map_status(&mut inner, "loop_next", line); // continue → 0
            }
        } else {
            self.lower_block(&mut inner, body)?;
        }
        let out_items = self.carried(&inner, vars, line);
        let out = self.tuple("acc", &out_items, line);
        let (fid, captures) = self.pop_builder(out);
        Ok(self.emit("body", Op::Fun { func: fid, captures }, line))
    }

    /// The lazy loop of `lower_for`: a self-capturing closure `lazy(acc)` that pulls one item
    /// with `next_or_stop`, runs the body on it and calls itself again — unless the iterator was
    /// exhausted or (when the body can leave the loop) the status after the body is not 0
    /// (break or return: no further item is pulled, as in CPython).
    fn lower_lazy_loop(&mut self, st: &State, seq: Loc, bf: Loc, vars: &[bz::VarName], leaves: bool, line: u32) -> Result<Loc, String> {
        let lazy_var = self.reserve("lazy");
        let locs = self.push_builder("lazy".into(), &["acc"]);
        let mut inner = st.clone();
        self.uncarry(&mut inner, vars, locs[0], line);
        let next = self.factory.intrinsic(&Intrinsic::NextOrStop);
        let next = self.prim("next_or_stop", next, line);
        // The `next` is an operation of the program: catching in a try body, with the handled
        // exception in a handler.
        let one = self.op_xcall(&mut inner, next, &[seq], &[], "one", line);
        let items = self.carried(&inner, vars, line);
        // acc' := fold(one, body, acc)
        let fold = |lw: &mut Self, items: &[Loc]| -> Loc {
            let acc1 = lw.tuple("acc", items, line);
            let seq = lw.resolve(one);
            let body = lw.resolve(bf);
            let acc = lw.resolve(acc1);
            lw.emit("acc", Op::Fold { seq, body, acc }, line)
        };
        let caught = inner.caught.take();
        let acc2 = if caught.is_none() { Some(fold(self, &items)) } else { None };
        // stop(acc) = acc
        let stop = {
            let locs = self.push_builder("stop".into(), &["acc"]);
            let (fid, captures) = self.pop_builder(locs[0]);
            self.emit("stop", Op::Fun { func: fid, captures }, line)
        };
        // more(acc) = lazy(acc), or with an exit status: ite(status, stop, again; acc)
        let more_f = {
            let locs = self.push_builder("more".into(), &["acc"]);
            let again = |lw: &mut Self, acc: Loc| {
                let func = lw.resolve(lazy_var);
                let acc = lw.resolve(acc);
                lw.emit("rec", Op::Call { func, args: vec![acc] }, line)
            };
            let res = if leaves {
                let status_index = (items.len() - 2) as u32; // [status, retval] close the layout
                let status = self.proj("status", locs[0], status_index, line);
                let again_f = {
                    let l = self.push_builder("again".into(), &["acc"]);
                    let r = again(self, l[0]);
                    let (fid, captures) = self.pop_builder(r);
                    self.emit("again", Op::Fun { func: fid, captures }, line)
                };
                let cond = self.resolve(status);
                let then_f = self.resolve(stop);
                let else_f = self.resolve(again_f);
                let acc = self.resolve(locs[0]);
                self.emit("ite", Op::Ite { cond, then_f, else_f, args: vec![acc] }, line)
            } else {
                again(self, locs[0])
            };
            let (fid, captures) = self.pop_builder(res);
            self.emit("more", Op::Fun { func: fid, captures }, line)
        };
        // ite(one, more, stop; acc')
        let choose = |lw: &mut Self, acc2: Loc| -> Loc {
            let cond = lw.resolve(one);
            let then_f = lw.resolve(more_f);
            let else_f = lw.resolve(stop);
            let acc = lw.resolve(acc2);
            lw.emit("ite", Op::Ite { cond, then_f, else_f, args: vec![acc] }, line)
        };
        let res = match (caught, acc2) {
            (None, Some(acc2)) => choose(self, acc2),
            (Some(v), _) => {
                // In a try body: only once the `next` did not raise; if it did, the loop ends
                // with the status RAISED.
                self.gate_caught(&mut inner, v, vars, line, |lw, st| {
                    let items = lw.carried(st, vars, line);
                    let acc2 = fold(lw, &items);
                    let r = choose(lw, acc2);
                    lw.uncarry(st, vars, r, line);
                    Ok(())
                })?;
                let items = self.carried(&inner, vars, line);
                self.tuple("acc", &items, line)
            }
            (None, None) => unreachable!("folded when not caught"),
        };
        let (fid, captures) = self.pop_builder(res);
        self.define(lazy_var, Op::Fun { func: fid, captures }, line);
        Ok(lazy_var)
    }

    /// `loop: body` as a recursive closure over the carried state:
    /// `fun loop[loop, ..](state) = body; ite(again(status), loop(state with status 0), stop(state))`.
    pub(super) fn lower_loop(&mut self, st: &mut State, body: &[bz::Stmt], line: u32) -> Result<(), String> {
        for x in deleted(body) {
            st.defined.remove(&x);
        }
        let vars: Vec<bz::VarName> = assigned(body).into_iter().filter(|v| self.promoted.contains(v)).collect();
        let args = self.carried(st, &vars, line);
        let loop_var = self.reserve("loop");
        // The loop function: parameters in carried layout.
        let (loop_f_body, captures) = {
            let mut inner = st.clone();
            let mut params: Vec<&str> = vec!["S"];
            if st.m.is_some() {
                params.push("M");
            }
            params.extend(vars.iter().map(|v| v.as_str()));
            params.extend(["status", "retval"]);
            let locs = self.push_builder("loop".into(), &params);
            let t = self.tuple("state", &locs, line);
            self.uncarry(&mut inner, &vars, t, line);
            self.lower_block(&mut inner, body)?;
            let f = self.helper("loop_again", line);
            let status = inner.exit.expect("exit threaded").status;
            let again = self.xcall(&mut inner, f, &[status], &[], "again", line);
            let state = self.carried(&inner, &vars, line);
            // again(state): loop(state with status 0)
            let again_f = {
                let mut a = inner.clone();
                let locs = self.push_builder("again".into(), &params);
                let t = self.tuple("state", &locs, line);
                self.uncarry(&mut a, &vars, t, line);
                let zero = self.int(NORMAL, line);
                a.exit = Some(Exit { status: zero, ..a.exit.unwrap() });
                let call_args: Vec<Var> = self.carried(&a, &vars, line).iter().map(|l| self.resolve(*l)).collect();
                let func = self.resolve(loop_var);
                let r = self.emit("rec", Op::Call { func, args: call_args }, line);
                let (fid, caps) = self.pop_builder(r);
                self.emit("again", Op::Fun { func: fid, captures: caps }, line)
            };
            // stop(state): leave the loop (break → status 0; return stays)
            let stop_f = {
                let mut b = inner.clone();
                let locs = self.push_builder("stop".into(), &params);
                let t = self.tuple("state", &locs, line);
                self.uncarry(&mut b, &vars, t, line);
                self.map_status(&mut b, "loop_exit", line);
                let out = self.carried(&b, &vars, line);
                let out = self.tuple("out", &out, line);
                let (fid, caps) = self.pop_builder(out);
                self.emit("stop", Op::Fun { func: fid, captures: caps }, line)
            };
            let cond = self.resolve(again);
            let then_f = self.resolve(again_f);
            let else_f = self.resolve(stop_f);
            let state: Vec<Var> = state.iter().map(|l| self.resolve(*l)).collect();
            let res = self.emit("ite", Op::Ite { cond, then_f, else_f, args: state }, line);
            self.pop_builder(res)
        };
        self.define(loop_var, Op::Fun { func: loop_f_body, captures }, line);
        let func = self.resolve(loop_var);
        let args: Vec<Var> = args.iter().map(|l| self.resolve(*l)).collect();
        let res = self.emit("loop", Op::Call { func, args }, line);
        self.uncarry(st, &vars, res, line);
        Ok(())
    }

    /// A branch closure `fun then(S, [M,] vars..., [status, retval]) -> (same layout)`.
    pub(super) fn lower_branch(
        &mut self,
        outer: &State,
        name: &str,
        vars: &[bz::VarName],
        block: &[bz::Stmt],
        line: u32,
    ) -> Result<Branch, String> {
        self.lower_branch_with(outer, name, vars, line, |lw, st| lw.lower_block(st, block))
    }

    /// `lower_branch` of what `body` lowers into the branch's state.
    pub(super) fn lower_branch_with(
        &mut self,
        outer: &State,
        name: &str,
        vars: &[bz::VarName],
        line: u32,
        body: impl FnOnce(&mut Self, &mut State) -> Result<(), String>,
    ) -> Result<Branch, String> {
        let mut params: Vec<&str> = vec!["S"];
        if outer.m.is_some() {
            params.push("M");
        }
        params.extend(vars.iter().map(|v| v.as_str()));
        if outer.exit.is_some() {
            params.extend(["status", "retval"]);
        }
        let locs = self.push_builder(name.to_string(), &params);
        let mut st = outer.clone();
        st.s = locs[0];
        let mut i = 1;
        if outer.m.is_some() {
            st.m = Some(locs[1]);
            i = 2;
        }
        for (v, l) in vars.iter().zip(&locs[i..]) {
            st.env.insert(v.clone(), *l);
        }
        if outer.exit.is_some() {
            let n = locs.len();
            st.exit = Some(Exit { status: locs[n - 2], retval: locs[n - 1] });
        }
        let entry = st.clone();
        body(self, &mut st)?;
        let out_items = self.carried(&st, vars, line);
        let out = self.tuple("out", &out_items, line);
        let (fid, captures) = self.pop_builder(out);
        let f = self.emit(name, Op::Fun { func: fid, captures }, line);
        Ok(Branch {
            f,
            defined: st.defined,
            same_s: st.s == entry.s,
            same_m: st.m == entry.m,
            same_exit: st.exit.map(|e| (e.status, e.retval)) == entry.exit.map(|e| (e.status, e.retval)),
        })
    }

    /// `ite(cond, a, b; args)`, then keep S, M and the exit status of `outer` where neither branch
    /// changed them: those values do not depend on the branch taken, so nothing after the `if`
    /// has to wait for its condition to get them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ite_branches(&mut self, st: &mut State, cond: Loc, a: &Branch, b: &Branch, args: &[Loc], vars: &[bz::VarName], line: u32) {
        let outer = st.clone();
        self.ite(st, cond, a.f, b.f, args, vars, line);
        if a.same_s && b.same_s {
            st.s = outer.s;
        }
        if a.same_m && b.same_m {
            st.m = outer.m;
        }
        if a.same_exit && b.same_exit {
            st.exit = outer.exit;
        }
    }

}
