//! Bezoar → the event graph of one run, loops unrolled.
//!
//! The walk follows what lowering (`crate::lower`) makes of each construct, because that is what
//! the evaluator orders: every operation and call is an `xcall` threaded on S (global loads are
//! eager and take no controller); a load of a local that may be unbound is a `bound` check call;
//! `if` is an `ite` whose carried values (and S, when a branch has calls) are known only once the
//! condition is; `for` is a `fold` that instantiates every iteration once the iterable is known;
//! `while` is a recursive closure whose next iteration exists only once `loop_again` returned;
//! after a statement that may break/continue/return, the rest of the block is an `ite` on the
//! exit status. Each controller then gets the waits of `crate::control::Policy` for its class
//! (dispatch after F_R/F_W; F_R'/F_W' forwarded when its class is known, or after it finished),
//! and the per-object ordering of `lambda_o::eval::object_order` for containers the run created.
//!
//! The scenario is fixed where that makes claims simpler: every loop runs the unrolled number of
//! iterations (a `while` loop then makes one more "exit pass", whose calls are only sources of
//! waits), so the exits of all but the last iteration are not taken.
use super::graph::*;
use super::oracle::*;
use crate::bezoar::passes::{always_raises, assigned, contains_jump, deleted, leaves_loop, may_exit, needs_exits, speculative_iterations, stops_loop, DefinedSet};
use crate::bezoar::{self as bz, Expr, Intrinsic, Reg, StmtKind};
use crate::control::Policy;
use crate::control::Class;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

mod calls;
mod joins;
mod shape;

use shape::*;

/// A reported call site: a Bezoar call statement.
pub struct Site {
    pub line: u32,
    /// How the callee reads in the source (`fetch`, `out.append`, `<result of line 3>.split`).
    pub callee: String,
    /// Number of loops around it.
    pub loop_depth: u32,
    /// Inside the body of a try or with statement (the innermost one's line): its operations
    /// are gated (the lowering instantiates what follows an operation once it finished without
    /// raising), so its calls run one after another.
    pub gated_by: Option<u32>,
    /// The outermost try or with statement whose body holds a loop around it that runs its
    /// iterations one after another: a `while`, or a `for` that may break or return (a `for`
    /// that may only raise runs them speculatively; a try or with inside a loop body gates
    /// nothing of the loop).
    pub gated_loop_by: Option<u32>,
}

pub struct Built {
    pub graph: Graph,
    pub sites: Vec<Site>,
    /// Iterations each loop was unrolled to.
    pub unroll: u32,
}

/// At most this many controllers: loops are unrolled less when more would be needed.
const MAX_CTRLS: u64 = 2500;

pub fn build(f: &bz::Function, oracle: &mut dyn Oracle) -> Built {
    let unroll = [3u32, 2, 1].into_iter().find(|&n| estimate(&f.body, n) <= MAX_CTRLS).unwrap_or(1);
    let mut b = Builder {
        oracle,
        f,
        g: Graph::new(),
        unroll,
        site_of: HashMap::new(),
        sites: Vec::new(),
        desc: HashMap::new(),
        fresh: crate::bezoar::passes::fresh_operands(f),
        loop_ids: HashMap::new(),
        esc_meta: Vec::new(),
        ctrl_meta: Vec::new(),
        nobjs: 0,
        norigins: 0,
        gated_loops: Vec::new(),
    };
    b.prepass(&f.body, 0, &mut Vec::new());
    b.function();
    let mut graph = b.g;
    graph.close();
    Built { graph, sites: b.sites, unroll }
}

fn estimate(body: &[bz::Stmt], n: u32) -> u64 {
    body.iter()
        .map(|s| match &s.kind {
            StmtKind::Let(_, Expr::Op(..) | Expr::Call { .. } | Expr::Load(_)) => 1,
            StmtKind::If { then_body, else_body, .. } => estimate(then_body, n) + estimate(else_body, n) + 1,
            StmtKind::For { body, .. } => n as u64 * (estimate(body, n) + 2) + 2,
            StmtKind::Loop { body } => (n as u64 + 1) * (estimate(body, n) + 3) + 2,
            StmtKind::Try { .. } => s.kind.blocks().into_iter().map(|b| estimate(b, n)).sum::<u64>() + 1,
            _ => 0,
        })
        .sum()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tri {
    No,
    Maybe,
    Yes,
}

fn tri_join(a: Tri, b: Tri) -> Tri {
    if a == b {
        a
    } else {
        Tri::Maybe
    }
}

#[derive(Clone)]
struct Val {
    ev: Ev,
    av: AVal,
    /// Its slot resolves to a call result or constant without waiting for a join.
    direct: bool,
    /// Known when its frame is instantiated (constants, global loads, loop items).
    imm: bool,
    /// Has a stand-in while pending (a declared immutable return type), or is known.
    hint: bool,
    int: Option<i64>,
    /// The values it is computed from that vary between runs (parameters, loop items, results
    /// of calls): two conditions that share one may exclude each other.
    origins: Rc<BTreeSet<u32>>,
}

/// The sequence token S at a point of the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Order {
    /// When the S slot itself is known (after a join: once the condition is).
    avail: Ev,
    /// F_R and F_W carried by it.
    ro: Ev,
    wo: Ev,
}

#[derive(Clone)]
struct ObjOp {
    ctrl: CtrlId,
    write: bool,
    escape: bool,
    /// On every path from the object's creation to here.
    certain: bool,
    /// On one key of a dict or set (`ObjFacts::keyed`).
    keyed: bool,
}

#[derive(Clone)]
struct ObjState {
    creator: CtrlId,
    escaped: Tri,
    hist: Vec<ObjOp>,
}

#[derive(Clone)]
struct State {
    ctl: Ev,
    s: Order,
    regs: Vec<Option<Val>>,
    vars: BTreeMap<bz::VarName, Val>,
    defined: DefinedSet,
    status: Option<Val>,
    objs: BTreeMap<ObjId, ObjState>,
    guard: Vec<Cond>,
    loops: Vec<(u32, u32)>,
    phantom: bool,
    /// Inside a try body: lowering gates every operation (what follows it is instantiated once
    /// it finished without raising).
    catching: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EscKind {
    Break,
    Continue,
    Return,
}

struct EscMeta {
    kind: EscKind,
    depth: usize,
}

struct CtrlMeta {
    /// Events of arguments/callee a per-object walk over this call may have to wait for.
    pending: Vec<Ev>,
    internal: bool,
}

struct Builder<'a> {
    oracle: &'a mut dyn Oracle,
    f: &'a bz::Function,
    g: Graph,
    unroll: u32,
    site_of: HashMap<Reg, u32>,
    sites: Vec<Site>,
    desc: HashMap<Reg, String>,
    fresh: HashMap<Reg, u32>,
    loop_ids: HashMap<*const bz::Stmt, u32>,
    esc_meta: Vec<EscMeta>,
    ctrl_meta: Vec<CtrlMeta>,
    nobjs: u32,
    norigins: u32,
    /// Prepass: for each loop around the current point, outermost first, whether it runs its
    /// iterations one after another inside a try or with body (a `while`, or a `for` that may
    /// break or return); a `for` that may only raise runs them speculatively.
    gated_loops: Vec<bool>,
}

const LIST_METHODS: [&str; 5] = ["append", "extend", "insert", "sort", "reverse"];
const DICT_METHODS: [&str; 5] = ["setdefault", "popitem", "items", "keys", "values"];
const SET_METHODS: [&str; 2] = ["add", "discard"];

impl<'a> Builder<'a> {
    // ---- pre-pass: sites, names, loops ------------------------------------------------------

    /// `gates`: the line and loop depth of each try or with statement whose body this is in,
    /// outermost first.
    fn prepass(&mut self, body: &'a [bz::Stmt], depth: u32, gates: &mut Vec<(u32, u32)>) {
        for s in body {
            match &s.kind {
                StmtKind::Let(r, e) => {
                    let d = match e {
                        Expr::Global(g) => Some(g.clone()),
                        Expr::Load(x) => Some(shown_name(x.as_str()).to_string()),
                        Expr::Call { func, .. } => {
                            let callee = self.desc.get(func).cloned().unwrap_or_else(|| format!("r{func}"));
                            self.site_of.insert(*r, self.sites.len() as u32);
                            self.sites.push(Site {
                                line: s.line,
                                callee,
                                loop_depth: depth,
                                gated_by: gates.last().map(|g| g.0),
                                gated_loop_by: gates
                                    .iter()
                                    .find(|g| self.gated_loops[g.1 as usize..].iter().any(|&x| x))
                                    .map(|g| g.0),
                            });
                            Some(if s.line > 0 { format!("<result of line {}>", s.line) } else { format!("<r{r}>") })
                        }
                        Expr::Op(Intrinsic::GetAttr(name), args) => {
                            let owner = self.desc.get(&args[0]).cloned().unwrap_or_else(|| format!("<r{}>", args[0]));
                            Some(format!("{owner}.{name}"))
                        }
                        Expr::Op(Intrinsic::GetItem, args) => {
                            let owner = self.desc.get(&args[0]).cloned().unwrap_or_else(|| format!("<r{}>", args[0]));
                            Some(format!("{owner}[…]"))
                        }
                        Expr::Const(k) => match self.f.consts.get(*k as usize) {
                            Some(bz::Const::Str(text)) if text.len() <= 20 => Some(format!("{text:?}")),
                            _ => None,
                        },
                        _ => None,
                    };
                    if let Some(d) = d {
                        self.desc.insert(*r, d);
                    }
                }
                StmtKind::If { then_body, else_body, .. } => {
                    self.prepass(then_body, depth, gates);
                    self.prepass(else_body, depth, gates);
                }
                StmtKind::For { body, .. } | StmtKind::Loop { body } => {
                    let id = self.loop_ids.len() as u32;
                    self.loop_ids.insert(s as *const bz::Stmt, id);
                    let gated = matches!(s.kind, StmtKind::Loop { .. }) || stops_loop(body);
                    self.gated_loops.push(gated);
                    self.prepass(body, depth + 1, gates);
                    self.gated_loops.pop();
                }
                StmtKind::Try { body, .. } => {
                    // The body is gated; the handlers and the else belong to the enclosing one.
                    for b in s.kind.blocks() {
                        let gated = std::ptr::eq(b, body);
                        if gated {
                            gates.push((s.line, depth));
                        }
                        self.prepass(b, depth, gates);
                        if gated {
                            gates.pop();
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A parameter the function uses as a container (appends to it, ...) is taken to be one;
    /// any other is assumed to be plain data.
    fn param_kind(&self, p: &bz::VarName) -> AVal {
        let p = p.as_str();
        let mut loads = BTreeSet::new();
        let mut stored = false;
        let mut kind = AVal::Atom;
        fn walk(b: &[bz::Stmt], p: &str, loads: &mut BTreeSet<Reg>, stored: &mut bool, kind: &mut AVal) {
            for s in b {
                match &s.kind {
                    StmtKind::Let(r, Expr::Load(x)) if x == p => {
                        loads.insert(*r);
                    }
                    StmtKind::Store(x, _) | StmtKind::Delete(x) if x == p => *stored = true,
                    StmtKind::Let(_, Expr::Op(Intrinsic::GetAttr(m), args)) if loads.contains(&args[0]) => {
                        let m = m.as_str();
                        if LIST_METHODS.contains(&m) {
                            *kind = AVal::Foreign(Ctype::List);
                        } else if DICT_METHODS.contains(&m) {
                            *kind = AVal::Foreign(Ctype::Dict);
                        } else if SET_METHODS.contains(&m) {
                            *kind = AVal::Foreign(Ctype::Set);
                        }
                    }
                    StmtKind::If { then_body, else_body, .. } => {
                        walk(then_body, p, loads, stored, kind);
                        walk(else_body, p, loads, stored, kind);
                    }
                    StmtKind::For { body, .. } | StmtKind::Loop { body } => walk(body, p, loads, stored, kind),
                    StmtKind::Try { .. } => s.kind.blocks().into_iter().for_each(|b| walk(b, p, loads, stored, kind)),
                    _ => {}
                }
            }
        }
        walk(&self.f.body, p, &mut loads, &mut stored, &mut kind);
        if stored {
            AVal::Atom
        } else {
            kind
        }
    }

    // ---- events -----------------------------------------------------------------------------

    fn ctl_after(&mut self, parent: Ev, waits: &[Ev]) -> Ev {
        let e = self.g.event(EvKind::Ctl);
        self.g.must(e, parent, Cat::Ctl);
        for &w in waits {
            self.g.must(e, w, Cat::Ctl);
        }
        e
    }

    fn fresh_origin(&mut self) -> u32 {
        self.norigins += 1;
        self.norigins
    }

    fn imm(&self, st: &State, av: AVal) -> Val {
        Val { ev: st.ctl, av, direct: true, imm: true, hint: true, int: None, origins: Rc::default() }
    }

    // ---- the function -----------------------------------------------------------------------

    fn function(&mut self) {
        let f = self.f;
        let ctl = self.g.event(EvKind::Ctl);
        let start = self.g.start();
        let mut st = State {
            ctl,
            s: Order { avail: ctl, ro: start, wo: start },
            regs: vec![None; f.nregs as usize],
            vars: BTreeMap::new(),
            defined: DefinedSet::default(),
            status: None,
            objs: BTreeMap::new(),
            guard: Vec::new(),
            loops: Vec::new(),
            phantom: false,
            catching: false,
        };
        for p in &f.params {
            let mut v = self.imm(&st, self.param_kind(p));
            v.origins = Rc::new(BTreeSet::from([self.fresh_origin()]));
            st.vars.insert(p.clone(), v);
            st.defined.insert(p);
        }
        if needs_exits(&f.body) {
            st.status = Some(self.imm(&st, AVal::Atom));
            self.block(&mut st, &f.body);
        } else {
            let body = match f.body.split_last() {
                Some((last, init)) if matches!(last.kind, StmtKind::Return(_)) => init,
                _ => &f.body[..],
            };
            self.block(&mut st, body);
        }
    }

    fn block(&mut self, st: &mut State, b: &[bz::Stmt]) {
        for (i, s) in b.iter().enumerate() {
            let e0 = self.g.escapes.len();
            self.stmt(st, s);
            if let (true, StmtKind::Let(r, _)) = (st.catching, &s.kind) {
                if let Some(ev) = st.regs[*r as usize].as_ref().map(|v| v.ev) {
                    st.ctl = self.ctl_after(st.ctl, &[ev]);
                }
            }
            let rest = &b[i + 1..];
            if st.status.is_some() && !rest.is_empty() && may_exit(s) {
                if matches!(s.kind, StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)) {
                    return; // the rest of the block is unreachable
                }
                // The rest runs only if nothing above left the block: ite(status, skip, rest).
                let depth = st.loops.len();
                let group: Vec<EscId> = (e0..self.g.escapes.len())
                    .filter(|&e| {
                        let m = &self.esc_meta[e];
                        m.kind == EscKind::Return || m.depth == depth
                    })
                    .map(|e| e as EscId)
                    .collect();
                let gid = self.g.groups.len() as u32;
                self.g.groups.push(group);
                let status = st.status.clone().expect("exit status threaded");
                let mut r = st.clone();
                r.ctl = self.ctl_after(st.ctl, &[status.ev]);
                r.guard.push(Cond::Rest(gid));
                self.block(&mut r, rest);
                *st = self.join_rest(st, &status, r, gid);
                return;
            }
        }
    }

    fn stmt(&mut self, st: &mut State, s: &bz::Stmt) {
        let line = s.line;
        match &s.kind {
            StmtKind::Let(r, e) => {
                let v = self.expr(st, *r, e);
                st.regs[*r as usize] = Some(v);
            }
            StmtKind::Store(x, r) => {
                let v = self.reg(st, *r);
                st.vars.insert(x.clone(), v);
                st.defined.insert(x);
            }
            StmtKind::Delete(x) => {
                self.load(st, x);
                let u = self.unbound_val(st);
                st.vars.insert(x.clone(), u);
                st.defined.remove(x);
            }
            StmtKind::Unbind(x) => {
                let u = self.unbound_val(st);
                st.vars.insert(x.clone(), u);
                st.defined.remove(x);
            }
            StmtKind::If { cond, then_body, else_body } => {
                let c = self.reg(st, *cond);
                let iid = self.g.ifs.len() as IfId;
                self.g.ifs.push(IfInst { line, origins: c.origins.iter().copied().collect() });
                let (lt, le) = if st.phantom {
                    (Cond::Always, Cond::Always)
                } else {
                    (Cond::Branch(iid, true), Cond::Branch(iid, false))
                };
                let mut a = st.clone();
                a.ctl = self.ctl_after(st.ctl, &[c.ev]);
                if lt != Cond::Always {
                    a.guard.push(lt);
                }
                self.block(&mut a, then_body);
                let mut b = st.clone();
                b.ctl = self.ctl_after(st.ctl, &[c.ev]);
                if le != Cond::Always {
                    b.guard.push(le);
                }
                self.block(&mut b, else_body);
                // A branch that always raises never continues: the other one's definitions hold.
                let defined = match (always_raises(then_body), always_raises(else_body)) {
                    (true, false) => b.defined.clone(),
                    (false, true) => a.defined.clone(),
                    _ => a.defined.meet(&b.defined),
                };
                *st = self.join_if(st, &c, a, lt, b, le);
                st.defined = defined;
            }
            StmtKind::For { iter, item, body } => {
                let sid = self.loop_ids[&(s as *const bz::Stmt)];
                self.for_loop(st, *iter, *item, body, sid);
            }
            StmtKind::Loop { body } => {
                let sid = self.loop_ids[&(s as *const bz::Stmt)];
                self.while_loop(st, body, sid);
            }
            // The scenario: nothing in the body raises, so no handler runs; the body's operations
            // are gated (see `State::catching`), and the else waits for the body's exit status.
            StmtKind::Try { body, orelse, .. } => {
                let outer = st.catching;
                st.catching = true;
                self.block(st, body);
                st.catching = outer;
                if !orelse.is_empty() {
                    if let Some(status) = st.status.clone() {
                        st.ctl = self.ctl_after(st.ctl, &[status.ev]);
                    }
                    self.block(st, orelse);
                }
            }
            // The raise operation (its `Let`) is the call; the path just ends, with no exit.
            StmtKind::Raise(_) => {}
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {
                let kind = match s.kind {
                    StmtKind::Break => EscKind::Break,
                    StmtKind::Continue => EscKind::Continue,
                    _ => EscKind::Return,
                };
                let guard = st
                    .guard
                    .iter()
                    .filter_map(|c| match c {
                        Cond::Branch(i, b) => Some((*i, *b)),
                        _ => None,
                    })
                    .collect();
                self.g.escapes.push(Escape { guard });
                self.esc_meta.push(EscMeta { kind, depth: st.loops.len() });
                if st.status.is_some() {
                    st.status = Some(self.imm(st, AVal::Atom));
                }
            }
        }
    }

    fn reg(&self, st: &State, r: Reg) -> Val {
        st.regs[r as usize].clone().unwrap_or_else(|| self.imm(st, AVal::any()))
    }

    fn load(&mut self, st: &mut State, x: &bz::VarName) -> Val {
        let v = st.vars.get(x).cloned().unwrap_or_else(|| self.unbound_val(st));
        if st.defined.contains(x) {
            return v;
        }
        // May be unbound here: lowering checks it with a call, in program order.
        let av = v.av.clone();
        let mut checked = self.call(st, &Callee::BoundCheck, None, &[v], &[], None, None);
        checked.av = av;
        checked
    }

    fn expr(&mut self, st: &mut State, r: Reg, e: &Expr) -> Val {
        match e {
            Expr::Const(k) => {
                let c = self.f.consts.get(*k as usize);
                let mut v = self.imm(st, const_aval(c));
                if let Some(bz::Const::Int(i)) = c {
                    v.int = Some(*i);
                }
                v
            }
            Expr::Load(x) => self.load(st, x),
            Expr::Global(g) => {
                let av = self.oracle.global(g);
                self.imm(st, av)
            }
            Expr::Call { func, args, kwnames } => {
                let callee = self.reg(st, *func);
                let argv: Vec<Val> = args.iter().map(|a| self.reg(st, *a)).collect();
                let site = self.site_of.get(&r).copied();
                let av = callee.av.clone();
                self.call(st, &Callee::Value(&av), Some(&callee), &argv, kwnames, site, None)
            }
            Expr::Op(op, args) => {
                let argv: Vec<Val> = args.iter().map(|a| self.reg(st, *a)).collect();
                let fresh = self.fresh.get(&r).copied().unwrap_or(0);
                self.call(st, &Callee::Intrinsic(op, fresh), None, &argv, &[], None, Some(op))
            }
        }
    }

    // ---- loops ------------------------------------------------------------------------------

    /// The escapes in `range` that leave a loop at depth `depth` (its breaks, and returns).
    fn exits_of(&self, range: std::ops::Range<usize>, depth: usize) -> Vec<EscId> {
        range
            .filter(|&e| {
                let m = &self.esc_meta[e];
                m.kind == EscKind::Return || (m.kind == EscKind::Break && m.depth == depth)
            })
            .map(|e| e as EscId)
            .collect()
    }

    fn returns_of(&self, range: std::ops::Range<usize>) -> Vec<EscId> {
        range.filter(|&e| self.esc_meta[e].kind == EscKind::Return).map(|e| e as EscId).collect()
    }

    fn for_loop(&mut self, st: &mut State, iter: Reg, item: Reg, body: &[bz::Stmt], sid: u32) {
        for x in deleted(body) {
            st.defined.remove(&x);
        }
        let defined = st.defined.clone();
        let itv = self.reg(st, iter);
        let fold_ctl = self.ctl_after(st.ctl, &[itv.ev]);
        // Speculative iterations wait for no status of the iteration before them.
        let leaves = leaves_loop(body) && !speculative_iterations(st.catching, body);
        let vars = assigned(body);
        let elem = itv.av.element();
        let depth = st.loops.len() + 1;
        let mut cur = st.clone();
        let mut last_range = 0..0;
        for k in 0..self.unroll {
            let mut it = cur.clone();
            it.ctl = self.ctl_after(fold_ctl, &[]);
            it.loops.push((sid, k));
            let origins = Rc::new(BTreeSet::from([self.fresh_origin()]));
            it.regs[item as usize] =
                Some(Val { ev: it.ctl, av: elem.clone(), direct: true, imm: true, hint: true, int: None, origins });
            let e0 = self.g.escapes.len();
            if leaves {
                // ite(status, skip, iter): the scenario runs the iteration.
                let status_in = it.status.clone().expect("exit status threaded");
                let mut b = it.clone();
                b.ctl = self.ctl_after(it.ctl, &[status_in.ev]);
                self.block(&mut b, body);
                b.ctl = it.ctl;
                let same_s = b.s == it.s;
                it = self.join_taken(&status_in, b, &vars, same_s);
                if contains_jump(body, true) {
                    self.map_status(&mut it, "loop_next"); // continue → 0
                }
            } else {
                self.block(&mut it, body);
                if it.status.is_some() && contains_jump(body, true) {
                    self.map_status(&mut it, "loop_next"); // continue → 0 (speculative iterations)
                }
            }
            let e1 = self.g.escapes.len();
            if k + 1 < self.unroll {
                let exits = self.exits_of(e0..e1, depth);
                self.g.not_taken.extend(exits);
            }
            last_range = e0..e1;
            it.loops.pop();
            cur = it;
        }
        cur.ctl = st.ctl;
        let mut post = self.join_taken(&itv, cur, &vars, false);
        let returns = self.returns_of(last_range);
        if !returns.is_empty() {
            let gid = self.g.groups.len() as u32;
            self.g.groups.push(returns);
            post.guard.push(Cond::Rest(gid));
        }
        if contains_jump(body, false) {
            self.map_status(&mut post, "loop_exit"); // break → 0; return stays
        }
        post.defined = defined;
        *st = post;
    }

    fn while_loop(&mut self, st: &mut State, body: &[bz::Stmt], sid: u32) {
        for x in deleted(body) {
            st.defined.remove(&x);
        }
        let defined = st.defined.clone();
        let depth = st.loops.len() + 1;
        let mut cur = st.clone();
        cur.ctl = self.ctl_after(st.ctl, &[]);
        let vars = assigned(body);
        for k in 0..=self.unroll {
            let exit_pass = k == self.unroll;
            let mut it = cur.clone();
            it.loops.push((sid, k));
            if exit_pass {
                it.phantom = true;
            }
            let e0 = self.g.escapes.len();
            self.block(&mut it, body);
            let status = it.status.clone().expect("exit status threaded");
            let again = self.call(&mut it, &Callee::Helper("loop_again"), None, &[status], &[], None, None);
            let e1 = self.g.escapes.len();
            it.loops.pop();
            if !exit_pass {
                self.g.not_taken.extend(self.exits_of(e0..e1, depth));
                // The next iteration exists once `again` is known; its status starts at 0.
                it.ctl = self.ctl_after(it.ctl, &[again.ev]);
                it.status = Some(self.imm(&it, AVal::Atom));
                cur = it;
            } else {
                it.ctl = self.ctl_after(it.ctl, &[again.ev]);
                self.map_status(&mut it, "loop_exit");
                it.ctl = st.ctl;
                let mut post = self.join_taken(&again, it, &vars, false);
                post.phantom = st.phantom;
                let returns = self.returns_of(e0..e1);
                if !returns.is_empty() {
                    let gid = self.g.groups.len() as u32;
                    self.g.groups.push(returns);
                    post.guard.push(Cond::Rest(gid));
                }
                post.defined = defined;
                *st = post;
                return;
            }
        }
    }
}
