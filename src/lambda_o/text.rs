//! λO text form: prints and parses (round-trips up to variable names being made unique).
//!
//! ```text
//! fun main/0(S, x):               # entry function first; `name/ID`, ID = index in the program
//!   p := prim @print
//!   t := xcall S p(x; end=e)      # keyword arguments after ';'
//!   u := xcall? S p(x)            # a catching call: its failure is its value
//!   w := xcall S p(x) handling h  # made while a handler runs: h's exception is the handled one
//!   S.1 := prj 0 t
//!   r := prj 1 t
//!   b := fun body/1[p, S.1]        # a closure: function body/1 capturing p and S.1
//!   c := b(x, r)                   # internal call
//!   i := ite(r, b, b; x, r)        # ite(cond, then, else; args)
//!   f := fold(r, b, c)             # fold(seq, body, acc)
//!   m := mem
//!   m.1 := store m x r
//!   v := load m.1 x
//!   o := (S.1, r)
//!   y := o                         # alias
//!   ret o
//! fun body/1[p, S](e, acc):        # captures in [..], then parameters
//!   ...
//! fun never/2(S):
//!   ret! x                         # a result nothing binds: it never becomes known
//! ```
//! Lines may carry a trailing `@LINE` (source line). Variable names are printed from
//! `Func::var_names`, made unique within the function by `.N` suffixes. Printed text is
//! canonical: `print(parse(t)) == t` for every `t` that `print` produced, as long as the
//! primitives' own text round-trips.
use super::host::PrimText;
use super::term::*;
use std::collections::{HashMap, HashSet};

fn unique_names<P>(f: &Func<P>) -> Vec<String> {
    // A name already unique is printed as it is (so print∘parse is the identity on printed
    // text); a repeated one gets the first free `.N` suffix.
    let mut used: HashSet<String> = HashSet::new();
    let mut next: HashMap<String, u32> = HashMap::new();
    (0..f.nvars as usize)
        .map(|v| {
            let base = f.var_names.get(v).map(|s| s.as_str()).unwrap_or("");
            let base: String = base
                .chars()
                .map(|c| if c.is_alphanumeric() || matches!(c, '_' | '$' | '.') { c } else { '_' })
                .collect();
            let base = if base.is_empty() { "v".to_string() } else { base };
            let mut name = base.clone();
            while used.contains(&name) {
                let n = next.entry(base.clone()).or_insert(1);
                name = format!("{base}.{n}");
                *n += 1;
            }
            used.insert(name.clone());
            name
        })
        .collect()
}

/// Print with a custom primitive formatter (hosts whose primitives cannot be parsed back).
pub fn print_with<P>(p: &Program<P>, fmt: &dyn Fn(&P) -> String) -> String {
    let mut out = String::new();
    let mut order: Vec<usize> = vec![p.entry as usize];
    order.extend((0..p.funcs.len()).filter(|i| *i != p.entry as usize));
    let fname = |id: FuncId| format!("{}/{}", p.funcs[id as usize].name, id);
    for i in order {
        let f = &p.funcs[i];
        let n = unique_names(f);
        let v = |x: &Var| n[*x as usize].clone();
        let list = |xs: &[Var]| xs.iter().map(v).collect::<Vec<_>>().join(", ");
        let caps: Vec<Var> = (0..f.ncaptures).collect();
        let params: Vec<Var> = (f.ncaptures..f.ncaptures + f.nparams).collect();
        let capstr = if caps.is_empty() { String::new() } else { format!("[{}]", list(&caps)) };
        out.push_str(&format!("fun {}{}({}):\n", fname(i as FuncId), capstr, list(&params)));
        for s in &f.body {
            let rhs = match &s.op {
                Op::Alias(y) => v(y),
                Op::Fun { func, captures } => {
                    if captures.is_empty() {
                        format!("fun {}", fname(*func))
                    } else {
                        format!("fun {}[{}]", fname(*func), list(captures))
                    }
                }
                Op::Call { func, args } => format!("{}({})", v(func), list(args)),
                Op::Tuple(xs) => format!("({})", list(xs)),
                Op::Proj { index, tuple } => format!("prj {} {}", index, v(tuple)),
                Op::Prim(c) => format!("prim {}", fmt(c)),
                Op::Ite { cond, then_f, else_f, args } => {
                    format!("ite({}, {}, {}; {})", v(cond), v(then_f), v(else_f), list(args))
                }
                Op::Fold { seq, body, acc } => format!("fold({}, {}, {})", v(seq), v(body), v(acc)),
                Op::XCall { seq, func, args, kwnames, catch, handling } => {
                    let npos = args.len() - kwnames.len();
                    let mut a = list(&args[..npos]);
                    if !kwnames.is_empty() {
                        let kws: Vec<String> =
                            kwnames.iter().zip(&args[npos..]).map(|(k, x)| format!("{k}={}", v(x))).collect();
                        a = format!("{a}; {}", kws.join(", "));
                    }
                    let h = handling.map(|h| format!(" handling {}", v(&h))).unwrap_or_default();
                    format!("xcall{} {} {}({}){h}", if *catch { "?" } else { "" }, v(seq), v(func), a)
                }
                Op::MemEmpty => "mem".to_string(),
                Op::MemLoad { mem, name, free } => format!("load{} {} {}", if *free { "free" } else { "" }, v(mem), name),
                Op::MemStore { mem, name, value } => format!("store {} {} {}", v(mem), name, v(value)),
            };
            let line = if s.line != 0 { format!("  @{}", s.line) } else { String::new() };
            out.push_str(&format!("  {} := {}{}\n", v(&s.dst), rhs, line));
        }
        // A result nothing binds (no parameter, capture or statement): it never becomes known.
        let bound = f.ret < f.ncaptures + f.nparams || f.body.iter().any(|s| s.dst == f.ret);
        out.push_str(&format!("  ret{} {}\n", if bound { "" } else { "!" }, v(&f.ret)));
    }
    out
}

pub fn print<P: PrimText>(p: &Program<P>) -> String {
    print_with(p, &|c: &P| c.fmt_prim())
}

// ---- parsing ---------------------------------------------------------------------------------

struct FnScope {
    vars: HashMap<String, Var>,
    names: Vec<String>,
}

impl FnScope {
    fn define(&mut self, name: &str) -> Result<Var, String> {
        if self.vars.contains_key(name) {
            return Err(format!("variable {name} bound twice"));
        }
        let v = self.names.len() as Var;
        self.names.push(name.to_string());
        self.vars.insert(name.to_string(), v);
        Ok(v)
    }
    fn get(&self, name: &str) -> Result<Var, String> {
        self.vars.get(name.trim()).copied().ok_or_else(|| format!("unbound variable {name:?}"))
    }
    fn list(&self, s: &str) -> Result<Vec<Var>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(vec![]);
        }
        s.split(',').map(|x| self.get(x)).collect()
    }
}

fn split_list(s: &str) -> Vec<&str> {
    s.split(',').map(|x| x.trim()).filter(|x| !x.is_empty()).collect()
}

fn split_once<'a>(s: &'a str, pat: &str) -> Result<(&'a str, &'a str), String> {
    s.split_once(pat).ok_or_else(|| format!("expected {pat:?} in {s:?}"))
}

/// "name/ID[...]" or "name/ID" → (ID, rest inside brackets)
fn parse_fn_ref(s: &str) -> Result<(FuncId, Option<&str>), String> {
    let (head, caps) = match s.find('[') {
        Some(i) => (&s[..i], Some(s[i + 1..].strip_suffix(']').ok_or("missing ]")?)),
        None => (s, None),
    };
    let (_, id) = split_once(head.trim(), "/")?;
    Ok((id.trim().parse().map_err(|_| format!("bad function id in {s:?}"))?, caps))
}

pub fn parse<P: PrimText>(src: &str) -> Result<Program<P>, String> {
    // Pass 1: function headers, so bodies can refer to any function by id.
    struct Raw<'a> {
        id: FuncId,
        name: String,
        caps: Vec<&'a str>,
        params: Vec<&'a str>,
        lines: Vec<&'a str>,
    }
    let mut raws: Vec<Raw> = Vec::new();
    for line in src.lines() {
        let t = line.split('#').next().unwrap_or("").trim_end();
        if t.trim().is_empty() {
            continue;
        }
        if let Some(h) = t.strip_prefix("fun ") {
            let h = h.strip_suffix(':').ok_or("function header must end with ':'")?;
            let (sig, params) = split_once(h, "(")?;
            let params = params.strip_suffix(')').ok_or("missing ) in header")?;
            let (id, caps) = parse_fn_ref(sig)?;
            let (name, _) = split_once(sig, "/")?;
            raws.push(Raw {
                id,
                name: name.to_string(),
                caps: split_list(caps.unwrap_or("")),
                params: split_list(params),
                lines: vec![],
            });
        } else {
            raws.last_mut().ok_or("statement outside a function")?.lines.push(t.trim());
        }
    }
    let entry = raws.first().ok_or("empty program")?.id;
    let n = raws.len();
    let mut funcs: Vec<Option<Func<P>>> = (0..n).map(|_| None).collect();
    for raw in raws {
        if raw.id as usize >= n || funcs[raw.id as usize].is_some() {
            return Err(format!("bad or duplicate function id {}", raw.id));
        }
        let mut sc = FnScope { vars: HashMap::new(), names: vec![] };
        for c in &raw.caps {
            sc.define(c)?;
        }
        for p in &raw.params {
            sc.define(p)?;
        }
        let mut body = Vec::new();
        let mut ret = None;
        for l in &raw.lines {
            let (l, line) = match l.rsplit_once("  @") {
                Some((a, b)) if b.trim().parse::<u32>().is_ok() => (a.trim(), b.trim().parse().unwrap()),
                _ => (*l, 0),
            };
            if let Some(r) = l.strip_prefix("ret ") {
                ret = Some(sc.get(r)?);
                continue;
            }
            if let Some(r) = l.strip_prefix("ret! ") {
                ret = Some(sc.define(r.trim())?);
                continue;
            }
            let (lhs, rhs) = split_once(l, ":=")?;
            let rhs = rhs.trim();
            // A closure may capture its own variable (recursion), so it is bound first.
            let (op, dst) = if rhs.starts_with("fun ") {
                let dst = sc.define(lhs.trim())?;
                (parse_op::<P>(&sc, rhs)?, dst)
            } else {
                let op = parse_op::<P>(&sc, rhs)?;
                (op, sc.define(lhs.trim())?)
            };
            body.push(Stmt { dst, op, line });
        }
        let ret = ret.ok_or_else(|| format!("function {} has no ret", raw.name))?;
        funcs[raw.id as usize] = Some(Func {
            name: raw.name,
            ncaptures: raw.caps.len() as u32,
            nparams: raw.params.len() as u32,
            nvars: sc.names.len() as u32,
            var_names: sc.names,
            body,
            ret,
        });
    }
    let funcs = funcs.into_iter().map(|f| f.ok_or("missing function id")).collect::<Result<Vec<_>, _>>()?;
    Ok(Program { name: funcs[entry as usize].name.clone(), funcs, entry })
}

fn parse_op<P: PrimText>(sc: &FnScope, rhs: &str) -> Result<Op<P>, String> {
    if let Some(p) = rhs.strip_prefix("prim ") {
        return Ok(Op::Prim(P::parse_prim(p.trim())?));
    }
    if rhs == "mem" {
        return Ok(Op::MemEmpty);
    }
    if let Some(r) = rhs.strip_prefix("fun ") {
        let (func, caps) = parse_fn_ref(r.trim())?;
        return Ok(Op::Fun { func, captures: sc.list(caps.unwrap_or(""))? });
    }
    if let Some(r) = rhs.strip_prefix("prj ") {
        let (i, t) = split_once(r.trim(), " ")?;
        return Ok(Op::Proj { index: i.parse().map_err(|_| "bad projection index")?, tuple: sc.get(t)? });
    }
    for (prefix, free) in [("load ", false), ("loadfree ", true)] {
        if let Some(r) = rhs.strip_prefix(prefix) {
            let (m, name) = split_once(r.trim(), " ")?;
            return Ok(Op::MemLoad { mem: sc.get(m)?, name: name.trim().to_string(), free });
        }
    }
    if let Some(r) = rhs.strip_prefix("store ") {
        let parts: Vec<&str> = r.split_whitespace().collect();
        if parts.len() != 3 {
            return Err(format!("store takes M name value: {rhs:?}"));
        }
        return Ok(Op::MemStore { mem: sc.get(parts[0])?, name: parts[1].to_string(), value: sc.get(parts[2])? });
    }
    if let Some(r) = rhs.strip_prefix("ite(") {
        let r = r.strip_suffix(')').ok_or("missing ) after ite")?;
        let (head, args) = split_once(r, ";")?;
        let h = sc.list(head)?;
        if h.len() != 3 {
            return Err("ite(cond, then, else; args)".into());
        }
        return Ok(Op::Ite { cond: h[0], then_f: h[1], else_f: h[2], args: sc.list(args)? });
    }
    if let Some(r) = rhs.strip_prefix("fold(") {
        let v = sc.list(r.strip_suffix(')').ok_or("missing ) after fold")?)?;
        if v.len() != 3 {
            return Err("fold(seq, body, acc)".into());
        }
        return Ok(Op::Fold { seq: v[0], body: v[1], acc: v[2] });
    }
    let xcall = rhs.strip_prefix("xcall ").map(|r| (r, false)).or_else(|| rhs.strip_prefix("xcall? ").map(|r| (r, true)));
    if let Some((r, catch)) = xcall {
        let (r, handling) = match r.trim().rsplit_once(") handling ") {
            Some((call, h)) => (format!("{call})"), Some(sc.get(h.trim())?)),
            None => (r.trim().to_string(), None),
        };
        let (seq, call) = split_once(&r, " ")?;
        let (f, args) = split_once(call, "(")?;
        let args = args.strip_suffix(')').ok_or("missing ) after xcall")?;
        let (pos, kw) = args.split_once(';').unwrap_or((args, ""));
        let mut argv = sc.list(pos)?;
        let mut kwnames = Vec::new();
        for kv in kw.split(',').map(|s| s.trim()).filter(|s| !s.is_empty()) {
            let (k, v) = split_once(kv, "=")?;
            kwnames.push(k.trim().to_string());
            argv.push(sc.get(v)?);
        }
        return Ok(Op::XCall { seq: sc.get(seq)?, func: sc.get(f)?, args: argv, kwnames, catch, handling });
    }
    if let Some(r) = rhs.strip_prefix('(') {
        return Ok(Op::Tuple(sc.list(r.strip_suffix(')').ok_or("missing ) in tuple")?)?));
    }
    if let Some((f, args)) = rhs.split_once('(') {
        return Ok(Op::Call { func: sc.get(f)?, args: sc.list(args.strip_suffix(')').ok_or("missing ) in call")?)? });
    }
    Ok(Op::Alias(sc.get(rhs)?))
}
