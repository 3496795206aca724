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
mod futures;
mod policy;

pub use futures::{FutId, Futures, Token};
pub use policy::{Class, Policy};

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

