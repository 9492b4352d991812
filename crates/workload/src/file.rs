//! Workload files (docs/workload-format.md, format 1): a TOML description of
//! a [`Workload`] with `repeat` templates, and the exporter that writes any
//! workload (e.g. a built-in) as such a file.
//!
//! Parsing is strict: unknown keys, wrong types, negative or out-of-range
//! numbers and references to things that do not exist are errors that name
//! the file, the line and the field.

use crate::{ChannelKind, ChannelSpec, EpollReg, MetricSpec, Op, SemSpec, TaskSpec, Workload, WorkloadError};
use serde::Deserialize;
use toml::Spanned;

/// The format version this code reads and writes.
pub const FORMAT: u32 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    format: u32,
    name: String,
    #[serde(default)]
    time_bounded: bool,
    #[serde(default)]
    jitter_pct: u32,
    #[serde(default)]
    params: Vec<(String, String)>,
    metric: Spanned<MetricDoc>,
    #[serde(default)]
    channel: Vec<Spanned<ChannelDoc>>,
    #[serde(default)]
    sem: Vec<Spanned<SemDoc>>,
    #[serde(default)]
    program: Vec<Spanned<ProgramDoc>>,
    #[serde(default)]
    task: Vec<Spanned<TaskDoc>>,
    #[serde(default)]
    group: Vec<Spanned<GroupDoc>>,
    #[serde(default)]
    memory: Vec<Spanned<MemoryDoc>>,
    arrivals: Option<Spanned<ArrivalsDoc>>,
}

/// A process's memory (NUMA model and NUMA balancing): `MemSpec`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryDoc {
    mm: u32,
    #[serde(default)]
    shared_mib: u64,
    #[serde(default)]
    private_mib: u64,
    private_pct: u32,
    stall_pct: u32,
    touch_mib_per_s: u64,
    initial_node: Option<u32>,
}

/// Open-loop requests from remote clients: `Arrivals`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrivalsDoc {
    rate: f64,
    /// [channel, tag, receive-queue CPU] per connection.
    conns: Vec<(u32, u32, u16)>,
    rx_ns: u64,
    hist: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupDoc {
    name: String,
    /// 0 = the root group, k = the k-th [[group]] (1-based, an earlier one).
    #[serde(default)]
    parent: u32,
    /// cgroup v2 cpu.weight (1..10000).
    weight: Option<u64>,
    /// cgroup v1 cpu.shares (2..262144).
    shares: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricDoc {
    kind: String,
    name: String,
    unit: Option<String>,
    counter: Option<u32>,
    divisor: Option<u64>,
    start: Option<u32>,
    end: Option<u32>,
    hist: Option<u32>,
    q: Option<f64>,
    amount: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelDoc {
    #[serde(default = "one")]
    repeat: u32,
    capacity: u32,
    sync: bool,
    kind: String,
    msgs_per_page: Option<u32>,
    /// Registered in this epoll instance (`epoll_next set=`).
    epoll: Option<u32>,
    /// Its events' register value; default the channel's own index.
    data: Option<Num>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SemDoc {
    #[serde(default = "one")]
    repeat: u32,
    initial: u32,
    sync: bool,
    #[serde(default)]
    barging: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramDoc {
    #[serde(default = "one")]
    repeat: u32,
    ops: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskDoc {
    #[serde(default = "one")]
    repeat: u32,
    name: String,
    program: Num,
    mm: Num,
    #[serde(default)]
    nice: i8,
    cpus: Option<Vec<u16>>,
    #[serde(default = "yes")]
    start: bool,
    group: Option<Num>,
    footprint_kib: Option<u32>,
    shared: Option<String>,
    shared_kib: Option<u32>,
    timer_slack_ns: Option<u64>,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// An integer or an expression in `i` (a string).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Num {
    Int(i64),
    Expr(String),
}

/// Largest repeat count and total number of expanded items.
const MAX_ITEMS: u64 = 1_000_000;
/// Most ops in all programs together, after every repeat.
const MAX_OPS: u64 = 4_000_000;
/// Largest declared working set (4 GiB).
const MAX_FOOTPRINT_KIB: u32 = 1 << 22;

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, span: std::ops::Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }
    fn err(&self, span: std::ops::Range<usize>, field: &str, msg: impl std::fmt::Display) -> WorkloadError {
        WorkloadError(format!("{}:{}: {field}: {msg}", self.file, self.line(span)))
    }
}

/// Parse a workload file's text; `file` names it in errors.
pub fn from_toml_str(text: &str, file: &str) -> Result<Workload, WorkloadError> {
    let doc: Doc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| Ctx { file, text }.line(s)).unwrap_or(0);
        WorkloadError(format!("{file}:{line}: {}", e.message()))
    })?;
    let cx = Ctx { file, text };
    if doc.format != FORMAT {
        return Err(WorkloadError(format!("{file}: format = {} is not supported; this schedlab reads format = {FORMAT}", doc.format)));
    }
    let mut total = 0u64;
    let mut count = |n: u32, span: std::ops::Range<usize>| -> Result<(), WorkloadError> {
        total += n as u64;
        if n == 0 || total > MAX_ITEMS {
            return Err(cx.err(span, "repeat", format!("must be between 1 and {MAX_ITEMS} in all")));
        }
        Ok(())
    };
    let mut channels = Vec::new();
    for c in &doc.channel {
        count(c.get_ref().repeat, c.span())?;
        let d = c.get_ref();
        let kind = match (d.kind.as_str(), d.msgs_per_page) {
            ("socket", None) => ChannelKind::Socket,
            ("pipe", Some(m)) if m > 0 => ChannelKind::Pipe { msgs_per_page: m },
            ("pipe", _) => return Err(cx.err(c.span(), "msgs_per_page", "a pipe needs msgs_per_page >= 1")),
            ("socket", Some(_)) => return Err(cx.err(c.span(), "msgs_per_page", "only pipes have msgs_per_page")),
            (k, _) => return Err(cx.err(c.span(), "kind", format!("{k:?}: expected \"socket\" or \"pipe\""))),
        };
        if d.capacity == 0 {
            return Err(cx.err(c.span(), "capacity", "must be at least 1"));
        }
        if d.data.is_some() && d.epoll.is_none() {
            return Err(cx.err(c.span(), "data", "data is the register value of an epoll event: give epoll = SET too"));
        }
        for i in 0..d.repeat {
            let epoll = match d.epoll {
                None => None,
                Some(set) => {
                    let data = match &d.data {
                        None => channels.len() as u64,
                        Some(n) => num(n, &Vars { i: i as i128, j: 0 }, u32::MAX as i128).map_err(|m| cx.err(c.span(), "data", m))?,
                    };
                    Some(EpollReg { set, data: data as u32 })
                }
            };
            channels.push(ChannelSpec { capacity: d.capacity, sync: d.sync, kind, epoll });
        }
    }
    let mut sems = Vec::new();
    for s in &doc.sem {
        count(s.get_ref().repeat, s.span())?;
        for _ in 0..s.get_ref().repeat {
            sems.push(SemSpec { initial: s.get_ref().initial, sync: s.get_ref().sync, barging: s.get_ref().barging });
        }
    }
    let mut groups = Vec::new();
    for (k, g) in doc.group.iter().enumerate() {
        let d = g.get_ref();
        if d.parent as usize > k {
            return Err(cx.err(g.span(), "parent", "must be 0 (the root group) or an earlier [[group]] (1-based)"));
        }
        let shares = match (d.weight, d.shares) {
            (Some(_), Some(_)) => return Err(cx.err(g.span(), "weight", "give either weight (cgroup v2) or shares (cgroup v1), not both")),
            (Some(w), None) => crate::shares_from_cpu_weight(w).map_err(|e| cx.err(g.span(), "weight", e))?,
            (None, Some(s)) => crate::shares_from_cpu_shares(s).map_err(|e| cx.err(g.span(), "shares", e))?,
            (None, None) => 1024,
        };
        groups.push(crate::GroupSpec { name: d.name.clone(), parent: d.parent, shares });
    }
    // Tasks before programs so that fork targets can be checked.
    let mut tasks = Vec::new();
    let mut task_spans = Vec::new();
    let mut shared_sizes: Vec<(String, u32)> = Vec::new();
    for t in &doc.task {
        let d = t.get_ref();
        count(d.repeat, t.span())?;
        if let Some(c) = &d.cpus {
            if c.is_empty() {
                return Err(cx.err(t.span(), "cpus", "an empty CPU list; leave cpus out for all CPUs"));
            }
        }
        if let Some(f) = d.footprint_kib {
            if !(1..=MAX_FOOTPRINT_KIB).contains(&f) {
                return Err(cx.err(
                    t.span(),
                    "footprint_kib",
                    format!("{f} is out of range 1..{MAX_FOOTPRINT_KIB} (KiB); leave it out for the machine model's default of 64"),
                ));
            }
        }
        let shared = match (&d.shared, d.shared_kib) {
            (None, None) => None,
            (Some(n), Some(k)) => {
                if n.trim().is_empty() {
                    return Err(cx.err(t.span(), "shared", "an empty name; name the set (e.g. \"postgres-text\")"));
                }
                if !(1..=MAX_FOOTPRINT_KIB).contains(&k) {
                    return Err(cx.err(t.span(), "shared_kib", format!("{k} is out of range 1..{MAX_FOOTPRINT_KIB} (KiB)")));
                }
                if let Some(o) = shared_sizes.iter().find(|(o, _)| o == n) {
                    if o.1 != k {
                        return Err(cx.err(
                            t.span(),
                            "shared_kib",
                            format!("{k} for set {n:?}, which an earlier task gives {} KiB; one set has one size", o.1),
                        ));
                    }
                } else {
                    shared_sizes.push((n.clone(), k));
                }
                Some(crate::SharedSet { name: n.clone(), kib: k })
            }
            (Some(_), None) => return Err(cx.err(t.span(), "shared", "needs shared_kib (the set's size in KiB)")),
            (None, Some(_)) => return Err(cx.err(t.span(), "shared_kib", "needs shared = \"NAME\" (the set it sizes)")),
        };
        let timer_slack_ns = d.timer_slack_ns.unwrap_or(crate::DEFAULT_TIMER_SLACK_NS);
        if timer_slack_ns > MAX_TIME_NS {
            return Err(cx.err(
                t.span(),
                "timer_slack_ns",
                format!("{timer_slack_ns} is more than 1 simulated hour; leave it out for the kernel's default of 50000 (50 us)"),
            ));
        }
        for i in 0..d.repeat as i128 {
            let vars = Vars { i, j: 0 };
            let name = template(&d.name, &vars).map_err(|e| cx.err(t.span(), "name", e))?;
            let program = num(&d.program, &vars, u32::MAX as i128).map_err(|e| cx.err(t.span(), "program", e))? as u32;
            let mm = num(&d.mm, &vars, u32::MAX as i128).map_err(|e| cx.err(t.span(), "mm", e))? as u32;
            let group = match &d.group {
                Some(g) => num(g, &vars, doc.group.len() as i128).map_err(|e| cx.err(t.span(), "group", e))? as u32,
                None => 0,
            };
            tasks.push(TaskSpec {
                name,
                program,
                mm,
                nice: d.nice,
                cpus: d.cpus.clone(),
                start: d.start,
                group,
                footprint_kib: d.footprint_kib,
                shared: shared.clone(),
                timer_slack_ns,
            });
            task_spans.push(t.span());
        }
    }
    if !(-20..=19).contains(&doc.task.iter().map(|t| t.get_ref().nice).min().unwrap_or(0))
        || !(-20..=19).contains(&doc.task.iter().map(|t| t.get_ref().nice).max().unwrap_or(0))
    {
        let t = doc.task.iter().find(|t| !(-20..=19).contains(&t.get_ref().nice)).unwrap();
        return Err(cx.err(t.span(), "nice", "must be between -20 and 19"));
    }
    let mut programs = Vec::new();
    let mut prog_lines = Vec::new();
    let mut total_ops = 0u64;
    for p in &doc.program {
        let d = p.get_ref();
        count(d.repeat, p.span())?;
        for i in 0..d.repeat as i128 {
            let mut ops = Vec::new();
            for o in &d.ops {
                let parsed = parse_op(o.get_ref(), i, &mut ops);
                parsed.map_err(|e| cx.err(o.span(), "ops", format!("{:?}: {e}", o.get_ref())))?;
                if ops.len() as u64 + total_ops > MAX_OPS {
                    return Err(cx.err(o.span(), "ops", format!("more than {MAX_OPS} ops in all after repeat")));
                }
            }
            for (k, op) in ops.iter().enumerate() {
                check_op_ranges(op, channels.len(), sems.len(), tasks.len()).map_err(|e| {
                    let line_of = d.ops.get(k.min(d.ops.len().saturating_sub(1))).map(|o| o.span()).unwrap_or(p.span());
                    cx.err(line_of, "ops", e)
                })?;
            }
            total_ops += ops.len() as u64;
            programs.push(ops);
            prog_lines.push(cx.line(p.span()));
        }
    }
    for (ts, span) in tasks.iter().zip(&task_spans) {
        if ts.program as usize >= programs.len() {
            return Err(cx.err(
                span.clone(),
                "program",
                format!("task {}: program {} does not exist ({} programs)", ts.name, ts.program, programs.len()),
            ));
        }
    }
    let m = doc.metric.get_ref();
    let ms = doc.metric.span();
    let need = |v: Option<u32>, f: &str| v.ok_or_else(|| cx.err(ms.clone(), f, format!("metric kind {:?} needs {f}", m.kind)));
    let metric = match m.kind.as_str() {
        "elapsed" => MetricSpec::Elapsed { name: m.name.clone(), start: need(m.start, "start")?, end: need(m.end, "end")? },
        "rate" => MetricSpec::Rate {
            name: m.name.clone(),
            unit: m.unit.clone().unwrap_or_else(|| "/s".into()),
            counter: need(m.counter, "counter")?,
            start: m.start,
            end: m.end,
        },
        "scaled_rate" => MetricSpec::ScaledRate {
            name: m.name.clone(),
            unit: m.unit.clone().unwrap_or_else(|| "/s".into()),
            counter: need(m.counter, "counter")?,
            divisor: m.divisor.ok_or_else(|| cx.err(ms.clone(), "divisor", "metric kind \"scaled_rate\" needs divisor"))?,
            start: m.start,
            end: m.end,
        },
        "latency" => MetricSpec::LatencyPercentile {
            name: m.name.clone(),
            hist: need(m.hist, "hist")?,
            q: m.q.ok_or_else(|| cx.err(ms.clone(), "q", "metric kind \"latency\" needs q (e.g. 0.99)"))?,
        },
        "latency_mean" => MetricSpec::LatencyMean { name: m.name.clone(), hist: need(m.hist, "hist")? },
        "best_rate" => MetricSpec::BestRate {
            name: m.name.clone(),
            unit: m.unit.clone().unwrap_or_else(|| "/s".into()),
            hist: need(m.hist, "hist")?,
            amount: m.amount.ok_or_else(|| cx.err(ms.clone(), "amount", "metric kind \"best_rate\" needs amount (per interval)"))?,
            divisor: m.divisor.unwrap_or(1),
        },
        k => return Err(cx.err(ms, "kind", format!("{k:?}: expected elapsed, rate, scaled_rate, latency, latency_mean or best_rate"))),
    };
    let memory = doc
        .memory
        .iter()
        .map(|m| {
            let d = m.get_ref();
            crate::MemSpec {
                mm: d.mm,
                shared_mib: d.shared_mib,
                private_mib: d.private_mib,
                private_pct: d.private_pct,
                stall_pct: d.stall_pct,
                touch_mib_per_s: d.touch_mib_per_s,
                initial_node: d.initial_node,
            }
        })
        .collect();
    let arrivals = doc.arrivals.as_ref().map(|a| {
        let d = a.get_ref();
        crate::Arrivals { rate_per_s: d.rate, conns: d.conns.clone(), rx_ns: d.rx_ns, hist: d.hist }
    });
    if let Some(a) = &doc.arrivals {
        if a.get_ref().rx_ns > MAX_TIME_NS {
            return Err(cx.err(a.span(), "rx_ns", format!("at most {MAX_TIME_NS} ns")));
        }
    }
    let w = Workload {
        memory,
        arrivals,
        name: doc.name,
        params: doc.params,
        programs,
        tasks,
        channels,
        sems,
        metric,
        time_bounded: doc.time_bounded,
        groups,
        jitter_pct: doc.jitter_pct,
    };
    if w.jitter_pct > 100 {
        return Err(WorkloadError(format!("{file}: jitter_pct = {} must be at most 100", w.jitter_pct)));
    }
    w.validate().map_err(|e| {
        // Point at the program's line when the message names one.
        let line =
            e.0.split("program ")
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| prog_lines.get(n).copied());
        let line = line.or_else(|| {
            let k = e.0.split("memory ").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse::<usize>().ok()?;
            Some(cx.line(doc.memory.get(k)?.span()))
        });
        let line = line.or_else(|| e.0.contains("arrivals:").then(|| doc.arrivals.as_ref().map(|a| cx.line(a.span()))).flatten());
        match line {
            Some(l) => WorkloadError(format!("{file}:{l}: {}", e.0)),
            None => WorkloadError(format!("{file}: {}", e.0)),
        }
    })?;
    Ok(w)
}

fn check_op_ranges(op: &Op, nc: usize, ns: usize, nt: usize) -> Result<(), String> {
    let chan = |c: u32| if (c as usize) < nc { Ok(()) } else { Err(format!("channel {c} does not exist ({nc} channels)")) };
    let sem = |s: u32| if (s as usize) < ns { Ok(()) } else { Err(format!("semaphore {s} does not exist ({ns} semaphores)")) };
    match *op {
        Op::Write { chan: c, .. } | Op::Read { chan: c, .. } | Op::WriteTag { chan: c, .. } | Op::ReadTag { chan: c, .. } => chan(c),
        Op::ReadAll { chan: c, .. } => chan(c),
        Op::WriteReg { chan_base: c, .. } | Op::Poll { chan: c } => chan(c),
        Op::WakeQueued { chan: c, .. } | Op::ReadReg { chan_base: c, .. } => chan(c),
        Op::SemWait { sem: s } | Op::SemPost { sem: s, .. } | Op::WakeLatency { sem: s, .. } | Op::SemWake { sem: s, .. } => sem(s),
        Op::Fork { spec, .. } if spec as usize >= nt => Err(format!("task {spec} does not exist ({nt} tasks)")),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------- expressions

struct Vars {
    i: i128,
    j: i128,
}

fn num(n: &Num, v: &Vars, max: i128) -> Result<u64, String> {
    let x = match n {
        Num::Int(x) => *x as i128,
        Num::Expr(s) => eval(s, v)?,
    };
    if x < 0 || x > max {
        return Err(format!("{x} is out of range (0..={max})"));
    }
    Ok(x as u64)
}

/// Substitute `{expr}` in a name.
fn template(s: &str, v: &Vars) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(a) = rest.find('{') {
        out.push_str(&rest[..a]);
        let b = rest[a..].find('}').ok_or("a '{' without '}'")? + a;
        out.push_str(&eval(&rest[a + 1..b], v)?.to_string());
        rest = &rest[b + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Evaluate an integer expression: literals (with `_`, and an optional time
/// unit ns/us/ms/s giving nanoseconds), `i`, `j`, `inf` (2^64-1), `all`
/// (2^32-1), + - * / % and parentheses.
fn eval(s: &str, v: &Vars) -> Result<i128, String> {
    let toks = lex(s)?;
    let mut p = 0;
    let x = expr(&toks, &mut p, v, 0)?;
    if p != toks.len() {
        return Err(format!("unexpected {:?} in expression {s:?}", toks[p]));
    }
    Ok(x)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i128),
    Var(char),
    Op(char),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k] as char;
        if c.is_ascii_whitespace() {
            k += 1;
        } else if c.is_ascii_digit() {
            let st = k;
            while k < b.len() && (b[k].is_ascii_digit() || b[k] == b'_') {
                k += 1;
            }
            let digits: String = s[st..k].chars().filter(|&c| c != '_').collect();
            let mut n: i128 = digits.parse().map_err(|_| format!("number {:?} is too large", &s[st..k]))?;
            let us = k;
            while k < b.len() && b[k].is_ascii_alphabetic() {
                k += 1;
            }
            let mult = match &s[us..k] {
                "" | "ns" => 1,
                "us" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                u => return Err(format!("unknown unit {u:?} (ns, us, ms, s)")),
            };
            n = n.checked_mul(mult).filter(|&n| n <= u64::MAX as i128).ok_or("number too large")?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() {
            let st = k;
            while k < b.len() && b[k].is_ascii_alphanumeric() {
                k += 1;
            }
            match &s[st..k] {
                "i" => out.push(Tok::Var('i')),
                "j" => out.push(Tok::Var('j')),
                "inf" => out.push(Tok::Num(u64::MAX as i128)),
                "all" => out.push(Tok::Num(u32::MAX as i128)),
                w => return Err(format!("unknown name {w:?} in expression (i, j, inf, all)")),
            }
        } else if "+-*/%()".contains(c) {
            out.push(Tok::Op(c));
            k += 1;
        } else {
            return Err(format!("unexpected character {c:?} in expression"));
        }
    }
    Ok(out)
}

fn expr(t: &[Tok], p: &mut usize, v: &Vars, depth: u32) -> Result<i128, String> {
    if depth > 32 {
        return Err("expression nested too deeply".into());
    }
    let mut x = term(t, p, v, depth)?;
    while let Some(Tok::Op(c @ ('+' | '-'))) = t.get(*p) {
        *p += 1;
        let y = term(t, p, v, depth)?;
        x = if *c == '+' { x.checked_add(y) } else { x.checked_sub(y) }.ok_or("overflow")?;
    }
    Ok(x)
}

fn term(t: &[Tok], p: &mut usize, v: &Vars, depth: u32) -> Result<i128, String> {
    let mut x = atom(t, p, v, depth)?;
    while let Some(Tok::Op(c @ ('*' | '/' | '%'))) = t.get(*p) {
        *p += 1;
        let y = atom(t, p, v, depth)?;
        x = match c {
            '*' => x.checked_mul(y).filter(|z| z.abs() < 1 << 100).ok_or("overflow")?,
            _ if y == 0 => return Err("division by zero".into()),
            '/' => x / y,
            _ => x % y,
        };
    }
    Ok(x)
}

fn atom(t: &[Tok], p: &mut usize, v: &Vars, depth: u32) -> Result<i128, String> {
    let tok = t.get(*p).ok_or("expression ends too early")?.clone();
    *p += 1;
    match tok {
        Tok::Num(n) => Ok(n),
        Tok::Var('i') => Ok(v.i),
        Tok::Var(_) => Ok(v.j),
        Tok::Op('-') => Ok(-atom(t, p, v, depth + 1)?),
        Tok::Op('(') => {
            let x = expr(t, p, v, depth + 1)?;
            if t.get(*p) != Some(&Tok::Op(')')) {
                return Err("missing ')'".into());
            }
            *p += 1;
            Ok(x)
        }
        Tok::Op(c) => Err(format!("unexpected {c:?}")),
    }
}

// ---------------------------------------------------------------- ops

/// The op names and their fields, in the order the exporter writes them.
const OPS: &[(&str, &[&str])] = &[
    ("run", &["ns"]),
    ("run_dist", &["lo", "mid", "hi"]),
    ("mem", &["bytes"]),
    ("write", &["chan", "cost"]),
    ("read", &["chan", "cost"]),
    ("write_tag", &["chan", "cost", "tag"]),
    ("read_tag", &["chan", "cost"]),
    ("write_reg", &["chan_base", "cost"]),
    ("sleep", &["ns"]),
    ("timer", &["period", "absolute"]),
    ("cpu_lock", &["set"]),
    ("cpu_unlock", &["set"]),
    ("sem_wait", &["sem"]),
    ("sem_post", &["sem", "n"]),
    ("fork", &["spec", "cost"]),
    ("wait_child", &[]),
    ("loop", &["count"]),
    ("end_loop", &[]),
    ("mark", &["id"]),
    ("mark_nth", &["id", "nth"]),
    ("count", &["id", "n"]),
    ("spin_barrier", &["id", "parties", "spin"]),
    ("exit", &["cost"]),
    ("barrier", &["id", "parties"]),
    ("poll", &["chan"]),
    ("epoll_next", &["set", "max", "block_cost", "block_pre"]),
    ("select_next", &["set", "cost"]),
    ("read_reg", &["chan_base", "cost"]),
    ("read_all", &["chan", "cost", "per_msg"]),
    ("wake_queued", &["chan", "sem_base", "cost"]),
    ("wake_latency", &["hist", "sem"]),
    ("sem_wake", &["sem", "n"]),
    ("req_start", &["hist"]),
    ("req_end", &["hist"]),
];

/// Parse one op string (`"write chan=3+i cost=2us repeat=20"`) for program
/// instance `i`, appending the expanded ops.
fn parse_op(s: &str, i: i128, out: &mut Vec<Op>) -> Result<(), String> {
    let mut words = s.split_whitespace();
    let name = words.next().ok_or("an empty op")?;
    let (_, fields) = OPS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| format!("unknown op {name:?}; ops: {}", OPS.iter().map(|o| o.0).collect::<Vec<_>>().join(", ")))?;
    let mut kv: Vec<(&str, &str)> = Vec::new();
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("{w:?}: expected field=value (no spaces inside a value)"))?;
        if k != "repeat" && !fields.contains(&k) {
            return Err(format!("op {name} has no field {k:?}; it takes {}", fields.join(", ")));
        }
        if kv.iter().any(|(x, _)| *x == k) {
            return Err(format!("field {k:?} given twice"));
        }
        kv.push((k, v));
    }
    let get = |k: &str, v: &Vars, max: u128| -> Result<u64, String> {
        let e = kv.iter().find(|(x, _)| *x == k).ok_or_else(|| format!("op {name} needs {k}="))?.1;
        let x = eval(e, v).map_err(|m| format!("{k}: {m}"))?;
        if x < 0 || x as u128 > max {
            return Err(format!("{k} = {x} is out of range (0..={max})"));
        }
        Ok(x as u64)
    };
    let repeat = match kv.iter().find(|(k, _)| *k == "repeat") {
        Some(_) => get("repeat", &Vars { i, j: 0 }, MAX_ITEMS as u128)?,
        None => 1,
    };
    if repeat == 0 {
        return Err("repeat must be at least 1".into());
    }
    const U32: u128 = u32::MAX as u128;
    const U64: u128 = u64::MAX as u128;
    for j in 0..repeat as i128 {
        let v = Vars { i, j };
        let f32 = |k: &str| get(k, &v, U32).map(|x| x as u32);
        let f64_ = |k: &str| get(k, &v, U64);
        // Times (run, sleep, syscall costs) are finite and at most one
        // simulated hour: `inf` is a loop count, not a time.
        let time = |k: &str| -> Result<u64, String> {
            let x = get(k, &v, U64)?;
            if x > MAX_TIME_NS {
                let shown = if x == u64::MAX { "inf".to_string() } else { x.to_string() };
                return Err(format!(
                    "{name} {k}={shown}: a time must be finite and at most 1 simulated hour ({MAX_TIME_NS} ns); for a task that computes forever write \"loop count=inf\", \"run ns=1ms\", \"end_loop\""
                ));
            }
            Ok(x)
        };
        let f64_ = |k: &str| if matches!(k, "ns" | "cost" | "per_msg" | "period") { time(k) } else { f64_(k) };
        let op = match name {
            "run" => Op::Run { ns: f64_("ns")? },
            "run_dist" => Op::RunDist { lo: f32("lo")?, mid: f32("mid")?, hi: f32("hi")? },
            "mem" => Op::Mem { bytes: f64_("bytes")? },
            "write" => Op::Write { chan: f32("chan")?, cost: f64_("cost")? },
            "read" => Op::Read { chan: f32("chan")?, cost: f64_("cost")? },
            "write_tag" => Op::WriteTag { chan: f32("chan")?, cost: f64_("cost")?, tag: f32("tag")? },
            "read_tag" => Op::ReadTag { chan: f32("chan")?, cost: f64_("cost")? },
            "write_reg" => Op::WriteReg { chan_base: f32("chan_base")?, cost: f64_("cost")? },
            "sleep" => Op::Sleep { ns: f64_("ns")? },
            "timer" => {
                match f64_("period")? {
                    0 => return Err(format!("{name} period=0: a periodic timer needs a period above 0")),
                    period => {
                        let absolute = get("absolute", &v, 1).map_err(|e| {
                        format!("{e}: 0 = rt-app's relative mode (an overrun re-anchors the grid at now), 1 = absolute (the thread catches up)")
                    })?;
                        Op::Timer { period, absolute: absolute == 1 }
                    }
                }
            }
            "cpu_lock" => Op::CpuLock { set: f32("set")? },
            "cpu_unlock" => Op::CpuUnlock { set: f32("set")? },
            "sem_wait" => Op::SemWait { sem: f32("sem")? },
            "sem_post" => Op::SemPost { sem: f32("sem")?, n: f32("n")? },
            "fork" => Op::Fork { spec: f32("spec")?, cost: f64_("cost")? },
            "wait_child" => Op::WaitChild,
            "loop" => Op::Loop { count: f64_("count")? },
            "end_loop" => Op::EndLoop,
            "mark" => Op::Mark { id: f32("id")? },
            "mark_nth" => Op::MarkNth { id: f32("id")?, nth: f32("nth")? },
            "count" => Op::Count { id: f32("id")?, n: f64_("n")? },
            "exit" => Op::Exit { cost: f64_("cost")? },
            "barrier" => Op::Barrier { id: f32("id")?, parties: f32("parties")? },
            "spin_barrier" => Op::SpinBarrier { id: f32("id")?, parties: f32("parties")?, spin: f64_("spin")? },
            "poll" => Op::Poll { chan: f32("chan")? },
            "epoll_next" => Op::EpollNext {
                set: f32("set")?,
                max: f32("max")?,
                // Optional (files written before session 26 have none): 0.
                block_cost: if kv.iter().any(|(k, _)| *k == "block_cost") { time("block_cost")? } else { 0 },
                // Optional (files written before session 30 have none): 0.
                block_pre: if kv.iter().any(|(k, _)| *k == "block_pre") { time("block_pre")? } else { 0 },
            },
            "select_next" => Op::SelectNext { set: f32("set")?, cost: f64_("cost")? },
            "read_reg" => Op::ReadReg { chan_base: f32("chan_base")?, cost: f64_("cost")? },
            "read_all" => Op::ReadAll { chan: f32("chan")?, cost: f64_("cost")?, per_msg: f64_("per_msg")? },
            "wake_queued" => Op::WakeQueued { chan: f32("chan")?, sem_base: f32("sem_base")?, cost: f64_("cost")? },
            "wake_latency" => Op::WakeLatency { hist: f32("hist")?, sem: f32("sem")? },
            "sem_wake" => Op::SemWake { sem: f32("sem")?, n: f32("n")? },
            "req_start" => Op::ReqStart { hist: f32("hist")? },
            "req_end" => Op::ReqEnd { hist: f32("hist")? },
            _ => unreachable!("listed in OPS"),
        };
        out.push(op);
    }
    Ok(())
}

/// The longest time an op may take (run, sleep, cost): one simulated hour,
/// as the longest `--duration`.
pub const MAX_TIME_NS: u64 = 3_600_000_000_000;

/// An op as (name, field values) in the order of [`OPS`].
fn op_fields(op: &Op) -> (&'static str, Vec<u64>) {
    match *op {
        Op::Run { ns } => ("run", vec![ns]),
        Op::RunDist { lo, mid, hi } => ("run_dist", vec![lo as u64, mid as u64, hi as u64]),
        Op::Mem { bytes } => ("mem", vec![bytes]),
        Op::Write { chan, cost } => ("write", vec![chan as u64, cost]),
        Op::Read { chan, cost } => ("read", vec![chan as u64, cost]),
        Op::WriteTag { chan, cost, tag } => ("write_tag", vec![chan as u64, cost, tag as u64]),
        Op::ReadTag { chan, cost } => ("read_tag", vec![chan as u64, cost]),
        Op::WriteReg { chan_base, cost } => ("write_reg", vec![chan_base as u64, cost]),
        Op::Sleep { ns } => ("sleep", vec![ns]),
        Op::Timer { period, absolute } => ("timer", vec![period, absolute as u64]),
        Op::CpuLock { set } => ("cpu_lock", vec![set as u64]),
        Op::CpuUnlock { set } => ("cpu_unlock", vec![set as u64]),
        Op::SemWait { sem } => ("sem_wait", vec![sem as u64]),
        Op::SemPost { sem, n } => ("sem_post", vec![sem as u64, n as u64]),
        Op::Fork { spec, cost } => ("fork", vec![spec as u64, cost]),
        Op::WaitChild => ("wait_child", vec![]),
        Op::Loop { count } => ("loop", vec![count]),
        Op::EndLoop => ("end_loop", vec![]),
        Op::Mark { id } => ("mark", vec![id as u64]),
        Op::MarkNth { id, nth } => ("mark_nth", vec![id as u64, nth as u64]),
        Op::Count { id, n } => ("count", vec![id as u64, n]),
        Op::Exit { cost } => ("exit", vec![cost]),
        Op::Barrier { id, parties } => ("barrier", vec![id as u64, parties as u64]),
        Op::SpinBarrier { id, parties, spin } => ("spin_barrier", vec![id as u64, parties as u64, spin]),
        Op::Poll { chan } => ("poll", vec![chan as u64]),
        Op::EpollNext { set, max, block_cost, block_pre } => ("epoll_next", vec![set as u64, max as u64, block_cost, block_pre]),
        Op::SelectNext { set, cost } => ("select_next", vec![set as u64, cost]),
        Op::ReadReg { chan_base, cost } => ("read_reg", vec![chan_base as u64, cost]),
        Op::ReadAll { chan, cost, per_msg } => ("read_all", vec![chan as u64, cost, per_msg]),
        Op::WakeQueued { chan, sem_base, cost } => ("wake_queued", vec![chan as u64, sem_base as u64, cost]),
        Op::WakeLatency { hist, sem } => ("wake_latency", vec![hist as u64, sem as u64]),
        Op::SemWake { sem, n } => ("sem_wake", vec![sem as u64, n as u64]),
        Op::ReqStart { hist } => ("req_start", vec![hist as u64]),
        Op::ReqEnd { hist } => ("req_end", vec![hist as u64]),
    }
}

// ---------------------------------------------------------------- export

/// A value that is `base + istep*i + jstep*j`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Lin {
    base: i128,
    istep: i128,
    jstep: i128,
}

fn render(l: Lin) -> String {
    let lit = |x: i128| if x == u64::MAX as i128 { "inf".to_string() } else { x.to_string() };
    let mut s = if l.base != 0 || (l.istep == 0 && l.jstep == 0) { lit(l.base) } else { String::new() };
    for (step, var) in [(l.istep, "i"), (l.jstep, "j")] {
        if step == 0 {
            continue;
        }
        let (sign, a) = if step < 0 { ("-", -step) } else { ("+", step) };
        if !s.is_empty() || sign == "-" {
            s.push_str(sign);
        }
        if a != 1 {
            s.push_str(&format!("{a}*"));
        }
        s.push_str(var);
    }
    s
}

/// Length of the longest prefix of `items` (same shape) whose values form
/// arithmetic progressions, and the per-field steps.
fn progression(items: &[Vec<i128>]) -> (usize, Vec<i128>) {
    if items.len() < 2 {
        return (items.len(), vec![0; items.first().map_or(0, |v| v.len())]);
    }
    let steps: Vec<i128> = items[0].iter().zip(&items[1]).map(|(a, b)| b - a).collect();
    let mut n = 2;
    while n < items.len() && items[n].iter().zip(&items[n - 1]).zip(&steps).all(|((b, a), s)| b - a == *s) {
        n += 1;
    }
    (n, steps)
}

/// A program with op runs compressed: (op name, repeat, per-field (base, jstep)).
type CompProg = Vec<(&'static str, u64, Vec<(i128, i128)>)>;

fn compress_ops(ops: &[Op]) -> CompProg {
    let mut out: CompProg = Vec::new();
    let mut k = 0;
    while k < ops.len() {
        let (name, _) = op_fields(&ops[k]);
        let mut m = k + 1;
        while m < ops.len() && op_fields(&ops[m]).0 == name {
            m += 1;
        }
        let vals: Vec<Vec<i128>> = ops[k..m].iter().map(|o| op_fields(o).1.into_iter().map(|x| x as i128).collect()).collect();
        // A structural op never repeats (readability); a lone op is repeat 1.
        let (n, steps) = if matches!(name, "loop" | "end_loop") { (1, vec![0; vals[0].len()]) } else { progression(&vals) };
        out.push((name, n as u64, vals[0].iter().zip(&steps).map(|(&b, &s)| (b, s)).collect()));
        k += n;
    }
    out
}

fn shape(c: &CompProg) -> Vec<(&'static str, u64, Vec<i128>)> {
    c.iter().map(|(n, r, f)| (*n, *r, f.iter().map(|x| x.1).collect())).collect()
}

fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Split a name into text pieces and numbers ("r0.12" -> ["r", ".", ""], [0, 12]).
fn name_parts(s: &str) -> (Vec<String>, Vec<i128>) {
    let mut texts = vec![String::new()];
    let mut nums = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                // Leading zeros or huge numbers are kept as text.
                match cur.parse::<i128>() {
                    Ok(n) if cur.len() < 19 && (cur == "0" || !cur.starts_with('0')) => {
                        nums.push(n);
                        texts.push(String::new());
                    }
                    _ => texts.last_mut().unwrap().push_str(&cur),
                }
                cur.clear();
            }
            if c == '{' || c == '}' {
                // Braces are template syntax; they cannot be written literally.
                texts.last_mut().unwrap().push(if c == '{' { '(' } else { ')' });
            } else {
                texts.last_mut().unwrap().push(c);
            }
        }
    }
    if !cur.is_empty() {
        match cur.parse::<i128>() {
            Ok(n) if cur.len() < 19 && (cur == "0" || !cur.starts_with('0')) => {
                nums.push(n);
                texts.push(String::new());
            }
            _ => texts.last_mut().unwrap().push_str(&cur),
        }
    }
    (texts, nums)
}

/// Write `w` as a workload file (format 1). Reading it back with
/// [`from_toml_str`] gives a workload equal to `w`, up to names containing
/// `{` or `}` (written as parentheses).
pub fn to_toml(w: &Workload, header: &str) -> String {
    let mut o = String::new();
    for l in header.lines() {
        o.push_str(&format!("# {l}\n"));
    }
    o.push_str(&format!(
        "format = {FORMAT}\nname = {}\ntime_bounded = {}\njitter_pct = {}\n",
        quote(&w.name),
        w.time_bounded,
        w.jitter_pct
    ));
    o.push_str("params = [");
    for (k, (a, b)) in w.params.iter().enumerate() {
        o.push_str(&format!("{}[{}, {}]", if k > 0 { ", " } else { "" }, quote(a), quote(b)));
    }
    o.push_str("]\n\n[metric]\n");
    let opt = |o: &mut String, k: &str, v: Option<u32>| {
        if let Some(v) = v {
            o.push_str(&format!("{k} = {v}\n"));
        }
    };
    match &w.metric {
        MetricSpec::Elapsed { name, start, end } => {
            o.push_str(&format!("kind = \"elapsed\"\nname = {}\nstart = {start}\nend = {end}\n", quote(name)));
        }
        MetricSpec::Rate { name, unit, counter, start, end } => {
            o.push_str(&format!("kind = \"rate\"\nname = {}\nunit = {}\ncounter = {counter}\n", quote(name), quote(unit)));
            opt(&mut o, "start", *start);
            opt(&mut o, "end", *end);
        }
        MetricSpec::ScaledRate { name, unit, counter, divisor, start, end } => {
            o.push_str(&format!(
                "kind = \"scaled_rate\"\nname = {}\nunit = {}\ncounter = {counter}\ndivisor = {divisor}\n",
                quote(name),
                quote(unit)
            ));
            opt(&mut o, "start", *start);
            opt(&mut o, "end", *end);
        }
        MetricSpec::LatencyPercentile { name, hist, q } => {
            o.push_str(&format!("kind = \"latency\"\nname = {}\nhist = {hist}\nq = {q:?}\n", quote(name)));
        }
        MetricSpec::LatencyMean { name, hist } => {
            o.push_str(&format!("kind = \"latency_mean\"\nname = {}\nhist = {hist}\n", quote(name)));
        }
        MetricSpec::BestRate { name, unit, hist, amount, divisor } => {
            o.push_str(&format!(
                "kind = \"best_rate\"\nname = {}\nunit = {}\nhist = {hist}\namount = {amount}\ndivisor = {divisor}\n",
                quote(name),
                quote(unit)
            ));
        }
    }
    let mut k = 0;
    while k < w.channels.len() {
        let c = &w.channels[k];
        // A run of equal channels; epoll members also in one set, their data
        // counting up by one (written as an expression in i).
        let n = w.channels[k..]
            .iter()
            .enumerate()
            .take_while(|(i, x)| {
                (x.capacity, x.sync, x.kind) == (c.capacity, c.sync, c.kind)
                    && match (x.epoll, c.epoll) {
                        (None, None) => true,
                        (Some(a), Some(b)) => a.set == b.set && a.data as u64 == b.data as u64 + *i as u64,
                        _ => false,
                    }
            })
            .count();
        o.push_str("\n[[channel]]\n");
        if n > 1 {
            o.push_str(&format!("repeat = {n}\n"));
        }
        o.push_str(&format!("capacity = {}\nsync = {}\n", c.capacity, c.sync));
        match c.kind {
            ChannelKind::Socket => o.push_str("kind = \"socket\"\n"),
            ChannelKind::Pipe { msgs_per_page } => o.push_str(&format!("kind = \"pipe\"\nmsgs_per_page = {msgs_per_page}\n")),
        }
        if let Some(e) = c.epoll {
            o.push_str(&format!("epoll = {}\n", e.set));
            // The default data is the channel's own index.
            if e.data as usize != k {
                if n > 1 {
                    o.push_str(&format!("data = \"{}+i\"\n", e.data));
                } else {
                    o.push_str(&format!("data = {}\n", e.data));
                }
            }
        }
        k += n;
    }
    k = 0;
    while k < w.sems.len() {
        let s = &w.sems[k];
        let n = w.sems[k..].iter().take_while(|x| *x == s).count();
        o.push_str("\n[[sem]]\n");
        if n > 1 {
            o.push_str(&format!("repeat = {n}\n"));
        }
        o.push_str(&format!("initial = {}\nsync = {}\n", s.initial, s.sync));
        if s.barging {
            o.push_str("barging = true\n");
        }
        k += n;
    }
    for g in &w.groups {
        o.push_str(&format!("\n[[group]]\nname = {}\nparent = {}\nshares = {}\n", quote(&g.name), g.parent, g.shares));
    }
    // Programs: runs of same-shape programs whose values progress with i.
    let comp: Vec<CompProg> = w.programs.iter().map(|p| compress_ops(p)).collect();
    k = 0;
    while k < comp.len() {
        let sh = shape(&comp[k]);
        let m = k + comp[k..].iter().take_while(|c| shape(c) == sh).count();
        let vals: Vec<Vec<i128>> = comp[k..m].iter().map(|c| c.iter().flat_map(|x| x.2.iter().map(|f| f.0)).collect()).collect();
        let (n, isteps) = progression(&vals);
        o.push_str(&format!("\n[[program]]  # {}\n", if n > 1 { format!("programs {k}..{}", k + n - 1) } else { format!("program {k}") }));
        if n > 1 {
            o.push_str(&format!("repeat = {n}\n"));
        }
        o.push_str("ops = [\n");
        let mut f = 0;
        for (name, rep, fields) in &comp[k] {
            let (_, fnames) = OPS.iter().find(|x| x.0 == *name).unwrap();
            let mut s = name.to_string();
            for (fname, &(base, jstep)) in fnames.iter().zip(fields) {
                s.push_str(&format!(" {fname}={}", render(Lin { base, istep: isteps[f], jstep })));
                f += 1;
            }
            if *rep > 1 {
                s.push_str(&format!(" repeat={rep}"));
            }
            o.push_str(&format!("  {},\n", quote(&s)));
        }
        o.push_str("]\n");
        k += n;
    }
    // Tasks: runs with the same text pieces, nice, cpus and start.
    let key = |t: &TaskSpec| (name_parts(&t.name).0, t.nice, t.cpus.clone(), t.start, t.footprint_kib, t.shared.clone(), t.timer_slack_ns);
    k = 0;
    while k < w.tasks.len() {
        let kk = key(&w.tasks[k]);
        let m = k + w.tasks[k..].iter().take_while(|t| key(t) == kk).count();
        let vals: Vec<Vec<i128>> = w.tasks[k..m]
            .iter()
            .map(|t| {
                let mut v = vec![t.program as i128, t.mm as i128, t.group as i128];
                v.extend(name_parts(&t.name).1);
                v
            })
            .collect();
        let (n, steps) = progression(&vals);
        let t = &w.tasks[k];
        o.push_str(&format!("\n[[task]]  # {}\n", if n > 1 { format!("tasks {k}..{}", k + n - 1) } else { format!("task {k}") }));
        if n > 1 {
            o.push_str(&format!("repeat = {n}\n"));
        }
        let (texts, nums) = name_parts(&t.name);
        let mut name = String::new();
        for (p, text) in texts.iter().enumerate() {
            name.push_str(text);
            if p < nums.len() {
                let l = Lin { base: nums[p], istep: steps[3 + p], jstep: 0 };
                if l.istep == 0 {
                    name.push_str(&l.base.to_string());
                } else {
                    name.push_str(&format!("{{{}}}", render(l)));
                }
            }
        }
        o.push_str(&format!("name = {}\n", quote(&name)));
        for (f, fname) in ["program", "mm", "group"].iter().enumerate() {
            let v = vals[0][f];
            if f == 2 && v == 0 && steps[f] == 0 {
                continue;
            }
            if steps[f] == 0 {
                o.push_str(&format!("{fname} = {v}\n"));
            } else {
                o.push_str(&format!("{fname} = {}\n", quote(&render(Lin { base: v, istep: steps[f], jstep: 0 }))));
            }
        }
        if t.nice != 0 {
            o.push_str(&format!("nice = {}\n", t.nice));
        }
        if let Some(c) = &t.cpus {
            o.push_str(&format!("cpus = {c:?}\n"));
        }
        if !t.start {
            o.push_str("start = false\n");
        }
        if let Some(f) = t.footprint_kib {
            o.push_str(&format!("footprint_kib = {f}\n"));
        }
        if let Some(sh) = &t.shared {
            o.push_str(&format!("shared = {}\nshared_kib = {}\n", quote(&sh.name), sh.kib));
        }
        if t.timer_slack_ns != crate::DEFAULT_TIMER_SLACK_NS {
            o.push_str(&format!("timer_slack_ns = {}\n", t.timer_slack_ns));
        }
        k += n;
    }
    for m in &w.memory {
        o.push_str(&format!(
            "\n[[memory]]\nmm = {}\nshared_mib = {}\nprivate_mib = {}\nprivate_pct = {}\nstall_pct = {}\ntouch_mib_per_s = {}\n",
            m.mm, m.shared_mib, m.private_mib, m.private_pct, m.stall_pct, m.touch_mib_per_s
        ));
        if let Some(n) = m.initial_node {
            o.push_str(&format!("initial_node = {n}\n"));
        }
    }
    if let Some(a) = &w.arrivals {
        o.push_str(&format!("\n[arrivals]\nrate = {:?}\nrx_ns = {}\nhist = {}\nconns = [", a.rate_per_s, a.rx_ns, a.hist));
        for (k, (c, t, cpu)) in a.conns.iter().enumerate() {
            o.push_str(&format!("{}[{c}, {t}, {cpu}]", if k > 0 { ", " } else { "" }));
        }
        o.push_str("]\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build, builtin::BUILTINS, Params};

    #[test]
    fn every_builtin_round_trips() {
        for b in BUILTINS {
            for set in [
                "",
                "groups=2,pipe=1",
                "groups=2,loops=20,warmup=5",
                "clients=3,threads=2",
                "version=2016,message_threads=2,threads=3",
                "threads=3",
                // processes with memory (NUMA), open loops (arrivals)
                "instances=2,threads=2",
                "rate=20000",
                "rate=20000,clients=3",
                "rate=1000,instances=2",
                // byte streams (read_all)
                "mode=TCP_STREAM,instances=2,message_size=64",
            ] {
                let Ok(w) = build(b.name, &Params::parse(set).unwrap(), 12, &[]) else { continue };
                let text = to_toml(&w, "test");
                let back = from_toml_str(&text, "x.toml").unwrap_or_else(|e| panic!("{}: {e}\n{text}", b.name));
                assert_eq!(back, w, "{} {set}", b.name);
            }
        }
    }

    #[test]
    fn latency_ops_and_metrics_round_trip() {
        for (name, set) in [
            ("schbench", "metric=rps"),
            ("schbench", "metric=request_p99.9"),
            ("sysbench", "threads=2,metric=latency_p95"),
            ("pgbench", "clients=3,threads=2,metric=latency_avg"),
            ("memcached", "connections=3,metric=latency_p50"),
        ] {
            let w = build(name, &Params::parse(set).unwrap(), 12, &[]).unwrap();
            assert!(w.programs.iter().flatten().any(|o| matches!(o, Op::ReqEnd { .. })), "{name} {set}");
            let text = to_toml(&w, "test");
            assert!(text.contains("req_start hist=1") && text.contains("req_end hist=1"), "{text}");
            assert_eq!(from_toml_str(&text, "x.toml").unwrap(), w, "{name} {set}");
        }
        let mean =
            MINI.replace("kind = \"elapsed\"\nname = \"time\"\nstart = 0\nend = 1", "kind = \"latency_mean\"\nname = \"lat\"\nhist = 2");
        let mean = mean.replace("\"mark id=0\", \"run ns=1ms\", \"mark id=1\"", "\"req_start hist=2\", \"run ns=1ms\", \"req_end hist=2\"");
        let w = from_toml_str(&mean, "m.toml").unwrap();
        assert_eq!(w.metric, MetricSpec::LatencyMean { name: "lat".into(), hist: 2 });
        assert_eq!(w.programs[0], vec![Op::ReqStart { hist: 2 }, Op::Run { ns: 1_000_000 }, Op::ReqEnd { hist: 2 }]);
        assert_eq!(from_toml_str(&to_toml(&w, ""), "m.toml").unwrap(), w);
        let e = from_toml_str(&mean.replace("req_end hist=2", "req_end hist=8"), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:") && e.contains("out of range"), "{e}");
        let e = from_toml_str(&mean.replace("req_end hist=2", "req_end sem=2"), "m.toml").unwrap_err().0;
        assert!(e.contains("no field \"sem\""), "{e}");
        assert!(build("sysbench", &Params::parse("metric=latency_p42").unwrap(), 12, &[]).is_err());
        assert!(build("schbench", &Params::parse("version=2016,metric=rps").unwrap(), 12, &[]).is_err());
        assert!(build("schbench", &Params::parse("version=2016,metric=request_p99").unwrap(), 12, &[]).is_err());
    }

    #[test]
    fn memory_and_arrivals_are_read_and_checked() {
        let memory = "\n[[memory]]\nmm = 0\nshared_mib = 64\nprivate_pct = 50\nstall_pct = 30\ntouch_mib_per_s = 100\ninitial_node = 1\n";
        let w = from_toml_str(&format!("{MINI}{memory}"), "m.toml").unwrap();
        assert_eq!(w.memory.len(), 1);
        assert_eq!((w.memory[0].shared_mib, w.memory[0].private_mib, w.memory[0].initial_node), (64, 0, Some(1)));
        assert_eq!(from_toml_str(&to_toml(&w, ""), "m.toml").unwrap(), w);
        // The line of the [[memory]] entry is named.
        let bad = format!("{MINI}{}", memory.replace("mm = 0", "mm = 7"));
        let e = from_toml_str(&bad, "m.toml").unwrap_err().0;
        let line = bad.lines().position(|l| l == "[[memory]]").unwrap() + 1;
        assert!(e.starts_with(&format!("m.toml:{line}:")) && e.contains("process 7 has no task"), "{e}");
        let e = from_toml_str(&format!("{MINI}{}", memory.replace("stall_pct = 30\n", "")), "m.toml").unwrap_err().0;
        assert!(e.contains("stall_pct"), "{e}");
        // Arrivals: an integer rate is accepted; a missing channel is named.
        let w = build("memcached", &Params::parse("rate=5000,connections=2").unwrap(), 4, &[]).unwrap();
        let text = to_toml(&w, "");
        assert!(text.contains("[arrivals]") && text.contains("rate = 5000.0") && text.contains("conns = [[0,"), "{text}");
        assert_eq!(from_toml_str(&text, "a.toml").unwrap(), w);
        let int_rate = text.replace("rate = 5000.0", "rate = 5000");
        assert_eq!(from_toml_str(&int_rate, "a.toml").unwrap().arrivals, w.arrivals);
        let e = from_toml_str(&text.replace("conns = [[0,", "conns = [[99,"), "a.toml").unwrap_err().0;
        assert!(e.contains("arrivals: channel 99 does not exist"), "{e}");
    }

    #[test]
    fn run_dist_round_trips_and_is_checked() {
        let text = MINI.replace("\"run ns=1ms\"", "\"run_dist lo=10us mid=20us hi=80us\"");
        let w = from_toml_str(&text, "d.toml").unwrap();
        assert!(w.programs[0].contains(&Op::RunDist { lo: 10_000, mid: 20_000, hi: 80_000 }), "{:?}", w.programs[0]);
        assert_eq!(from_toml_str(&to_toml(&w, ""), "d.toml").unwrap(), w);
        let e = from_toml_str(&text.replace("mid=20us", "mid=90us"), "d.toml").unwrap_err().0;
        assert!(e.contains("lo <= mid <= hi"), "{e}");
        let e = from_toml_str(&text.replace("hi=80us", "hi=5s"), "d.toml").unwrap_err().0;
        assert!(e.contains("hi = 5000000000 is out of range"), "{e}");
    }

    #[test]
    fn hackbench_is_compact() {
        let w = build("hackbench", &Params::parse("groups=16").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 641);
        let text = to_toml(&w, "");
        assert!(text.lines().count() < 700, "{} lines", text.lines().count());
        assert!(text.contains("fork spec=1+j cost=30000 repeat=640"), "{text}");
    }

    #[test]
    fn expressions() {
        let v = Vars { i: 3, j: 2 };
        assert_eq!(eval("20*i + j", &v).unwrap(), 62);
        assert_eq!(eval("2us", &v).unwrap(), 2000);
        assert_eq!(eval("(1+i)%2", &v).unwrap(), 0);
        assert_eq!(eval("inf", &v).unwrap(), u64::MAX as i128);
        assert!(eval("1/0", &v).is_err());
        assert!(eval("1 +", &v).is_err());
        assert!(eval("k", &v).is_err());
        assert_eq!(template("r{i}.{j+1}", &v).unwrap(), "r3.3");
        assert_eq!(render(Lin { base: 5, istep: -2, jstep: 1 }), "5-2*i+j");
        assert_eq!(eval(&render(Lin { base: 0, istep: -2, jstep: 0 }), &Vars { i: 1, j: 0 }).unwrap(), -2);
    }

    const MINI: &str = r#"format = 1
name = "mini"
[metric]
kind = "elapsed"
name = "time"
start = 0
end = 1
[[program]]
ops = ["mark id=0", "run ns=1ms", "mark id=1"]
[[task]]
name = "t"
program = 0
mm = 0
"#;

    #[test]
    fn errors_name_file_line_and_field() {
        assert!(from_toml_str(MINI, "m.toml").is_ok());
        let e = from_toml_str(&MINI.replace("mm = 0", "mm = 0\ncolour = 1"), "m.toml").unwrap_err().0;
        assert!(e.starts_with("m.toml:14:") && e.contains("colour"), "{e}");
        let e = from_toml_str(&MINI.replace("\"run ns=1ms\"", "\"run ns=-1\""), "m.toml").unwrap_err().0;
        assert!(e.starts_with("m.toml:9:") && e.contains("out of range"), "{e}");
        let e = from_toml_str(&MINI.replace("mm = 0", "mm = \"x\""), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:10: mm"), "{e}");
        let e = from_toml_str(&MINI.replace("\"run ns=1ms\"", "\"sem_wait sem=0\""), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:9") && e.contains("semaphore 0 does not exist"), "{e}");
        let with_sem =
            MINI.replace("[[program]]", "[[sem]]\ninitial = 0\nsync = false\n[[program]]").replace("\"run ns=1ms\"", "\"sem_wait sem=0\"");
        let e = from_toml_str(&with_sem, "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:11") && e.contains("nothing posts it"), "{e}");
        let e = from_toml_str(&MINI.replace("start = 0", "start = 0.5"), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:6"), "{e}");
        let e = from_toml_str(&MINI.replace("format = 1", "format = 2"), "m.toml").unwrap_err().0;
        assert!(e.contains("format = 2"), "{e}");
    }

    // A task's declared working set reaches the TaskSpec, survives an export,
    // keeps tasks with different footprints apart in a `repeat` run, and a
    // zero is refused with the key and the default named.
    #[test]
    fn footprint_kib_parses_exports_and_is_checked() {
        assert_eq!(from_toml_str(MINI, "m.toml").unwrap().tasks[0].footprint_kib, None);
        let two = MINI.replace("mm = 0\n", "mm = 0\nfootprint_kib = 512\n[[task]]\nname = \"u\"\nprogram = 0\nmm = 0\n");
        let w = from_toml_str(&two, "m.toml").unwrap();
        assert_eq!(w.tasks.iter().map(|t| t.footprint_kib).collect::<Vec<_>>(), [Some(512), None]);
        let text = to_toml(&w, "");
        assert!(text.contains("footprint_kib = 512"), "{text}");
        assert_eq!(from_toml_str(&text, "x.toml").unwrap().tasks, w.tasks);
        let e = from_toml_str(&MINI.replace("mm = 0\n", "mm = 0\nfootprint_kib = 0\n"), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:") && e.contains("footprint_kib") && e.contains("default of 64"), "{e}");
    }

    // A task's timer slack (prctl(PR_SET_TIMERSLACK)): the kernel's 50 us
    // unless given, kept by an export only when it differs, refused past the
    // longest time an op may take; the `timer` op round-trips.
    #[test]
    fn timer_slack_and_the_timer_op_parse_export_and_are_checked() {
        assert_eq!(from_toml_str(MINI, "m.toml").unwrap().tasks[0].timer_slack_ns, crate::DEFAULT_TIMER_SLACK_NS);
        let two = MINI.replace("mm = 0\n", "mm = 0\ntimer_slack_ns = 0\n[[task]]\nname = \"u\"\nprogram = 0\nmm = 0\n");
        let w = from_toml_str(&two, "m.toml").unwrap();
        assert_eq!(w.tasks.iter().map(|t| t.timer_slack_ns).collect::<Vec<_>>(), [0, 50_000]);
        let text = to_toml(&w, "");
        assert_eq!(text.matches("timer_slack_ns").count(), 1, "{text}");
        assert_eq!(from_toml_str(&text, "x.toml").unwrap().tasks, w.tasks);
        let e = from_toml_str(&MINI.replace("mm = 0\n", "mm = 0\ntimer_slack_ns = 3600000000001\n"), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:") && e.contains("timer_slack_ns") && e.contains("50000"), "{e}");
        let mut w = from_toml_str(MINI, "m.toml").unwrap();
        w.programs[0].insert(0, Op::Timer { period: 2_000_000, absolute: true });
        w.programs[0].insert(0, Op::Timer { period: 1_000_000, absolute: false });
        let back = from_toml_str(&to_toml(&w, ""), "x.toml").unwrap();
        assert_eq!(back.programs, w.programs);
        let e = from_toml_str(&MINI.replace("\"run ns=1ms\"", "\"timer period=0 absolute=0\""), "m.toml").unwrap_err().0;
        assert!(e.contains("m.toml:") && e.contains("period=0"), "{e}");
        for bad in ["\"timer period=1ms\"", "\"timer period=1ms absolute=2\""] {
            let e = from_toml_str(&MINI.replace("\"run ns=1ms\"", bad), "m.toml").unwrap_err().0;
            assert!(e.contains("absolute") && e.contains("0 = rt-app's relative mode") && e.contains("1 = absolute"), "{e}");
        }
    }

    // The best_rate metric (STREAM's best rate) parses, exports and needs its amount.
    #[test]
    fn best_rate_metric_parses_and_exports() {
        let text = MINI
            .replace(
                "kind = \"elapsed\"\nname = \"time\"\nstart = 0\nend = 1",
                "kind = \"best_rate\"\nname = \"b\"\nunit = \"MB/s\"\nhist = 2\namount = 24\ndivisor = 1000000",
            )
            .replace("\"mark id=0\", \"run ns=1ms\", \"mark id=1\"", "\"req_start hist=2\", \"run ns=1ms\", \"req_end hist=2\"");
        let w = from_toml_str(&text, "m.toml").unwrap();
        assert_eq!(w.metric, MetricSpec::BestRate { name: "b".into(), unit: "MB/s".into(), hist: 2, amount: 24, divisor: 1_000_000 });
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap(), w);
        let e = from_toml_str(&text.replace("amount = 24\n", ""), "m.toml").unwrap_err().0;
        assert!(e.contains("amount"), "{e}");
        let e = from_toml_str(&text.replace("req_end hist=2", "req_end hist=3"), "m.toml").unwrap_err().0;
        assert!(e.contains("histogram 2 is never recorded"), "{e}");
    }

    /// `mark_nth`: parses, exports, starts a metric, and refuses nth=0.
    #[test]
    fn mark_nth_parses_exports_and_is_checked() {
        let text = MINI.replace("\"mark id=0\"", "\"mark_nth id=0 nth=2\"");
        let w = from_toml_str(&text, "m.toml").unwrap();
        assert!(w.programs.iter().flatten().any(|o| *o == Op::MarkNth { id: 0, nth: 2 }));
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap(), w);
        let e = from_toml_str(&text.replace("nth=2", "nth=0"), "m.toml").unwrap_err().0;
        assert!(e.contains("nth=0"), "{e}");
    }

    // Per-CPU locks: one at a time, each released by its program; the ops
    // round-trip.
    #[test]
    fn cpu_locks_pair_up() {
        let with = |ops: &str| from_toml_str(&MINI.replace("\"run ns=1ms\"", ops), "m.toml");
        let w = with("\"cpu_lock set=1\", \"run ns=1ms\", \"cpu_unlock set=1\"").unwrap();
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap().programs, w.programs);
        for (ops, want) in [
            ("\"cpu_lock set=0\", \"cpu_lock set=1\", \"cpu_unlock set=1\", \"cpu_unlock set=0\"", "one per-CPU lock at a time"),
            ("\"cpu_unlock set=0\"", "without a cpu_lock set=0"),
            ("\"cpu_lock set=0\", \"cpu_unlock set=1\"", "without a cpu_lock set=1"),
            ("\"cpu_lock set=2\"", "ends while it holds per-CPU lock set 2"),
            ("\"cpu_lock set=8\", \"cpu_unlock set=8\"", "out of range"),
        ] {
            let e = with(ops).unwrap_err().0;
            assert!(e.contains(want), "{ops}: {e}");
        }
    }

    // A shared working set: named, sized once, on every task that touches it;
    // it survives an export (tasks with different sets stay apart), and a set
    // without a size, a size without a set, or two sizes for one set are
    // refused with the key named.
    #[test]
    fn shared_sets_parse_export_and_are_checked() {
        let two = MINI.replace(
            "mm = 0\n",
            "mm = 0\nshared = \"text\"\nshared_kib = 768\n[[task]]\nname = \"u\"\nprogram = 0\nmm = 1\nshared = \"text\"\nshared_kib = 768\n[[task]]\nname = \"v\"\nprogram = 0\nmm = 2\n",
        );
        let w = from_toml_str(&two, "m.toml").unwrap();
        let set = Some(crate::SharedSet { name: "text".into(), kib: 768 });
        assert_eq!(w.tasks.iter().map(|t| t.shared.clone()).collect::<Vec<_>>(), [set.clone(), set, None]);
        let text = to_toml(&w, "");
        assert!(text.contains("shared = \"text\"\nshared_kib = 768"), "{text}");
        assert_eq!(from_toml_str(&text, "x.toml").unwrap().tasks, w.tasks);
        for (bad, key) in [
            ("mm = 0\nshared = \"text\"\n", "shared"),
            ("mm = 0\nshared_kib = 8\n", "shared_kib"),
            ("mm = 0\nshared = \"text\"\nshared_kib = 0\n", "shared_kib"),
        ] {
            let e = from_toml_str(&MINI.replace("mm = 0\n", bad), "m.toml").unwrap_err().0;
            assert!(e.contains("m.toml:") && e.contains(key), "{bad}: {e}");
        }
        let clash = two.replacen("shared_kib = 768", "shared_kib = 512", 1);
        let e = from_toml_str(&clash, "m.toml").unwrap_err().0;
        assert!(e.contains("one set has one size") && e.contains("512"), "{e}");
    }

    // Epoll sets: channels registered with a set and a data expression in i
    // (default: the channel's own index), the two ops, the export writing a
    // run of members as one entry; data without a set, a set without
    // members and max=0 are refused.
    #[test]
    fn epoll_sets_parse_export_and_are_checked() {
        let text = |chans: &str, op: &str| {
            format!(
                "format = 1\nname = \"ep\"\ntime_bounded = true\n[metric]\nkind = \"rate\"\nname = \"n\"\nunit = \"ops/s\"\ncounter = 0\n{chans}\
                 [[program]]\nops = [\"write chan=0 cost=1us repeat=3\", \"write chan=3+j cost=1us repeat=2\"]\n\
                 [[program]]\nops = [\"loop count=inf\", \"{op}\", \"read_reg chan_base=0 cost=1us\", \"count id=0 n=1\", \"end_loop\"]\n\
                 [[task]]\nname = \"w\"\nprogram = 0\nmm = 0\n[[task]]\nname = \"r\"\nprogram = 1\nmm = 1\n"
            )
        };
        let chans = "[[channel]]\nrepeat = 3\ncapacity = 4\nsync = true\nkind = \"socket\"\nepoll = 1\n\
                     [[channel]]\nrepeat = 2\ncapacity = 4\nsync = true\nkind = \"socket\"\nepoll = 0\ndata = \"10+2*i\"\n";
        let w = from_toml_str(&text(chans, "epoll_next set=1 max=2"), "ep.toml").unwrap();
        let regs: Vec<_> = w.channels.iter().map(|c| c.epoll.map(|e| (e.set, e.data))).collect();
        assert_eq!(regs, [Some((1, 0)), Some((1, 1)), Some((1, 2)), Some((0, 10)), Some((0, 12))]);
        assert!(w.programs[1].contains(&Op::EpollNext { set: 1, max: 2, block_cost: 0, block_pre: 0 }));
        assert!(w.programs[1].contains(&Op::ReadReg { chan_base: 0, cost: 1000 }));
        let out = to_toml(&w, "");
        // Own indices: one entry without data; data 10, 12: not a run of +1.
        assert!(out.contains("repeat = 3\ncapacity = 4\nsync = true\nkind = \"socket\"\nepoll = 1\n\n"), "{out}");
        assert!(out.contains("epoll = 0\ndata = 10\n") && out.contains("epoll = 0\ndata = 12\n"), "{out}");
        assert_eq!(from_toml_str(&out, "x.toml").unwrap(), w);
        let run = from_toml_str(&text(&chans.replace("10+2*i", "7+i"), "epoll_next set=1 max=2"), "ep.toml").unwrap();
        assert!(to_toml(&run, "").contains("repeat = 2\ncapacity = 4\nsync = true\nkind = \"socket\"\nepoll = 0\ndata = \"7+i\"\n"));
        for (chans, op, want) in [
            (chans.replace("epoll = 0\n", ""), "epoll_next set=1 max=2", "data"),
            (chans.to_string(), "epoll_next set=2 max=2", "no channel is registered"),
            (chans.to_string(), "epoll_next set=1 max=0", "max 0"),
            (chans.replace("epoll = 1", "epoll = 9"), "epoll_next set=9 max=2", "out of range"),
        ] {
            let e = from_toml_str(&text(&chans, op), "ep.toml").unwrap_err().0;
            assert!(e.contains("ep.toml") && e.contains(want), "{op}: {e}");
        }
        // A set none of whose channels anything writes: a wait nothing can end.
        let unfed = text(chans, "epoll_next set=0 max=2").replace(", \"write chan=3+j cost=1us repeat=2\"", "");
        let e = from_toml_str(&unfed, "ep.toml").unwrap_err().0;
        assert!(e.contains("epoll set 0, but nothing writes"), "{e}");
        // block_cost (optional, a time): read back by the export; out of range refused.
        let w = from_toml_str(&text(chans, "epoll_next set=1 max=2 block_cost=3200"), "ep.toml").unwrap();
        assert!(w.programs[1].contains(&Op::EpollNext { set: 1, max: 2, block_cost: 3200, block_pre: 0 }));
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap(), w);
        // block_pre (optional, a time, the part paid before the sleep): read
        // back; above block_cost refused, naming both.
        let w = from_toml_str(&text(chans, "epoll_next set=1 max=2 block_cost=3200 block_pre=2100"), "ep.toml").unwrap();
        assert!(w.programs[1].contains(&Op::EpollNext { set: 1, max: 2, block_cost: 3200, block_pre: 2100 }));
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap(), w);
        let e = from_toml_str(&text(chans, "epoll_next set=1 max=2 block_cost=1us block_pre=2us"), "ep.toml").unwrap_err().0;
        assert!(e.contains("block_pre 2000 ns above block_cost 1000 ns"), "{e}");
        for (cost, want) in [("3601s", "at most 1 simulated hour"), ("-1", "out of range")] {
            let e = from_toml_str(&text(chans, &format!("epoll_next set=1 max=2 block_cost={cost}")), "ep.toml").unwrap_err().0;
            assert!(e.contains("ep.toml") && e.contains("block_cost") && e.contains(want), "{cost}: {e}");
        }
        // select_next over the same sets: parsed, exported and read back; the
        // same checks of its set.
        let w = from_toml_str(&text(chans, "select_next set=0 cost=2us"), "ep.toml").unwrap();
        assert!(w.programs[1].contains(&Op::SelectNext { set: 0, cost: 2000 }));
        assert_eq!(from_toml_str(&to_toml(&w, ""), "x.toml").unwrap(), w);
        for (op, want) in
            [("select_next set=2 cost=1us", "no channel is registered"), ("select_next set=0 cost=3601s", "at most 1 simulated hour")]
        {
            let e = from_toml_str(&text(chans, op), "ep.toml").unwrap_err().0;
            assert!(e.contains("ep.toml") && e.contains(want), "{op}: {e}");
        }
        let e = from_toml_str(&unfed.replace("epoll_next set=0 max=2", "select_next set=0 cost=1us"), "ep.toml").unwrap_err().0;
        assert!(e.contains("epoll set 0, but nothing writes"), "{e}");
    }

    #[test]
    fn read_all_parses_and_its_channel_must_be_fed() {
        let text = |writer: &str| {
            format!(
                "format = 1\nname = \"s\"\ntime_bounded = true\n[metric]\nkind = \"rate\"\nname = \"n\"\nunit = \"1/s\"\ncounter = 0\n\
                 [[channel]]\ncapacity = 64\nsync = true\nkind = \"socket\"\n\
                 [[program]]\nops = [\"loop count=inf\", {writer}\"count id=0 n=1\", \"end_loop\"]\n\
                 [[program]]\nops = [\"loop count=inf\", \"read_all chan=0 cost=4us per_msg=20\", \"end_loop\"]\n\
                 [[task]]\nname = \"w\"\nprogram = 0\nmm = 0\n[[task]]\nname = \"r\"\nprogram = 1\nmm = 1\n"
            )
        };
        let w = from_toml_str(&text("\"write chan=0 cost=1us\", "), "s.toml").unwrap();
        assert!(w.programs[1].contains(&Op::ReadAll { chan: 0, cost: 4000, per_msg: 20 }));
        assert!(to_toml(&w, "").contains("read_all chan=0 cost=4000 per_msg=20"));
        let e = from_toml_str(&text(""), "s.toml").unwrap_err().0;
        assert!(e.contains("reads channel 0, but nothing writes to it"), "{e}");
        let e = from_toml_str(&text("\"write chan=0 cost=1us\", ").replace("per_msg=20", "per_msg=2h"), "s.toml").unwrap_err().0;
        assert!(e.contains("per_msg"), "{e}");
    }
}
