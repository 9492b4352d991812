//! `schedlab compare`: side A against side B over a one-key parameter matrix,
//! R seeded repetitions per side and point, spread over worker threads, and
//! reported the way kernel developers read A/B results (mmtests
//! compare-kernels, the LKML `baseline(std%) compare%(std%)` table, schedstat).

use crate::{html, stats};
use crate::{prepare, Prepared, RunArgs};
use anyhow::{bail, Context, Result};
use schedlab_engine::{RunResult, SimConfig};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(clap::Args, Clone)]
pub struct CompareArgs {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file (both sides); several:
    /// a comma list or the option repeated (one table per machine and workload).
    #[arg(long, default_value = "x86-12")]
    pub machine: Vec<String>,
    /// Built-in workload or workload file (both sides); several: a comma list or the option repeated.
    #[arg(long, default_value = "hackbench")]
    pub workload: Vec<String>,
    /// Workload parameters key=value[,key=value...]; a key followed by several
    /// comma-separated values (clients=1,2,4) is the swept matrix axis (at most one
    /// per workload). WORKLOAD:key=value applies to that workload only.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Side A (baseline) kernel profile.
    #[arg(long, default_value = "v6.12")]
    pub kernel: String,
    /// Side A patches.
    #[arg(long)]
    pub patch: Option<String>,
    /// Side A feature bits (NO_PLACE_LAG,NEXT_BUDDY).
    #[arg(long)]
    pub features: Option<String>,
    /// Side A machine-model switches (NO_CACHE,...).
    #[arg(long = "machine-model")]
    pub machine_model: Option<String>,
    /// Side B (compared) kernel profile; default: A's.
    #[arg(long)]
    pub vs: Option<String>,
    /// Side B patches; default: A's (`none` for no patch).
    #[arg(long = "patch-b")]
    pub patch_b: Option<String>,
    /// Side B feature bits; default: A's (`none` for the profile's own).
    #[arg(long = "features-b")]
    pub features_b: Option<String>,
    /// Side B machine-model switches; default: A's (`none` for all on).
    #[arg(long = "machine-model-b")]
    pub machine_model_b: Option<String>,
    /// Repetitions per side and point, with seeds 1..=RUNS.
    #[arg(long, default_value_t = 5)]
    pub runs: u64,
    /// Simulated run time for time-bounded workloads (default 1s); run-to-completion workloads always run to completion.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Worker threads (default: available parallelism). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write every run and the summary rows as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Write one CSV line per run to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Write a self-contained HTML report (plots and tables, no scripts, opens offline) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

/// One side of the comparison.
#[derive(Clone, Debug)]
pub(crate) struct Side {
    pub(crate) kernel: String,
    pub(crate) patch: Option<String>,
    pub(crate) features: Option<String>,
    pub(crate) model: Option<String>,
}

impl Side {
    /// mmtests' second header line: the configuration on top of the kernel.
    pub(crate) fn config(&self) -> String {
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
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) metric: f64,
    /// Why this run has no valid metric (truncated: its end was never
    /// reached, or no latency samples); such runs are left out of the statistics.
    pub(crate) missing: Option<String>,
    pub(crate) voluntary: u64,
    pub(crate) involuntary: u64,
    pub(crate) migrations: u64,
    pub(crate) wakeups: u64,
    pub(crate) ttwu_count: u64,
    pub(crate) ttwu_local: u64,
    pub(crate) ttwu_move_affine: u64,
    /// Per domain level, bottom-up: (name, ttwu_wake_remote, ttwu_move_affine).
    pub(crate) levels: Vec<(&'static str, u64, u64)>,
    /// Run delay (runnable -> running) p50, p90, p99 and max, ns.
    pub(crate) run_delay_ns: [u64; 4],
    pub(crate) simulated_ns: u64,
    /// Machine-model counters, in the order of `COUNTERS`.
    pub(crate) counters: [u64; 8],
}

/// Names of `Rec::counters` (RunResult fields).
pub(crate) const COUNTERS: [&str; 8] =
    ["l2_misses", "llc_misses", "dram_bytes", "remote_bytes", "rq_lock_wait_ns", "idle_exit_ns", "mm_switches", "group_switches"];

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
            levels: r.levels.iter().map(|l| (l.name, l.ttwu_wake_remote, l.ttwu_move_affine)).collect(),
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
        }
    }
    pub(crate) fn affine_share(&self) -> f64 {
        if self.ttwu_count == 0 {
            0.0
        } else {
            self.ttwu_move_affine as f64 / self.ttwu_count as f64
        }
    }
}

/// The metric's identity, taken from the first run of a table.
#[derive(Clone, Debug)]
pub(crate) struct MetricInfo {
    pub(crate) name: String,
    pub(crate) unit: String,
    pub(crate) higher_is_better: bool,
}

/// One summary row (one matrix point).
pub(crate) struct Row {
    pub(crate) label: String,
    pub(crate) value: Option<String>,
    pub(crate) a_mean: f64,
    pub(crate) a_cv: f64,
    pub(crate) b_mean: f64,
    pub(crate) b_cv: f64,
    pub(crate) change_pct: f64,
    pub(crate) welch: Option<stats::Welch>,
    pub(crate) affine_a: f64,
    pub(crate) affine_b: f64,
    pub(crate) migrations_a: f64,
    pub(crate) migrations_b: f64,
    /// Mean mm switches and cross-task-group switches per side.
    pub(crate) mm_switches: [f64; 2],
    pub(crate) group_switches: [f64; 2],
}

impl Row {
    pub(crate) fn significant(&self) -> bool {
        self.welch.is_some_and(|w| w.p < 0.05)
    }
}

/// One (machine, workload) of a comparison, planned: its matrix and a prepared run per (point, side).
struct Cell {
    matrix: Matrix,
    points: Vec<(String, String)>,
    /// Index `point * 2 + side`.
    preps: Vec<Prepared>,
}

/// A validated comparison, everything built, nothing run yet.
pub struct Plan {
    args: CompareArgs,
    sides: [Side; 2],
    cells: Vec<Cell>,
}

impl Plan {
    /// Simulation runs this comparison makes.
    pub fn nr_runs(&self) -> usize {
        self.cells.iter().map(|c| c.preps.len()).sum::<usize>() * self.args.runs as usize
    }
}

/// One table of a report: one (machine, workload) with the swept parameter as rows.
pub(crate) struct Table {
    pub(crate) machine: String,
    pub(crate) nr_cpus: usize,
    pub(crate) workload: String,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) info: MetricInfo,
    pub(crate) param: Option<String>,
    pub(crate) fixed: Vec<(String, String)>,
    pub(crate) rows: Vec<Row>,
    /// Index `(point * 2 + side) * runs + seed - 1`.
    pub(crate) recs: Vec<Rec>,
}

impl Table {
    /// The valid runs of one point and side, seeds in order (truncated runs
    /// are left out).
    pub(crate) fn runs_of(&self, point: usize, side: usize, runs: usize) -> Vec<Rec> {
        let at = (point * 2 + side) * runs;
        self.recs[at..at + runs].iter().filter(|x| x.missing.is_none()).cloned().collect()
    }
}

/// What a comparison produced: the printed tables, the JSON document, the CSV
/// text, and the tables themselves (for the HTML report).
pub struct Report {
    pub text: String,
    pub json: Value,
    pub csv: String,
    pub(crate) sides: [Side; 2],
    pub(crate) runs: usize,
    pub(crate) tables: Vec<Table>,
}

impl Report {
    /// "A: v3.10   B: v3.11 --features NO_X"
    pub(crate) fn side_line(&self, si: usize) -> String {
        describe(&self.sides[si])
    }
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let plan = plan(args)?;
    if args.duration.is_some() {
        let mut told: Vec<&str> = Vec::new();
        for c in &plan.cells {
            let w = &c.preps[0].workload;
            if !w.time_bounded && !told.contains(&w.name.as_str()) {
                told.push(&w.name);
                eprintln!("schedlab: note: --duration applies to time-bounded workloads; {} runs to completion", w.name);
            }
        }
    }
    let mut progress = Progress::new(plan.nr_runs());
    let report = execute_with(&plan, &mut progress)?;
    progress.finish();
    print!("{}", report.text);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.json)?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, &report.csv).with_context(|| format!("cannot write --csv file {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let doc = html::Doc {
            title: "schedlab compare".into(),
            intro: vec![],
            sections: vec![html::Section { heading: None, report: &report, published: None }],
        };
        std::fs::write(path, html::render(&doc)).with_context(|| format!("cannot write --html file {}", path.display()))?;
    }
    Ok(())
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
pub fn plan(args: &CompareArgs) -> Result<Plan> {
    if args.runs == 0 {
        bail!("--runs must be at least 1 (2 or more for a significance test)");
    }
    if args.runs > 1000 {
        bail!("--runs {} is more than 1000 repetitions; use fewer", args.runs);
    }
    if args.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let machines = names(&args.machine, "machine")?;
    let workloads = names(&args.workload, "workload")?;
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
                    let ra = RunArgs {
                        sysctl: None,
                        machine: machine.clone(),
                        kernel: side.kernel.clone(),
                        features: side.features.clone(),
                        patch: side.patch.clone(),
                        workload: workload.clone(),
                        set: if set.is_empty() { vec![] } else { vec![set.clone()] },
                        seed: 1,
                        duration: args.duration.clone(),
                        json: false,
                        machine_model: side.model.clone(),
                        schedstat: None,
                        switch_log: None,
                        trace: None,
                        ftrace: None,
                    };
                    let at = if several { format!("{workload} on {machine}, ") } else { String::new() };
                    let mut p = prepare(&ra).with_context(|| format!("{at}side {} ({}), point {label}", ["A", "B"][si], side.kernel))?;
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
    Ok(Plan { args: args.clone(), sides, cells })
}

/// Runs a planned comparison, reporting progress, and renders its tables, JSON and CSV.
pub fn execute_with(plan: &Plan, progress: &mut Progress) -> Result<Report> {
    let Plan { args, sides, cells } = plan;
    let r = args.runs as usize;
    let all: Vec<&Prepared> = cells.iter().flat_map(|c| c.preps.iter()).collect();
    let n = all.len() * r;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, n.max(1));
    let mut outs = run_all(&all, r, jobs, progress)?.into_iter();

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
                eprintln!(
                    "schedlab: warning: {} on {}, side {} ({}), point {}, seed {}: run truncated, left out of the statistics: {why}",
                    p0.workload.name,
                    p0.machine.name,
                    ["A", "B"][si],
                    sides[si].kernel,
                    cell.points[pi].0,
                    k + 1
                );
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

    let mut out = String::new();
    for (ti, t) in tables.iter().enumerate() {
        if ti > 0 {
            let _ = writeln!(out);
        }
        out.push_str(&table_text(t, sides, r));
    }
    let json = json_report(args, sides, cells, &tables);
    let csv = csv_report(sides, cells, &tables, r);
    Ok(Report { text: out, json, csv, sides: sides.clone(), runs: r, tables })
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
        rows.push(Row {
            label: label.clone(),
            value: cell.matrix.swept.as_ref().map(|(_, v)| v[pi].clone()),
            a_mean: am,
            a_cv: stats::cv_pct(&va),
            b_mean: bm,
            b_cv: stats::cv_pct(&vb),
            change_pct: pct_change(am, bm, info.higher_is_better),
            welch: stats::welch(&va, &vb),
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
        rows,
        recs,
    }
}

/// The text block of one table: header, mmtests table, LKML table, schedstat summary.
fn table_text(t: &Table, sides: &[Side; 2], r: usize) -> String {
    let header = format!(
        "schedlab compare: {} on {} ({} CPUs); {} runs per side and point, seeds 1..{}{}",
        t.workload,
        t.machine,
        t.nr_cpus,
        r,
        r,
        t.duration_ns.map(|d| format!("; duration {}", fmt_ns(d))).unwrap_or_default()
    );
    let mut out = String::new();
    let _ = writeln!(out, "{header}");
    let _ = writeln!(out, "A: {}   B: {}", describe(&sides[0]), describe(&sides[1]));
    let _ = writeln!(out);
    out.push_str(&mmtests_table(&t.info, sides, &t.rows));
    let _ = writeln!(out);
    out.push_str(&intel_table(&t.workload, &t.info, &t.fixed, &t.rows));
    let _ = writeln!(out);
    out.push_str(&schedstat_table(&t.rows));
    out
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
pub(crate) fn run_all(preps: &[&Prepared], r: usize, jobs: usize, progress: &mut Progress) -> Result<Vec<(Rec, Option<MetricInfo>)>> {
    let n = preps.len() * r;
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let one = |i: usize| -> (Rec, Option<MetricInfo>) {
        let p = preps[i / r];
        let k = i % r;
        let cfg = SimConfig { seed: p.cfg.seed.wrapping_add(k as u64), ..p.cfg.clone() };
        let res = schedlab_engine::run(&p.machine, p.kernel.clone(), &p.workload, &cfg);
        let id = (k == 0).then(|| MetricInfo {
            name: res.metric_name.clone(),
            unit: res.metric_unit.clone(),
            higher_is_better: res.higher_is_better,
        });
        (Rec::from(&res), id)
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
                        done.push((i, one(i)));
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
    if failed {
        bail!("a simulation run failed (internal error); please report it with the command line");
    }
    slots.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| anyhow::anyhow!("internal error: a run result is missing"))
}

/// mmtests' pdiff / pndiff: positive is an improvement.
pub(crate) fn pct_change(base: f64, new: f64, higher_is_better: bool) -> f64 {
    if base == 0.0 {
        return 0.0;
    }
    if higher_is_better {
        new / base * 100.0 - 100.0
    } else {
        100.0 - new / base * 100.0
    }
}

fn describe(s: &Side) -> String {
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

fn fmt_ns(ns: u64) -> String {
    // (Remainders matched: one match gives the unit.)
    match (ns % 1_000_000_000, ns % 1_000_000) {
        (0, _) => format!("{}s", ns / 1_000_000_000),
        (_, 0) => format!("{}ms", ns / 1_000_000),
        _ => format!("{}us", ns as f64 / 1e3),
    }
}

fn mean_name(info: &MetricInfo) -> &'static str {
    if info.higher_is_better {
        "Hmean"
    } else {
        "Amean"
    }
}

/// The mmtests compare-kernels layout: `%12.2f (%6.2f%%)` cells, `*x%*` for significant rows.
fn mmtests_table(info: &MetricInfo, sides: &[Side; 2], rows: &[Row]) -> String {
    let mut o = String::new();
    let dir = if info.higher_is_better { "higher is better" } else { "lower is better" };
    let _ = writeln!(o, "{} ({}, {dir})", info.name, info.unit);
    let opw = rows.iter().map(|r| r.label.len()).max().unwrap_or(0).max(10);
    let lead = 10 + opw;
    let _ = writeln!(o, "{:lead$} {:>22} {:>22}", "", sides[0].kernel, sides[1].kernel);
    let _ = writeln!(o, "{:lead$} {:>22} {:>22}", "", sides[0].config(), sides[1].config());
    let _ = writeln!(o, "{:lead$} {:>22} {:>22} {:>11}", "", "A mean (std%)", "B mean (std%)", "change");
    // mmtests prints %12.2f; small values (seconds of a short hackbench) get more decimals.
    let smallest = rows.iter().flat_map(|r| [r.a_mean.abs(), r.b_mean.abs()]).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let prec = if smallest.is_finite() { (3 - smallest.log10().floor() as i64).clamp(2, 9) as usize } else { 2 };
    for r in rows {
        let change = if r.significant() { format!("*{:7.2}%*", r.change_pct) } else { format!("({:7.2}%)", r.change_pct) };
        let _ = writeln!(
            o,
            "{:<9} {:<opw$} {:12.prec$} ({:6.2}%) {:12.prec$} ({:6.2}%) {change}",
            mean_name(info),
            r.label,
            r.a_mean,
            r.a_cv,
            r.b_mean,
            r.b_cv
        );
    }
    let _ = writeln!(
        o,
        "{} is the {} mean, as mmtests takes it for {} metrics;",
        mean_name(info),
        if info.higher_is_better { "harmonic" } else { "arithmetic" },
        if info.higher_is_better { "rate (higher is better)" } else { "time (lower is better)" }
    );
    let _ = writeln!(o, "(x%) after a mean: coefficient of variation (sample stddev / arithmetic mean).");
    let _ = writeln!(o, "change: positive is an improvement (B better than A).");
    let _ = writeln!(o, "*x%*: significant by Welch's t-test, two-sided, alpha 0.05");
    let _ = writeln!(o, "(mmtests' own marker is the non-overlap of mean +- 1.96 stddev intervals).");
    o
}

/// The Intel-style LKML table: baseline normalised to 1.00 (std%), compare as signed % change (std%).
fn intel_table(workload: &str, info: &MetricInfo, fixed: &[(String, String)], rows: &[Row]) -> String {
    let mut o = String::new();
    let mut case = info.name.clone();
    for (k, v) in fixed {
        let _ = write!(case, " {k}={v}");
    }
    let _ = writeln!(o, "{workload}");
    let _ = writeln!(o, "{}", "=".repeat(workload.chars().count()));
    let _ = writeln!(o, "case\tload\tbaseline(std%)\tcompare%( std%)");
    for r in rows {
        let _ = writeln!(
            o,
            "{case}\t{}\t{:5.2} ({:6.2})\t{:+6.2} ({:6.2}){}",
            r.label,
            1.0,
            r.a_cv,
            r.change_pct,
            r.b_cv,
            if r.significant() { "*" } else { "" }
        );
    }
    let _ = writeln!(o, "(* significant, Welch's t-test at 5%; positive compare% is an improvement)");
    o
}

/// What a reviewer asks next: did wake_affine pull more, did tasks move more.
fn schedstat_table(rows: &[Row]) -> String {
    let mut o = String::new();
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(0).max(10);
    let _ = writeln!(o, "schedstat (means over runs): affine = ttwu_move_affine (all levels) / try_to_wake_up calls");
    let _ =
        writeln!(o, "{:<w$} {:>10} {:>10} {:>14} {:>14} {:>8}", "load", "affine% A", "affine% B", "migrations A", "migrations B", "mig %");
    for r in rows {
        let mig = if r.migrations_a == 0.0 { 0.0 } else { (r.migrations_b / r.migrations_a - 1.0) * 100.0 };
        let _ = writeln!(
            o,
            "{:<w$} {:>10.2} {:>10.2} {:>14.1} {:>14.1} {:>+8.2}",
            r.label,
            100.0 * r.affine_a,
            100.0 * r.affine_b,
            r.migrations_a,
            r.migrations_b,
            mig
        );
    }
    if rows.iter().any(|r| r.group_switches[0] + r.group_switches[1] > 0.0) {
        let _ = writeln!(o, "switches (means over runs): mm = between processes, cross-group = between task groups, on a CPU");
        let _ = writeln!(o, "{:<w$} {:>10} {:>10} {:>14} {:>14}", "load", "mm A", "mm B", "cross-group A", "cross-group B");
        for r in rows {
            let _ = writeln!(
                o,
                "{:<w$} {:>10.1} {:>10.1} {:>14.1} {:>14.1}",
                r.label, r.mm_switches[0], r.mm_switches[1], r.group_switches[0], r.group_switches[1]
            );
        }
    }
    o
}

fn side_json(s: &Side) -> Value {
    json!({ "kernel": s.kernel, "patch": s.patch, "features": s.features, "machine_model": s.model })
}

/// A finite f64 for JSON (infinite t becomes null).
fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn json_report(args: &CompareArgs, sides: &[Side; 2], cells: &[Cell], tables: &[Table]) -> Value {
    let r = args.runs as usize;
    let mut runs = Vec::new();
    let mut summary = Vec::new();
    let mut tabs = Vec::with_capacity(tables.len());
    for (cell, t) in cells.iter().zip(tables) {
        for (i, x) in t.recs.iter().enumerate() {
            let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
            runs.push(json!({
                "machine": t.machine,
                "workload": t.workload,
                "side": if si == 0 { "A" } else { "B" },
                "point": cell.points[pi].0,
                "param": t.param,
                "param_value": t.rows[pi].value,
                "set": cell.points[pi].1,
                "seed": k as u64 + 1,
                "metric": if x.missing.is_some() { Value::Null } else { num(x.metric) },
                "context_switches": { "voluntary": x.voluntary, "involuntary": x.involuntary },
                "migrations": x.migrations,
                "wakeups": x.wakeups,
                "ttwu_count": x.ttwu_count,
                "ttwu_local": x.ttwu_local,
                "ttwu_move_affine": x.ttwu_move_affine,
                "affine_share": num(x.affine_share()),
                "levels": x.levels.iter().map(|(name, remote, affine)| json!({
                    "level": name, "ttwu_wake_remote": remote, "ttwu_move_affine": affine,
                })).collect::<Vec<_>>(),
                "run_delay_p50_ns": x.run_delay_ns[0],
                "run_delay_p90_ns": x.run_delay_ns[1],
                "run_delay_p99_ns": x.run_delay_ns[2],
                "run_delay_max_ns": x.run_delay_ns[3],
                "machine_counters": COUNTERS.iter().zip(x.counters).map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "simulated_ns": x.simulated_ns,
            }));
            if let (Some(why), Some(last)) = (&x.missing, runs.last_mut()) {
                last["truncated"] = json!(why);
            }
        }
        for row in &t.rows {
            summary.push(json!({
                "machine": t.machine,
                "workload": t.workload,
                "point": row.label,
                "param_value": row.value,
                "mean_type": mean_name(&t.info),
                "a_mean": num(row.a_mean), "a_cv_pct": num(row.a_cv),
                "b_mean": num(row.b_mean), "b_cv_pct": num(row.b_cv),
                "change_pct": num(row.change_pct),
                "welch_t": row.welch.map(|w| num(w.t)),
                "welch_df": row.welch.map(|w| num(w.df)),
                "p_value": row.welch.map(|w| num(w.p)),
                "significant": row.significant(),
                "affine_share_a": num(row.affine_a), "affine_share_b": num(row.affine_b),
                "migrations_a": num(row.migrations_a), "migrations_b": num(row.migrations_b),
            }));
        }
        tabs.push(json!({
            "machine": t.machine,
            "cpus": t.nr_cpus,
            "workload": t.workload,
            "metric": { "name": t.info.name, "unit": t.info.unit, "higher_is_better": t.info.higher_is_better },
            "duration_ns": t.duration_ns,
            "param": t.param,
            "fixed": t.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        }));
    }
    json!({
        "tables": tabs,
        "runs_per_side": r,
        "seeds": (1..=r as u64).collect::<Vec<_>>(),
        "sides": { "A": side_json(&sides[0]), "B": side_json(&sides[1]) },
        "significance": "Welch's t-test, two-sided, alpha 0.05",
        "runs": runs,
        "summary": summary,
    })
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_report(sides: &[Side; 2], cells: &[Cell], tables: &[Table], r: usize) -> String {
    let mut o = String::from(
        "machine,workload,side,kernel,config,param,param_value,seed,metric_name,metric,voluntary_switches,involuntary_switches,migrations,wakeups,ttwu_count,ttwu_move_affine,affine_share,run_delay_p99_ns,run_delay_p50_ns,run_delay_p90_ns,run_delay_max_ns",
    );
    for c in COUNTERS {
        let _ = write!(o, ",{c}");
    }
    o.push('\n');
    for (cell, t) in cells.iter().zip(tables) {
        let key = t.param.as_deref().unwrap_or("");
        for (i, x) in t.recs.iter().enumerate() {
            let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
            let value = t.rows[pi].value.as_deref().unwrap_or(&cell.points[pi].0);
            let _ = write!(
                o,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{},{},{},{}",
                csv_field(&t.machine),
                csv_field(&t.workload),
                ["A", "B"][si],
                csv_field(&sides[si].kernel),
                csv_field(&sides[si].config()),
                csv_field(key),
                csv_field(value),
                k + 1,
                csv_field(&t.info.name),
                if x.missing.is_some() { String::new() } else { x.metric.to_string() },
                x.voluntary,
                x.involuntary,
                x.migrations,
                x.wakeups,
                x.ttwu_count,
                x.ttwu_move_affine,
                x.affine_share(),
                x.run_delay_ns[2],
                x.run_delay_ns[0],
                x.run_delay_ns[1],
                x.run_delay_ns[3]
            );
            for v in x.counters {
                let _ = write!(o, ",{v}");
            }
            o.push('\n');
        }
    }
    o
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
    fn progress_text() {
        assert_eq!(progress_line(0, 48, 0.0), "schedlab: runs 0/48, elapsed 0.0s, ETA ?");
        assert_eq!(progress_line(12, 48, 3.0), "schedlab: runs 12/48, elapsed 3.0s, ETA 9.0s");
        assert_eq!(progress_line(10, 20, 75.0), "schedlab: runs 10/20, elapsed 1m15s, ETA 1m15s");
        assert_eq!(names(&["a,b".into(), "c".into()], "machine").unwrap(), vec!["a", "b", "c"]);
        assert!(names(&["a,,b".into()], "machine").is_err());
    }
}
