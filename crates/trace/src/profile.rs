//! `schedlab profile`: per role of task, the counts a scheduler engineer
//! compares between a real run and a simulated one.

use crate::model::{role, Analysis};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RoleProfile {
    pub role: String,
    pub tasks: u64,
    pub cpu_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub wakeups: u64,
    pub wakeups_sync: u64,
    pub migrations: u64,
    pub run_delay_mean_ns: f64,
    pub run_delay_p50_ns: u64,
    pub run_delay_p99_ns: u64,
    pub run_delay_max_ns: u64,
    /// Per op (the totals divided by `ops`).
    pub per_op: PerOp,
}

#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct PerOp {
    pub cpu_ns: f64,
    pub switches: f64,
    pub voluntary_switches: f64,
    pub involuntary_switches: f64,
    pub wakeups: f64,
    pub migrations: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Edge {
    pub waker: String,
    pub wakee: String,
    pub wakeups: u64,
    pub sync: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Profile {
    pub source: String,
    pub duration_ns: u64,
    pub nr_cpus: u16,
    /// What one op is (the divisor of every per-op figure).
    pub ops: u64,
    pub total: RoleProfile,
    pub roles: Vec<RoleProfile>,
    pub waker_wakee: Vec<Edge>,
    /// Spinning before blocking is user-space behaviour the sched tracepoints
    /// do not show: always null here.
    pub spin_before_block_ns: Option<u64>,
}

fn pct(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn role_profile(name: String, tasks: &[&crate::model::TaskTrace], ops: u64) -> RoleProfile {
    let sum = |f: &dyn Fn(&crate::model::TaskTrace) -> u64| tasks.iter().map(|t| f(t)).sum::<u64>();
    let mut d: Vec<u64> = tasks.iter().flat_map(|t| t.run_delays.iter().copied()).collect();
    d.sort_unstable();
    let (cpu, vol, inv, wk, mig) =
        (sum(&|t| t.cpu_ns), sum(&|t| t.voluntary), sum(&|t| t.involuntary), sum(&|t| t.wakeups), sum(&|t| t.migrations));
    let o = ops.max(1) as f64;
    RoleProfile {
        role: name,
        tasks: tasks.len() as u64,
        cpu_ns: cpu,
        voluntary_switches: vol,
        involuntary_switches: inv,
        wakeups: wk,
        wakeups_sync: sum(&|t| t.wakeups_sync),
        migrations: mig,
        run_delay_mean_ns: if d.is_empty() { 0.0 } else { d.iter().sum::<u64>() as f64 / d.len() as f64 },
        run_delay_p50_ns: pct(&d, 0.5),
        run_delay_p99_ns: pct(&d, 0.99),
        run_delay_max_ns: d.last().copied().unwrap_or(0),
        per_op: PerOp {
            cpu_ns: cpu as f64 / o,
            switches: (vol + inv) as f64 / o,
            voluntary_switches: vol as f64 / o,
            involuntary_switches: inv as f64 / o,
            wakeups: wk as f64 / o,
            migrations: mig as f64 / o,
        },
    }
}

impl Profile {
    pub fn new(a: &Analysis, source: &str, ops: u64) -> Profile {
        let mut by_role: BTreeMap<String, Vec<&crate::model::TaskTrace>> = BTreeMap::new();
        for t in &a.tasks {
            by_role.entry(role(&t.comm)).or_default().push(t);
        }
        let all: Vec<&crate::model::TaskTrace> = a.tasks.iter().collect();
        Profile {
            source: source.to_string(),
            duration_ns: a.end_ns.saturating_sub(a.start_ns),
            nr_cpus: a.nr_cpus,
            ops: ops.max(1),
            total: role_profile("(all)".into(), &all, ops),
            roles: by_role.into_iter().map(|(r, ts)| role_profile(r, &ts, ops)).collect(),
            waker_wakee: a.edges.iter().map(|((w, t), &(n, s))| Edge { waker: w.clone(), wakee: t.clone(), wakeups: n, sync: s }).collect(),
            spin_before_block_ns: None,
        }
    }

    /// Rows of the text table: (label, value) per metric.
    fn rows(r: &RoleProfile) -> Vec<(&'static str, String)> {
        vec![
            ("tasks", r.tasks.to_string()),
            ("CPU/op (us)", format!("{:.3}", r.per_op.cpu_ns / 1e3)),
            ("switches/op", format!("{:.3}", r.per_op.switches)),
            ("  voluntary/op", format!("{:.3}", r.per_op.voluntary_switches)),
            ("  involuntary/op", format!("{:.3}", r.per_op.involuntary_switches)),
            ("wakeups/op", format!("{:.3}", r.per_op.wakeups)),
            ("  sync share", if r.wakeups == 0 { "-".into() } else { format!("{:.2}", r.wakeups_sync as f64 / r.wakeups as f64) }),
            ("migrations/op", format!("{:.4}", r.per_op.migrations)),
            ("run delay mean (us)", format!("{:.2}", r.run_delay_mean_ns / 1e3)),
            ("run delay p99 (us)", format!("{:.2}", r.run_delay_p99_ns as f64 / 1e3)),
        ]
    }

    /// The text report.
    pub fn text(&self) -> String {
        let mut s = format!(
            "profile of {}: {} tasks, {:.3} s on {} CPUs, per op = 1/{} of the totals\n",
            self.source,
            self.total.tasks,
            self.duration_ns as f64 / 1e9,
            self.nr_cpus,
            self.ops
        );
        let mut cols = vec![&self.total];
        cols.extend(self.roles.iter());
        s += &table(&["metric".to_string()], &cols.iter().map(|r| (r.role.clone(), Self::rows(r))).collect::<Vec<_>>());
        s += "spin-before-block: not measurable from sched tracepoints\nwaker -> wakee (wakeups, inferred sync):\n";
        for e in &self.waker_wakee {
            s += &format!("  {:<24} -> {:<20} {:>9} {:>9}\n", e.waker, e.wakee, e.wakeups, e.sync);
        }
        s
    }

    /// Two profiles side by side (role by role, for roles in either).
    pub fn vs(real: &Profile, sim: &Profile) -> String {
        let mut s = format!("real: {}\nsim:  {}\n", real.source, sim.source);
        let mut names: Vec<&str> = vec!["(all)"];
        for r in real.roles.iter().chain(&sim.roles) {
            if !names.contains(&r.role.as_str()) {
                names.push(&r.role);
            }
        }
        let find = |p: &'_ Profile, n: &str| -> Option<RoleProfile> {
            if n == "(all)" {
                Some(p.total.clone())
            } else {
                p.roles.iter().find(|r| r.role == n).cloned()
            }
        };
        for n in names {
            s += &format!("\nrole {n}\n");
            let (a, b) = (find(real, n), find(sim, n));
            let ra = a.as_ref().map(Self::rows);
            let rb = b.as_ref().map(Self::rows);
            let labels = Self::rows(a.as_ref().or(b.as_ref()).expect("role comes from one side"));
            s += &format!("  {:<22} {:>12} {:>12} {:>8}\n", "metric", "real", "sim", "sim/real");
            for (k, (label, _)) in labels.iter().enumerate() {
                let va = ra.as_ref().map_or("-".to_string(), |r| r[k].1.clone());
                let vb = rb.as_ref().map_or("-".to_string(), |r| r[k].1.clone());
                let ratio = match (va.parse::<f64>(), vb.parse::<f64>()) {
                    (Ok(x), Ok(y)) if x != 0.0 => format!("{:.2}", y / x),
                    _ => "-".into(),
                };
                s += &format!("  {label:<22} {va:>12} {vb:>12} {ratio:>8}\n");
            }
        }
        s
    }
}

fn table(_h: &[String], cols: &[(String, Vec<(&'static str, String)>)]) -> String {
    let mut s = format!("  {:<22}", "metric");
    for (n, _) in cols {
        s += &format!(" {:>14}", n.chars().take(14).collect::<String>());
    }
    s.push('\n');
    if let Some((_, rows)) = cols.first() {
        for (k, (label, _)) in rows.iter().enumerate() {
            s += &format!("  {label:<22}");
            for (_, r) in cols {
                s += &format!(" {:>14}", r[k].1);
            }
            s.push('\n');
        }
    }
    s
}
