//! The driver loop and the reduction of one statement.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    pub(super) fn drive(&mut self) -> Result<(), H::Error> {
        loop {
            // After a settled failure (`control::Controllers::settled`) nothing is reduced.
            while let Some(w) = if self.ctl.settled { None } else { self.next_ready() } {
                if self.steps_left == 0 {
                    return Err(self.host.internal_error("RuntimeError", "step budget exhausted"));
                }
                self.steps_left -= 1;
                self.step(w);
                if let Some(e) = self.out_of_memory() {
                    return Err(e);
                }
            }
            if self.unpark_folds() {
                continue;
            }
            if self.ctl.in_flight == 0 {
                return Ok(());
            }
            let done = match self.host.wait() {
                Ok(done) => done,
                Err(err) if self.host.is_interrupt(&err) && control::interrupt(self, err.clone()) => continue,
                Err(err) => return Err(err),
            };
            for (task, result) in done {
                control::finished(self, task as usize, result);
            }
        }
    }

    /// After a step: if an allocation failed during it (the reserve let it finish), the
    /// MemoryError that ends the run, as CPython's would have ended the program.
    #[inline]
    pub(super) fn out_of_memory(&mut self) -> Option<H::Error> {
        crate::oom::failed().then(|| self.host.internal_error("MemoryError", "poppy_jit: out of memory in the runtime"))
    }

    pub(super) fn next_ready(&mut self) -> Option<WorkId> {
        match &mut self.shuffle {
            None => self.ready.pop_front(),
            Some(x) => {
                if self.ready.is_empty() {
                    return None;
                }
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                let i = (*x % self.ready.len() as u64) as usize;
                self.ready.swap_remove_back(i)
            }
        }
    }

    pub(super) fn step(&mut self, w: WorkId) {
        match &self.work[w] {
            Work::Done => {}
            Work::Fold(_) => self.fold_resume(w),
            Work::Ctrl(cid) => {
                let cid = *cid;
                control::advance(self, cid, w);
            }
            Work::Stmt { frame, index } => {
                let (frame, index) = (frame.clone(), *index);
                if self.step_stmt(w, &frame, index) {
                    self.release_work(w);
                    self.stats.reductions += 1;
                    let live = frame.live.get() - 1;
                    frame.live.set(live);
                    if live == 0 {
                        // Every statement of this instance is reduced: its variables are no
                        // longer needed by it (values, edges and controllers keep their own).
                        for &s in &frame.env {
                            self.release(s);
                        }
                    }
                } else {
                    self.note_blocked(w, &frame, index);
                }
            }
        }
    }

    /// Step one statement; false if it is waiting for an input.
    pub(super) fn step_stmt(&mut self, w: WorkId, frame: &Frame<H::Prim>, index: usize) -> bool {
        let func = &frame.prog.funcs[frame.func as usize];
        let stmt = &func.body[index];
        let env = &frame.env;
        let dst = env[stmt.dst as usize];
        macro_rules! need {
            ($v:expr) => {
                match self.need(env[$v as usize], w) {
                    Some(v) => v,
                    None => return false,
                }
            };
        }
        match &stmt.op {
            Op::Alias(y) => self.follow(env[*y as usize], dst),
            Op::Prim(_) | Op::Tuple(_) | Op::Fun { .. } => unreachable!("reduced at instantiation"),
            Op::Proj { index, tuple } => match need!(*tuple) {
                Value::Tuple(t) if (*index as usize) < t.len() => self.follow(t[*index as usize], dst),
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: projection out of something that is not a tuple");
                    self.resolve(dst, e);
                }
            },
            Op::Call { func: f, args } => {
                let params: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                match need!(*f) {
                    Value::Closure(c) => self.call_into(&c.prog, c.func, &c.env, &params, dst),
                    Value::Error(e) => self.resolve(dst, Value::Error(e)),
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: internal call of a value that is not a λO function");
                        self.resolve(dst, e);
                    }
                }
            }
            Op::Ite { cond, then_f, else_f, args } => {
                let c = need!(*cond);
                let which = match self.prim_of(c, "ite condition").and_then(|p| self.host.truthy(&p).map_err(Value::Error)) {
                    Ok(b) => b,
                    Err(e) => {
                        self.resolve(dst, e);
                        return true;
                    }
                };
                let chosen = need!(if which { *then_f } else { *else_f });
                let params: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                match chosen {
                    Value::Closure(c) => self.call_into(&c.prog, c.func, &c.env, &params, dst),
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: ite branch is not a λO function");
                        self.resolve(dst, e);
                    }
                }
            }
            Op::Fold { seq, body, acc } => {
                let s = need!(*seq);
                let items = match self.prim_of(s, "fold sequence").and_then(|p| self.host.elements(&p).map_err(Value::Error)) {
                    Ok(items) => items,
                    Err(e) => {
                        self.resolve(dst, e);
                        return true;
                    }
                };
                let Value::Closure(_) = need!(*body) else {
                    let e = self.error("TypeError", "poppy_jit: fold body is not a λO function");
                    self.resolve(dst, e);
                    return true;
                };
                // Iterations as far as the bound on live variables allows, the rest parked
                // (`fold`).
                self.fold_start(items, env[*body as usize], env[*acc as usize], dst);
            }
            Op::MemEmpty => self.resolve(dst, Value::Mem(Rc::new(BTreeMap::new()))),
            Op::MemLoad { mem, name, free } => match need!(*mem) {
                Value::Mem(m) => match m.get(name) {
                    Some(s) => self.follow(*s, dst),
                    None => {
                        let e = if *free {
                            let msg = format!(
                                "cannot access free variable '{name}' where it is not associated with a value in enclosing scope"
                            );
                            self.error("NameError", &msg)
                        } else {
                            let msg = format!("cannot access local variable '{name}' where it is not associated with a value");
                            self.error("UnboundLocalError", &msg)
                        };
                        self.resolve(dst, e);
                    }
                },
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: load from something that is not a memory");
                    self.resolve(dst, e);
                }
            },
            Op::MemStore { mem, name, value } => match need!(*mem) {
                Value::Mem(m) => {
                    let mut m2 = (*m).clone();
                    m2.insert(name.clone(), env[*value as usize]);
                    self.resolve(dst, Value::Mem(Rc::new(m2)));
                }
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: store into something that is not a memory");
                    self.resolve(dst, e);
                }
            },
            Op::XCall { seq, func: f, args, kwnames, catch, handling } => {
                // A call made while a handler runs: the caught value it is made under (known by
                // then: the handler runs once the failure was caught).
                let handling = match handling {
                    None => None,
                    Some(h) => match need!(*h) {
                        Value::Prim(p) => Some(p),
                        _ => {
                            let e = self.error("RuntimeError", "poppy_jit: internal error: a handled exception that is not a value");
                            self.resolve(dst, e);
                            return true;
                        }
                    },
                };
                let seq = env[*seq as usize];
                let arg_slots: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                let callee = env[*f as usize];
                if *catch || handling.is_some() {
                    // Never inlined, never eager: a controller makes the call (a catching one
                    // turns its failure into its value, `control::controller`; one made while a
                    // handler runs gets the handled exception at dispatch: an inlined body or an
                    // eager call would run without it).
                    let func = match self.value(callee) {
                        Some(Value::Prim(p)) => Some(p.clone()),
                        _ => None,
                    };
                    self.queue_call(seq, callee, func, arg_slots, kwnames.clone(), dst, stmt.line);
                    let cid = self.ctl.ctrls.len() - 1;
                    self.ctl[cid].catch = *catch;
                    self.ctl[cid].handling = handling;
                    return true;
                }
                let Some(fv) = self.value(callee).cloned() else {
                    // The callee is not known yet (e.g. a method looked up on a pending result):
                    // queue the call now so that the order passes on as soon as possible.
                    self.queue_call(seq, callee, None, arg_slots, kwnames.clone(), dst, stmt.line);
                    return true;
                };
                let mut params = vec![seq];
                params.extend_from_slice(&arg_slots);
                match fv {
                    Value::Error(e) => self.resolve(dst, Value::Error(e)),
                    Value::Closure(c) => {
                        self.stats.inlined_calls += 1;
                        self.call_into(&c.prog, c.func, &c.env, &params, dst);
                    }
                    Value::Prim(p) if kwnames.is_empty() && self.host.is_eager(&p) => {
                        let argv: Option<Vec<H::Prim>> = arg_slots
                            .iter()
                            .map(|&a| match self.value(a) {
                                Some(Value::Prim(v)) => Some(v.clone()),
                                _ => None,
                            })
                            .collect();
                        let Some(argv) = argv else {
                            // A pending, error or non-primitive argument: a controller handles
                            // it (and hands the order on at once).
                            self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line);
                            return true;
                        };
                        match self.host.eager_call(&p, &argv) {
                            Ok(v) => {
                                let r = self.new_slot(Value::Prim(v));
                                self.resolve(dst, Value::Tuple(Rc::from([seq, r])));
                            }
                            Err(e) => {
                                // Failures keep their place in program order: a controller
                                // that failed at once (it still forwards the order).
                                self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line);
                                let cid = self.ctl.ctrls.len() - 1;
                                control::fail(self, cid, e);
                            }
                        }
                    }
                    Value::Prim(p) => match self.host.inline_binding(&p, arg_slots.len(), kwnames) {
                        Some((prog, binds)) => {
                            self.stats.inlined_calls += 1;
                            let params = self.bind_params(seq, &arg_slots, binds);
                            self.call_into(&prog, prog.entry, &[], &params, dst);
                        }
                        None => self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line),
                    },
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: call of a value that is not callable");
                        self.resolve(dst, e);
                    }
                }
            }
        }
        true
    }
}
