//! Lowering statements and expressions: the entry function, loads and stores (promoted SSA
//! values or the memory M), the carried state of blocks, and one Bezoar statement or expression
//! at a time. Branches and loops are in `control`.
use super::*;
use crate::bezoar::passes::{always_raises, may_exit, may_raise, needs_exits};

impl<'a, F: PrimFactory> Lowerer<'a, F> {
    // ---- functions and blocks ---------------------------------------------------------------

    pub(super) fn lower_entry(&mut self) -> Result<(), String> {
        let src = self.src;
        let mut params: Vec<&str> = vec!["S"];
        params.extend(src.params.iter().map(|s| s.as_str()));
        let locs = self.push_builder(src.name.clone(), &params);
        let mut st = State {
            s: locs[0],
            m: None,
            env: BTreeMap::new(),
            defined: DefinedSet::default(),
            exit: None,
            catching: false,
            handling: None,
            caught: None,
        };
        if self.use_memory {
            st.m = Some(self.emit("M", Op::MemEmpty, src.firstlineno));
        }
        for (p, loc) in src.params.iter().zip(&locs[1..]) {
            st.defined.insert(p);
            self.store(&mut st, p, *loc, src.firstlineno);
        }
        let value = if needs_exits(&src.body) {
            // Exits are threaded as a status; the function's value is chosen at the end.
            let status = self.int(NORMAL, 0);
            let none = self.factory.constant(&bz::Const::None);
            let retval = self.prim("None", none, 0);
            st.exit = Some(Exit { status, retval });
            self.lower_block(&mut st, &src.body)?;
            let exit = st.exit.expect("exit threaded");
            let f = self.helper("select_return", 0);
            self.xcall(&mut st, f, &[exit.status, exit.retval], &[], "value", 0)
        } else {
            let (body, ret) = match src.body.split_last() {
                Some((last, init)) if matches!(last.kind, StmtKind::Return(_)) => (init, Some(last)),
                _ => (&src.body[..], None),
            };
            self.lower_block(&mut st, body)?;
            match ret {
                Some(bz::Stmt { kind: StmtKind::Return(r), .. }) => self.reg(*r)?,
                _ => {
                    let none = self.factory.constant(&bz::Const::None);
                    self.prim("None", none, 0)
                }
            }
        };
        let out = self.tuple("out", &[st.s, value], 0);
        self.pop_builder(out);
        Ok(())
    }

    pub(super) fn int(&mut self, v: i64, line: u32) -> Loc {
        let p = self.factory.constant(&bz::Const::Int(v));
        self.prim("status", p, line)
    }

    pub(super) fn helper(&mut self, name: &str, line: u32) -> Loc {
        let p = self.factory.helper(name);
        self.prim(name, p, line)
    }

    /// `st.exit.status := helper(st.exit.status)`.
    pub(super) fn map_status(&mut self, st: &mut State, helper: &str, line: u32) {
        let exit = st.exit.expect("exit threaded");
        let f = self.helper(helper, line);
        let status = self.xcall(st, f, &[exit.status], &[], "status", line);
        st.exit = Some(Exit { status, ..exit });
    }

    pub(super) fn store(&mut self, st: &mut State, name: &bz::VarName, value: Loc, line: u32) {
        if self.promoted.contains(name) {
            st.env.insert(name.clone(), value);
        } else {
            let m = st.m.expect("memory threaded when a variable lives in it");
            let mem = self.resolve(m);
            let value = self.resolve(value);
            st.m = Some(self.emit("M", Op::MemStore { mem, name: name.as_str().to_string(), value }, line));
        }
    }

    pub(super) fn load(&mut self, st: &mut State, name: &bz::VarName, line: u32) -> Loc {
        let value = if self.promoted.contains(name) {
            match st.env.get(name) {
                Some(l) => *l,
                None => self.unbound(name, line),
            }
        } else {
            let mem = self.resolve(st.m.expect("memory threaded"));
            let free = self.src.free_unbound.contains(name);
            self.emit(name.as_str(), Op::MemLoad { mem, name: name.as_str().to_string(), free }, line)
        };
        if st.defined.contains(name) {
            value
        } else {
            // May be unbound here: make the error (if any) happen at this point in program order.
            let check = self.factory.bound_check();
            let f = self.prim("bound", check, line);
            self.op_xcall(st, f, &[value], &[], name.as_str(), line)
        }
    }

    /// The loop-carried / branch-carried tuple layout: S, [M,] `vars`, [status, retval].
    pub(super) fn carried(&mut self, st: &State, vars: &[bz::VarName], line: u32) -> Vec<Loc> {
        let mut out = vec![st.s];
        out.extend(st.m);
        for v in vars {
            let l = match st.env.get(v) {
                Some(l) => *l,
                None => self.unbound(v, line),
            };
            out.push(l);
        }
        if let Some(e) = st.exit {
            out.push(e.status);
            out.push(e.retval);
        }
        out
    }

    /// Rebind S, M and `vars` from the components of `t` (layout of `carried`).
    pub(super) fn uncarry(&mut self, st: &mut State, vars: &[bz::VarName], t: Loc, line: u32) {
        let mut i = 0;
        st.s = self.proj("S", t, i, line);
        i += 1;
        if st.m.is_some() {
            st.m = Some(self.proj("M", t, i, line));
            i += 1;
        }
        for v in vars {
            let l = self.proj(v.as_str(), t, i, line);
            st.env.insert(v.clone(), l);
            i += 1;
        }
        if st.exit.is_some() {
            let status = self.proj("status", t, i, line);
            let retval = self.proj("retval", t, i + 1, line);
            st.exit = Some(Exit { status, retval });
        }
    }

    pub(super) fn lower_block(&mut self, st: &mut State, block: &[bz::Stmt]) -> Result<(), String> {
        for (i, s) in block.iter().enumerate() {
            if st.catching && matches!(s.kind, StmtKind::Let(_, Expr::Op(Intrinsic::Reraise, _))) {
                // A bare `raise` inside a try body's scope (a handler nested in it, the
                // exceptional copy of a finally clause): the handled exception, unchanged, is the
                // status RAISED for the enclosing try's handlers, as an unmatched one is. What
                // follows it in the block (`raise r`, or `return r` in a while loop) is not reached.
                let (Some(exc), Some(_)) = (st.handling, st.exit) else {
                    return Err(format!("a bare raise outside an except handler at line {}", s.line));
                };
                let status = self.int(RAISED, s.line);
                st.exit = Some(Exit { status, retval: exc });
                return Ok(());
            }
            self.lower_stmt(st, s)?;
            let rest = &block[i + 1..];
            if let Some(v) = st.caught.take() {
                // A catching operation (in a try body): the rest of the block is instantiated
                // only once it finished without raising (I2); if it raised, the status becomes
                // RAISED with the locals as they are here (I4).
                let vars: Vec<bz::VarName> =
                    assigned(rest).into_iter().filter(|v| self.promoted.contains(v)).collect();
                self.gate_caught(st, v, &vars, s.line, |lw, inner| lw.lower_block(inner, rest))?;
                return Ok(());
            }
            // In a try body, a compound statement with catching operations may end with the
            // status RAISED. (A `Let` or `del` gates itself, above, when it made a catching call.)
            let compound_raises =
                st.catching && !matches!(s.kind, StmtKind::Let(..) | StmtKind::Delete(_)) && may_raise(s);
            if st.exit.is_some() && !rest.is_empty() && (may_exit(s) || compound_raises) {
                if matches!(s.kind, StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)) {
                    return Ok(()); // the rest of the block is unreachable
                }
                // The rest runs only if nothing above left the block: ite(status, skip, rest).
                let vars: Vec<bz::VarName> =
                    assigned(rest).into_iter().filter(|v| self.promoted.contains(v)).collect();
                let args = self.carried(st, &vars, s.line);
                let skip = self.lower_branch(st, "skip", &vars, &[], s.line)?;
                let rest = self.lower_branch(st, "rest", &vars, rest, s.line)?;
                let status = st.exit.unwrap().status;
                self.ite_branches(st, status, &skip, &rest, &args, &vars, s.line);
                return Ok(());
            }
        }
        Ok(())
    }

    pub(super) fn lower_stmt(&mut self, st: &mut State, s: &bz::Stmt) -> Result<(), String> {
        let line = s.line;
        match &s.kind {
            StmtKind::Let(r, e) => {
                let name = format!("r{r}");
                let fresh = self.fresh.get(r).copied().unwrap_or(0);
                let loc = self.lower_expr(st, e, &name, line, fresh)?;
                self.regs[*r as usize] = Some(loc);
            }
            StmtKind::Store(x, r) => {
                let v = self.reg(*r)?;
                self.store(st, x, v, line);
                st.defined.insert(x);
            }
            StmtKind::Delete(x) => {
                // `del x` of an unbound x raises where CPython raises; afterwards x holds a value
                // that raises UnboundLocalError, and loads are bound-checked again.
                self.load(st, x, line);
                let u = self.unbound(x, line);
                self.store(st, x, u, line);
                st.defined.remove(x);
            }
            StmtKind::Unbind(x) => {
                let u = self.unbound(x, line);
                self.store(st, x, u, line);
                st.defined.remove(x);
            }
            StmtKind::If { cond, then_body, else_body } => {
                let cond = self.reg(*cond)?;
                let mut vars: BTreeSet<bz::VarName> = assigned(then_body);
                vars.extend(assigned(else_body));
                let vars: Vec<bz::VarName> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
                let args = self.carried(st, &vars, line);
                let then_b = self.lower_branch(st, "then", &vars, then_body, line)?;
                let else_b = self.lower_branch(st, "else", &vars, else_body, line)?;
                self.ite_branches(st, cond, &then_b, &else_b, &args, &vars, line);
                // A branch that always raises never continues: the other one's definitions hold.
                st.defined = match (always_raises(then_body), always_raises(else_body)) {
                    (true, false) => else_b.defined.clone(),
                    (false, true) => then_b.defined.clone(),
                    _ => then_b.defined.meet(&else_b.defined),
                };
            }
            StmtKind::For { iter, item, body } => self.lower_for(st, *iter, *item, body, line)?,
            // The raise operation (its `Let`) already failed the path; nothing follows it in its
            // block, and no exit status records it (`bezoar::ir::StmtKind::Raise`).
            StmtKind::Raise(_) => {}
            StmtKind::Loop { body } => self.lower_loop(st, body, line)?,
            StmtKind::Try { body, handlers, orelse, finally } => self.lower_try(st, body, handlers, orelse, *finally, line)?,
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {
                let Some(exit) = st.exit else {
                    return Err(format!("break/continue/return outside a lowered loop at line {line}"));
                };
                let (code, retval) = match &s.kind {
                    StmtKind::Break => (BREAK, exit.retval),
                    StmtKind::Continue => (CONTINUE, exit.retval),
                    StmtKind::Return(r) => (RETURN, self.reg(*r)?),
                    _ => unreachable!(),
                };
                let status = self.int(code, line);
                st.exit = Some(Exit { status, retval });
            }
        }
        Ok(())
    }

    pub(super) fn lower_expr(&mut self, st: &mut State, e: &Expr, name: &str, line: u32, fresh: u32) -> Result<Loc, String> {
        Ok(match e {
            Expr::Const(k) => {
                let c = self.src.consts.get(*k as usize).ok_or("constant index out of range")?;
                let p = self.factory.constant(c);
                self.prim(name, p, line)
            }
            Expr::Load(x) => self.load(st, x, line),
            Expr::Global(g) => {
                let loader = self.factory.global_loader();
                let f = self.prim("global", loader, line);
                let n = self.factory.string(g);
                let n = self.prim("name", n, line);
                self.op_xcall(st, f, &[n], &[], g, line)
            }
            Expr::Call { func, args, kwnames } => {
                let f = self.reg(*func)?;
                let args = args.iter().map(|a| self.reg(*a)).collect::<Result<Vec<_>, _>>()?;
                self.op_xcall(st, f, &args, kwnames, name, line)
            }
            Expr::Op(Intrinsic::Reraise, _) => {
                // A bare `raise`: the `reraise` helper on the caught value of the innermost
                // handler (a sequential call that fails with that exception as it is).
                let Some(exc) = st.handling else {
                    return Err(format!("a bare raise outside an except handler at line {line}"));
                };
                debug_assert!(!st.catching, "lowered by lower_block");
                let f = self.helper("reraise", line);
                self.xcall(st, f, &[exc], &[], name, line)
            }
            Expr::Op(op, args) => {
                let mut argl = args.iter().map(|a| self.reg(*a)).collect::<Result<Vec<_>, _>>()?;
                for c in op.static_operands() {
                    let p = self.factory.constant(&c);
                    argl.push(self.prim("k", p, line));
                }
                let p = if fresh != 0 { self.factory.intrinsic_fresh(op, fresh) } else { self.factory.intrinsic(op) };
                let f = self.prim(&intrinsic_var_name(op), p, line);
                self.op_xcall(st, f, &argl, &[], name, line)
            }
        })
    }
}

fn intrinsic_var_name(i: &Intrinsic) -> String {
    match i {
        Intrinsic::Binary { op, inplace } => format!("{}{:?}", if *inplace { "i" } else { "" }, op).to_lowercase(),
        Intrinsic::GetAttr(_) => "getattr".into(),
        other => format!("{other:?}").to_lowercase().chars().take_while(|c| c.is_alphanumeric()).collect(),
    }
}
