//! `schedlab run --explain` and `compare --explain`: the decision records of
//! the kernel model (schedlab_kernel::explain) counted into the tables a
//! reviewer reads first: wakeups by rule and level, wake_affine clauses,
//! select_idle_sibling efficiency, balance outcomes and refusals.

use crate::Prepared;
use schedlab_engine::{RunResult, Sim};
use schedlab_kernel::explain::{AffineRule, Budget, Counts, Explain, LbOutcome, Path, Preempt, Record, Refusal, IDLE_NAMES, MAX_LEVELS};
use schedlab_kernel::Kernel;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Counts of one or more runs, with the level names they are laid out by.
#[derive(Clone, Debug, Default)]
pub struct Explained {
    pub counts: Counts,
    pub level_names: Vec<&'static str>,
    /// Level slot of (cpu, domain index).
    pub slot: Vec<[u8; MAX_LEVELS]>,
}

impl Explained {
    fn from_explain(e: &Explain) -> Explained {
        Explained { counts: e.counts.clone(), level_names: e.level_names.clone(), slot: e.slot.clone() }
    }

    /// Sum another run's counts into this one (same machine: same levels).
    pub fn add(&mut self, o: &Explained) {
        if self.level_names.is_empty() {
            *self = o.clone();
            return;
        }
        let (a, b) = (&mut self.counts, &o.counts);
        a.wakeups += b.wakeups;
        a.forks += b.forks;
        add2(&mut a.wake_paths, &b.wake_paths);
        add2(&mut a.fork_paths, &b.fork_paths);
        add2(&mut a.affine, &b.affine);
        a.wake_wide += b.wake_wide;
        a.want_affine += b.want_affine;
        a.wake_list += b.wake_list;
        a.migrated += b.migrated;
        add1(&mut a.scans, &b.scans);
        add1(&mut a.budget_sum, &b.budget_sum);
        add1(&mut a.scan_ends, &b.scan_ends);
        a.sis_search += b.sis_search;
        a.sis_domain_search += b.sis_domain_search;
        a.sis_scanned += b.sis_scanned;
        a.sis_failed += b.sis_failed;
        a.sis_recent_hit += b.sis_recent_hit;
        a.sis_recent_miss += b.sis_recent_miss;
        a.sis_core_search += b.sis_core_search;
        a.sis_core_miss += b.sis_core_miss;
        add1(&mut a.slow, &b.slow);
        for (x, y) in a.lb.iter_mut().zip(&b.lb) {
            add2(x, y);
        }
        add2(&mut a.lb_refused, &b.lb_refused);
        add1(&mut a.lb_moved, &b.lb_moved);
        add1(&mut a.lb_kicks, &b.lb_kicks);
        add2(&mut a.lb_migration, &b.lb_migration);
        a.balance_attempts += b.balance_attempts;
        add1(&mut a.idle_cpu_by_budget, &b.idle_cpu_by_budget);
        add1(&mut a.preempt, &b.preempt);
    }

    fn path_total(&self, p: Path) -> u64 {
        self.counts.wake_paths[p as usize].iter().sum()
    }

    /// Share of wakeups (0..1) per path.
    pub fn shares(&self) -> Vec<(Path, f64)> {
        let n = self.counts.wakeups.max(1) as f64;
        Path::ALL.iter().map(|&p| (p, self.path_total(p) as f64 / n)).collect()
    }

    /// Path name as a reviewer reads it: the scan named after its budget.
    pub fn path_label(&self, p: Path) -> String {
        if p == Path::IdleCpu {
            let b = &self.counts.idle_cpu_by_budget;
            let (k, n) = (0..3).map(|k| (k, b[k])).max_by_key(|&(k, n)| (n, k)).unwrap_or((0, 0));
            if n > 0 && k > 0 {
                return format!("the {} scan", [Budget::None, Budget::SisProp, Budget::SisUtil][k].name());
            }
            return "the idle-cpu scan".into();
        }
        p.name().into()
    }

    /// Level column names: same CPU, then the domain levels.
    fn level_cols(&self) -> Vec<String> {
        let mut v = vec!["same-cpu".to_string()];
        v.extend(self.level_names.iter().take(MAX_LEVELS).map(|s| s.to_string()));
        v
    }
}

fn add1<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

fn add2<const N: usize, const M: usize>(a: &mut [[u64; N]; M], b: &[[u64; N]; M]) {
    for (x, y) in a.iter_mut().zip(b) {
        add1(x, y);
    }
}

/// Run `prep` with decision recording on; `log` keeps every record (for `--trace`).
pub fn run_explained(prep: &Prepared, cfg: &schedlab_engine::SimConfig, log: bool) -> (RunResult, Explained, Vec<Record>) {
    let mut kernel = Kernel::new(&prep.machine.topology, prep.kernel.clone());
    kernel.enable_explain(log);
    let (res, kernel) = Sim::new(&prep.machine, kernel, &prep.workload, cfg).run_keep_kernel(cfg);
    let mut e = kernel.explain.expect("enabled above");
    let records = e.log.take().unwrap_or_default();
    (res, Explained::from_explain(&e), records)
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// The derived select_idle_sibling figures of Chen Yu's SIS_UTIL postings
/// (schedstat_parse.py on Mel Gorman's counters), in percent:
/// search efficiency = found / scanned, domain search efficiency = found by
/// a domain search / runqueues scanned by domain searches, fast-path rate =
/// found by target/prev/recent / searches, success rate = found / searches.
pub fn sis_figures(c: &Counts) -> [(&'static str, f64); 4] {
    let found = c.sis_search - c.sis_failed;
    let fast = c.sis_search - c.sis_domain_search;
    let domain_scanned = c.sis_scanned - fast;
    let domain_found = c.sis_domain_search - c.sis_failed;
    [
        ("search efficiency", pct(found, c.sis_scanned)),
        ("domain search efficiency", pct(domain_found, domain_scanned)),
        ("fast-path rate", pct(fast, c.sis_search)),
        ("success rate", pct(found, c.sis_search)),
    ]
}

const END_NAMES: [&str; 6] = ["not-scanned", "found", "budget-out", "exhausted", "util-zero", "avg-cpu-skip"];
const SLOW_NAMES: [&str; 4] = ["none", "no-allowed-cpu", "local-kept", "idlest-group"];

/// The `run --explain` text.
pub fn report_text(x: &Explained) -> String {
    let c = &x.counts;
    let mut o = String::new();
    let cols = x.level_cols();
    let _ = writeln!(
        o,
        "wakeup paths ({} wakeups; share by rule; columns: lowest domain spanning the waker's CPU and the chosen CPU)",
        c.wakeups
    );
    let _ = write!(o, "  {:<18} {:>7} {:>9}", "rule", "share", "count");
    for col in &cols {
        let _ = write!(o, " {col:>9}");
    }
    let _ = writeln!(o, "  kernel rule");
    for &p in &Path::ALL {
        let row = &c.wake_paths[p as usize];
        let n: u64 = row.iter().sum();
        if n == 0 {
            continue;
        }
        let _ = write!(o, "  {:<18} {:>6.1}% {:>9}", p.name(), pct(n, c.wakeups), n);
        for v in row.iter().take(cols.len()) {
            let _ = write!(o, " {v:>9}");
        }
        let _ = writeln!(o, "  {}", p.rule());
    }
    let _ = writeln!(
        o,
        "  wake_wide {:.1}%, want_affine {:.1}%, wake list {:.1}%, migrated {:.1}%; forks {} (slow path {})",
        pct(c.wake_wide, c.wakeups),
        pct(c.want_affine, c.wakeups),
        pct(c.wake_list, c.wakeups),
        pct(c.migrated, c.wakeups),
        c.forks,
        c.fork_paths[Path::SlowPath as usize].iter().sum::<u64>()
    );
    let _ = writeln!(o, "\nwake_affine clauses (columns: the SD_WAKE_AFFINE domain that spans prev)");
    let _ = write!(o, "  {:<26} {:>7} {:>9} {:>6}", "clause", "share", "count", "pulls");
    let acols: Vec<String> = std::iter::once("-".to_string()).chain(x.level_names.iter().take(MAX_LEVELS).map(|s| s.to_string())).collect();
    for col in &acols {
        let _ = write!(o, " {col:>9}");
    }
    let _ = writeln!(o);
    for &a in &AffineRule::ALL {
        let row = &c.affine[a as usize];
        let n: u64 = row.iter().sum();
        if n == 0 {
            continue;
        }
        let _ = write!(o, "  {:<26} {:>6.1}% {:>9} {:>6}", a.name(), pct(n, c.wakeups), n, if a.pulls() { "this" } else { "prev" });
        for v in row.iter().take(acols.len()) {
            let _ = write!(o, " {v:>9}");
        }
        let _ = writeln!(o);
    }
    preempt_text(&mut o, c);
    let _ = writeln!(o, "\nselect_idle_sibling efficiency (Mel Gorman's counters; figures as in the SIS_UTIL postings)");
    let fast = c.sis_search - c.sis_domain_search;
    for (k, v) in [
        ("SIS Search", c.sis_search),
        ("SIS Domain Search", c.sis_domain_search),
        ("SIS Scanned", c.sis_scanned),
        ("SIS Domain Scanned", c.sis_scanned - fast),
        ("SIS Failures", c.sis_failed),
        ("SIS Recent Used Hit", c.sis_recent_hit),
        ("SIS Recent Used Miss", c.sis_recent_miss),
        ("SIS Core Search", c.sis_core_search),
        ("SIS Core Miss", c.sis_core_miss),
    ] {
        let _ = writeln!(o, "  {k:<26} {v:>12}");
    }
    for (k, v) in sis_figures(c) {
        let _ = writeln!(o, "  {k:<26} {v:>11.2}%");
    }
    let mut scans = Vec::new();
    for (k, b) in [Budget::None, Budget::SisProp, Budget::SisUtil].iter().enumerate() {
        if c.scans[k] > 0 {
            let mean = if k > 0 { format!(", mean budget {:.1}", c.budget_sum[k] as f64 / c.scans[k] as f64) } else { String::new() };
            scans.push(format!("{} {}{mean}", b.name(), c.scans[k]));
        }
    }
    let ends: Vec<String> = (1..6).filter(|&k| c.scan_ends[k] > 0).map(|k| format!("{} {}", END_NAMES[k], c.scan_ends[k])).collect();
    let _ = writeln!(o, "  domain scans: {}; ended: {}", or_none(&scans), or_none(&ends));
    let slow: Vec<String> = (1..4).filter(|&k| c.slow[k] > 0).map(|k| format!("{} {}", SLOW_NAMES[k], c.slow[k])).collect();
    let _ = writeln!(o, "  slow path (find_idlest_cpu): {}", or_none(&slow));

    let _ = writeln!(o, "\nload balancing ({} attempts of sched_balance_rq(); outcome per level and idle type)", c.balance_attempts);
    let _ = write!(o, "  {:<6} {:<8} {:>9}", "level", "idle", "attempts");
    for oc in &LbOutcome::ALL {
        let _ = write!(o, " {:>14}", oc.name());
    }
    let _ = writeln!(o);
    for (s, name) in x.level_names.iter().enumerate().take(MAX_LEVELS) {
        for (i, idle) in IDLE_NAMES.iter().enumerate() {
            let row = &c.lb[s][i];
            let n: u64 = row.iter().sum();
            if n == 0 {
                continue;
            }
            let _ = write!(o, "  {name:<6} {idle:<8} {n:>9}");
            for v in row {
                let _ = write!(o, " {v:>14}");
            }
            let _ = writeln!(o);
        }
    }
    let _ = write!(o, "  {:<6} {:>11} {:>7}", "level", "tasks moved", "kicks");
    for r in &Refusal::ALL {
        let _ = write!(o, " {:>10}", r.name());
    }
    let _ = writeln!(o, "   (refusals: tasks can_migrate_task()/detach_tasks() left)");
    for (s, name) in x.level_names.iter().enumerate().take(MAX_LEVELS) {
        if c.lb[s].iter().flatten().sum::<u64>() == 0 {
            continue;
        }
        let _ = write!(o, "  {name:<6} {:>11} {:>7}", c.lb_moved[s], c.lb_kicks[s]);
        for v in &c.lb_refused[s] {
            let _ = write!(o, " {v:>10}");
        }
        let _ = writeln!(o);
    }
    o
}

fn or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The wakeup-preemption table: every check of a woken task against the
/// CPU's current one, by the clause that decided it.
fn preempt_text(o: &mut String, c: &Counts) {
    let n: u64 = c.preempt.iter().sum();
    if n == 0 {
        return;
    }
    let pre: u64 = Preempt::ALL.iter().filter(|w| w.preempts()).map(|&w| c.preempt[w as usize]).sum();
    let busy = n - c.preempt[Preempt::IdleCpu as usize];
    let busy_pre = pre - c.preempt[Preempt::IdleCpu as usize];
    let _ = writeln!(
        o,
        "\nwakeup preemption ({n} checks; onto a running task {busy}, of which {busy_pre} preempted it: {:.1}%)",
        pct(busy_pre, busy)
    );
    let _ = writeln!(o, "  {:<20} {:>7} {:>9}  {:<8} kernel rule", "decision", "share", "count", "curr");
    for &w in &Preempt::ALL {
        let k = c.preempt[w as usize];
        if k == 0 {
            continue;
        }
        let _ = writeln!(
            o,
            "  {:<20} {:>6.1}% {:>9}  {:<8} {}",
            w.name(),
            pct(k, n),
            k,
            if w.preempts() { "resched" } else { "kept" },
            w.rule()
        );
    }
    let sleeps = c.sleeps[0] + c.sleeps[1];
    if sleeps > 0 {
        let _ = writeln!(
            o,
            "  task sleeps under DELAY_DEQUEUE {sleeps}, kept queued as delayed (not eligible) {} ({:.1}%)",
            c.sleeps[1],
            pct(c.sleeps[1], sleeps)
        );
    }
}

/// `--json` counts per path and per level.
pub fn report_json(x: &Explained) -> Value {
    let c = &x.counts;
    let cols = x.level_cols();
    let mut paths = Map::new();
    for &p in &Path::ALL {
        let row = &c.wake_paths[p as usize];
        let n: u64 = row.iter().sum();
        if n == 0 {
            continue;
        }
        let by: Map<String, Value> =
            cols.iter().enumerate().filter(|(k, _)| row[*k] > 0).map(|(k, n)| (n.clone(), json!(row[k]))).collect();
        paths.insert(p.name().into(), json!({"count": n, "by_level": by, "rule": p.rule()}));
    }
    let mut affine = Map::new();
    let acols: Vec<String> =
        std::iter::once("none".to_string()).chain(x.level_names.iter().take(MAX_LEVELS).map(|s| s.to_string())).collect();
    for &a in &AffineRule::ALL {
        let row = &c.affine[a as usize];
        let n: u64 = row.iter().sum();
        if n == 0 {
            continue;
        }
        let by: Map<String, Value> =
            acols.iter().enumerate().filter(|(k, _)| row[*k] > 0).map(|(k, n)| (n.clone(), json!(row[k]))).collect();
        affine.insert(a.name().into(), json!({"count": n, "by_level": by, "pulls": a.pulls()}));
    }
    let mut balance = Map::new();
    for (s, name) in x.level_names.iter().enumerate().take(MAX_LEVELS) {
        let mut lvl = Map::new();
        for (i, idle) in IDLE_NAMES.iter().enumerate() {
            let row = &c.lb[s][i];
            if row.iter().sum::<u64>() == 0 {
                continue;
            }
            let m: Map<String, Value> = LbOutcome::ALL.iter().map(|oc| (oc.name().to_string(), json!(row[*oc as usize]))).collect();
            lvl.insert(idle.to_string(), Value::Object(m));
        }
        if lvl.is_empty() {
            continue;
        }
        let refused: Map<String, Value> =
            Refusal::ALL.iter().map(|r| (r.name().to_string(), json!(c.lb_refused[s][*r as usize]))).collect();
        lvl.insert("refused".into(), Value::Object(refused));
        lvl.insert("tasks_moved".into(), json!(c.lb_moved[s]));
        lvl.insert("active_kicks".into(), json!(c.lb_kicks[s]));
        balance.insert(name.to_string(), Value::Object(lvl));
    }
    let figs: Map<String, Value> = sis_figures(c).iter().map(|(k, v)| (k.replace(' ', "_"), json!((v * 100.0).round() / 100.0))).collect();
    json!({
        "wakeups": c.wakeups,
        "forks": c.forks,
        "paths": paths,
        "wake_affine": affine,
        "wake_wide": c.wake_wide,
        "want_affine": c.want_affine,
        "wake_list": c.wake_list,
        "sis": {
            "sis_search": c.sis_search,
            "sis_domain_search": c.sis_domain_search,
            "sis_scanned": c.sis_scanned,
            "sis_failed": c.sis_failed,
            "sis_recent_hit": c.sis_recent_hit,
            "sis_recent_miss": c.sis_recent_miss,
            "sis_core_search": c.sis_core_search,
            "sis_core_miss": c.sis_core_miss,
            "figures_pct": figs,
        },
        "balance_attempts": c.balance_attempts,
        "balance": balance,
        "sleeps": { "dequeued": c.sleeps[0], "delayed": c.sleeps[1] },
        "wakeup_preemption": Preempt::ALL.iter().filter(|w| c.preempt[**w as usize] > 0).map(|w| (w.name().to_string(), json!(c.preempt[*w as usize]))).collect::<Map<String, Value>>(),
    })
}

/// `compare --explain`: the difference of B from A by path share, largest
/// change first, then both sides' tables.
pub fn compare_text(a_name: &str, b_name: &str, a: &Explained, b: &Explained) -> String {
    let mut o = String::new();
    let (sa, sb) = (a.shares(), b.shares());
    let mut diff: Vec<(Path, f64, f64)> = sa.iter().zip(&sb).map(|(&(p, x), &(_, y))| (p, x, y)).filter(|(_, x, y)| x + y > 0.0).collect();
    diff.sort_by(|u, v| (v.2 - v.1).abs().total_cmp(&(u.2 - u.1).abs()).then(u.0.cmp(&v.0)));
    let down = diff.iter().filter(|d| d.2 < d.1).max_by(|u, v| (u.1 - u.2).total_cmp(&(v.1 - v.2)).then(v.0.cmp(&u.0)));
    let up = diff.iter().filter(|d| d.2 > d.1).max_by(|u, v| (u.2 - u.1).total_cmp(&(v.2 - v.1)).then(v.0.cmp(&u.0)));
    match (down, up) {
        (Some(d), Some(u)) => {
            let moved = (d.1 - d.2).min(u.2 - u.1) * 100.0;
            let _ = writeln!(
                o,
                "{b_name} moves {moved:.1}% of wakeups from {} ({:.1}% -> {:.1}%) to {} ({:.1}% -> {:.1}%)",
                a.path_label(d.0),
                d.1 * 100.0,
                d.2 * 100.0,
                b.path_label(u.0),
                u.1 * 100.0,
                u.2 * 100.0
            );
        }
        _ => {
            let _ = writeln!(o, "{b_name} takes every wakeup path as often as {a_name}");
        }
    }
    let _ = writeln!(o, "\nwakeup paths by change in share ({} wakeups in A, {} in B)", a.counts.wakeups, b.counts.wakeups);
    let _ = writeln!(o, "  {:<18} {:>10} {:>10} {:>10}", "rule", a_name, b_name, "change");
    for (p, x, y) in &diff {
        let _ = writeln!(o, "  {:<18} {:>9.1}% {:>9.1}% {:>+9.1}pp", p.name(), x * 100.0, y * 100.0, (y - x) * 100.0);
    }
    let _ = writeln!(o, "\nselect_idle_sibling figures");
    for ((k, x), (_, y)) in sis_figures(&a.counts).iter().zip(sis_figures(&b.counts).iter()) {
        let _ = writeln!(o, "  {k:<26} {x:>9.2}% {y:>9.2}% {:>+9.2}pp", y - x);
    }
    let _ = writeln!(o, "\n=== A: {a_name} ===\n{}", report_text(a));
    let _ = writeln!(o, "=== B: {b_name} ===\n{}", report_text(b));
    o
}

/// Perfetto track-event field numbers (google/perfetto protos:
/// trace_packet.proto, track_descriptor.proto, track_event.proto,
/// debug_annotation.proto).
mod te {
    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQ_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const TD_UUID: u32 = 1;
    pub const TD_NAME: u32 = 2;
    pub const EV_DEBUG_ANNOTATIONS: u32 = 4;
    pub const EV_TYPE: u32 = 9;
    pub const EV_TRACK_UUID: u32 = 11;
    pub const EV_NAME: u32 = 23;
    pub const TYPE_INSTANT: u64 = 3;
    pub const DA_INT: u32 = 4;
    pub const DA_STRING: u32 = 6;
    pub const DA_NAME: u32 = 10;
}

/// The decision records' packet sequence (the ftrace packets use 1).
const EXPLAIN_SEQ: u64 = 2;
const WAKE_TRACK: u64 = 0x5c4e_d1ab_0000_0001;
const BALANCE_TRACK: u64 = 0x5c4e_d1ab_0000_0002;

enum Arg<'a> {
    I(i64),
    S(&'a str),
}

fn instant(ts: u64, track: u64, name: &str, args: &[(&str, Arg)]) -> crate::trace::proto::Msg {
    let mut p = crate::trace::proto::Msg::new();
    p.uint(te::PACKET_TIMESTAMP, ts).uint(te::PACKET_SEQ_ID, EXPLAIN_SEQ).with(te::PACKET_TRACK_EVENT, |e| {
        e.uint(te::EV_TYPE, te::TYPE_INSTANT).uint(te::EV_TRACK_UUID, track).string(te::EV_NAME, name);
        for (k, v) in args {
            e.with(te::EV_DEBUG_ANNOTATIONS, |d| {
                d.string(te::DA_NAME, k);
                match v {
                    Arg::I(i) => d.int(te::DA_INT, *i),
                    Arg::S(s) => d.string(te::DA_STRING, s),
                };
            });
        }
    });
    p
}

/// Append the decision records to a Perfetto trace as instant events on two
/// tracks, "wakeup decisions" and "load balance", with every field as an
/// argument (click an event in the Perfetto UI to read why).
pub fn write_perfetto(
    records: &[Record],
    tr: &schedlab_engine::trace::Trace,
    x: &Explained,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    use crate::trace::proto::Msg;
    let mut put = |p: &Msg| -> std::io::Result<()> {
        let mut rec = Msg::new();
        rec.msg(1, p);
        out.write_all(&rec.buf)
    };
    for (i, (uuid, name)) in [(WAKE_TRACK, "wakeup decisions"), (BALANCE_TRACK, "load balance")].into_iter().enumerate() {
        let mut p = Msg::new();
        p.uint(te::PACKET_SEQ_ID, EXPLAIN_SEQ);
        if i == 0 {
            p.uint(te::PACKET_SEQUENCE_FLAGS, te::SEQ_INCREMENTAL_STATE_CLEARED);
        }
        p.with(te::PACKET_TRACK_DESCRIPTOR, |d| {
            d.uint(te::TD_UUID, uuid).string(te::TD_NAME, name);
        });
        put(&p)?;
    }
    let name_of = |cpu: u16, l: u8| -> String {
        match x.slot.get(cpu as usize).and_then(|s| s.get(l as usize)) {
            Some(&k) if l != schedlab_kernel::explain::NO_LEVEL => x.level_names.get(k as usize).unwrap_or(&"?").to_string(),
            _ => "-".into(),
        }
    };
    let slot_name = |k: u8| -> String {
        if k == schedlab_kernel::explain::NO_LEVEL {
            "same-cpu".into()
        } else {
            x.level_names.get(k as usize).unwrap_or(&"?").to_string()
        }
    };
    let comm = |t: u32| -> String {
        if t == u32::MAX || t as usize >= tr.tasks.len() {
            "-".into()
        } else {
            format!("{}/{}", tr.tasks[t as usize].comm, tr.tasks[t as usize].pid)
        }
    };
    for r in records {
        match r {
            Record::Wake(w) => {
                let name = format!("{} -> cpu{}: {}", comm(w.wakee), w.cpu, w.path.name());
                let kind = match w.kind {
                    schedlab_kernel::explain::WakeKind::Wakeup => "ttwu",
                    schedlab_kernel::explain::WakeKind::Fork => "fork",
                };
                let (wakee, waker) = (comm(w.wakee), comm(w.waker));
                let (al, sl, share) = (name_of(w.this_cpu, w.affine_level), name_of(w.this_cpu, w.slow_level), slot_name(w.share_level));
                let args = [
                    ("kind", Arg::S(kind)),
                    ("wakee", Arg::S(&wakee)),
                    ("waker", Arg::S(&waker)),
                    ("prev_cpu", Arg::I(w.prev_cpu as i64)),
                    ("this_cpu", Arg::I(w.this_cpu as i64)),
                    ("waker_flips", Arg::I(w.waker_flips as i64)),
                    ("wakee_flips", Arg::I(w.wakee_flips as i64)),
                    ("wake_wide", Arg::I(w.wake_wide as i64)),
                    ("want_affine", Arg::I(w.want_affine as i64)),
                    ("affine_level", Arg::S(&al)),
                    ("wake_affine", Arg::S(w.affine.name())),
                    ("this_load", Arg::I(w.this_load)),
                    ("prev_load", Arg::I(w.prev_load)),
                    ("target", Arg::I(w.target as i64)),
                    ("path", Arg::S(w.path.rule())),
                    ("budget", Arg::S(w.budget.name())),
                    ("nr", Arg::I(if w.nr == u32::MAX { -1 } else { w.nr as i64 })),
                    ("scan_end", Arg::S(END_NAMES[w.scan_end as usize])),
                    ("domain_scanned", Arg::I(w.domain_scanned as i64)),
                    ("slow_level", Arg::S(&sl)),
                    ("slow_path", Arg::S(SLOW_NAMES[w.slow_why as usize])),
                    ("wake_list", Arg::I(w.wake_list as i64)),
                    ("cpu", Arg::I(w.cpu as i64)),
                    ("share_level", Arg::S(&share)),
                ];
                put(&instant(w.now, WAKE_TRACK, &name, &args))?;
            }
            Record::Balance(b) => {
                let level = name_of(b.cpu, b.level);
                let name = format!("cpu{} {} {}: {}", b.cpu, level, IDLE_NAMES[b.idle as usize], b.outcome.name());
                let mut args = vec![
                    ("cpu", Arg::I(b.cpu as i64)),
                    ("level", Arg::S(&level)),
                    ("idle", Arg::S(IDLE_NAMES[b.idle as usize])),
                    ("local_group", Arg::S(schedlab_kernel::explain::GROUP_TYPE_NAMES[b.local_type as usize])),
                    ("busiest_group_type", Arg::S(schedlab_kernel::explain::GROUP_TYPE_NAMES[b.busiest_type as usize])),
                    ("busiest_group_first_cpu", Arg::I(if b.busiest_group == u16::MAX { -1 } else { b.busiest_group as i64 })),
                    ("busiest_rq", Arg::I(if b.busiest_rq == u16::MAX { -1 } else { b.busiest_rq as i64 })),
                    ("migration_type", Arg::S(schedlab_kernel::explain::MIGRATION_NAMES[b.migration as usize])),
                    ("imbalance", Arg::I(b.imbalance)),
                    ("moved", Arg::I(b.moved as i64)),
                    ("active_kick", Arg::I(b.active_kick as i64)),
                    ("outcome", Arg::S(b.outcome.name())),
                ];
                for (k, r) in Refusal::ALL.iter().enumerate() {
                    args.push((r.name(), Arg::I(b.refused[k] as i64)));
                }
                put(&instant(b.now, BALANCE_TRACK, &name, &args))?;
            }
        }
    }
    Ok(())
}

/// Run `prep` with seeds seed..seed+runs and decision recording; the counts summed.
pub fn run_explained_seeds(prep: &Prepared, runs: u64) -> Explained {
    let mut sum = Explained::default();
    for k in 0..runs {
        let cfg = schedlab_engine::SimConfig { seed: prep.cfg.seed.wrapping_add(k), ..prep.cfg.clone() };
        let (_, x, _) = run_explained(prep, &cfg, false);
        sum.add(&x);
    }
    sum
}

/// `compare --explain`: both sides of every point, each over the compare's seeds, run on two threads.
pub fn compare_explain(points: &[(String, [String; 2], [&Prepared; 2])], runs: u64) -> anyhow::Result<String> {
    let mut o = String::new();
    for (title, names, preps) in points {
        let (a, b) = std::thread::scope(|s| {
            let ha = s.spawn(|| run_explained_seeds(preps[0], runs));
            let b = run_explained_seeds(preps[1], runs);
            (ha.join(), b)
        });
        let a = a.map_err(|_| anyhow::anyhow!("an explained run failed (internal error)"))?;
        let _ = writeln!(o, "\nplacement decisions: {title} (A = {}, B = {}; {runs} run(s) each, counts summed)", names[0], names[1]);
        o.push_str(&compare_text(&names[0], &names[1], &a, &b));
    }
    Ok(o)
}
