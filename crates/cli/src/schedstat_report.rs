//! `schedlab schedstat report FILE` / `schedstat diff FILE1 FILE2`: a
//! /proc/schedstat snapshot (v15, v16 or v17: the modelled one from
//! `run --schedstat FILE`, or a real kernel's) laid out as `perf sched stats
//! report` / `perf sched stats diff` (tools/perf, 2026) print it: the all-CPU
//! summary, then per domain the load-balance categories busy, idle and
//! newidle with the derived `*_lb_success_count` and `*_lb_avg_pulled`,
//! active balance, exec/fork balance and the wakeup fields; counts with the
//! average jiffies between two events ($ ... $) and shares (( ... )).
//!
//! A snapshot of a run counts from boot (the simulated run starts at 0), so
//! the elapsed time is its timestamp; perf takes two snapshots and their delta.

use anyhow::{bail, Context, Result};
use schedlab_kernel::schedstat;
use std::fmt::Write as _;

/// CPU line fields after `cpuN` (show_schedstat(), v15-v17).
const CPU_FIELDS: [&str; 9] =
    ["yld_count", "array_exp", "sched_count", "sched_goidle", "ttwu_count", "ttwu_local", "rq_cpu_time", "run_delay", "pcount"];
/// Fields with an AVG_JIFFIES column.
const TIMED: [&str; 5] = ["lb_count", "lb_balanced", "lb_failed", "lb_nobusyq", "lb_nobusyg"];

/// One domain line: its index, name (v17) and (field name, value) in print order.
#[derive(Clone, Debug, Default)]
struct Domain {
    index: usize,
    name: Option<String>,
    fields: Vec<(String, u64)>,
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    cpu: u32,
    fields: Vec<u64>,
    domains: Vec<Domain>,
}

#[derive(Clone, Debug, Default)]
struct Snapshot {
    version: u32,
    jiffies: u64,
    cpus: Vec<Cpu>,
}

/// A snapshot read by the kernel crate's reader (`schedlab_kernel::schedstat`,
/// next to the writer), its domain counters named for the report.
fn parse(text: &str, what: &str) -> Result<Snapshot> {
    let s = schedstat::parse(text).with_context(|| format!("{what}: not a /proc/schedstat snapshot schedlab reads"))?;
    let names = schedstat::domain_field_names(s.version);
    let cpus = s
        .cpus
        .into_iter()
        .map(|c| Cpu {
            cpu: c.cpu as u32,
            fields: vec![
                c.yld_count,
                c.array_exp,
                c.sched_count,
                c.sched_goidle,
                c.ttwu_count,
                c.ttwu_local,
                c.rq_cpu_time,
                c.run_delay,
                c.pcount,
            ],
            domains: c
                .domains
                .into_iter()
                .map(|d| Domain { index: d.index, name: d.name, fields: names.iter().cloned().zip(d.counters).collect() })
                .collect(),
        })
        .collect();
    Ok(Snapshot { version: s.version, jiffies: s.timestamp, cpus })
}

/// The all-CPU summary: CPU fields and domains (by index) summed.
fn summary(s: &Snapshot) -> Cpu {
    let mut sum = Cpu { cpu: u32::MAX, fields: vec![0; CPU_FIELDS.len()], domains: Vec::new() };
    for c in &s.cpus {
        for (a, b) in sum.fields.iter_mut().zip(&c.fields) {
            *a += b;
        }
        for d in &c.domains {
            match sum.domains.iter_mut().find(|x| x.index == d.index) {
                Some(x) => {
                    for (a, b) in x.fields.iter_mut().zip(&d.fields) {
                        a.1 += b.1;
                    }
                }
                None => sum.domains.push(d.clone()),
            }
        }
    }
    sum
}

const RULE: &str = "----------------------------------------------------------------------------------------------------";

fn category(title: &str) -> String {
    let t = format!(" <{title}> ");
    let left = (100 - t.len()) / 2;
    format!("{}{t}{}", "-".repeat(left), "-".repeat(100 - left - t.len()))
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

fn avg_j(j: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        j as f64 / n as f64
    }
}

fn change(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        0.0
    } else {
        100.0 * (b - a) / a
    }
}

/// A report row: description, value per side, share (percent) per side.
type Row = (String, Vec<f64>, Option<Vec<f64>>);

/// The rows of one CPU (or the summary).
fn cpu_rows(c: &[&Cpu]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, name) in CPU_FIELDS.iter().enumerate() {
        let v: Vec<f64> = c.iter().map(|x| x.fields[i] as f64).collect();
        let share = match *name {
            "sched_goidle" => Some(c.iter().map(|x| pct(x.fields[3], x.fields[2])).collect()),
            "ttwu_local" => Some(c.iter().map(|x| pct(x.fields[5], x.fields[4])).collect()),
            "run_delay" => Some(c.iter().map(|x| pct(x.fields[7], x.fields[6])).collect()),
            _ => None,
        };
        rows.push((name.to_string(), v, share));
    }
    rows
}

fn fmt_vals(v: &[f64], decimals: bool) -> String {
    v.iter().map(|x| if decimals { format!("{x:>11.2}") } else { format!("{:>11}", *x as u64) }).collect::<Vec<_>>().join(",")
}

fn row(o: &mut String, desc: &str, v: &[f64], decimals: bool, share: Option<&[f64]>, avg: Option<&[f64]>) {
    let _ = write!(o, "{desc:<65}: {}", fmt_vals(v, decimals));
    if v.len() == 2 {
        let _ = write!(o, "  | {:>8.2}% |", change(v[0], v[1]));
    }
    if let Some(s) = share {
        let _ = write!(o, "  ( {} )", s.iter().map(|x| format!("{x:>8.2}%")).collect::<Vec<_>>().join(", "));
    }
    if let Some(a) = avg {
        let _ = write!(o, "  $ {} $", a.iter().map(|x| format!("{x:>11.2}")).collect::<Vec<_>>().join(", "));
    }
    let _ = writeln!(o);
}

fn domain_block(o: &mut String, ds: &[&Domain], jiffies: &[u64]) {
    let get = |d: &Domain, k: &str| d.fields.iter().find(|f| f.0 == k).map_or(0, |f| f.1);
    for cat in ["busy", "idle", "newidle"] {
        let _ = writeln!(o, "{}", category(&format!("Category {cat}")));
        let lb: Vec<&(String, u64)> = ds[0].fields.iter().filter(|f| f.0.starts_with(&format!("{cat}_lb_"))).collect();
        for f in lb {
            let v: Vec<f64> = ds.iter().map(|d| get(d, &f.0) as f64).collect();
            let short = &f.0[cat.len() + 1..];
            let avg: Option<Vec<f64>> =
                TIMED.contains(&short).then(|| ds.iter().zip(jiffies).map(|(d, &j)| avg_j(j, get(d, &f.0))).collect());
            row(o, &f.0, &v, false, None, avg.as_deref());
        }
        let success: Vec<f64> = ds
            .iter()
            .map(|d| {
                let c = get(d, &format!("{cat}_lb_count"));
                c.saturating_sub(get(d, &format!("{cat}_lb_balanced")) + get(d, &format!("{cat}_lb_failed"))) as f64
            })
            .collect();
        row(o, &format!("*{cat}_lb_success_count"), &success, false, None, None);
        let pulled: Vec<f64> =
            ds.iter().zip(&success).map(|(d, &s)| if s == 0.0 { 0.0 } else { get(d, &format!("{cat}_lb_gained")) as f64 / s }).collect();
        row(o, &format!("*{cat}_lb_avg_pulled"), &pulled, true, None, None);
    }
    for (title, prefix) in [
        ("Category active_load_balance()", "alb_"),
        ("Category sched_balance_exec()", "sbe_"),
        ("Category sched_balance_fork()", "sbf_"),
        ("Wakeup Info", "ttwu_"),
    ] {
        let _ = writeln!(o, "{}", category(title));
        for f in ds[0].fields.iter().filter(|f| f.0.starts_with(prefix)) {
            let v: Vec<f64> = ds.iter().map(|d| get(d, &f.0) as f64).collect();
            row(o, &f.0, &v, false, None, None);
        }
    }
}

fn render(snaps: &[Snapshot], per_cpu: bool) -> Result<String> {
    let mut o = String::new();
    let jiffies: Vec<u64> = snaps.iter().map(|s| s.jiffies).collect();
    let _ = writeln!(o, "{RULE}");
    row(&mut o, "Time elapsed (in jiffies)", &jiffies.iter().map(|&j| j as f64).collect::<Vec<_>>(), false, None, None);
    let _ = writeln!(o, "{RULE}");
    let sums: Vec<Cpu> = snaps.iter().map(summary).collect();
    let mut groups: Vec<Vec<&Cpu>> = vec![sums.iter().collect()];
    if per_cpu {
        for (i, c) in snaps[0].cpus.iter().enumerate() {
            let mut g = vec![c];
            for s in &snaps[1..] {
                match s.cpus.get(i).filter(|x| x.cpu == c.cpu) {
                    Some(x) => g.push(x),
                    None => bail!("the snapshots do not have the same CPUs (cpu{} missing): compare runs on one machine", c.cpu),
                }
            }
            groups.push(g);
        }
    }
    let two = snaps.len() == 2;
    for g in groups {
        let title = if g[0].cpu == u32::MAX { "CPU <ALL CPUS SUMMARY>".to_string() } else { format!("CPU {}", g[0].cpu) };
        let _ = writeln!(o, "\n{RULE}\n{title}\n{RULE}");
        let _ = writeln!(o, "{:<65}  {}", "DESC", if two { "     COUNT1,     COUNT2  | PCT_CHANGE |" } else { "      COUNT   PCT_CHANGE" });
        let _ = writeln!(o, "{RULE}");
        for (desc, v, share) in cpu_rows(&g) {
            row(&mut o, &desc, &v, false, share.as_deref(), None);
        }
        let _ = writeln!(o, "{RULE}");
        for (k, d) in g[0].domains.iter().enumerate() {
            let mut ds = vec![d];
            for c in &g[1..] {
                match c.domains.get(k).filter(|x| x.index == d.index && x.fields.len() == d.fields.len()) {
                    Some(x) => ds.push(x),
                    None => bail!(
                        "the snapshots do not have the same domains (domain{} of {title}): same machine and schedstat version needed",
                        d.index
                    ),
                }
            }
            let dn = d.name.clone().unwrap_or_else(|| d.index.to_string());
            let _ = writeln!(o, "{title}, DOMAIN {dn}\n{RULE}");
            let _ = writeln!(
                o,
                "{:<65}  {}",
                "DESC",
                if two { "     COUNT1,     COUNT2  | PCT_CHANGE |  AVG_JIFFIES1, AVG_JIFFIES2" } else { "      COUNT    AVG_JIFFIES" }
            );
            domain_block(&mut o, &ds, &jiffies);
            let _ = writeln!(o, "{RULE}");
        }
    }
    Ok(o)
}

/// `schedstat report FILE`.
pub fn report(path: &std::path::Path, per_cpu: bool) -> Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    render(&[parse(&text, &path.display().to_string())?], per_cpu)
}

/// `schedstat diff FILE1 FILE2`.
pub fn diff(a: &std::path::Path, b: &std::path::Path, per_cpu: bool) -> Result<String> {
    let read = |p: &std::path::Path| -> Result<Snapshot> {
        let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        parse(&text, &p.display().to_string())
    };
    let (sa, sb) = (read(a)?, read(b)?);
    // v15 and v16 have the same fields (in another order; they are matched by name); v17 splits lb_imbalance.
    if (sa.version >= 17) != (sb.version >= 17) {
        bail!(
            "{} is schedstat v{} and {} v{}: v17 has other load-balance fields than v15/v16; compare kernels on the same side of v6.13",
            a.display(),
            sa.version,
            b.display(),
            sb.version
        );
    }
    render(&[sa, sb], per_cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V16: &str = "version 16\ntimestamp 100\ncpu0 0 0 10 4 8 2 1000 500 6\ndomain0 3 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36\ncpu1 0 0 30 6 12 6 3000 1500 14\ndomain0 3 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36\n";

    #[test]
    fn summary_sums_cpus_and_derives() {
        let s = parse(V16, "t").unwrap();
        let out = render(&[s], false).unwrap();
        // sched_count 40, sched_goidle 10 = 25%.
        assert!(out.contains(&format!("{:<65}: {:>11}  ( {:>8.2}% )", "sched_goidle", 10, 25.0)), "{out}");
        // busy_lb_count = 1 + 1; avg jiffies 100 / 2 = 50.
        assert!(out.contains(&format!("{:<65}: {:>11}  $ {:>11.2} $", "busy_lb_count", 2, 50.0)), "{out}");
        // success = count - balanced - failed = 2 - 4 - 6 < 0 -> 0; v16 busy first.
        assert!(out.contains("*busy_lb_success_count"));
        assert!(out.contains(&format!("{:<65}: {:>11}", "ttwu_move_balance", 72)), "{out}");
        assert!(out.contains("CPU <ALL CPUS SUMMARY>, DOMAIN 0"));
    }

    #[test]
    fn diff_and_bad_input() {
        let a = parse(V16, "a").unwrap();
        let b = parse(&V16.replace("cpu0 0 0 10", "cpu0 0 0 50"), "b").unwrap();
        let out = render(&[a, b], true).unwrap();
        assert!(out.contains(&format!("{:<65}: {:>11},{:>11}  | {:>8.2}% |", "sched_count", 40, 80, 100.0)), "{out}");
        assert!(out.contains("\nCPU 1\n"));
        let e = |t: &str| format!("{:#}", parse(t, "x").unwrap_err());
        assert!(e("version 14\ncpu0 1").contains("version 14"));
        assert!(e("version 16\ncpu0 1 2").contains("needs 9 fields"));
        assert!(e("version 16\ncpu0 0 0 1 1 1 1 1 1 1\ndomain0 3 1 2").contains("36 counters"));
        assert!(e("hello").starts_with("x: ") && e("hello").contains("no version line"), "{}", e("hello"));
        assert!(e("version 16\n").contains("no cpu lines"));
    }
}
