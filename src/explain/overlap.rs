//! Which call sites of a function may be in flight at the same time, and why the others never
//! are: the answers `python -m poppy_jit explain` prints.
//!
//! Two dynamic calls p (earlier in program order) and q overlap when q is dispatched before p
//! finished and p before q finished. p never waits for q. So they can overlap exactly when
//! - both can run in one run (not in different branches of one `if`, not across a taken exit);
//! - q does not wait for p to finish, in some choice of branches (`Graph::avoid_wait`);
//! - the timing allows it: a call that runs on the evaluator thread (any call that is not an
//!   async or blocking external, or a timer) runs to completion inside its dispatch, so two such
//!   calls never overlap; one of them overlaps a concurrent call c only if it is certainly
//!   dispatched while c is in flight — after c was dispatched (its order came out of c's
//!   dispatch step), or after some concurrent call v finished that c does not wait for (make v
//!   slow). Anything that depends on the evaluator's stepping order is not claimed.
//!
//! Every decision errs on the side of not claiming: the result may miss an overlap, it never
//! claims one the runtime cannot produce (tests/test_overlap_traces.py checks it on traces).
use super::build::{build, Built};
use super::graph::*;
use super::oracle::Oracle;
use crate::bezoar as bz;

/// One call site of the function.
#[derive(Clone, Debug)]
pub struct SiteReport {
    /// 1-based, in sequential program order (the order of the call statements).
    pub index: u32,
    pub line: u32,
    pub callee: String,
    /// `unordered` | `readonly` | `sequential` | `internal` | `run time` (decided by values the
    /// analysis does not know; assumed sequential).
    pub class: String,
    /// More about the class (per-object ordering), if anything.
    pub class_note: Option<String>,
    /// Runs off the evaluator thread (async/blocking external, timer).
    pub concurrent: bool,
    pub in_loop: bool,
    /// Sites whose result it uses, or that decide whether it runs (any iteration).
    pub waits_for: Vec<u32>,
    /// In the body of the try or with statement at this line: gated (`build::Site::gated_by`).
    pub gated_by: Option<u32>,
    /// The outermost try or with statement whose body holds a loop around it (gated iterations).
    pub gated_loop_by: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// In one pass through their common loops (or outside loops).
    Same,
    /// Only in different iterations of a loop around both.
    Across,
    /// A site with itself, in different iterations.
    Itself,
}

impl Where {
    pub fn name(self) -> &'static str {
        match self {
            Where::Same => "same",
            Where::Across => "across",
            Where::Itself => "itself",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Analysis {
    pub sites: Vec<SiteReport>,
    /// (a, b, where), a <= b: may be in flight at once (in some run, with some latencies).
    pub pairs: Vec<(u32, u32, Where)>,
    /// (a, b, why), a <= b: never in flight at once.
    pub never: Vec<(u32, u32, String)>,
    /// (a, b, why), a <= b: not decided here (it depends on the order the evaluator steps calls,
    /// or on a class decided by values); not claimed.
    pub undecided: Vec<(u32, u32, String)>,
    /// Iterations each loop was unrolled to.
    pub unroll: u32,
}

/// Why two dynamic calls do not (certainly, or as far as shown) overlap.
#[derive(Clone, Debug, PartialEq)]
enum Why {
    /// Never both run: different branches of the `if` at this line.
    Exclusive(u32),
    /// Never both run: an exit between them.
    NeverBoth,
    /// Both run on the evaluator thread.
    Inline,
    /// q certainly waits for p to finish.
    Waits(Cat),
    /// q may wait for p to finish (the analysis cannot tell).
    MayWait(Cat),
    /// q (inline) may run before p is dispatched.
    InlineFirst,
    /// p (inline) runs, maybe before q is dispatched.
    InlineBefore,
    /// Only in runs outside the scenario the analysis builds (loops running all iterations).
    Scenario,
}

enum Verdict {
    Overlap,
    Never(Why),
    Undecided(Why),
}

const PAIR_BUDGET: u64 = 40_000;

/// The sites of `f` with their classes and, with `pairs`, which pairs of them may overlap (the
/// costly part: a search per pair of call instances).
pub fn analyse(f: &bz::Function, oracle: &mut dyn Oracle, pairs: bool) -> Analysis {
    let built = build(f, oracle);
    let g = &built.graph;
    let nsites = built.sites.len();
    let mut inst: Vec<Vec<CtrlId>> = vec![Vec::new(); nsites];
    for (c, ctrl) in g.ctrls.iter().enumerate() {
        if let (Some(s), false) = (ctrl.site, ctrl.phantom) {
            inst[s as usize].push(c as CtrlId);
        }
    }
    let sites: Vec<SiteReport> = (0..nsites).map(|s| site_report(&built, s, &inst)).collect();
    let mut out = Analysis { sites, pairs: Vec::new(), never: Vec::new(), undecided: Vec::new(), unroll: built.unroll };
    if !pairs {
        return out;
    }
    for x in 0..nsites {
        for y in x..nsites {
            let (sx, sy) = (&out.sites[x], &out.sites[y]);
            if sx.class == "internal" || sy.class == "internal" || inst[x].is_empty() || inst[y].is_empty() {
                continue;
            }
            if x == y && !sx.in_loop {
                continue; // a site outside loops runs once
            }
            let (a, b) = (x as u32 + 1, y as u32 + 1);
            match pair(g, x as u32, y as u32, &inst) {
                Ok(w) => out.pairs.push((a, b, w)),
                Err((true, why)) => out.never.push((a, b, why)),
                Err((false, why)) => out.undecided.push((a, b, why)),
            }
        }
    }
    out
}

fn site_report(built: &Built, s: usize, inst: &[Vec<CtrlId>]) -> SiteReport {
    let g = &built.graph;
    let site = &built.sites[s];
    let ctrls: Vec<&Ctrl> = inst[s].iter().map(|&c| &g.ctrls[c as usize]).collect();
    let internal = !ctrls.is_empty() && ctrls.iter().all(|c| c.internal);
    let class = if internal {
        "internal".to_string()
    } else if !ctrls.is_empty() && ctrls.iter().all(|c| c.may_class == c.must_class && c.may_class == ctrls[0].may_class) {
        ctrls[0].may_class.name().to_string()
    } else {
        "run time".to_string()
    };
    let mut waits: Vec<u32> = Vec::new();
    for &c in &inst[s] {
        for p in g.reach_f(g.ctrls[c as usize].ev.d, Cat::Ctl) {
            if let Some(ps) = g.ctrls[p as usize].site {
                if !waits.contains(&(ps + 1)) {
                    waits.push(ps + 1);
                }
            }
        }
    }
    waits.sort_unstable();
    SiteReport {
        index: s as u32 + 1,
        line: site.line,
        callee: site.callee.clone(),
        class,
        class_note: None,
        concurrent: !ctrls.is_empty() && ctrls.iter().all(|c| c.concurrent),
        in_loop: site.loop_depth > 0,
        waits_for: waits,
        gated_by: site.gated_by,
        gated_loop_by: site.gated_loop_by,
    }
}

/// Whether all loops two controllers share have the same iteration.
fn same_pass(a: &Ctrl, b: &Ctrl) -> bool {
    a.loops.iter().zip(&b.loops).take_while(|(x, y)| x.0 == y.0).all(|(x, y)| x.1 == y.1)
}

/// The relation of sites x <= y (0-based): where they may overlap, or (certain, why) not.
fn pair(g: &Graph, x: u32, y: u32, inst: &[Vec<CtrlId>]) -> Result<Where, (bool, String)> {
    let mut same = false;
    let mut across = false;
    let mut all_never = true;
    // The first reason found in one pass and across passes, undecided ones first.
    let mut why_same: Option<(CtrlId, CtrlId, Why, bool)> = None;
    let mut why_across: Option<(CtrlId, CtrlId, Why, bool)> = None;
    for &cx in &inst[x as usize] {
        for &cy in &inst[y as usize] {
            if cx == cy || (x == y && cx > cy) {
                continue;
            }
            let sp = same_pass(&g.ctrls[cx as usize], &g.ctrls[cy as usize]);
            if (sp && same) || (!sp && across) {
                continue;
            }
            let (p, q) = if cx < cy { (cx, cy) } else { (cy, cx) };
            let (why, certain) = match decide(g, p, q) {
                Verdict::Overlap => {
                    if sp {
                        same = true;
                    } else {
                        across = true;
                    }
                    continue;
                }
                Verdict::Never(w) => (w, true),
                Verdict::Undecided(w) => (w, false),
            };
            all_never &= certain;
            let slot = if sp { &mut why_same } else { &mut why_across };
            if slot.as_ref().is_none_or(|s| s.3 && !certain) {
                *slot = Some((p, q, why, certain));
            }
        }
        if same && (across || x == y) {
            break;
        }
    }
    if same {
        return Ok(Where::Same);
    }
    if across {
        return Ok(if x == y { Where::Itself } else { Where::Across });
    }
    let text = |w: &(CtrlId, CtrlId, Why, bool)| reason(g, w.0, w.1, &w.2);
    let why = match (&why_same, &why_across) {
        (Some(s), Some(a)) if text(s) != text(a) => format!("{}; in different iterations: {}", text(s), text(a)),
        (Some(s), _) => text(s),
        (None, Some(a)) => text(a),
        (None, None) => "never both run".to_string(),
    };
    Err((all_never, why))
}

fn site_no(g: &Graph, c: CtrlId) -> String {
    g.ctrls[c as usize].site.map_or("a call".into(), |s| format!("#{}", s + 1))
}

fn class_name(c: &Ctrl) -> &'static str {
    if c.may_class == c.must_class {
        c.may_class.name()
    } else {
        "class decided at run time"
    }
}

fn reason(g: &Graph, p: CtrlId, q: CtrlId, why: &Why) -> String {
    let (ps, qs) = (site_no(g, p), site_no(g, q));
    let cq = class_name(&g.ctrls[q as usize]);
    match why {
        Why::Exclusive(line) => format!("never both run (different branches of the `if` at line {line})"),
        Why::NeverBoth => "never both run (an exit between them)".into(),
        Why::Inline => "both run on the evaluator thread (neither is an async or blocking external), one after the other".into(),
        Why::Waits(Cat::Data) => format!("{qs} uses the result of {ps}"),
        Why::Waits(Cat::Ctl) => format!("{qs} runs only once {ps}'s result decided a condition, loop or exit"),
        Why::Waits(Cat::Object) => format!("{qs} is ordered after {ps} on a list/dict/set the function created"),
        Why::Waits(Cat::Order) => format!("{qs} ({cq}) is ordered after {ps} finishes"),
        Why::MayWait(Cat::Data | Cat::Ctl) => format!("{qs} may need the result of {ps} (depending on branches taken)"),
        Why::MayWait(Cat::Object) => format!("{qs} may be ordered after {ps} on a list/dict/set the function created"),
        Why::MayWait(Cat::Order) => format!("{qs} ({cq}) may be ordered after {ps} finishes"),
        Why::InlineFirst => format!(
            "{qs} runs on the evaluator thread; whether it starts while {ps} is in flight depends on the order the runtime steps them"
        ),
        Why::InlineBefore => format!(
            "{ps} runs on the evaluator thread; whether {qs} is already in flight then depends on the order the runtime steps them"
        ),
        Why::Scenario => "only in runs the analysis does not model".into(),
    }
}

/// Whether dynamic calls p < q (program order) can be in flight at once.
fn decide(g: &Graph, p: CtrlId, q: CtrlId) -> Verdict {
    let (cp, cq) = (&g.ctrls[p as usize], &g.ctrls[q as usize]);
    let mut base = Scenario::default();
    if !g.satisfiable(&base, &[p, q], false) {
        return Verdict::Never(exclusive(g, cp, cq));
    }
    if !cp.concurrent && !cq.concurrent {
        return Verdict::Never(Why::Inline);
    }
    let given: Vec<Cond> = cp.guard.iter().chain(&cq.guard).copied().collect();
    if let Some(cat) = g.certain_wait(cq.ev.d, p, &given) {
        return Verdict::Never(Why::Waits(cat));
    }
    for c in &given {
        if let Cond::Branch(i, b) = *c {
            base.branch.insert(i, b);
        }
    }
    let mut budget = PAIR_BUDGET;
    let Some(sc) = g.avoid_wait(cq.ev.d, p, &base, &mut budget) else {
        return Verdict::Undecided(Why::MayWait(wait_category(g, q, p, &base)));
    };
    if !g.satisfiable(&sc, &[p, q], true) {
        return Verdict::Undecided(Why::Scenario);
    }
    if cp.concurrent && cq.concurrent {
        return Verdict::Overlap;
    }
    if cp.concurrent {
        // q runs inline: it must start while p is in flight.
        let mut s2 = sc.clone();
        if g.dispatched_after(q, p, &mut s2, &mut budget)
            && g.avoid_wait(cq.ev.d, p, &s2, &mut budget).is_some()
            && g.satisfiable(&s2, &[p, q], true)
        {
            return Verdict::Overlap;
        }
        if slow_helper(g, q, p, &sc, &mut budget) {
            return Verdict::Overlap;
        }
        return Verdict::Undecided(Why::InlineFirst);
    }
    // p runs inline: q must be dispatched before it, and still be running.
    if slow_helper(g, p, q, &sc, &mut budget) {
        return Verdict::Overlap;
    }
    Verdict::Undecided(Why::InlineBefore)
}
/// Is there a concurrent call v that `waiter` certainly waits for and `free` does not? Then with
/// v slow enough, `free` is dispatched (and, slow itself, still running) when `waiter` runs.
fn slow_helper(g: &Graph, waiter: CtrlId, free: CtrlId, sc: &Scenario, budget: &mut u64) -> bool {
    let dw = g.ctrls[waiter as usize].ev.d;
    let df = g.ctrls[free as usize].ev.d;
    let (p, q) = if waiter < free { (waiter, free) } else { (free, waiter) };
    for v in 0..waiter {
        let cv = &g.ctrls[v as usize];
        if v == free || !cv.concurrent || cv.phantom || !g.may_wait_any(dw, v) || g.may_wait_always(df, v) {
            continue;
        }
        let mut s = sc.clone();
        if !g.must_wait(waiter, v, &mut s, budget) {
            continue;
        }
        let Some(s) = g.avoid_wait(df, v, &s, budget) else { continue };
        // The choices made for v must still let q not wait for p.
        if g.avoid_wait(g.ctrls[q as usize].ev.d, p, &s, budget).is_none() {
            continue;
        }
        if g.satisfiable(&s, &[waiter, free, v], true) {
            return true;
        }
        if *budget == 0 {
            return false;
        }
    }
    false
}

fn exclusive(g: &Graph, a: &Ctrl, b: &Ctrl) -> Why {
    for c in &a.guard {
        if let Cond::Branch(i, x) = *c {
            if b.guard.contains(&Cond::Branch(i, !x)) {
                return Why::Exclusive(g.ifs[i as usize].line);
            }
        }
    }
    Why::NeverBoth
}

fn wait_category(g: &Graph, q: CtrlId, p: CtrlId, sc: &Scenario) -> Cat {
    let d = g.ctrls[q as usize].ev.d;
    for cat in [Cat::Data, Cat::Ctl, Cat::Object] {
        let mut budget = PAIR_BUDGET;
        if g.may_path(d, p, sc, cat, &mut budget).is_some() {
            return cat;
        }
    }
    Cat::Order
}

// ---------------------------------------------------------------------------------------------
// The text explain prints

impl Analysis {
    pub fn site(&self, index: u32) -> &SiteReport {
        &self.sites[index as usize - 1]
    }

    fn site_in_loop(&self, listed: &[String]) -> bool {
        self.sites.iter().any(|s| s.in_loop && listed.contains(&format!("#{} {}", s.index, s.callee)))
    }

    pub fn report(&self) -> String {
        if self.sites.is_empty() {
            return "no call sites".into();
        }
        let mut out = vec!["call sites (sequential program order):".to_string()];
        for s in &self.sites {
            let class = match s.class.as_str() {
                "run time" => "decided at run time (assumed sequential)".to_string(),
                c => c.to_string(),
            };
            let note = s.class_note.as_ref().map_or(String::new(), |n| format!(" ({n})"));
            let where_ = if s.line > 0 { format!("line {}", s.line) } else { "line ?".into() };
            let loop_ = match (s.in_loop, s.gated_by, s.gated_loop_by) {
                (_, _, Some(l)) => format!("  in a loop inside the try/with body of line {l} (iterations gated)"),
                (true, Some(l), None) => format!("  in a loop, gated in the try/with body of line {l}"),
                (false, Some(l), None) => format!("  gated in the try/with body of line {l}"),
                (true, None, None) => "  in a loop".to_string(),
                (false, None, None) => String::new(),
            };
            let waits = if s.waits_for.is_empty() {
                "nothing".to_string()
            } else {
                s.waits_for.iter().map(|w| format!("#{w}")).collect::<Vec<_>>().join(", ")
            };
            out.push(format!("  #{:<3} {:<9} {:<20} {class}{note}{loop_}; waits for {waits}", s.index, where_, s.callee));
        }
        out.push(if self.pairs.is_empty() { "may overlap: none".into() } else { "may overlap:".into() });
        for &(a, b, w) in &self.pairs {
            let (sa, sb) = (self.site(a), self.site(b));
            out.push(match w {
                Where::Itself => format!("  #{a} {} with itself in other loop iterations", sa.callee),
                Where::Same => format!("  #{a} {}  ∥  #{b} {}", sa.callee, sb.callee),
                Where::Across => format!("  #{a} {}  ∥  #{b} {}  (in different loop iterations)", sa.callee, sb.callee),
            });
        }
        // Two calls that run on the evaluator thread never overlap: one line for all of them.
        let inline = |i: u32| !self.site(i).concurrent && self.site(i).class != "internal";
        let never: Vec<_> = self.never.iter().filter(|(a, b, _)| !(inline(*a) && inline(*b))).cloned().collect();
        for (title, list) in [("never overlap:", &never), ("not decided (not claimed):", &self.undecided)] {
            if list.is_empty() {
                continue;
            }
            out.push(title.into());
            for (a, b, why) in list {
                let (sa, sb) = (self.site(*a), self.site(*b));
                if a == b {
                    out.push(format!("  #{a} {} with itself: {why}", sa.callee));
                } else {
                    out.push(format!("  #{a} {}, #{b} {}: {why}", sa.callee, sb.callee));
                }
            }
        }
        let on_thread: Vec<String> =
            self.sites.iter().filter(|s| inline(s.index)).map(|s| format!("#{} {}", s.index, s.callee)).collect();
        if on_thread.len() > 1 || on_thread.len() == 1 && self.site_in_loop(&on_thread) {
            out.push(format!(
                "run on the evaluator thread (not async or blocking), so never in flight with each other: {}",
                on_thread.join(", ")
            ));
        }
        out.join("\n")
    }
}
