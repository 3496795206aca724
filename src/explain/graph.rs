//! The event graph of one unrolled run of a function, and the questions asked of it.
//!
//! Every external call the runtime would queue (a *controller*, see `crate::control`) has seven
//! events: its input token known (T), arguments known (A), class known (K), dispatched (D),
//! finished (F), and its output order futures F_R' (Ro) and F_W' (Wo) resolved. Other events are
//! frame instantiations (`Ctl`), values and order tokens that come out of joins. An edge
//! `e → f` says "e happens no earlier than f". Edges always point to earlier events (lower ids),
//! so the graph is a DAG in id order.
//!
//! Edges come in two strengths. A `Must` edge holds in every run in which its source happens
//! (under its condition); a `May` edge is one the run *might* impose (a join taking either
//! branch, a class that depends on values the analysis does not know). "q may start before p
//! finished" is decided on all edges (over-approximating waits); facts used to *show* that an
//! overlap happens (q dispatched after p was) use `Must` edges only. `StepD` edges carry the
//! fact that an output order resolved in the same evaluator step as the call's dispatch, so
//! anything waiting for it runs after the dispatch (only for "dispatched after" questions).
//!
//! Conditions: `Branch(if, b)` edges hold only when that `if` instance takes branch `b`; the
//! search picks branches so as to avoid a wait (`Scenario`). `Rest(group)` edges hold when no
//! escape (break/continue/return) of the group is taken; they only add constraints.
//!
//! This module knows nothing about Bezoar or Python.
use crate::control::Class;

pub type Ev = u32;
pub type CtrlId = u32;
pub type IfId = u32;
pub type EscId = u32;

/// Why an event waits for another: the reason text users read is chosen by the weakest
/// category on a path (data < control < object < order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cat {
    /// An argument or callee is (or is computed from) a result.
    Data,
    /// The statement exists only once a condition, loop iterable or exit status is known.
    Ctl,
    /// Per-object ordering on a container the run created.
    Object,
    /// Ordering by class (F_R/F_W), the order token itself.
    Order,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    May,
    Must,
    /// Only for "dispatched after": the target controller was dispatched in the same step.
    StepD,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    Always,
    Branch(IfId, bool),
    /// No escape of this group is taken (`Graph::groups`).
    Rest(u32),
}

#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub to: Ev,
    pub strength: Strength,
    pub cond: Cond,
    pub cat: Cat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvKind {
    Start,
    Ctl,
    Val,
    Join,
    T(CtrlId),
    A(CtrlId),
    K(CtrlId),
    D(CtrlId),
    F(CtrlId),
    Ro(CtrlId),
    Wo(CtrlId),
}

pub struct Event {
    pub kind: EvKind,
    pub edges: Vec<Edge>,
}

/// The events of one controller.
#[derive(Clone, Copy, Debug)]
pub struct CtrlEvs {
    pub t: Ev,
    pub a: Ev,
    pub k: Ev,
    pub d: Ev,
    pub f: Ev,
    pub ro: Ev,
    pub wo: Ev,
}

pub struct Ctrl {
    pub ev: CtrlEvs,
    /// The reported call site (a Bezoar call statement), if it is one.
    pub site: Option<u32>,
    /// Runs off the evaluator thread (async/blocking external, timer): its interval can contain
    /// other dispatches. Inline calls run to completion inside their dispatch.
    pub concurrent: bool,
    /// A call of an internal (@poppy) function: inlined, its own calls are not analysed.
    pub internal: bool,
    /// Part of a `while` loop's exit pass: only a source of waits, never claimed.
    pub phantom: bool,
    /// Branches and escape groups that must hold for it to run.
    pub guard: Vec<Cond>,
    /// (static loop id, iteration) of each enclosing loop, outermost first.
    pub loops: Vec<(u32, u32)>,
    /// The strictest and the laxest class it may have.
    pub may_class: Class,
    pub must_class: Class,
}

/// One dynamic escape (`break`/`continue`/`return`): taken iff all of its branches are.
pub struct Escape {
    pub guard: Vec<(IfId, bool)>,
}

pub struct IfInst {
    pub line: u32,
    /// The varying values its condition is computed from (see `Graph::satisfiable`).
    pub origins: Vec<u32>,
}

/// Fixed-width bitsets over controllers, one per event.
struct Bits {
    words: usize,
    data: Vec<u64>,
}

impl Bits {
    fn new(events: usize, ctrls: usize) -> Bits {
        let words = ctrls.div_ceil(64).max(1);
        Bits { words, data: vec![0; events * words] }
    }
    fn row(&self, e: Ev) -> &[u64] {
        &self.data[e as usize * self.words..(e as usize + 1) * self.words]
    }
    fn get(&self, e: Ev, c: CtrlId) -> bool {
        self.row(e)[c as usize / 64] >> (c % 64) & 1 == 1
    }
    fn or_into(&mut self, dst: Ev, src: Ev) {
        let w = self.words;
        let (d, s) = (dst as usize * w, src as usize * w);
        debug_assert!(s < d);
        let (lo, hi) = self.data.split_at_mut(d);
        for i in 0..w {
            hi[i] |= lo[s + i];
        }
    }
    fn set(&mut self, e: Ev, c: CtrlId) {
        self.data[e as usize * self.words + c as usize / 64] |= 1 << (c % 64);
    }
}

#[derive(Default)]
pub struct Graph {
    pub events: Vec<Event>,
    pub ctrls: Vec<Ctrl>,
    pub ifs: Vec<IfInst>,
    pub escapes: Vec<Escape>,
    /// Escape groups of `Cond::Rest`.
    pub groups: Vec<Vec<EscId>>,
    /// Escapes the scenario requires not taken (loops run all their unrolled iterations).
    pub not_taken: Vec<EscId>,
    /// Filled by `close`.
    reach: Option<Reach>,
}

struct Reach {
    /// Controllers whose F an event may wait for (every edge, every condition).
    may_f: Bits,
    /// ... whose D or F an event may come after (every edge, StepD included): prunes searches.
    may_d: Bits,
    /// ... through unconditional edges only (holds whatever branches are taken).
    may_uncond_f: Bits,
    /// Controllers whose F / D an event certainly comes after (unconditional Must edges).
    must_f: Bits,
    must_d: Bits,
}

/// A choice of branches for some `if` instances.
#[derive(Clone, Default, Debug)]
pub struct Scenario {
    pub branch: std::collections::BTreeMap<IfId, bool>,
    /// Escape groups a claim relies on not being taken.
    pub rests: Vec<u32>,
}

impl Scenario {
    fn allows(&self, c: Cond) -> bool {
        match c {
            Cond::Branch(i, b) => self.branch.get(&i).is_none_or(|&x| x == b),
            _ => true,
        }
    }
    fn holds(&self, c: Cond) -> bool {
        match c {
            Cond::Branch(i, b) => self.branch.get(&i) == Some(&b),
            _ => true,
        }
    }
}

/// What to look for in a search.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    F(CtrlId),
    D(CtrlId),
}

impl Graph {
    pub fn new() -> Graph {
        let mut g = Graph::default();
        g.event(EvKind::Start);
        g
    }

    pub fn start(&self) -> Ev {
        0
    }

    pub fn event(&mut self, kind: EvKind) -> Ev {
        self.events.push(Event { kind, edges: Vec::new() });
        (self.events.len() - 1) as Ev
    }

    pub fn edge(&mut self, from: Ev, to: Ev, strength: Strength, cond: Cond, cat: Cat) {
        assert!(to < from, "edges point to earlier events");
        if to == 0 && cond == Cond::Always {
            return; // the start of the run: nothing to wait for
        }
        self.events[from as usize].edges.push(Edge { to, strength, cond, cat });
    }

    pub fn must(&mut self, from: Ev, to: Ev, cat: Cat) {
        self.edge(from, to, Strength::Must, Cond::Always, cat);
    }

    pub fn may(&mut self, from: Ev, to: Ev, cat: Cat) {
        self.edge(from, to, Strength::May, Cond::Always, cat);
    }

    /// Compute the reachability tables (after the last event was added).
    pub fn close(&mut self) {
        let (n, c) = (self.events.len(), self.ctrls.len());
        let mut r = Reach {
            may_f: Bits::new(n, c),
            may_d: Bits::new(n, c),
            may_uncond_f: Bits::new(n, c),
            must_f: Bits::new(n, c),
            must_d: Bits::new(n, c),
        };
        for e in 0..n as Ev {
            for edge in &self.events[e as usize].edges {
                let to = edge.to;
                let target = match self.events[to as usize].kind {
                    EvKind::F(c) => Some((c, true)),
                    EvKind::D(c) => Some((c, false)),
                    _ => None,
                };
                let uncond = edge.cond == Cond::Always;
                r.may_d.or_into(e, to);
                if let Some((c, _)) = target {
                    r.may_d.set(e, c);
                }
                if edge.strength != Strength::StepD {
                    r.may_f.or_into(e, to);
                    if uncond {
                        r.may_uncond_f.or_into(e, to);
                    }
                    if let Some((c, true)) = target {
                        r.may_f.set(e, c);
                        if uncond {
                            r.may_uncond_f.set(e, c);
                        }
                    }
                }
                if edge.strength != Strength::May && uncond {
                    r.must_d.or_into(e, to);
                    if let Some((c, _)) = target {
                        r.must_d.set(e, c);
                    }
                    if edge.strength == Strength::Must {
                        r.must_f.or_into(e, to);
                        if let Some((c, true)) = target {
                            r.must_f.set(e, c);
                        }
                    }
                }
            }
        }
        self.reach = Some(r);
    }

    fn reach(&self) -> &Reach {
        self.reach.as_ref().expect("Graph::close was called")
    }

    /// Whether `from` may wait for `p` to finish under *some* choice of branches.
    pub fn may_wait_any(&self, from: Ev, p: CtrlId) -> bool {
        self.reach().may_f.get(from, p)
    }

    /// Whether `from` waits for `p` to finish whatever branches are taken (unconditional edges).
    pub fn may_wait_always(&self, from: Ev, p: CtrlId) -> bool {
        self.reach().may_uncond_f.get(from, p)
    }

    /// A path of edges from `from` to F(p) under scenario `sc` using edges of categories up to
    /// `max_cat` (all strengths but StepD), or None.
    pub fn may_path(&self, from: Ev, p: CtrlId, sc: &Scenario, max_cat: Cat, budget: &mut u64) -> Option<Vec<Edge>> {
        let target = self.ctrls[p as usize].ev.f;
        if from < target {
            return None;
        }
        // Events are searched in [target, from]; `back[e - target]` is the edge that reached e.
        const UNSEEN: u32 = u32::MAX;
        let mut back: Vec<(u32, u32)> = vec![(UNSEEN, 0); (from - target + 1) as usize];
        back[(from - target) as usize] = (from, 0);
        let mut stack = vec![from];
        while let Some(e) = stack.pop() {
            *budget = budget.saturating_sub(1);
            if e == target {
                let mut path = Vec::new();
                let mut cur = e;
                while cur != from {
                    let (parent, i) = back[(cur - target) as usize];
                    path.push(self.events[parent as usize].edges[i as usize]);
                    cur = parent;
                }
                path.reverse();
                return Some(path);
            }
            // Prune: nothing below can reach F(p).
            if !self.reach().may_f.get(e, p) {
                continue;
            }
            for (i, edge) in self.events[e as usize].edges.iter().enumerate() {
                if edge.to < target || edge.strength == Strength::StepD || edge.cat > max_cat || !sc.allows(edge.cond) {
                    continue;
                }
                let slot = &mut back[(edge.to - target) as usize];
                if slot.0 == UNSEEN {
                    *slot = (e, i as u32);
                    stack.push(edge.to);
                }
            }
        }
        None
    }

    /// Controllers whose F `from` may wait for through edges of categories up to `max_cat`
    /// (every condition), in id order.
    pub fn reach_f(&self, from: Ev, max_cat: Cat) -> Vec<CtrlId> {
        let mut seen = vec![false; from as usize + 1];
        let mut stack = vec![from];
        let mut out = Vec::new();
        seen[from as usize] = true;
        while let Some(e) = stack.pop() {
            if let EvKind::F(c) = self.events[e as usize].kind {
                if e != from {
                    out.push(c);
                }
            }
            for edge in &self.events[e as usize].edges {
                if edge.strength == Strength::StepD || edge.cat > max_cat || seen[edge.to as usize] {
                    continue;
                }
                seen[edge.to as usize] = true;
                stack.push(edge.to);
            }
        }
        out.sort_unstable();
        out
    }

    /// Choose branches (extending `sc`) so that `from` does not wait for `p` to finish.
    /// Returns None when every choice found makes it wait (or the budget ran out).
    pub fn avoid_wait(&self, from: Ev, p: CtrlId, sc: &Scenario, budget: &mut u64) -> Option<Scenario> {
        if !self.may_wait_any(from, p) {
            return Some(sc.clone());
        }
        if self.may_wait_always(from, p) {
            return None;
        }
        self.avoid_rec(from, p, sc.clone(), budget, 0)
    }

    fn avoid_rec(&self, from: Ev, p: CtrlId, sc: Scenario, budget: &mut u64, depth: u32) -> Option<Scenario> {
        if *budget == 0 || depth > 12 {
            return None;
        }
        let path = match self.may_path(from, p, &sc, Cat::Order, budget) {
            None => return Some(sc),
            Some(path) => path,
        };
        // Break the path at one of its undecided branches.
        for edge in path {
            if let Cond::Branch(i, b) = edge.cond {
                if sc.branch.contains_key(&i) {
                    continue;
                }
                let mut next = sc.clone();
                next.branch.insert(i, !b);
                if let Some(found) = self.avoid_rec(from, p, next, budget, depth + 1) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Whether `from` certainly comes after `target` under `sc`, possibly by choosing more
    /// branches (added to `sc`, with the escape groups the path relies on).
    fn must_search(&self, from: Ev, target: Target, sc: &mut Scenario, budget: &mut u64) -> bool {
        let r = self.reach();
        let (tc, want_f) = match target {
            Target::F(c) => (c, true),
            Target::D(c) => (c, false),
        };
        let fast = if want_f { r.must_f.get(from, tc) } else { r.must_d.get(from, tc) };
        if fast {
            return true;
        }
        let goal = |g: &Graph, e: Ev| match g.events[e as usize].kind {
            EvKind::F(c) => c == tc,
            EvKind::D(c) => c == tc && !want_f,
            _ => false,
        };
        // Depth-first, tentatively taking conditional edges that do not contradict `sc`.
        let low = self.ctrls[tc as usize].ev.d;
        if from < low {
            return false;
        }
        let mut seen = vec![false; (from - low + 1) as usize];
        let mut stack: Vec<(Ev, Vec<Cond>)> = vec![(from, Vec::new())];
        while let Some((e, conds)) = stack.pop() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            if goal(self, e) {
                for c in conds {
                    match c {
                        Cond::Branch(i, b) => {
                            sc.branch.insert(i, b);
                        }
                        Cond::Rest(g) => sc.rests.push(g),
                        Cond::Always => {}
                    }
                }
                return true;
            }
            let target_ev = self.ctrls[tc as usize].ev.d;
            let may_reach = if want_f { r.may_f.get(e, tc) } else { r.may_d.get(e, tc) };
            if e < target_ev || !may_reach {
                continue;
            }
            for edge in &self.events[e as usize].edges {
                if edge.strength == Strength::May || (want_f && edge.strength == Strength::StepD) {
                    continue;
                }
                let consistent = match edge.cond {
                    Cond::Branch(i, b) => {
                        sc.allows(edge.cond) && !conds.contains(&Cond::Branch(i, !b))
                    }
                    _ => true,
                };
                if !consistent || edge.to < low || seen[(edge.to - low) as usize] {
                    continue;
                }
                seen[(edge.to - low) as usize] = true;
                let mut next = conds.clone();
                if edge.cond != Cond::Always && !sc.holds(edge.cond) {
                    next.push(edge.cond);
                }
                stack.push((edge.to, next));
            }
        }
        false
    }

    /// The weakest category of a path by which `from` certainly waits for `p` to finish, using
    /// unconditional Must edges and those whose condition is in `given` (the conditions under
    /// which the calls in question run at all). None: no certain wait.
    pub fn certain_wait(&self, from: Ev, p: CtrlId, given: &[Cond]) -> Option<Cat> {
        let target = self.ctrls[p as usize].ev.f;
        if from < target || !self.reach().may_f.get(from, p) {
            return None;
        }
        for cat in [Cat::Data, Cat::Ctl, Cat::Object, Cat::Order] {
            if cat == Cat::Order && self.reach().must_f.get(from, p) {
                return Some(cat);
            }
            let mut seen = vec![false; (from - target + 1) as usize];
            let mut stack = vec![from];
            while let Some(e) = stack.pop() {
                if e == target {
                    return Some(cat);
                }
                if e != from && !self.reach().may_f.get(e, p) {
                    continue;
                }
                for edge in &self.events[e as usize].edges {
                    let usable = edge.to >= target
                        && edge.strength == Strength::Must
                        && edge.cat <= cat
                        && (edge.cond == Cond::Always || given.contains(&edge.cond));
                    if usable && !seen[(edge.to - target) as usize] {
                        seen[(edge.to - target) as usize] = true;
                        stack.push(edge.to);
                    }
                }
            }
        }
        None
    }

    /// Whether `q` is certainly dispatched after `p` was dispatched (extending `sc`).
    pub fn dispatched_after(&self, q: CtrlId, p: CtrlId, sc: &mut Scenario, budget: &mut u64) -> bool {
        self.must_search(self.ctrls[q as usize].ev.d, Target::D(p), sc, budget)
    }

    /// Whether `q`'s dispatch certainly waits for `v` to finish (extending `sc`).
    pub fn must_wait(&self, q: CtrlId, v: CtrlId, sc: &mut Scenario, budget: &mut u64) -> bool {
        self.must_search(self.ctrls[q as usize].ev.d, Target::F(v), sc, budget)
    }

    /// Controllers `q`'s dispatch certainly waits for (unconditional edges), in id order.
    pub fn must_waits(&self, q: CtrlId) -> Vec<CtrlId> {
        let d = self.ctrls[q as usize].ev.d;
        (0..q).filter(|&c| self.reach().must_f.get(d, c)).collect()
    }

    /// Whether the branches of `sc` and the guards of `ctrls` can all hold at once; with
    /// `scenario`, also the exits the scenario does not take (loops run all their iterations).
    pub fn satisfiable(&self, sc: &Scenario, ctrls: &[CtrlId], scenario: bool) -> bool {
        let mut assign = sc.branch.clone();
        let mut clauses: Vec<&[(IfId, bool)]> = Vec::new();
        let mut esc: Vec<EscId> = if scenario { self.not_taken.clone() } else { Vec::new() };
        for g in &sc.rests {
            esc.extend(&self.groups[*g as usize]);
        }
        for &c in ctrls {
            for cond in &self.ctrls[c as usize].guard {
                match *cond {
                    Cond::Branch(i, b) => {
                        if assign.insert(i, b).is_some_and(|x| x != b) {
                            return false;
                        }
                    }
                    Cond::Rest(g) => esc.extend(&self.groups[g as usize]),
                    Cond::Always => {}
                }
            }
        }
        esc.sort_unstable();
        esc.dedup();
        for e in esc {
            clauses.push(&self.escapes[e as usize].guard);
        }
        // Each clause: at least one of its branches is not taken.
        let mut steps = SOLVE_BUDGET;
        if !solve(&mut assign, &clauses, 0, &mut steps) {
            return false;
        }
        // A claim must not rely on the branches of two conditions computed from the same value
        // (`if c:` ... `if not c:` may exclude each other); other conditions count as independent.
        if scenario {
            let chosen: Vec<&IfInst> = assign.keys().map(|&i| &self.ifs[i as usize]).collect();
            for (k, a) in chosen.iter().enumerate() {
                if chosen[k + 1..].iter().any(|b| a.origins.iter().any(|o| b.origins.contains(o))) {
                    return false;
                }
            }
        }
        true
    }
}

/// How many search steps one satisfiability question may take. The search branches on every
/// free branch of an open clause, 16 levels deep: without a bound a function with many guarded
/// escapes made it exponential, and the run's analysis never ended (a generated program with
/// nested loops under a loop that returns, fuzz seed 2027). Out of steps is "not satisfiable",
/// which is the cautious answer: no overlap is claimed.
const SOLVE_BUDGET: u32 = 20_000;

/// A tiny DPLL over "not all of these branches" clauses, within `steps`.
fn solve(
    assign: &mut std::collections::BTreeMap<IfId, bool>,
    clauses: &[&[(IfId, bool)]],
    depth: u32,
    steps: &mut u32,
) -> bool {
    if *steps == 0 {
        return false;
    }
    *steps -= 1;
    loop {
        let mut changed = false;
        for cl in clauses {
            if cl.iter().any(|(i, b)| assign.get(i).is_some_and(|x| x != b)) {
                continue; // satisfied
            }
            let free: Vec<&(IfId, bool)> = cl.iter().filter(|(i, _)| !assign.contains_key(i)).collect();
            match free.len() {
                0 => return false,
                1 => {
                    assign.insert(free[0].0, !free[0].1);
                    changed = true;
                }
                _ => {}
            }
        }
        if !changed {
            break;
        }
    }
    let open = clauses.iter().find(|cl| {
        !cl.iter().any(|(i, b)| assign.get(i).is_some_and(|x| x != b))
    });
    let Some(cl) = open else { return true };
    if depth > 16 {
        return false;
    }
    for (i, b) in cl.iter() {
        if assign.contains_key(i) {
            continue;
        }
        let mut next = assign.clone();
        next.insert(*i, !*b);
        if solve(&mut next, clauses, depth + 1, steps) {
            *assign = next;
            return true;
        }
    }
    false
}
