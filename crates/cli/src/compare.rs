//! `schedlab compare`: side A against side B over a one-key parameter matrix,
//! R seeded repetitions per side and point, spread over worker threads, and
//! reported the way kernel developers read A/B results (mmtests
//! compare-kernels, the LKML `baseline(std%) compare%(std%)` table, schedstat).

use crate::stats;
use crate::{prepare, Prepared, RunArgs};
use anyhow::{bail, Context, Result};
use schedlab_engine::{RunResult, SimConfig};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(clap::Args, Clone)]
pub struct CompareArgs {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file (both sides).
    #[arg(long, default_value = "x86-12")]
    pub machine: String,
    /// Built-in workload or workload file (both sides).
    #[arg(long, default_value = "hackbench")]
    pub workload: String,
    /// Workload parameters key=value[,key=value...]; a key followed by several
    /// comma-separated values (clients=1,2,4) is the swept matrix axis (at most one).
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
    /// Simulated run time for time-bounded workloads (default 1s); a cap for the others.
    #[arg(long)]
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
}

/// One side of the comparison.
#[derive(Clone, Debug)]
struct Side {
    kernel: String,
    patch: Option<String>,
    features: Option<String>,
    model: Option<String>,
}

impl Side {
    /// mmtests' second header line: the configuration on top of the kernel.
    fn config(&self) -> String {
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

impl Matrix {
    pub fn parse(sets: &[String]) -> Result<Matrix> {
        let mut entries: Vec<(String, Vec<String>)> = Vec::new();
        for tok in sets.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
            match tok.split_once('=') {
                Some((k, v)) => {
                    let (k, v) = (k.trim(), v.trim());
                    if k.is_empty() || v.is_empty() {
                        bail!("--set expects key=value, got {tok:?}; e.g. --set clients=1,2,4,mode=ro");
                    }
                    entries.push((k.to_string(), vec![v.to_string()]));
                }
                None => match entries.last_mut() {
                    Some((_, vals)) => vals.push(tok.to_string()),
                    None => bail!("--set value {tok:?} has no key; write key=v1,v2,... e.g. --set clients=1,2,4"),
                },
            }
        }
        let swept: Vec<&(String, Vec<String>)> = entries.iter().filter(|(_, v)| v.len() > 1).collect();
        if swept.len() > 1 {
            bail!(
                "--set sweeps {} keys ({}); compare sweeps at most one key: keep one key with several values and fix the others",
                swept.len(),
                swept.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", ")
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
struct Rec {
    metric: f64,
    voluntary: u64,
    involuntary: u64,
    migrations: u64,
    wakeups: u64,
    ttwu_count: u64,
    ttwu_move_affine: u64,
    run_delay_p99_ns: u64,
    simulated_ns: u64,
}

impl Rec {
    fn from(r: &RunResult) -> Rec {
        Rec {
            metric: r.metric_value,
            voluntary: r.voluntary_switches,
            involuntary: r.involuntary_switches,
            migrations: r.migrations,
            wakeups: r.wakeups,
            ttwu_count: r.ttwu_count,
            ttwu_move_affine: r.levels.iter().map(|l| l.ttwu_move_affine).sum(),
            run_delay_p99_ns: r.run_delay_p99,
            simulated_ns: r.simulated_ns,
        }
    }
    fn affine_share(&self) -> f64 {
        if self.ttwu_count == 0 {
            0.0
        } else {
            self.ttwu_move_affine as f64 / self.ttwu_count as f64
        }
    }
}

/// The metric's identity, taken from the first run.
struct MetricInfo {
    name: String,
    unit: String,
    higher_is_better: bool,
}

/// One summary row (one matrix point).
struct Row {
    label: String,
    value: Option<String>,
    a_mean: f64,
    a_cv: f64,
    b_mean: f64,
    b_cv: f64,
    change_pct: f64,
    welch: Option<stats::Welch>,
    affine_a: f64,
    affine_b: f64,
    migrations_a: f64,
    migrations_b: f64,
}

impl Row {
    fn significant(&self) -> bool {
        self.welch.is_some_and(|w| w.p < 0.05)
    }
}

/// A validated comparison, everything built, nothing run yet.
pub struct Plan {
    args: CompareArgs,
    matrix: Matrix,
    sides: [Side; 2],
    points: Vec<(String, String)>,
    preps: Vec<Prepared>,
}

/// What a comparison produced: the printed tables, the JSON document and the CSV text.
pub struct Report {
    pub text: String,
    pub json: Value,
    pub csv: String,
}

pub fn compare(args: &CompareArgs) -> Result<()> {
    let report = execute(&plan(args)?)?;
    print!("{}", report.text);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.json)?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, &report.csv).with_context(|| format!("cannot write --csv file {}", path.display()))?;
    }
    Ok(())
}

/// Validates the arguments and builds every (point, side) up front: errors come out before any run.
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
    let matrix = Matrix::parse(&args.set)?;
    let a =
        Side { kernel: args.kernel.clone(), patch: args.patch.clone(), features: args.features.clone(), model: args.machine_model.clone() };
    let b = Side {
        kernel: args.vs.clone().unwrap_or_else(|| args.kernel.clone()),
        patch: inherit(&args.patch_b, &args.patch),
        features: inherit(&args.features_b, &args.features),
        model: inherit(&args.machine_model_b, &args.machine_model),
    };
    let sides = [a, b];
    let points = matrix.points();

    let mut preps: Vec<Prepared> = Vec::with_capacity(points.len() * 2);
    for (label, set) in &points {
        for (si, side) in sides.iter().enumerate() {
            let ra = RunArgs {
                machine: args.machine.clone(),
                kernel: side.kernel.clone(),
                features: side.features.clone(),
                patch: side.patch.clone(),
                workload: args.workload.clone(),
                set: if set.is_empty() { vec![] } else { vec![set.clone()] },
                seed: 1,
                duration: args.duration.clone(),
                json: false,
                machine_model: side.model.clone(),
                schedstat: None,
                trace: None,
                ftrace: None,
            };
            let p = prepare(&ra).with_context(|| format!("side {} ({}), point {label}", ["A", "B"][si], side.kernel))?;
            preps.push(p);
        }
    }

    Ok(Plan { args: args.clone(), matrix, sides, points, preps })
}

/// Runs a planned comparison and renders its tables, JSON and CSV.
pub fn execute(plan: &Plan) -> Result<Report> {
    let Plan { args, matrix, sides, points, preps } = plan;
    let r = args.runs as usize;
    let n = preps.len() * r;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, n.max(1));
    let (recs, (name, unit, higher_is_better)) = run_all(preps, r, jobs)?;
    let info = MetricInfo { name, unit, higher_is_better };

    // Summaries per point.
    let rec = |pi: usize, si: usize, k: usize| &recs[(pi * 2 + si) * r + k];
    let mut rows = Vec::with_capacity(points.len());
    for (pi, (label, _)) in points.iter().enumerate() {
        let vals = |si: usize| (0..r).map(|k| rec(pi, si, k).metric).collect::<Vec<f64>>();
        let mean_of = |si: usize, f: &dyn Fn(&Rec) -> f64| stats::amean(&(0..r).map(|k| f(rec(pi, si, k))).collect::<Vec<_>>());
        let (va, vb) = (vals(0), vals(1));
        let m = |v: &[f64]| if info.higher_is_better { stats::hmean(v) } else { stats::amean(v) };
        let (am, bm) = (m(&va), m(&vb));
        rows.push(Row {
            label: label.clone(),
            value: matrix.swept.as_ref().map(|(_, v)| v[pi].clone()),
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
        });
    }

    let p0 = &preps[0];
    let header = format!(
        "schedlab compare: {} on {} ({} CPUs); {} runs per side and point, seeds 1..{}{}",
        p0.workload.name,
        p0.machine.name,
        p0.machine.topology.nr_cpus(),
        r,
        r,
        p0.cfg.duration_ns.map(|d| format!("; duration {}", fmt_ns(d))).unwrap_or_default()
    );
    let mut out = String::new();
    let _ = writeln!(out, "{header}");
    let _ = writeln!(out, "A: {}   B: {}", describe(&sides[0]), describe(&sides[1]));
    let _ = writeln!(out);
    out.push_str(&mmtests_table(&info, sides, &rows));
    let _ = writeln!(out);
    out.push_str(&intel_table(&p0.workload.name, &info, matrix, &rows));
    let _ = writeln!(out);
    out.push_str(&schedstat_table(&rows));
    let json = json_report(args, &info, sides, matrix, points, preps, &recs, &rows);
    let csv = csv_report(&info, sides, matrix, points, &recs, r);
    Ok(Report { text: out, json, csv })
}

/// Runs every (point, side, seed) on `jobs` threads; results come back in index order.
/// Also returns the metric identity (name, unit, higher_is_better) of run 0.
#[allow(clippy::type_complexity)]
fn run_all(preps: &[Prepared], r: usize, jobs: usize) -> Result<(Vec<Rec>, (String, String, bool))> {
    let n = preps.len() * r;
    let next = AtomicUsize::new(0);
    let one = |i: usize| -> (Rec, Option<(String, String, bool)>) {
        let p = &preps[i / r];
        let cfg = SimConfig { seed: (i % r) as u64 + 1, ..p.cfg.clone() };
        let res = schedlab_engine::run(&p.machine, p.kernel.clone(), &p.workload, &cfg);
        let id = (i == 0).then(|| (res.metric_name.clone(), res.metric_unit.clone(), res.higher_is_better));
        (Rec::from(&res), id)
    };
    let mut slots: Vec<Option<Rec>> = vec![None; n];
    let mut ident = None;
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
                    }
                    done
                })
            })
            .collect();
        let mut failed = false;
        for h in handles {
            match h.join() {
                Ok(done) => {
                    for (i, (rec, id)) in done {
                        slots[i] = Some(rec);
                        if id.is_some() {
                            ident = id;
                        }
                    }
                }
                Err(_) => failed = true,
            }
        }
        failed
    });
    if failed {
        bail!("a simulation run failed (internal error); please report it with the command line");
    }
    let recs: Option<Vec<Rec>> = slots.into_iter().collect();
    match (recs, ident) {
        (Some(recs), Some(id)) => Ok((recs, id)),
        _ => bail!("internal error: a run result is missing"),
    }
}

/// mmtests' pdiff / pndiff: positive is an improvement.
fn pct_change(base: f64, new: f64, higher_is_better: bool) -> f64 {
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
    // (Remainders matched rather than is_multiple_of, which needs Rust 1.87; the workspace builds on 1.85.)
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
fn intel_table(workload: &str, info: &MetricInfo, matrix: &Matrix, rows: &[Row]) -> String {
    let mut o = String::new();
    let mut case = info.name.clone();
    for (k, v) in &matrix.fixed {
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

#[allow(clippy::too_many_arguments)]
fn json_report(
    args: &CompareArgs,
    info: &MetricInfo,
    sides: &[Side; 2],
    matrix: &Matrix,
    points: &[(String, String)],
    preps: &[Prepared],
    recs: &[Rec],
    rows: &[Row],
) -> Value {
    let r = args.runs as usize;
    let key = matrix.swept.as_ref().map(|(k, _)| k.clone());
    let mut runs = Vec::with_capacity(recs.len());
    for (i, x) in recs.iter().enumerate() {
        let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
        runs.push(json!({
            "side": if si == 0 { "A" } else { "B" },
            "point": points[pi].0,
            "param": key,
            "param_value": rows[pi].value,
            "set": points[pi].1,
            "seed": k as u64 + 1,
            "metric": num(x.metric),
            "context_switches": { "voluntary": x.voluntary, "involuntary": x.involuntary },
            "migrations": x.migrations,
            "wakeups": x.wakeups,
            "ttwu_count": x.ttwu_count,
            "ttwu_move_affine": x.ttwu_move_affine,
            "affine_share": num(x.affine_share()),
            "run_delay_p99_ns": x.run_delay_p99_ns,
            "simulated_ns": x.simulated_ns,
        }));
    }
    let summary: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "point": row.label,
                "param_value": row.value,
                "mean_type": mean_name(info),
                "a_mean": num(row.a_mean), "a_cv_pct": num(row.a_cv),
                "b_mean": num(row.b_mean), "b_cv_pct": num(row.b_cv),
                "change_pct": num(row.change_pct),
                "welch_t": row.welch.map(|w| num(w.t)),
                "welch_df": row.welch.map(|w| num(w.df)),
                "p_value": row.welch.map(|w| num(w.p)),
                "significant": row.significant(),
                "affine_share_a": num(row.affine_a), "affine_share_b": num(row.affine_b),
                "migrations_a": num(row.migrations_a), "migrations_b": num(row.migrations_b),
            })
        })
        .collect();
    json!({
        "machine": preps[0].machine.name,
        "workload": preps[0].workload.name,
        "metric": { "name": info.name, "unit": info.unit, "higher_is_better": info.higher_is_better },
        "runs_per_side": r,
        "seeds": (1..=r as u64).collect::<Vec<_>>(),
        "duration_ns": preps[0].cfg.duration_ns,
        "sides": { "A": side_json(&sides[0]), "B": side_json(&sides[1]) },
        "param": key,
        "fixed": matrix.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
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

fn csv_report(info: &MetricInfo, sides: &[Side; 2], matrix: &Matrix, points: &[(String, String)], recs: &[Rec], r: usize) -> String {
    let mut o = String::from(
        "side,kernel,config,param,param_value,seed,metric_name,metric,voluntary_switches,involuntary_switches,migrations,wakeups,ttwu_count,ttwu_move_affine,affine_share,run_delay_p99_ns\n",
    );
    let key = matrix.swept.as_ref().map(|(k, _)| k.as_str()).unwrap_or("");
    for (i, x) in recs.iter().enumerate() {
        let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
        let value = matrix.swept.as_ref().map(|(_, v)| v[pi].as_str()).unwrap_or(&points[pi].0);
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{}",
            ["A", "B"][si],
            csv_field(&sides[si].kernel),
            csv_field(&sides[si].config()),
            csv_field(key),
            csv_field(value),
            k + 1,
            csv_field(&info.name),
            x.metric,
            x.voluntary,
            x.involuntary,
            x.migrations,
            x.wakeups,
            x.ttwu_count,
            x.ttwu_move_affine,
            x.affine_share(),
            x.run_delay_p99_ns
        );
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
}
