//! `schedlab demo`: the main job on a built-in default. Two classic scheduler
//! benchmarks under three kernel profiles, one side-by-side table:
//!
//! - hackbench -g 4 -l 200 -p on x86-12 (12 CPUs, 2 nodes);
//! - perf bench sched pipe, 100000 loops, on laptop-4c8t (4 cores, SMT2);
//!
//! kernels v3.10, v6.6, v6.12; seed 1. Deterministic: the same table on any
//! machine. `scripts/demo` builds schedlab and runs this.

use anyhow::Result;
use schedlab_lab::{prepare, ScenarioSpec};
use std::fmt::Write as _;

const KERNELS: [&str; 3] = ["v3.10", "v6.6", "v6.12"];
/// (workload, machine, --set)
const CASES: [(&str, &str, &str); 2] = [("hackbench", "x86-12", "groups=4,loops=200,pipe=1"), ("pipe", "laptop-4c8t", "loops=100000")];

fn value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        let s = format!("{:.0}", v);
        let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else {
        format!("{v:.4}")
    }
}

/// The demo table.
pub fn demo() -> Result<String> {
    let hdr = ["workload", "machine", "kernel", "metric", "ctx-sw vol", "ctx-sw invol", "migrations", "run delay p99 us"];
    let mut rows: Vec<[String; 8]> = Vec::new();
    for (wl, machine, set) in CASES {
        for k in KERNELS {
            let spec = ScenarioSpec { seed: 1, machine: machine.into(), kernel: k.into(), workload: wl.into(), ..ScenarioSpec::default() }
                .with_sets(&[set.to_string()])?;
            let p = prepare(&spec)?;
            let r = schedlab_engine::run(&p.machine, p.kernel.clone(), &p.workload, &p.cfg);
            let arrow = if r.higher_is_better { "higher better" } else { "lower better" };
            rows.push([
                wl.to_string(),
                machine.to_string(),
                k.to_string(),
                format!("{} {} {} ({arrow})", r.metric_name, value(r.metric_value), r.metric_unit),
                r.voluntary_switches.to_string(),
                r.involuntary_switches.to_string(),
                r.migrations.to_string(),
                format!("{:.1}", r.run_delay_p99 as f64 / 1000.0),
            ]);
        }
    }
    let w: Vec<usize> = (0..hdr.len()).map(|i| rows.iter().map(|r| r[i].len()).chain([hdr[i].len()]).max().unwrap_or(0)).collect();
    let line = |cells: &[String]| -> String {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| if i < 4 { format!("{c:<w$}", w = w[i]) } else { format!("{c:>w$}", w = w[i]) })
            .collect();
        s.join("  ").trim_end().to_string()
    };
    let mut o = String::new();
    let desc: Vec<String> = CASES.iter().map(|(wl, m, set)| format!("{wl} {} on {m}", set.replace(',', " "))).collect();
    let _ = writeln!(o, "{}; kernels {}; seed 1", desc.join("; "), KERNELS.join(", "));
    let _ = writeln!(o, "{}", line(&hdr.map(String::from)));
    let _ = writeln!(o, "{}", line(&w.iter().map(|&n| "-".repeat(n)).collect::<Vec<_>>()));
    for (i, r) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1][0] != r[0] {
            o.push('\n');
        }
        let _ = writeln!(o, "{}", line(r));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::value(68967.2), "68,967");
        assert_eq!(super::value(1234567.0), "1,234,567");
        assert_eq!(super::value(-5500.0), "-5,500");
        assert_eq!(super::value(0.0629), "0.0629");
    }
}
