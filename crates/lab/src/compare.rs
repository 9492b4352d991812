//! Comparisons: side A against side B over a one-key parameter matrix, R
//! seeded repetitions per side and point, spread over worker threads; the
//! result is data (`Report`): per-run records and per-point statistics
//! (means as mmtests takes them, coefficient of variation, Welch's t-test).
//! `Report` serialises once (`Report::to_json`): that document is what
//! `schedlab compare --json` writes and what the Python package reads.
//! Renderers (text tables, mmtests/LKML, HTML, CSV) live in the front ends.

use crate::scenario::{prepare, Prepared};
use crate::spec::{CompareSpec, ScenarioSpec};
use crate::stats;
use anyhow::{bail, Context, Result};
use schedlab_engine::{RunResult, SimConfig};
use schedlab_kernel::stats::LevelStats;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One side of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub kernel: String,
    pub patch: Option<String>,
    pub features: Option<String>,
    /// The machine-model switches (`--machine-model`).
    #[serde(rename = "machine_model")]
    pub model: Option<String>,
}

impl Side {
    /// mmtests' second header line: the configuration on top of the kernel.
    pub fn config(&self) -> String {
        let parts: Vec<&str> = [&self.patch, &self.features, &self.model].iter().filter_map(|o| o.as_deref()).collect();
        if parts.is_empty() {
            "base".into()
        } else {
            parts.join("+")
        }
    }
}

/// B's value: A's when not given, nothing when given as `none` or empty.
fn inherit(b: &Option<String>, a: &Option<String>) -> Option<String> {
    match b.as_deref().map(str::trim) {
        None => a.clone(),
        Some("") | Some("none") => None,
        Some(v) => Some(v.to_string()),
    }
}

/// The parameter matrix: fixed `key=value` pairs and at most one swept key.
#[derive(Debug, PartialEq)]
pub struct Matrix {
    pub fixed: Vec<(String, String)>,
    pub swept: Option<(String, Vec<String>)>,
}

/// One `--set` entry: an optional `WORKLOAD:` scope, the key and its values.
type Entry = (Option<String>, String, Vec<String>);

/// Splits `--set` strings into entries; a token without `=` is one more value of the key before it.
fn parse_entries(sets: &[String]) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    for tok in sets.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
        match tok.split_once('=') {
            Some((k, v)) => {
                let (k, v) = (k.trim(), v.trim());
                let (scope, k) = match k.split_once(':') {
                    Some((w, k)) => (Some(w.trim().to_string()), k.trim()),
                    None => (None, k),
                };
                if k.is_empty() || v.is_empty() || scope.as_deref() == Some("") {
                    bail!("--set expects [WORKLOAD:]key=value, got {tok:?}; e.g. --set clients=1,2,4,mode=ro or --set pipe:loops=2000");
                }
                entries.push((scope, k.to_string(), vec![v.to_string()]));
            }
            None => match entries.last_mut() {
                Some((_, _, vals)) => vals.push(tok.to_string()),
                None => bail!("--set value {tok:?} has no key; write key=v1,v2,... e.g. --set clients=1,2,4"),
            },
        }
    }
    Ok(entries)
}

impl Matrix {
    /// The matrix of `--set` strings without workload scopes (one workload).
    #[cfg(test)]
    pub fn parse(sets: &[String]) -> Result<Matrix> {
        Matrix::of(&parse_entries(sets)?, None)
    }

    /// The matrix for `workload`: unscoped entries and those scoped to it
    /// (all entries when `workload` is None).
    fn of(all: &[Entry], workload: Option<&str>) -> Result<Matrix> {
        let mine: Vec<&Entry> =
            all.iter().filter(|(scope, _, _)| workload.is_none() || scope.is_none() || scope.as_deref() == workload).collect();
        // A key once per scope; a WORKLOAD:key entry overrides the plain key for that workload.
        for (i, (scope, k, _)) in mine.iter().enumerate() {
            if mine[..i].iter().any(|(s, k2, _)| s == scope && k2 == k) {
                let at = scope.as_ref().map(|s| format!("{s}:")).unwrap_or_default();
                bail!("--set gives {at}{k} twice; give it once (several values: {at}{k}=v1,v2,...)");
            }
        }
        let entries: Vec<(String, Vec<String>)> = mine
            .iter()
            .filter(|(scope, k, _)| scope.is_some() || !mine.iter().any(|(s, k2, _)| s.is_some() && k2 == k))
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect();
        let swept: Vec<&(String, Vec<String>)> = entries.iter().filter(|(_, v)| v.len() > 1).collect();
        if swept.len() > 1 {
            bail!(
                "--set sweeps {} keys ({}){}; compare sweeps at most one key per workload: keep one key with several values and fix the others",
                swept.len(),
                swept.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "),
                workload.map(|w| format!(" for {w}")).unwrap_or_default()
            );
        }
        let swept = swept.first().map(|(k, v)| (k.clone(), (*v).clone()));
        if let Some((k, vals)) = &swept {
            if let Some(d) = vals.iter().enumerate().find(|(i, v)| vals[..*i].contains(v)) {
                bail!("--set {k} lists the value {} twice", d.1);
            }
        }
        let fixed = entries.into_iter().filter(|(_, v)| v.len() == 1).map(|(k, mut v)| (k, v.remove(0))).collect();
        Ok(Matrix { fixed, swept })
    }

    /// (label, --set string) per point, in the order given.
    fn points(&self) -> Vec<(String, String)> {
        let fixed: Vec<String> = self.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match &self.swept {
            None => vec![("default".into(), fixed.join(","))],
            Some((k, vals)) => vals
                .iter()
                .map(|v| {
                    let mut s = fixed.clone();
                    s.push(format!("{k}={v}"));
                    (format!("{k}-{v}"), s.join(","))
                })
                .collect(),
        }
    }
}

/// What one run contributes to the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// The metric (not valid when `missing` is set).
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub metric: f64,
    /// Why this run has no valid metric (truncated: its end was never
    /// reached, or no latency samples); such runs are left out of the statistics.
    pub missing: Option<String>,
    pub voluntary: u64,
    pub involuntary: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    /// ttwu_move_affine summed over the levels.
    pub ttwu_move_affine: u64,
    /// schedstat per domain level, bottom-up (the engine's `RunResult::levels`).
    pub levels: Vec<LevelStats>,
    /// Run delay (runnable -> running) p50, p90, p99 and max, ns (`RUN_DELAYS`;
    /// serialised as `{"p50": ..., "max": ...}`, as `RunReport::run_delay_ns`).
    #[serde(with = "run_delay_by_name")]
    pub run_delay_ns: [u64; 4],
    pub simulated_ns: u64,
    /// Machine-model counters, in the order of `COUNTERS` (serialised as an
    /// object keyed by those names).
    #[serde(with = "counters_by_name")]
    pub counters: [u64; 8],
    /// Per cpu cgroup with memory: the run's NUMA tables (NUMA machines,
    /// workloads that declare memory).
    pub numa: Option<Vec<NumaRec>>,
}

/// One cgroup's NUMA figures of a run, as the cling patch's author printed them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NumaRec {
    pub group: String,
    /// CPU use per node, % of one CPU.
    pub cpu_pct: Vec<f64>,
    /// Share of the group's memory on each node, %.
    pub mem_pct: Vec<f64>,
    pub hint_faults: u64,
    pub pages_migrated: u64,
    pub task_migrated: u64,
    pub task_swapped: u64,
}

/// Names of `Rec::counters` (RunResult fields).
pub const COUNTERS: [&str; 8] =
    ["l2_misses", "llc_misses", "dram_bytes", "remote_bytes", "rq_lock_wait_ns", "idle_exit_ns", "mm_switches", "group_switches"];

/// Names of `Rec::run_delay_ns`.
pub const RUN_DELAYS: [&str; 4] = ["p50", "p90", "p99", "max"];

/// An array of counters as a JSON object keyed by `names` (every name once, no other).
fn ser_named<S: serde::Serializer, const N: usize>(names: &[&str; N], v: &[u64; N], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(N))?;
    for (k, x) in names.iter().zip(v) {
        m.serialize_entry(k, x)?;
    }
    m.end()
}

fn de_named<'de, D: serde::Deserializer<'de>, const N: usize>(names: &[&str; N], d: D) -> Result<[u64; N], D::Error> {
    use serde::de::Error;
    let m = std::collections::BTreeMap::<String, u64>::deserialize(d)?;
    if let Some(k) = m.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(D::Error::custom(format!("unknown counter {k:?}; expected {}", names.join(", "))));
    }
    let mut out = [0; N];
    for (o, k) in out.iter_mut().zip(names) {
        *o = *m.get(*k).ok_or_else(|| D::Error::custom(format!("missing counter {k:?}")))?;
    }
    Ok(out)
}

mod counters_by_name {
    pub fn serialize<S: serde::Serializer>(v: &[u64; 8], s: S) -> Result<S::Ok, S::Error> {
        super::ser_named(&super::COUNTERS, v, s)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u64; 8], D::Error> {
        super::de_named(&super::COUNTERS, d)
    }
}

mod run_delay_by_name {
    pub fn serialize<S: serde::Serializer>(v: &[u64; 4], s: S) -> Result<S::Ok, S::Error> {
        super::ser_named(&super::RUN_DELAYS, v, s)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u64; 4], D::Error> {
        super::de_named(&super::RUN_DELAYS, d)
    }
}

impl Rec {
    fn from(r: &RunResult) -> Rec {
        Rec {
            metric: r.metric_value,
            missing: r.metric_missing.clone(),
            voluntary: r.voluntary_switches,
            involuntary: r.involuntary_switches,
            migrations: r.migrations,
            wakeups: r.wakeups,
            ttwu_count: r.ttwu_count,
            ttwu_local: r.ttwu_local,
            ttwu_move_affine: r.levels.iter().map(|l| l.ttwu_move_affine).sum(),
            levels: r.levels.clone(),
            run_delay_ns: [r.run_delay_p50, r.run_delay_p90, r.run_delay_p99, r.run_delay_max],
            simulated_ns: r.simulated_ns,
            counters: [
                r.l2_misses,
                r.llc_misses,
                r.dram_bytes,
                r.remote_bytes,
                r.rq_lock_wait_ns,
                r.idle_exit_ns,
                r.mm_switches,
                r.group_switches,
            ],
            numa: r.numa.as_ref().map(|n| {
                n.groups
                    .iter()
                    .map(|g| NumaRec {
                        group: g.name.clone(),
                        cpu_pct: g.cpu_pct.clone(),
                        mem_pct: g.mem_pct.clone(),
                        hint_faults: g.counters.hint_faults,
                        pages_migrated: g.counters.pages_migrated,
                        task_migrated: g.counters.task_migrated,
                        task_swapped: g.counters.task_swapped,
                    })
                    .collect()
            }),
        }
    }
    pub fn affine_share(&self) -> f64 {
        if self.ttwu_count == 0 {
            0.0
        } else {
            self.ttwu_move_affine as f64 / self.ttwu_count as f64
        }
    }
}

/// "Hmean" or "Amean": the mean mmtests takes of a metric (harmonic for
/// rates, higher is better; arithmetic for times).
pub fn mean_name(info: &MetricInfo) -> &'static str {
    if info.higher_is_better {
        "Hmean"
    } else {
        "Amean"
    }
}

/// The metric's identity, taken from the first run of a table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// One summary row (one matrix point). Means over the valid runs of each
/// side: the metric's as mmtests takes it (`mean_name`), the others arithmetic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `key-value` of the swept key, or `default`.
    pub label: String,
    /// The swept key's value (None without a swept key).
    pub value: Option<String>,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub a_mean: f64,
    /// Coefficient of variation, %.
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub a_cv: f64,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub b_mean: f64,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub b_cv: f64,
    /// mmtests' pdiff/pndiff: positive is an improvement.
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub change_pct: f64,
    /// Welch's t-test of A against B (None with fewer than two valid runs a side).
    pub welch: Option<stats::Welch>,
    /// Welch's p < 0.05 (two-sided).
    pub significant: bool,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub affine_a: f64,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub affine_b: f64,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub migrations_a: f64,
    #[serde(deserialize_with = "stats::f64_or_nan")]
    pub migrations_b: f64,
    /// Mean mm switches and cross-task-group switches per side.
    pub mm_switches: [f64; 2],
    pub group_switches: [f64; 2],
}

/// One (machine, workload) of a comparison, planned: its matrix and a prepared run per (point, side).
pub struct Cell {
    pub matrix: Matrix,
    pub points: Vec<(String, String)>,
    /// Index `point * 2 + side`.
    pub preps: Vec<Prepared>,
}

/// A validated comparison, everything built, nothing run yet.
pub struct Plan {
    pub spec: CompareSpec,
    pub sides: [Side; 2],
    pub cells: Vec<Cell>,
}

impl Plan {
    /// Every (machine, workload, point) with its two prepared sides and their
    /// descriptions (`compare --explain`).
    pub fn explain_points(&self) -> Vec<(String, [String; 2], [&Prepared; 2])> {
        let names = [describe(&self.sides[0]), describe(&self.sides[1])];
        let mut out = Vec::new();
        for c in &self.cells {
            for (i, (label, _)) in c.points.iter().enumerate() {
                let p = &c.preps[2 * i];
                let title = format!("{} on {}, {label}", p.workload.name, p.machine.name);
                out.push((title, names.clone(), [p, &c.preps[2 * i + 1]]));
            }
        }
        out
    }

    /// Simulation runs this comparison makes.
    pub fn nr_runs(&self) -> usize {
        self.cells.iter().map(|c| c.preps.len()).sum::<usize>() * self.spec.runs as usize
    }
}

/// One table of a report: one (machine, workload) with the swept parameter as rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub machine: String,
    pub nr_cpus: usize,
    pub workload: String,
    pub duration_ns: Option<u64>,
    pub info: MetricInfo,
    pub param: Option<String>,
    pub fixed: Vec<(String, String)>,
    /// (label, `key=value,...` parameters) per point, in order.
    pub points: Vec<(String, String)>,
    pub rows: Vec<Row>,
    /// Index `(point * 2 + side) * runs + seed - 1`.
    pub recs: Vec<Rec>,
}

impl Table {
    /// Per point, side and cgroup: the NUMA figures averaged over the valid
    /// runs (None when no run of the table has NUMA tables).
    pub fn numa_means(&self, runs: usize) -> Option<Vec<[Vec<NumaRec>; 2]>> {
        if !self.recs.iter().any(|x| x.numa.is_some()) {
            return None;
        }
        let avg = |v: &[Rec]| -> Vec<NumaRec> {
            let with: Vec<&Vec<NumaRec>> = v.iter().filter_map(|x| x.numa.as_ref()).collect();
            let Some(first) = with.first() else { return Vec::new() };
            let n = with.len() as f64;
            first
                .iter()
                .enumerate()
                .map(|(gi, g)| {
                    let col = |f: &dyn Fn(&NumaRec) -> f64| with.iter().filter_map(|r| r.get(gi)).map(f).sum::<f64>() / n;
                    let vec = |f: &dyn Fn(&NumaRec) -> &Vec<f64>| {
                        (0..f(g).len()).map(|k| col(&|r: &NumaRec| f(r).get(k).copied().unwrap_or(0.0))).collect()
                    };
                    NumaRec {
                        group: g.group.clone(),
                        cpu_pct: vec(&|r: &NumaRec| &r.cpu_pct),
                        mem_pct: vec(&|r: &NumaRec| &r.mem_pct),
                        hint_faults: col(&|r: &NumaRec| r.hint_faults as f64).round() as u64,
                        pages_migrated: col(&|r: &NumaRec| r.pages_migrated as f64).round() as u64,
                        task_migrated: col(&|r: &NumaRec| r.task_migrated as f64).round() as u64,
                        task_swapped: col(&|r: &NumaRec| r.task_swapped as f64).round() as u64,
                    }
                })
                .collect()
        };
        Some((0..self.points.len()).map(|pi| [0, 1].map(|si| avg(&self.runs_of(pi, si, runs)))).collect())
    }

    /// The valid runs of one point and side, seeds in order (truncated runs
    /// are left out).
    pub fn runs_of(&self, point: usize, side: usize, runs: usize) -> Vec<Rec> {
        let at = (point * 2 + side) * runs;
        self.recs[at..at + runs].iter().filter(|x| x.missing.is_none()).cloned().collect()
    }
}

/// What a comparison produced: the sides, the repetitions, and one table
/// per (machine, workload) with every run's record and the summary rows.
/// Its one serialisation (`to_json`) is the `schedlab compare --json`
/// document and what the Python package's `compare` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// A (baseline) and B.
    pub sides: [Side; 2],
    /// Runs per side and point (seeds 1..=runs).
    pub runs: usize,
    pub tables: Vec<Table>,
}

impl Report {
    /// The report as JSON, keys sorted (as every schedlab JSON document);
    /// numbers that are not finite (an infinite t) are `null`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a compare report always serialises")
    }

    /// "A: v3.10   B: v3.11 --features NO_X"
    pub fn side_line(&self, si: usize) -> String {
        describe(&self.sides[si])
    }
}

/// A comma list or repeated option, trimmed, each name once.
fn names(given: &[String], opt: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for n in given.iter().flat_map(|s| s.split(',')).map(str::trim) {
        if n.is_empty() {
            bail!("--{opt} has an empty name in {:?}; give NAME or NAME1,NAME2", given.join(","));
        }
        if out.iter().any(|o| o == n) {
            bail!("--{opt} lists {n} twice");
        }
        out.push(n.to_string());
    }
    if out.is_empty() {
        bail!("--{opt} needs at least one name");
    }
    Ok(out)
}

/// Validates the arguments and builds every (machine, workload, point, side) up front: errors come out before any run.
pub fn plan(args: &CompareSpec) -> Result<Plan> {
    if args.runs == 0 {
        bail!("--runs must be at least 1 (2 or more for a significance test)");
    }
    if args.runs > 1000 {
        bail!("--runs {} is more than 1000 repetitions; use fewer", args.runs);
    }
    if args.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let machines = names(&args.machines, "machine")?;
    let workloads = names(&args.workloads, "workload")?;
    let entries = parse_entries(&args.set)?;
    if let Some((Some(scope), k, _)) = entries.iter().find(|(s, _, _)| s.as_ref().is_some_and(|s| !workloads.contains(s))) {
        bail!("--set {scope}:{k}=... names the workload {scope}, which is not among --workload {}", workloads.join(","));
    }
    let a =
        Side { kernel: args.kernel.clone(), patch: args.patch.clone(), features: args.features.clone(), model: args.machine_model.clone() };
    let b = Side {
        kernel: args.vs.clone().unwrap_or_else(|| args.kernel.clone()),
        patch: inherit(&args.patch_b, &args.patch),
        features: inherit(&args.features_b, &args.features),
        model: inherit(&args.machine_model_b, &args.machine_model),
    };
    let sides = [a, b];
    let several = machines.len() * workloads.len() > 1;

    let mut cells = Vec::with_capacity(machines.len() * workloads.len());
    for machine in &machines {
        for workload in &workloads {
            let matrix = Matrix::of(&entries, Some(workload))?;
            let points = matrix.points();
            let mut preps: Vec<Prepared> = Vec::with_capacity(points.len() * 2);
            for (label, set) in &points {
                for (si, side) in sides.iter().enumerate() {
                    let spec = ScenarioSpec {
                        machine: machine.clone(),
                        kernel: side.kernel.clone(),
                        features: side.features.clone(),
                        patch: side.patch.clone(),
                        workload: workload.clone(),
                        seed: 1,
                        duration: args.duration.clone(),
                        machine_model: side.model.clone(),
                        ..ScenarioSpec::default()
                    };
                    let at = if several { format!("{workload} on {machine}, ") } else { String::new() };
                    let sets = if set.is_empty() { vec![] } else { vec![set.clone()] };
                    let mut p = spec
                        .with_sets(&sets)
                        .and_then(|spec| prepare(&spec))
                        .with_context(|| format!("{at}side {} ({}), point {label}", ["A", "B"][si], side.kernel))?;
                    // --duration applies to time-bounded workloads only: a
                    // run-to-completion workload cut short would have no result.
                    if !p.workload.time_bounded {
                        p.cfg.duration_ns = None;
                    }
                    preps.push(p);
                }
            }
            cells.push(Cell { matrix, points, preps });
        }
    }
    Ok(Plan { spec: args.clone(), sides, cells })
}

/// Runs a planned comparison, reporting progress; `warn` gets one line per
/// truncated run (left out of the statistics). With `stop` set from another
/// thread the runs end early and this returns an "interrupted" error.
pub fn execute(plan: &Plan, progress: &mut Progress, warn: &mut dyn FnMut(&str), stop: Option<&AtomicBool>) -> Result<Report> {
    let Plan { spec: args, sides, cells } = plan;
    let r = args.runs as usize;
    let all: Vec<&Prepared> = cells.iter().flat_map(|c| c.preps.iter()).collect();
    let n = all.len() * r;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, n.max(1));
    let mut outs = run_all_stoppable(&all, r, jobs, progress, stop)?.into_iter();

    let mut tables = Vec::with_capacity(cells.len());
    for cell in cells {
        let mut info = None;
        let mut recs = Vec::with_capacity(cell.preps.len() * r);
        for (rec, id) in outs.by_ref().take(cell.preps.len() * r) {
            if info.is_none() {
                info = id;
            }
            recs.push(rec);
        }
        let Some(info) = info else { bail!("internal error: a run result is missing") };
        let p0 = &cell.preps[0];
        for (i, x) in recs.iter().enumerate() {
            if let Some(why) = &x.missing {
                let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
                warn(&format!(
                    "schedlab: warning: {} on {}, side {} ({}), point {}, seed {}: run truncated, left out of the statistics: {why}",
                    p0.workload.name,
                    p0.machine.name,
                    ["A", "B"][si],
                    sides[si].kernel,
                    cell.points[pi].0,
                    k + 1
                ));
            }
        }
        for (pi, (label, _)) in cell.points.iter().enumerate() {
            for si in 0..2 {
                if recs[(pi * 2 + si) * r..(pi * 2 + si + 1) * r].iter().all(|x| x.missing.is_some()) {
                    bail!(
                        "{} on {}, side {} ({}), point {label}: every run was truncated (see the warnings above); nothing to compare",
                        p0.workload.name,
                        p0.machine.name,
                        ["A", "B"][si],
                        sides[si].kernel
                    );
                }
            }
        }
        tables.push(summarise(cell, info, recs, r));
    }

    Ok(Report { sides: sides.clone(), runs: r, tables })
}

/// Summary rows of one (machine, workload): means, spread, change and Welch's t-test per point.
fn summarise(cell: &Cell, info: MetricInfo, recs: Vec<Rec>, r: usize) -> Table {
    // Truncated runs (no valid metric) are left out of every statistic.
    let valid =
        |pi: usize, si: usize| recs[(pi * 2 + si) * r..(pi * 2 + si + 1) * r].iter().filter(|x| x.missing.is_none()).collect::<Vec<&Rec>>();
    let mut rows = Vec::with_capacity(cell.points.len());
    for (pi, (label, _)) in cell.points.iter().enumerate() {
        let vals = |si: usize| valid(pi, si).iter().map(|x| x.metric).collect::<Vec<f64>>();
        let mean_of = |si: usize, f: &dyn Fn(&Rec) -> f64| stats::amean(&valid(pi, si).iter().map(|x| f(x)).collect::<Vec<_>>());
        let (va, vb) = (vals(0), vals(1));
        let m = |v: &[f64]| if info.higher_is_better { stats::hmean(v) } else { stats::amean(v) };
        let (am, bm) = (m(&va), m(&vb));
        let welch = stats::welch(&va, &vb);
        rows.push(Row {
            label: label.clone(),
            value: cell.matrix.swept.as_ref().map(|(_, v)| v[pi].clone()),
            a_mean: am,
            a_cv: stats::cv_pct(&va),
            b_mean: bm,
            b_cv: stats::cv_pct(&vb),
            change_pct: pct_change(am, bm, info.higher_is_better),
            welch,
            significant: welch.is_some_and(|w| w.p < 0.05),
            affine_a: mean_of(0, &|x| x.affine_share()),
            affine_b: mean_of(1, &|x| x.affine_share()),
            migrations_a: mean_of(0, &|x| x.migrations as f64),
            migrations_b: mean_of(1, &|x| x.migrations as f64),
            mm_switches: [mean_of(0, &|x| x.counters[6] as f64), mean_of(1, &|x| x.counters[6] as f64)],
            group_switches: [mean_of(0, &|x| x.counters[7] as f64), mean_of(1, &|x| x.counters[7] as f64)],
        });
    }
    let p0 = &cell.preps[0];
    Table {
        machine: p0.machine.name.clone(),
        nr_cpus: p0.machine.topology.nr_cpus(),
        workload: p0.workload.name.clone(),
        duration_ns: p0.cfg.duration_ns,
        info,
        param: cell.matrix.swept.as_ref().map(|(k, _)| k.clone()),
        fixed: cell.matrix.fixed.clone(),
        points: cell.points.clone(),
        rows,
        recs,
    }
}

/// Terminal progress for long comparisons: "runs done/total, elapsed, ETA" on
/// stderr, redrawn in place; silent unless stderr is a terminal. Never touches
/// stdout or results.
pub struct Progress {
    on: bool,
    total: usize,
    done: usize,
    start: std::time::Instant,
    drawn: bool,
}

impl Progress {
    /// Progress over `total` runs, shown when stderr is a terminal.
    pub fn new(total: usize) -> Progress {
        Progress { on: std::io::stderr().is_terminal(), total, done: 0, start: std::time::Instant::now(), drawn: false }
    }
    /// Progress that is never drawn (library callers, tests).
    pub fn quiet(total: usize) -> Progress {
        Progress { on: false, total, done: 0, start: std::time::Instant::now(), drawn: false }
    }
    fn draw(&mut self, done: usize) {
        let line = progress_line(done, self.total, self.start.elapsed().as_secs_f64());
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{line}\x1b[K");
        let _ = e.flush();
        self.drawn = true;
    }
    /// Clears the progress line (if one was drawn).
    pub fn finish(&mut self) {
        if self.drawn {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
            self.drawn = false;
        }
    }
}

/// "schedlab: runs 12/48, elapsed 3.0s, ETA 9.0s"
fn progress_line(done: usize, total: usize, elapsed_s: f64) -> String {
    let eta = if done == 0 { "?".to_string() } else { fmt_secs(elapsed_s / done as f64 * (total - done.min(total)) as f64) };
    format!("schedlab: runs {done}/{total}, elapsed {}, ETA {eta}", fmt_secs(elapsed_s))
}

fn fmt_secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let m = (s / 60.0).floor();
        format!("{m:.0}m{:02.0}s", (s - m * 60.0).floor())
    }
}

/// Runs every (prepared run, seed) on `jobs` threads; results come back in index order,
/// each first-seed run with its metric identity. Run k (0-based) of a prepared run uses
/// seed `cfg.seed + k` (compare prepares with seed 1: seeds 1..=R).
pub fn run_all(preps: &[&Prepared], r: usize, jobs: usize, progress: &mut Progress) -> Result<Vec<(Rec, Option<MetricInfo>)>> {
    run_all_stoppable(preps, r, jobs, progress, None)
}

/// `run_all` that ends early with an "interrupted" error once `stop` is set.
pub fn run_all_stoppable(
    preps: &[&Prepared],
    r: usize,
    jobs: usize,
    progress: &mut Progress,
    stop: Option<&AtomicBool>,
) -> Result<Vec<(Rec, Option<MetricInfo>)>> {
    let never = AtomicBool::new(false);
    let stop = stop.unwrap_or(&never);
    let n = preps.len() * r;
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let one = |i: usize| -> Option<(Rec, Option<MetricInfo>)> {
        let p = preps[i / r];
        let k = i % r;
        let cfg = SimConfig { seed: p.cfg.seed.wrapping_add(k as u64), ..p.cfg.clone() };
        let res = schedlab_engine::run_stoppable(&p.machine, p.kernel.clone(), &p.workload, &cfg, stop)?;
        let id = (k == 0).then(|| MetricInfo {
            name: res.metric_name.clone(),
            unit: res.metric_unit.clone(),
            higher_is_better: res.higher_is_better,
        });
        Some((Rec::from(&res), id))
    };
    let mut slots: Vec<Option<(Rec, Option<MetricInfo>)>> = vec![None; n];
    let failed = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        match one(i) {
                            Some(out) => done.push((i, out)),
                            None => break,
                        }
                        finished.fetch_add(1, Ordering::Relaxed);
                    }
                    done
                })
            })
            .collect();
        if progress.on {
            let mut last = std::time::Instant::now();
            progress.draw(progress.done);
            while !handles.iter().all(|h| h.is_finished()) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if last.elapsed() >= std::time::Duration::from_millis(250) {
                    progress.draw(progress.done + finished.load(Ordering::Relaxed));
                    last = std::time::Instant::now();
                }
            }
        }
        let mut failed = false;
        for h in handles {
            match h.join() {
                Ok(done) => {
                    for (i, out) in done {
                        slots[i] = Some(out);
                    }
                }
                Err(_) => failed = true,
            }
        }
        failed
    });
    progress.done += n;
    if progress.on {
        progress.draw(progress.done);
    }
    if stop.load(Ordering::Relaxed) {
        bail!("interrupted");
    }
    if failed {
        bail!("a simulation run failed (internal error); please report it with the command line");
    }
    slots.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| anyhow::anyhow!("internal error: a run result is missing"))
}

/// mmtests' pdiff / pndiff: positive is an improvement.
pub fn pct_change(base: f64, new: f64, higher_is_better: bool) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    if higher_is_better {
        new / base * 100.0 - 100.0
    } else {
        100.0 - new / base * 100.0
    }
}

/// "v3.11 --patch X --features NO_Y": a side as the command line gives it.
pub fn describe(s: &Side) -> String {
    let mut d = s.kernel.clone();
    if let Some(p) = &s.patch {
        let _ = write!(d, " --patch {p}");
    }
    if let Some(f) = &s.features {
        let _ = write!(d, " --features {f}");
    }
    if let Some(m) = &s.model {
        let _ = write!(d, " --machine-model {m}");
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &[&str]) -> Result<Matrix> {
        Matrix::parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn matrix_parsing() {
        let x = m(&["clients=1,2,4,mode=ro"]).unwrap();
        assert_eq!(x.swept, Some(("clients".into(), vec!["1".into(), "2".into(), "4".into()])));
        assert_eq!(x.fixed, vec![("mode".into(), "ro".into())]);
        assert_eq!(x.points()[1], ("clients-2".into(), "mode=ro,clients=2".into()));
        let y = m(&["groups=1", "loops=20"]).unwrap();
        assert!(y.swept.is_none());
        assert_eq!(y.points(), vec![("default".into(), "groups=1,loops=20".into())]);
        assert!(m(&["clients=1,2", "threads=1,2"]).unwrap_err().to_string().contains("at most one key"));
        assert!(m(&["1,2"]).unwrap_err().to_string().contains("no key"));
        assert!(m(&["clients=1,1"]).is_err());
        assert!(m(&["=3"]).is_err());
    }

    #[test]
    fn percent_change_direction() {
        assert!((pct_change(100.0, 110.0, true) - 10.0).abs() < 1e-9);
        assert!((pct_change(100.0, 90.0, false) - 10.0).abs() < 1e-9);
        assert_eq!(pct_change(0.0, 5.0, true), 0.0);
    }

    #[test]
    fn b_inherits_from_a() {
        let a = Some("NO_CACHE".to_string());
        assert_eq!(inherit(&None, &a), a);
        assert_eq!(inherit(&Some("none".into()), &a), None);
        assert_eq!(inherit(&Some("NO_SMT".into()), &a), Some("NO_SMT".into()));
    }

    #[test]
    fn scoped_set_entries() {
        let e = parse_entries(&["hackbench:groups=1,2,loops=20,pipe:loops=500".to_string()]).unwrap();
        let h = Matrix::of(&e, Some("hackbench")).unwrap();
        assert_eq!(h.swept, Some(("groups".into(), vec!["1".into(), "2".into()])));
        assert_eq!(h.fixed, vec![("loops".into(), "20".into())]);
        let p = Matrix::of(&e, Some("pipe")).unwrap();
        assert!(p.swept.is_none());
        assert_eq!(p.fixed, vec![("loops".into(), "500".into())], "the scoped loops overrides the plain one");
        assert!(Matrix::of(&parse_entries(&["x=1,y=2,x=3".to_string()]).unwrap(), None).unwrap_err().to_string().contains("twice"));
        assert!(parse_entries(&[":x=1".to_string()]).is_err());
        // Each workload may sweep its own key; one workload may not sweep two.
        let e = parse_entries(&["a:x=1,2".to_string(), "b:y=1,2".to_string()]).unwrap();
        assert!(Matrix::of(&e, Some("a")).is_ok() && Matrix::of(&e, Some("b")).is_ok());
        assert!(Matrix::of(&e, None).unwrap_err().to_string().contains("at most one key"));
    }

    #[test]
    fn report_serialises_once_and_reads_back() {
        let spec = CompareSpec {
            machines: vec!["laptop-4c8t".into()],
            set: vec!["groups=1,loops=10".into()],
            features_b: Some("NO_WAKEUP_PREEMPTION".into()),
            runs: 2,
            ..Default::default()
        };
        let p = plan(&spec).unwrap();
        let rep = execute(&p, &mut Progress::quiet(p.nr_runs()), &mut |w| panic!("{w}"), None).unwrap();
        let v = rep.to_json();
        assert_eq!(v["sides"][1]["machine_model"], serde_json::Value::Null);
        let rec = &v["tables"][0]["recs"][0];
        assert!(rec["counters"]["llc_misses"].is_u64() && rec["run_delay_ns"]["p99"].is_u64(), "{rec}");
        assert!(rec["levels"][0]["level"].is_string() && rec["levels"][0]["lb_count"].is_u64(), "{rec}");
        let back: Report = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, rep);
        // The records carry the engine's LevelStats as the run produced them.
        let prep = &p.cells[0].preps[0];
        let res = schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg);
        assert_eq!(rep.tables[0].recs[0].levels, res.levels);
        // A t that is not finite is written as null and reads back as NaN.
        let mut inf = v;
        inf["tables"][0]["rows"][0]["welch"] = serde_json::json!({"t": null, "df": 2.0, "p": 0.0});
        let w = serde_json::from_value::<Report>(inf).unwrap().tables[0].rows[0].welch.unwrap();
        assert!(w.t.is_nan() && w.df == 2.0);
        let mut bad = rep.to_json();
        bad["tables"][0]["recs"][0]["counters"]["nosuch"] = 1.into();
        assert!(serde_json::from_value::<Report>(bad).unwrap_err().to_string().contains("unknown counter \"nosuch\""));
    }

    #[test]
    fn progress_text() {
        assert_eq!(progress_line(0, 48, 0.0), "schedlab: runs 0/48, elapsed 0.0s, ETA ?");
        assert_eq!(progress_line(12, 48, 3.0), "schedlab: runs 12/48, elapsed 3.0s, ETA 9.0s");
        assert_eq!(progress_line(10, 20, 75.0), "schedlab: runs 10/20, elapsed 1m15s, ETA 1m15s");
        assert_eq!(names(&["a,b".into(), "c".into()], "machine").unwrap(), vec!["a", "b", "c"]);
        assert!(names(&["a,,b".into()], "machine").is_err());
    }
}
