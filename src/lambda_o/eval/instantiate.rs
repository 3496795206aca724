//! Instantiating a function template: fresh slots for its variables, input-free statements
//! reduced at once, the others queued as work items.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    /// Instantiate a function template; returns its result variable, retained for the caller.
    pub(super) fn instantiate(
        &mut self,
        prog: &ProgramRef<H::Prim>,
        fid: FuncId,
        captures: &[SlotId],
        params: &[SlotId],
    ) -> Result<SlotId, H::Error> {
        self.instantiate_into(prog, fid, captures, params, None)
    }

    /// Instantiate a function template. With `dst` (a pending slot), a result variable bound in
    /// the body *is* `dst` (destination passing: no alias edge, so a tail-recursive loop keeps
    /// one result variable however many iterations it runs); returns the result variable.
    pub(super) fn instantiate_into(
        &mut self,
        prog: &ProgramRef<H::Prim>,
        fid: FuncId,
        captures: &[SlotId],
        params: &[SlotId],
        dst: Option<SlotId>,
    ) -> Result<SlotId, H::Error> {
        let func = &prog.funcs[fid as usize];
        if captures.len() != func.ncaptures as usize || params.len() != func.nparams as usize {
            let msg = format!(
                "{}() takes {} arguments but {} were given",
                func.name,
                func.nparams,
                params.len()
            );
            return Err(self.host.internal_error("TypeError", &msg));
        }
        let mut env = Vec::with_capacity(func.nvars as usize);
        env.extend_from_slice(captures);
        env.extend_from_slice(params);
        let ret_index = func.ret as usize;
        while env.len() < func.nvars as usize {
            match dst {
                Some(d) if env.len() == ret_index => env.push(d),
                _ => env.push(self.pending_slot()),
            }
        }
        let ret = env[func.ret as usize];
        if dst.is_none() {
            // The caller's reference to the result (taken before the frame may release it).
            self.refs[ret] += 1;
        }
        let n = func.body.len();
        if n == 0 {
            return Ok(ret);
        }
        // Statements that need no input (primitives, tuples, closures) are reduced right here:
        // queueing them would only delay them, and no work item is spent on them.
        let deferred = func.body.iter().filter(|s| !immediate(&s.op)).count();
        for &s in &env {
            self.refs[s] += 1;
        }
        for stmt in func.body.iter().filter(|s| immediate(&s.op)) {
            let dst = env[stmt.dst as usize];
            let v = match &stmt.op {
                Op::Prim(p) => Value::Prim(p.clone()),
                Op::Tuple(vs) => Value::Tuple(vs.iter().map(|v| env[*v as usize]).collect()),
                Op::Fun { func, captures } => Value::Closure(Rc::new(Closure {
                    prog: prog.clone(),
                    func: *func,
                    env: captures.iter().map(|v| env[*v as usize]).collect(),
                })),
                _ => unreachable!("only input-free statements are immediate"),
            };
            self.stats.reductions += 1;
            self.resolve(dst, v);
        }
        if deferred == 0 {
            for &s in &env {
                self.release(s);
            }
            return Ok(ret);
        }
        let frame = Rc::new(Frame { prog: prog.clone(), func: fid, env, live: std::cell::Cell::new(deferred as u32) });
        for (index, _) in func.body.iter().enumerate().filter(|(_, s)| !immediate(&s.op)) {
            let w = self.new_work(Work::Stmt { frame: frame.clone(), index });
            self.ready.push_back(w);
        }
        Ok(ret)
    }

    /// Work item `w` is done: reused by `new_work`.
    #[inline]
    pub(super) fn release_work(&mut self, w: WorkId) {
        self.work[w] = Work::Done;
        self.free_work.push(w);
    }

    /// A work item (a reduced statement's reused, or a new one).
    #[inline]
    pub(super) fn new_work(&mut self, item: Work<H::Prim>) -> WorkId {
        match self.free_work.pop() {
            Some(w) => {
                self.work[w] = item;
                w
            }
            None => {
                self.work.push(item);
                self.work.len() - 1
            }
        }
    }

    /// Instantiate and make `dst` follow the result (errors become the value of `dst`).
    /// The parameters of an inlined call: the order, then each parameter as `binds` says (the
    /// call's argument slots or new slots for the values the host supplies).
    pub(super) fn bind_params(&mut self, seq: SlotId, args: &[SlotId], binds: Vec<crate::lambda_o::Bind<H::Prim>>) -> Vec<SlotId> {
        let mut params = Vec::with_capacity(binds.len() + 1);
        params.push(seq);
        for b in binds {
            params.push(match b {
                crate::lambda_o::Bind::Arg(i) => args[i],
                crate::lambda_o::Bind::Value(p) => self.new_slot(Value::Prim(p)),
            });
        }
        params
    }

    pub(super) fn call_into(&mut self, prog: &ProgramRef<H::Prim>, fid: FuncId, captures: &[SlotId], params: &[SlotId], dst: SlotId) {
        match self.instantiate_into(prog, fid, captures, params, Some(dst)) {
            Ok(ret) if ret == dst => {}
            Ok(ret) => self.follow(ret, dst),
            Err(e) => self.resolve(dst, Value::Error(e)),
        }
    }
}
