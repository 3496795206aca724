//! The contract between the controllers and the evaluator that runs them: `Env`, what a
//! controller needs from the evaluator (its variables and work queue, instantiation) and from the
//! host behind it (classification, dispatch, object keys). The evaluator implements it; the
//! controller code is generic over it, so after monomorphisation every call is direct.
use super::state::{Controllers, CtrlId, SlotId, WorkId};
use super::{Class, Token};

/// A variable's value as far as a controller needs it.
pub enum Read<T> {
    /// Known.
    Ready(T),
    /// Not known yet; the work item that asked is woken when it is.
    Pending,
    /// Known, but not what was asked for (an error value).
    Not,
}

/// A variable's value without waiting: a primitive, pending, or something else.
pub enum Peek<P> {
    Prim(P),
    Pending,
    Other,
}

/// An argument of a call not all of whose arguments are known yet (`Env::scope_pending`).
pub enum Partial<P> {
    Known(P),
    /// Pending: the result of an external call that does not carry an owned object.
    Pending,
    /// A tuple the program builds, some of whose items are pending: its leaves (items of
    /// nested tuples included), in order.
    Tuple(Vec<Partial<P>>),
}

/// A call that touches nothing but one container, its receiver (`Env::scope`).
pub struct Scope<P> {
    /// The receiver's key.
    pub recv: u64,
    /// Whether it writes the receiver (None: it touches no state of it, e.g. `getattr`).
    pub write: Option<bool>,
    /// The part of the receiver it touches: for a dict or set, the entry of one key, given as
    /// the key's hash (equal keys have equal hashes, so equal parts may still be different
    /// keys: ordering them is only conservative); None: the whole object (its length,
    /// iteration, `clear`, any list operation).
    pub part: Option<u64>,
    /// The other arguments: values it stores (their objects escape).
    pub rest: Vec<P>,
    /// The call touches only its receiver provided the receiver's contents are still what
    /// made it so when the call runs (`x in lst`: no item's `__eq__` is user code while every
    /// item is an atom): asked again once the walk has decided it local (`Env::scope` on the
    /// same arguments), when every earlier operation on the receiver has finished and none can
    /// come in between; if it then says otherwise, the call follows the global order.
    pub recheck: bool,
}

/// A pending variable that will be a component of the result of an `ite` still waiting for its
/// condition (`Env::ite_source`).
pub struct IteSource {
    /// Which component of the ite's result the variable will be.
    pub index: u32,
    /// The ite's input order: the first leaf of its first argument, where lowering threads S
    /// (a token, or a pending order variable) — None if that leaf is neither. Component 0 of
    /// the result is then the order after the branch's calls.
    pub input: Option<SlotId>,
}

/// What a call's callee turned out to be (`Env::callee`).
pub enum Callee<P, E> {
    /// Not known yet (the work item is woken when it is).
    Pending,
    /// A primitive the host runs: the call is external.
    External(P),
    /// An internal function, instantiated with [S, args...]: the slot of its (S', result) tuple,
    /// retained for the controller.
    Inlined(SlotId),
    /// An error value, not callable, or instantiation failed.
    Failed(E),
}

/// Counted events (the evaluator adds them to its run statistics).
pub enum Count {
    /// A call was dispatched, with how long it waited for its order since its arguments were
    /// known.
    Dispatched { class: Class, queue_wait_ns: Option<u64> },
    /// Calls running at once.
    InFlight(u64),
    /// A running call was cancelled (an earlier call in program order failed).
    Cancelled,
    /// A call on an owned object was ordered against that object only.
    ObjectLocal,
    /// A call gave an owned object to something else.
    ObjectEscape,
}

/// What a controller needs from the evaluator that runs it and the host behind it. Calls whose
/// host operation involves the callee (or its keyword names) take the controller's id: the
/// evaluator reads them from `ctl()[cid]` without copying.
pub trait Env {
    type Prim: Clone;
    type Error: Clone;

    fn ctl(&mut self) -> &mut Controllers<Self::Prim, Self::Error>;
    fn ctl_ref(&self) -> &Controllers<Self::Prim, Self::Error>;
    fn count(&mut self, what: Count);

    // Variables and work items.

    /// Queue work item `w` to be stepped.
    fn wake(&mut self, w: WorkId);
    /// Whether variable `s` is known; if not, `w` is woken when it is.
    fn need_slot(&mut self, s: SlotId, w: WorkId) -> bool;
    /// The ordering token variable `s` holds.
    fn need_token(&mut self, s: SlotId, w: WorkId) -> Read<Token>;
    /// The ordering token variable `s` holds, if it is known (no waiting).
    fn peek_token(&self, s: SlotId) -> Option<Token>;
    /// An argument: a primitive, pending, or something else.
    fn peek(&self, s: SlotId) -> Peek<Self::Prim>;
    /// An external call's argument as a primitive (a tuple of primitives is built into a host
    /// tuple once every component is known); None after registering `w` to wait.
    fn need_prim(&mut self, s: SlotId, w: WorkId) -> Option<Result<Self::Prim, Self::Error>>;
    /// The primitive values and pending variables an argument is made of (looking into tuples).
    fn arg_leaves(&self, s: SlotId, known: &mut Vec<Self::Prim>, pending: &mut Vec<SlotId>);
    /// For a pending variable: the controller producing it and the variable it aliases, if any.
    /// None if it is not pending.
    fn pending_source(&self, s: SlotId) -> Option<(Option<CtrlId>, Option<SlotId>)>;
    fn release_slot(&mut self, s: SlotId);

    // Call results.

    /// Controller `cid`'s callee: wait for it; an internal one is instantiated.
    fn callee(&mut self, cid: CtrlId, w: WorkId) -> Callee<Self::Prim, Self::Error>;
    /// An inlined body's (S', result) tuple `ret`: make the call's result follow its result and
    /// return its S' (retained); `Not` after making the call's result an error.
    fn link_inlined(&mut self, cid: CtrlId, ret: SlotId, w: WorkId) -> Read<SlotId>;
    /// The call finished with `v`: bind its result variable.
    fn bind_result(&mut self, cid: CtrlId, v: Self::Prim);
    /// The call failed: its result variable is the error.
    fn bind_error(&mut self, cid: CtrlId, e: Self::Error);
    /// A catching call failed with `e`: bind its result to the host's value for a caught
    /// failure (`Host::caught`, with the call's line).
    fn bind_caught(&mut self, cid: CtrlId, e: Self::Error);
    /// Whether a catching call's failure is the user's to handle (`Host::catchable`).
    fn catchable(&mut self, _e: &Self::Error) -> bool {
        true
    }

    // The host (see `lambda_o::Host` for each).

    fn classify_callee(&mut self, f: &Self::Prim) -> Option<Class>;
    /// Whether controller `cid`'s callee returns a new tuple of its arguments and does nothing
    /// else (`Host::builds_tuple`).
    fn builds_tuple(&mut self, _cid: CtrlId) -> bool {
        false
    }
    fn classify(&mut self, cid: CtrlId, argv: &[Self::Prim]) -> Class;
    fn classify_hinted(&mut self, cid: CtrlId, args: &[Option<Self::Prim>]) -> Option<Class>;
    fn result_hint(&mut self, cid: CtrlId, args: &[Option<Self::Prim>]) -> Option<Self::Prim>;
    /// A finished call's value against its callee's declared result type
    /// (`Host::check_result`; `relied`: what was ordered on the strength of it); an error
    /// fails the call, Ok(false) is a mismatch of a declaration nothing relied on (not enforced).
    fn check_result(&mut self, _cid: CtrlId, _v: &Self::Prim, _relied: Option<&str>) -> Result<bool, Self::Error> {
        Ok(true)
    }
    /// Whether the call's result stand-in (`Ctrl::hint`) comes from its callee's declared result
    /// type (`Host::declares_result`).
    fn declares_result(&mut self, _cid: CtrlId) -> bool {
        false
    }
    /// Whether `p` (a stand-in, `Ctrl::hint`) is an immutable atom: a value it stands for is
    /// no container and holds none.
    fn is_atom(&mut self, _p: &Self::Prim) -> bool {
        false
    }
    /// Start the call with its `argv`: Some(outcome) if it ran to completion at once.
    fn dispatch(&mut self, cid: CtrlId) -> Option<Result<Self::Prim, Self::Error>>;
    fn cancel(&mut self, cid: CtrlId);
    fn internal_error(&mut self, kind: &str, msg: &str) -> Self::Error;
    /// The fresh containers the finished call made (`Host::fresh_keys`).
    fn fresh_keys(&mut self, cid: CtrlId, result: &Self::Prim) -> Vec<u64>;
    fn object_keys(&mut self, cid: CtrlId, args: &[Self::Prim]) -> Vec<u64>;
    fn arg_keys(&mut self, args: &[Self::Prim]) -> Vec<u64>;
    /// Keys of the containers code holding `values` could reach (`Host::reach_keys`).
    fn reach_keys(&mut self, values: &[Self::Prim]) -> Vec<u64> {
        self.arg_keys(values)
    }
    /// If pending variable `s` will be a component of the result of an `ite` still waiting for
    /// its condition: which one, and the ite's input order; the values either branch starts
    /// from — its closure's captured variables and the ite's arguments, other than the input
    /// order, looking into tuples, closures and memories — are appended to `known` (primitives)
    /// and `pending` (variables not known yet) — those not in `seen` yet, which they are added
    /// to (a question asked of many ites looks at each variable once). Whatever either
    /// branch's calls will touch is reachable from those (or from globals, which no owned
    /// object is in before it escapes, or made afresh). None: not such a variable, or too much
    /// to collect.
    fn ite_source(
        &self,
        _s: SlotId,
        _seen: &mut std::collections::HashSet<SlotId>,
        _known: &mut Vec<Self::Prim>,
        _pending: &mut Vec<SlotId>,
    ) -> Option<IteSource> {
        None
    }
    /// Wake `w` once pending variable `s` is bound: known, or made to follow another variable
    /// (a projection out of an `ite`'s or a call's result reduced to a component that is still
    /// pending — whose producer can then be looked at). True if `w` was registered so; false if
    /// `s` (through the variables it follows) already has a producer or is known: then only
    /// its value tells more (`need_slot`).
    fn wait_bound(&mut self, _s: SlotId, _w: WorkId) -> bool {
        false
    }
    fn scope(&mut self, cid: CtrlId, args: &[Self::Prim]) -> Option<Scope<Self::Prim>>;
    /// Whether readonly call `read` (arguments known, `argv`) observes nothing that the earlier
    /// calls `writes` (in program order before it, arguments perhaps pending) change and runs
    /// no code that could: each write stores one entry, under an atom key, of an exact dict
    /// whose keys are atoms and whose entry holds no object yet whose release could run code,
    /// their keys pairwise different; the read touches no such entry (`Host::read_passes`).
    /// `stand_ins[i][j]`: for write `i`'s pending argument `j`, its declared type's stand-in, if
    /// it has one (a `print` of a pending value is a store only for a stand-in of plain data).
    fn read_passes(&mut self, _read: CtrlId, _writes: &[CtrlId], _stand_ins: &[Vec<Option<Self::Prim>>]) -> bool {
        false
    }
    /// For a call whose arguments are known except the pending ones: if it touches nothing but
    /// one container (its receiver) whatever values the pending ones turn out to be — they are
    /// only stored into it (`lst.append(x)`, `d[k] = x`, a comprehension's `_list_extend(lst,
    /// (x,))`) — the receiver's key, whether the call writes it, and the part of it the call
    /// touches (`Scope::part`).
    fn scope_pending(&mut self, _cid: CtrlId, _args: &[Partial<Self::Prim>]) -> Option<(u64, bool, Option<u64>)> {
        None
    }
}
