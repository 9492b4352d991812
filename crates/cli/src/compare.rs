//! `schedlab compare`: side A against side B over a one-key parameter matrix,
//! R seeded repetitions per side and point, spread over worker threads, and
//! reported the way kernel developers read A/B results (mmtests
//! compare-kernels, the LKML `baseline(std%) compare%(std%)` table, schedstat);
//! `--json` writes the library's report as it serialises (`Report::to_json`).

use crate::html;
use anyhow::{Context, Result};
pub use schedlab_lab::compare::Progress;
use schedlab_lab::compare::{describe, mean_name, Plan, Report};
use schedlab_lab::compare::{MetricInfo, NumaRec, Row, Side, Table, COUNTERS};
use schedlab_lab::spec::{CompareSpec, DEFAULT_KERNEL, DEFAULT_MACHINE, DEFAULT_RUNS, DEFAULT_WORKLOAD};
use std::fmt::Write as _;

#[derive(clap::Args, Clone)]
pub struct CompareArgs {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file (both sides); several:
    /// a comma list or the option repeated (one table per machine and workload).
    #[arg(long, default_value = DEFAULT_MACHINE)]
    pub machine: Vec<String>,
    /// Built-in workload or workload file (both sides); several: a comma list or the option repeated.
    #[arg(long, default_value = DEFAULT_WORKLOAD)]
    pub workload: Vec<String>,
    /// Workload parameters key=value[,key=value...]; a key followed by several
    /// comma-separated values (clients=1,2,4) is the swept matrix axis (at most one
    /// per workload). WORKLOAD:key=value applies to that workload only.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Side A (baseline) kernel profile.
    #[arg(long, default_value = DEFAULT_KERNEL)]
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
    #[arg(long, default_value_t = DEFAULT_RUNS)]
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
    /// Also record every placement decision (extra runs per side) and print the wakeup-path shares of both sides and their difference, largest change first.
    #[arg(long)]
    pub explain: bool,
}

impl CompareArgs {
    /// The library's comparison for these arguments.
    pub fn spec(&self) -> CompareSpec {
        CompareSpec {
            machines: self.machine.clone(),
            workloads: self.workload.clone(),
            set: self.set.clone(),
            kernel: self.kernel.clone(),
            patch: self.patch.clone(),
            features: self.features.clone(),
            machine_model: self.machine_model.clone(),
            vs: self.vs.clone(),
            patch_b: self.patch_b.clone(),
            features_b: self.features_b.clone(),
            machine_model_b: self.machine_model_b.clone(),
            runs: self.runs,
            duration: self.duration.clone(),
            jobs: self.jobs,
        }
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
    let report = execute(&plan, &mut progress)?;
    progress.finish();
    print!("{}", text(&report));
    if args.explain {
        print!("{}", crate::explain::compare_explain(&plan.explain_points(), args.runs)?);
    }
    if let Some(path) = &args.json {
        // The library's one serialisation of the report (`Report::to_json`).
        let text = serde_json::to_string_pretty(&report.to_json())?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write --json file {}", path.display()))?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, csv(&report)).with_context(|| format!("cannot write --csv file {}", path.display()))?;
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

/// Validates the arguments and builds every run up front (`schedlab_lab::compare::plan`).
pub fn plan(args: &CompareArgs) -> Result<Plan> {
    schedlab_lab::compare::plan(&args.spec())
}

/// Runs a planned comparison (`schedlab_lab::compare::execute`), reporting
/// progress; warnings about truncated runs go to stderr.
pub fn execute(plan: &Plan, progress: &mut Progress) -> Result<Report> {
    schedlab_lab::compare::execute(plan, progress, &mut |w| eprintln!("{w}"), None)
}

/// The printed tables of a comparison, one block per (machine, workload).
pub fn text(data: &Report) -> String {
    let (sides, r) = (&data.sides, data.runs);
    let mut out = String::new();
    for (ti, t) in data.tables.iter().enumerate() {
        if ti > 0 {
            let _ = writeln!(out);
        }
        out.push_str(&table_text(t, sides, r));
    }
    out
}

/// The `--csv` text of a comparison.
pub fn csv(data: &Report) -> String {
    csv_report(&data.sides, &data.tables, data.runs)
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
    if let Some(means) = t.numa_means(r) {
        out.push_str(&numa_table(&t.rows, &means));
    }
    out
}

/// Per point, side and cgroup: CPU and memory per node, NUMA counters (the
/// per-run tables of `schedlab run`, averaged over the runs).
fn numa_table(rows: &[Row], means: &[[Vec<NumaRec>; 2]]) -> String {
    let mut o = String::new();
    let nodes = means.iter().flatten().flatten().map(|g| g.cpu_pct.len()).max().unwrap_or(0);
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(0).max(10);
    let gw = means.iter().flatten().flatten().map(|g| g.group.len()).max().unwrap_or(0).max(8);
    let _ = writeln!(o, "NUMA (means over runs): CPU per node in % of one CPU, memory per node in %, counters per run");
    let _ = write!(o, "{:<w$} {:<4} {:<gw$}", "load", "side", "cgroup");
    for n in 0..nodes {
        let _ = write!(o, " {:>9}", format!("cpu n{n}"));
    }
    for n in 0..nodes {
        let _ = write!(o, " {:>8}", format!("mem n{n}"));
    }
    let _ = writeln!(o, " {:>12} {:>10} {:>9} {:>8}", "hint_faults", "migrated", "task_mig", "swapped");
    for (row, sides) in rows.iter().zip(means) {
        for (si, groups) in sides.iter().enumerate() {
            for g in groups {
                let _ = write!(o, "{:<w$} {:<4} {:<gw$}", row.label, ["A", "B"][si], g.group);
                for n in 0..nodes {
                    let _ = write!(o, " {:>8.0}%", g.cpu_pct.get(n).copied().unwrap_or(0.0));
                }
                for n in 0..nodes {
                    let _ = write!(o, " {:>7.0}%", g.mem_pct.get(n).copied().unwrap_or(0.0));
                }
                let _ = writeln!(o, " {:>12} {:>10} {:>9} {:>8}", g.hint_faults, g.pages_migrated, g.task_migrated, g.task_swapped);
            }
        }
    }
    o
}

fn fmt_ns(ns: u64) -> String {
    // (Remainders matched: one match gives the unit.)
    match (ns % 1_000_000_000, ns % 1_000_000) {
        (0, _) => format!("{}s", ns / 1_000_000_000),
        (_, 0) => format!("{}ms", ns / 1_000_000),
        _ => format!("{}us", ns as f64 / 1e3),
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
        let change = if r.significant { format!("*{:7.2}%*", r.change_pct) } else { format!("({:7.2}%)", r.change_pct) };
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
            if r.significant { "*" } else { "" }
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

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_report(sides: &[Side; 2], tables: &[Table], r: usize) -> String {
    let mut o = String::from(
        "machine,workload,side,kernel,config,param,param_value,seed,metric_name,metric,voluntary_switches,involuntary_switches,migrations,wakeups,ttwu_count,ttwu_move_affine,affine_share,run_delay_p99_ns,run_delay_p50_ns,run_delay_p90_ns,run_delay_max_ns",
    );
    for c in COUNTERS {
        let _ = write!(o, ",{c}");
    }
    o.push('\n');
    for t in tables {
        let key = t.param.as_deref().unwrap_or("");
        for (i, x) in t.recs.iter().enumerate() {
            let (pi, si, k) = (i / r / 2, (i / r) % 2, i % r);
            let value = t.rows[pi].value.as_deref().unwrap_or(&t.points[pi].0);
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
