//! What the overlap analysis asks about values and callees, and the abstract values it asks
//! about.
//!
//! The analysis never guesses a class: an `Oracle` answers with the runtime's own
//! classification (in production `explain::py`, which calls the host's `classify_callee`,
//! `classify`, `scope` and `object_keys` on stand-in values; in tests a table). Values whose
//! type the IR does not show (parameters, results of calls) are assumed to be plain immutable
//! data — the common case of strings and numbers — unless the function uses them as containers.
use crate::bezoar::Intrinsic;
use crate::control::Class;
use std::collections::BTreeSet;

/// A container the run created itself (owned, per-object ordering applies), by creation.
pub type ObjId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ctype {
    List,
    Dict,
    Set,
}

/// What the analysis knows about a value.
#[derive(Clone, Debug, PartialEq)]
pub enum AVal {
    /// Plain immutable data (str, int, float, bool, bytes, None).
    Atom,
    Tuple(Vec<AVal>),
    /// A tuple of items of one kind (a loop's materialised iterable).
    Items(Box<AVal>),
    /// A list/dict/set the function created.
    Obj(ObjId, Ctype),
    /// A list/dict/set the function did not create (received, or taken out of another object).
    Foreign(Ctype),
    /// A value resolved when the analysis ran (a global, an attribute of a module): an index
    /// into the oracle's table.
    Known(u32),
    /// `recv.name` on a receiver that is not `Known`: a bound method of a stand-in.
    Method(Box<AVal>, String),
    /// Anything; it may be one of these owned objects.
    Any(BTreeSet<ObjId>),
}

impl AVal {
    pub fn any() -> AVal {
        AVal::Any(BTreeSet::new())
    }

    /// Owned objects this value is or holds (a bound method holds its receiver).
    pub fn objects(&self, out: &mut BTreeSet<ObjId>) {
        match self {
            AVal::Obj(o, _) => {
                out.insert(*o);
            }
            AVal::Tuple(items) => items.iter().for_each(|i| i.objects(out)),
            AVal::Items(i) => i.objects(out),
            AVal::Method(r, _) => r.objects(out),
            AVal::Any(s) => out.extend(s),
            AVal::Atom | AVal::Foreign(_) | AVal::Known(_) => {}
        }
    }

    pub fn join(&self, other: &AVal) -> AVal {
        if self == other {
            return self.clone();
        }
        let mut objs = BTreeSet::new();
        self.objects(&mut objs);
        other.objects(&mut objs);
        AVal::Any(objs)
    }

    /// The items of a value iterated by a `for` loop.
    pub fn element(&self) -> AVal {
        match self {
            AVal::Items(i) => (**i).clone(),
            AVal::Tuple(items) => items.iter().skip(1).fold(items.first().cloned().unwrap_or(AVal::Atom), |a, b| a.join(b)),
            AVal::Atom | AVal::Obj(..) | AVal::Foreign(_) => AVal::Atom,
            _ => AVal::any(),
        }
    }
}

/// The callee of a controller.
#[derive(Clone, Debug)]
pub enum Callee<'a> {
    Value(&'a AVal),
    /// A Bezoar operation; `fresh` is the mask of operands that are displays built for it
    /// alone (`passes::fresh_operands`).
    Intrinsic(&'a Intrinsic, u32),
    /// A lowering helper (`loop_next`, `loop_exit`, `loop_again`, `select_return`).
    Helper(&'static str),
    /// The check that a local is bound.
    BoundCheck,
}

/// How a call involves containers the run created (the host's `object_keys` and `scope`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjFacts {
    /// Owned objects among the arguments and the callee's receiver.
    pub keys: Vec<ObjId>,
    /// `Host::scope`: the owned receiver it touches, whether it writes it (None: touches no
    /// state), and the owned objects among the other arguments.
    pub scope: Option<(ObjId, Option<bool>, Vec<ObjId>)>,
    /// The scoped operation touches one key of a dict or set (`control::Scope::part`): it is
    /// ordered only against the same key, the whole object and (a write) other writes.
    pub keyed: bool,
}

/// What the runtime would know about one call.
#[derive(Clone, Debug)]
pub struct CallInfo {
    /// A @poppy function: inlined, not a controller of its own.
    pub internal: bool,
    /// A decorated external (`__poppy_external__`): its result is its own, not a function of
    /// its arguments the analysis could relate to other values.
    pub external: bool,
    /// The class from the callee alone (`Host::classify_callee`), known before the arguments.
    pub early: Option<Class>,
    /// The class from the arguments (`Host::classify` on stand-ins); None: not decidable here.
    pub class: Option<Class>,
    /// Runs off the evaluator thread (an async or blocking external, a `time.sleep` timer).
    pub concurrent: bool,
    /// Its result has a stand-in before it arrives (a declared immutable return type).
    pub result_hint: bool,
    /// It creates a fresh container (`Host::fresh_key`).
    pub makes: Option<Ctype>,
    /// Its result when the oracle can resolve it (an attribute of a module, ...).
    pub value: Option<AVal>,
    pub objects: ObjFacts,
}

impl CallInfo {
    /// Nothing known: a callee the oracle cannot see (worst case for every question).
    pub fn unknown() -> CallInfo {
        CallInfo {
            internal: false,
            external: false,
            early: None,
            class: None,
            concurrent: false,
            result_hint: false,
            makes: None,
            value: None,
            objects: ObjFacts::default(),
        }
    }
}

pub trait Oracle {
    /// The value of global `name` (module globals, then builtins), as the runtime would load it.
    fn global(&mut self, name: &str) -> AVal;
    /// What calling `callee(args)` is at run time.
    fn call(&mut self, callee: &Callee<'_>, args: &[AVal], kwnames: &[String]) -> CallInfo;
}
