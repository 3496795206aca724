//! Concurrency controllers (PopPy §6.2).
//!
//! Every queued external call gets a `Controller`. Program order reaches it as a sequence token on
//! S: two futures, F_R ("every earlier sequential call finished") and F_W ("every earlier ordered
//! call finished"). The controller hands its successor fresh futures F_R', F_W' at once (so later
//! calls can be queued, and unordered ones dispatched, before this one has its arguments) and
//! resolves them according to its callee's class, which it learns only when the arguments are
//! known:
//!
//! | class      | dispatches when        | F_R' resolves when | F_W' resolves when |
//! |------------|------------------------|--------------------|--------------------|
//! | unordered  | arguments ready        | F_R (forwarded)    | F_W (forwarded)    |
//! | readonly   | arguments ready, F_R   | F_R (forwarded)    | F_W and done (ok)  |
//! | sequential | arguments, F_R and F_W | done (ok)          | done (ok)          |
//!
//! Forwarding needs the class, which for most callees is known only with the arguments; a
//! decorated external's class is known from the callee alone (`Host::classify_callee`), so an
//! unordered or readonly call forwards the order before its arguments are ready.
//!
//! A sequential or readonly call that fails never resolves its remaining outputs, so no later
//! ordered call runs after it. An unordered call has already forwarded the order when it fails
//! (PopPy §6.2): later ordered calls may have run; the run still raises the failure earliest in
//! program order, and the host notes which later ordered calls had already run.
//!
//! The policy is the function `Policy::of(class)`; the token is a struct of futures, so per-object
//! ordering chains are a later extension of `Token`, not a rewrite.
use crate::lambda_o::Class;

pub type FutId = usize;

/// The ordering token carried by a sequence variable S.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub r: FutId,
    pub w: FutId,
}

/// What a controller waits for, by class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub dispatch_needs_r: bool,
    pub dispatch_needs_w: bool,
    /// F_R' needs the call to have completed successfully (otherwise it is F_R forwarded).
    pub r_out_needs_done: bool,
    /// F_W' needs the call to have completed successfully (otherwise it is F_W forwarded).
    pub w_out_needs_done: bool,
}

impl Policy {
    pub fn of(class: Class) -> Policy {
        match class {
            Class::Unordered => Policy {
                dispatch_needs_r: false,
                dispatch_needs_w: false,
                r_out_needs_done: false,
                w_out_needs_done: false,
            },
            Class::Readonly => Policy {
                dispatch_needs_r: true,
                dispatch_needs_w: false,
                r_out_needs_done: false,
                w_out_needs_done: true,
            },
            Class::Sequential => Policy {
                dispatch_needs_r: true,
                dispatch_needs_w: true,
                r_out_needs_done: true,
                w_out_needs_done: true,
            },
        }
    }
}

/// One-shot futures with waiter lists (the waiters are evaluator work items).
#[derive(Default)]
pub struct Futures {
    done: Vec<bool>,
    waiters: Vec<Vec<usize>>,
}

impl Futures {
    /// Forget every future, keeping the allocations.
    pub fn clear(&mut self) {
        self.done.clear();
        self.waiters.clear();
    }

    pub fn new_future(&mut self) -> FutId {
        self.done.push(false);
        self.waiters.push(Vec::new());
        self.done.len() - 1
    }

    pub fn new_resolved(&mut self) -> FutId {
        let f = self.new_future();
        self.done[f] = true;
        f
    }

    pub fn is_done(&self, f: FutId) -> bool {
        self.done[f]
    }

    /// Run `waiter` when `f` resolves (the caller checked it is not resolved yet).
    pub fn wait(&mut self, f: FutId, waiter: usize) {
        self.waiters[f].push(waiter);
    }

    /// Resolve `f`; returns the waiters to wake (empty if it was already resolved).
    pub fn resolve(&mut self, f: FutId) -> Vec<usize> {
        if self.done[f] {
            return Vec::new();
        }
        self.done[f] = true;
        std::mem::take(&mut self.waiters[f])
    }
}

/// Where a controller is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the callee itself (it may still turn out to be an internal function).
    WaitCallee,
    /// The callee was internal: its body runs; waiting for the body's result tuple.
    Inlined { ret: usize },
    /// The callee was internal: passing the body's final order on as this call's F_R'/F_W'.
    InlinedOrder { seq: usize },
    /// Waiting for the callee's arguments.
    WaitArgs,
    /// Class known; waiting for the order its class requires.
    WaitOrder,
    /// Dispatched, not finished.
    Running,
    /// Finished successfully; resolving F_R'/F_W'.
    Completed,
    /// Nothing left to do: outputs resolved, or the call failed / can never run.
    Finished,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_follow_popppy_6_2() {
        let s = Policy::of(Class::Sequential);
        assert!(s.dispatch_needs_r && s.dispatch_needs_w);
        let r = Policy::of(Class::Readonly);
        assert!(r.dispatch_needs_r && !r.dispatch_needs_w && !r.r_out_needs_done);
        let u = Policy::of(Class::Unordered);
        assert!(!u.dispatch_needs_r && !u.dispatch_needs_w && !u.r_out_needs_done && !u.w_out_needs_done);
    }

    #[test]
    fn futures_wake_their_waiters_once() {
        let mut f = Futures::default();
        let a = f.new_future();
        f.wait(a, 7);
        f.wait(a, 9);
        assert!(!f.is_done(a));
        assert_eq!(f.resolve(a), vec![7, 9]);
        assert!(f.is_done(a));
        assert!(f.resolve(a).is_empty());
        let b = f.new_resolved();
        assert!(f.is_done(b));
    }
}
