//! `schedlab bisect`: which release step, and which difference inside it,
//! carries a change of the workload's metric.
//!
//! 1. Runs every release profile from `--kernel A` to `--vs B` (and B plus
//!    `--patch`, when given) with seeds 1..=R and finds the step whose change
//!    is significant (Welch's t-test, as `compare`) and largest.
//! 2. Inside that step (profile P -> Q) applies each difference of Q from P
//!    (`KernelProfile::differences()`: feature bits one by one, algorithm
//!    variants, version-gated code) to P alone, runs it, and gives each its
//!    share of the step's change: (mean(P + d) - mean(P)) / (mean(Q) - mean(P)).
//! 3. For the difference with the largest share, the decision records of P
//!    and P + d (seed 1) say which wakeup path moved.

use crate::{explain, prepare, stats, Prepared, RunArgs};
use anyhow::{bail, Context, Result};
use schedlab_kernel::profile::{self, Difference, KernelProfile};
use schedlab_lab::compare::{pct_change, run_all, MetricInfo, Progress};
use std::fmt::Write as _;

#[derive(clap::Args, Clone)]
pub struct BisectArgs {
    /// Start of the range: a release profile (`schedlab kernels`).
    #[arg(long)]
    pub kernel: String,
    /// End of the range (default: the start, with --patch).
    #[arg(long)]
    pub vs: Option<String>,
    /// Patches applied at the end of the range (one more step: B -> B + patches).
    #[arg(long)]
    pub patch: Option<String>,
    /// Feature bits applied to every profile of the range.
    #[arg(long)]
    pub features: Option<String>,
    #[arg(long, default_value = "x86-12")]
    pub machine: String,
    #[arg(long, default_value = "hackbench")]
    pub workload: String,
    /// Workload parameters key=value[,key=value...]; may be repeated.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Seeded runs per profile (seeds 1..=RUNS); at least 2 for the significance test.
    #[arg(long, default_value_t = 5)]
    pub runs: u64,
    /// Simulated run time for time-bounded workloads (default 1s).
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Worker threads (default: available parallelism). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write the tables as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

/// One measured profile.
struct Point {
    label: String,
    values: Vec<f64>,
    mean: f64,
}

/// One release step, measured.
struct Step {
    from: usize,
    to: usize,
    change_pct: f64,
    p: Option<f64>,
}

/// One difference applied alone inside the chosen step.
struct Tried {
    diff: Difference,
    point: Point,
    change_pct: f64,
    share: f64,
    p: Option<f64>,
}

/// The bisect outcome (text and HTML are rendered from it).
struct Outcome {
    header: String,
    info: MetricInfo,
    points: Vec<Point>,
    steps: Vec<Step>,
    chosen: Option<usize>,
    tried: Vec<Tried>,
    paths_line: Option<String>,
}

/// The release profiles from `a` to `b` (inclusive, oldest first).
fn chain(a: &str, b: &str) -> Result<Vec<KernelProfile>> {
    let all = profile::profiles();
    let pos = |n: &str| -> Result<usize> {
        let want = n.trim().trim_start_matches('v');
        if profile::deprecation_note(n).is_some() {
            bail!("{n} is a deprecated name, not a release; bisect takes release profiles ({})", names(&all));
        }
        all.iter()
            .position(|p| p.name.trim_start_matches('v') == want)
            .ok_or_else(|| anyhow::anyhow!("unknown kernel {n:?}; release profiles: {}", names(&all)))
    };
    let (ia, ib) = (pos(a)?, pos(b)?);
    if ia > ib {
        bail!("--kernel {a} is newer than --vs {b}; give the older release first");
    }
    Ok(all[ia..=ib].to_vec())
}

fn names(all: &[KernelProfile]) -> String {
    all.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

fn label(p: &KernelProfile) -> String {
    let mut s = p.name.to_string();
    for x in &p.patches {
        let _ = write!(s, "+{}", x.name());
    }
    s
}

pub fn bisect(args: &BisectArgs) -> Result<()> {
    if args.runs < 2 {
        bail!("--runs must be at least 2: a step is significant by Welch's t-test over the runs");
    }
    if args.runs > 100 {
        bail!("--runs {} is more than 100; bisect runs every profile and difference that often, use fewer", args.runs);
    }
    if args.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let b_name = args.vs.clone().unwrap_or_else(|| args.kernel.clone());
    let mut profiles = chain(&args.kernel, &b_name)?;
    if let Some(p) = &args.patch {
        let mut last = profiles.last().expect("a chain has one profile at least").clone();
        last.apply_patches(p).map_err(anyhow::Error::msg)?;
        profiles.push(last);
    }
    if profiles.len() < 2 {
        bail!("--kernel {} --vs {b_name} is one profile: nothing to bisect (give a later --vs or a --patch)", args.kernel);
    }
    if let Some(f) = &args.features {
        for p in &mut profiles {
            p.apply_features(f).map_err(anyhow::Error::msg)?;
        }
    }
    let base = RunArgs {
        sysctl: None,
        machine: args.machine.clone(),
        kernel: profiles[0].name.to_string(),
        features: None,
        patch: None,
        workload: args.workload.clone(),
        set: args.set.clone(),
        seed: 1,
        duration: args.duration.clone(),
        json: false,
        machine_model: None,
        schedstat: None,
        switch_log: None,
        trace: None,
        ftrace: None,
        explain: false,
    };
    let template = prepare(&base).context("bisect setup")?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let r = args.runs as usize;
    let prep_of = |k: &KernelProfile| Prepared {
        machine: template.machine.clone(),
        kernel: k.clone(),
        workload: template.workload.clone(),
        cfg: template.cfg.clone(),
        duration_defaulted: template.duration_defaulted,
        spec: template.spec.clone(),
    };
    let mut progress = Progress::new(0);
    let measure = |ks: &[KernelProfile], progress: &mut Progress| -> Result<(Vec<Vec<f64>>, Option<MetricInfo>)> {
        let preps: Vec<Prepared> = ks.iter().map(prep_of).collect();
        let refs: Vec<&Prepared> = preps.iter().collect();
        let recs = run_all(&refs, r, jobs, progress)?;
        let info = recs.iter().find_map(|(_, i)| i.clone());
        let mut out = Vec::new();
        for (i, k) in ks.iter().enumerate() {
            let mut v = Vec::with_capacity(r);
            for (rec, _) in &recs[i * r..(i + 1) * r] {
                if let Some(why) = &rec.missing {
                    bail!("{} on {} with {}: no result: {why}", template.workload.name, template.machine.name, label(k));
                }
                v.push(rec.metric);
            }
            out.push(v);
        }
        Ok((out, info))
    };
    let (vals, info) = measure(&profiles, &mut progress)?;
    let info = info.ok_or_else(|| anyhow::anyhow!("internal error: no metric identity"))?;
    let hib = info.higher_is_better;
    let points: Vec<Point> = profiles.iter().zip(vals).map(|(k, v)| Point { label: label(k), mean: stats::amean(&v), values: v }).collect();
    let steps: Vec<Step> = (1..points.len())
        .map(|i| {
            let (a, b) = (&points[i - 1], &points[i]);
            Step { from: i - 1, to: i, change_pct: pct_change(a.mean, b.mean, hib), p: stats::welch(&a.values, &b.values).map(|w| w.p) }
        })
        .collect();
    // The significant step with the largest change; none significant: the largest.
    let signif = |s: &Step| s.p.is_some_and(|p| p < 0.05);
    let chosen = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| signif(s))
        .max_by(|x, y| x.1.change_pct.abs().total_cmp(&y.1.change_pct.abs()))
        .or_else(|| steps.iter().enumerate().max_by(|x, y| x.1.change_pct.abs().total_cmp(&y.1.change_pct.abs())))
        .map(|(i, _)| i);
    let mut tried = Vec::new();
    let mut paths_line = None;
    if let Some(si) = chosen {
        let (pf, qf) = (&profiles[steps[si].from], &profiles[steps[si].to]);
        let diffs = pf.differences(qf);
        let variants: Vec<KernelProfile> = diffs
            .iter()
            .map(|d| {
                let mut k = pf.clone();
                k.apply_difference(qf, d.aspect);
                k
            })
            .collect();
        let (vals, _) = measure(&variants, &mut progress)?;
        let (pm, qm) = (points[steps[si].from].mean, points[steps[si].to].mean);
        let base_vals = &points[steps[si].from].values;
        for (d, v) in diffs.into_iter().zip(vals) {
            let mean = stats::amean(&v);
            let share = if qm != pm { (mean - pm) / (qm - pm) } else { 0.0 };
            tried.push(Tried {
                change_pct: pct_change(pm, mean, hib),
                p: stats::welch(base_vals, &v).map(|w| w.p),
                share,
                point: Point { label: d.describe(), values: v, mean },
                diff: d,
            });
        }
        tried.sort_by(|a, b| b.share.abs().total_cmp(&a.share.abs()).then(a.point.label.cmp(&b.point.label)));
        if let Some(top) = tried.first() {
            let mut k = pf.clone();
            k.apply_difference(qf, top.diff.aspect);
            let (pp, kp) = (prep_of(pf), prep_of(&k));
            let (_, xa, _) = explain::run_explained(&pp, &pp.cfg, false);
            let (_, xb, _) = explain::run_explained(&kp, &kp.cfg, false);
            let who = format!("{} with {} alone", label(pf), top.diff.describe());
            paths_line = explain::compare_text(&label(pf), &who, &xa, &xb).lines().next().map(str::to_string);
        }
    }
    progress.finish();
    let header = format!(
        "schedlab bisect: {} on {} ({} CPUs), {} ({}{}), {} runs per profile (seeds 1..{})",
        template.workload.name,
        template.machine.name,
        template.machine.topology.nr_cpus(),
        info.name,
        info.unit,
        if hib { ", higher is better" } else { ", lower is better" },
        r,
        r
    );
    let o = Outcome { header, info, points, steps, chosen, tried, paths_line };
    print!("{}", text(&o));
    if let Some(path) = &args.html {
        std::fs::write(path, html(&o)).with_context(|| format!("cannot write --html file {}", path.display()))?;
    }
    Ok(())
}

fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => "-".into(),
    }
}

fn mark(p: Option<f64>) -> &'static str {
    if p.is_some_and(|p| p < 0.05) {
        "*"
    } else {
        " "
    }
}

fn text(o: &Outcome) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", o.header);
    let _ = writeln!(s, "\n  {:<34} {:>12} {:>9} {:>8}", "profile", "mean", "change", "p");
    for (i, pt) in o.points.iter().enumerate() {
        match i.checked_sub(1).map(|k| &o.steps[k]) {
            None => {
                let _ = writeln!(s, "  {:<34} {:>12.6}", pt.label, pt.mean);
            }
            Some(st) => {
                let _ = writeln!(
                    s,
                    "  {:<34} {:>12.6} {:>+8.2}%{} {:>8}",
                    format!("{} -> {}", o.points[st.from].label, pt.label),
                    pt.mean,
                    st.change_pct,
                    mark(st.p),
                    p_text(st.p)
                );
            }
        }
    }
    let Some(ci) = o.chosen else { return s };
    let st = &o.steps[ci];
    let (pl, ql) = (&o.points[st.from].label, &o.points[st.to].label);
    let _ = writeln!(
        s,
        "\nstep {pl} -> {ql}: {:+.2}% ({}); its differences, each applied alone to {pl}:",
        st.change_pct,
        if st.p.is_some_and(|p| p < 0.05) { "significant, Welch's t-test at 5%" } else { "the largest change, NOT significant at 5%" }
    );
    let _ = writeln!(s, "  {:<48} {:>12} {:>9} {:>8} {:>8}", "difference", "mean", "change", "p", "share");
    for t in &o.tried {
        let _ = writeln!(
            s,
            "  {:<48} {:>12.6} {:>+8.2}%{} {:>8} {:>7.0}%",
            t.point.label,
            t.point.mean,
            t.change_pct,
            mark(t.p),
            p_text(t.p),
            (t.share * 100.0).round() + 0.0
        );
    }
    let sum: f64 = o.tried.iter().map(|t| t.share).sum();
    if let Some(top) = o.tried.first() {
        let _ = writeln!(
            s,
            "\n{} carries {:.0}% of the {pl} -> {ql} change ({} {:+.2}% of {:+.2}%); single differences together {:.0}%{}",
            top.diff.describe(),
            (top.share * 100.0).round() + 0.0,
            o.info.name,
            top.change_pct,
            st.change_pct,
            (sum * 100.0).round() + 0.0,
            if (sum - 1.0).abs() > 0.2 { " (the rest: interactions between differences, or noise)" } else { "" }
        );
    }
    if let Some(l) = &o.paths_line {
        let _ = writeln!(s, "decisions (seed 1): {l}");
    }
    let _ =
        writeln!(s, "share = (mean with the difference alone - mean of {pl}) / (mean of {ql} - mean of {pl}); *: p < 0.05 against {pl}");
    s
}

fn html(o: &Outcome) -> String {
    use crate::html::esc;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>schedlab bisect</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:3px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}.sig{{font-weight:bold}}</style></head><body>\n<h1>schedlab bisect</h1>\n<p>{}</p>\n<h2>Release steps</h2>\n<table><tr><th>profile</th><th>mean</th><th>change</th><th>p</th></tr>\n",
        esc(&o.header)
    );
    for (i, pt) in o.points.iter().enumerate() {
        match i.checked_sub(1).map(|k| &o.steps[k]) {
            None => {
                let _ = writeln!(s, "<tr><td>{}</td><td>{:.6}</td><td></td><td></td></tr>", esc(&pt.label), pt.mean);
            }
            Some(st) => {
                let cls = if Some(i - 1) == o.chosen { " class=\"sig\"" } else { "" };
                let _ = writeln!(
                    s,
                    "<tr{cls}><td>{} &rarr; {}</td><td>{:.6}</td><td>{:+.2}%{}</td><td>{}</td></tr>",
                    esc(&o.points[st.from].label),
                    esc(&pt.label),
                    pt.mean,
                    st.change_pct,
                    mark(st.p).trim(),
                    p_text(st.p)
                );
            }
        }
    }
    s.push_str("</table>\n");
    if let Some(ci) = o.chosen {
        let st = &o.steps[ci];
        let _ = writeln!(
            s,
            "<h2>Inside {} &rarr; {}</h2>\n<table><tr><th>difference (applied alone)</th><th>mean</th><th>change</th><th>p</th><th>share</th></tr>",
            esc(&o.points[st.from].label),
            esc(&o.points[st.to].label)
        );
        for t in &o.tried {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{:.6}</td><td>{:+.2}%{}</td><td>{}</td><td>{:.0}%</td></tr>",
                esc(&t.point.label),
                t.point.mean,
                t.change_pct,
                mark(t.p).trim(),
                p_text(t.p),
                t.share * 100.0
            );
        }
        s.push_str("</table>\n");
        if let Some(l) = &o.paths_line {
            let _ = writeln!(s, "<p>Decisions (seed 1): {}</p>", esc(l));
        }
    }
    s.push_str("<pre>");
    s.push_str(&esc(&text(o)));
    s.push_str("</pre>\n</body></html>\n");
    s
}
