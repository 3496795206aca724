//! Concurrency controllers (PopPy §6.2): the ordering of a run's external calls.
//!
//! Every external call the evaluator reaches gets a controller (`Ctrl`). Program order reaches it
//! as a token on its sequence variable S: two futures, F_R ("every earlier sequential call
//! finished") and F_W ("every earlier call finished without raising"). The controller hands its
//! successor fresh futures F_R', F_W' at once (so later calls can be queued, and unordered ones
//! dispatched, before this one has its arguments) and resolves them according to its callee's
//! class (`Class`, PopPy §4.2):
//!
//! | class      | dispatches when        | F_R' resolves when     | F_W' resolves when     |
//! |------------|------------------------|------------------------|------------------------|
//! | unordered  | arguments ready        | F_R (forwarded)        | F_W and done (ok)      |
//! | readonly   | arguments ready, F_R   | F_R (forwarded)        | F_W and done (ok)      |
//! | sequential | arguments, F_R and F_W | F_R and done (ok)      | F_W and done (ok)      |
//!
//! That is `Policy::of(class)`. Forwarding needs the class, which for most callees is known
//! only with the arguments; a `@readonly`/`@sequential` external's class is known from the
//! callee alone (`classify_callee`; an `@unordered` one's needs the arguments, since a mutable
//! argument makes it a read), and a call whose pending arguments have declared types may be classified
//! from stand-ins (`classify_hinted`; a stricter real class is then an error), so such a call
//! forwards the order before its arguments are ready.
//!
//! Errors. A call that fails (or cannot run because an argument is an error) never resolves the
//! outputs that wait for it being done. Every call may raise, so F_W waits for every earlier
//! call, unordered ones included (PopPy §6.2 forwards F_W past an unordered call; that would let
//! a sequential call run that CPython never reaches when the unordered call raises): after any
//! failed call no later sequential call runs. Unordered and readonly calls have no effects, so
//! they do not wait for earlier calls to succeed: they may run speculatively, and F_R still
//! passes an unordered call at once, so reads and unordered calls overlap as before. What keeps
//! CPython's behaviour then is the failure rule: the run raises the failure earliest in program
//! order (`raised`), a call after a failed one in program order is not dispatched, and a running
//! one is cancelled.
//!
//! Per-object ordering (`objects`): an operation that touches only a list/dict/set the run
//! created waits for the earlier operations on that object and is then unordered for the global
//! order, until the object escapes.
//!
//! Design. The controller runs inside the evaluator (`lambda_o::eval`): a controller is a work
//! item stepped in the same FIFO queue as statement reductions, and each step reads the
//! evaluator's variables many times (S, the callee, every argument, the producers of pending
//! ones) and registers waits on them. What it needs from the evaluator and the host is the trait
//! `Env`; `advance` and the rest are generic over it, and the evaluator implements it. After
//! monomorphisation every `Env` call is a direct call into the evaluator, mostly inlined: no
//! boxing, no `dyn` dispatch and no action list per step. Pure transition functions returning
//! actions would need an action buffer and a re-entry for every read that may wait; `dyn Env`
//! would put an indirect call on each read. The controller state (`Controllers`) is a field of
//! the evaluator, reached through `Env::ctl`. (Measured with benches/evaluator.rs: the same
//! instruction count per run, within 1%, as when this code was written inside the evaluator.)
//!
//! Files, each using only those before it: `policy` (Class, Policy), `futures` (Token,
//! Futures), `state` (ids, Ctrl, Phase, ObjInfo, Controllers: the data), `env` (Env), `wait`
//! (waiting on futures, the producer of a pending variable), `order` (program-order walks),
//! `objects` (per-object ordering), `controller` (`advance`, dispatch/complete/fail).
//!
//! Dependencies: only `oom` (the table of a long run's controllers grows fallibly); `stats`,
//! `lambda_o` and `host` depend on this module, not the other way round. The evaluator's
//! variables and work items are opaque ids here.
mod controller;
mod env;
mod futures;
mod objects;
pub mod order;
mod policy;
mod state;
mod wait;
#[cfg(test)]
mod tests;

pub use controller::{advance, fail, finished, interrupt, raised};
pub use env::{Callee, Count, Env, IteSource, Partial, Peek, Read, Scope};
pub use futures::{FutId, Futures, Token};
pub use state::{Controllers, Ctrl, CtrlId, Hints, ObjInfo, Phase, SlotId, Times, WorkId};
pub use policy::{Class, Policy};
