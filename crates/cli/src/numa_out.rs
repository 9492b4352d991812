//! NUMA tables of a run (memory per node, CPU per node, NUMA balancing
//! counters) for text and JSON, as the cling patch's author printed them:
//! per cgroup, CPU usage per node in % of one CPU and memory ratio per node.

use schedlab_engine::numa::NumaReport;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The text tables (nothing when the run has no NUMA report).
pub fn text(o: &mut String, r: Option<&NumaReport>) {
    let Some(r) = r else { return };
    let nodes = r.nodes;
    let head: String = (0..nodes).map(|n| format!("{:>10}", format!("node {n}"))).collect();
    let _ = writeln!(o, "  NUMA balancing         {}", if r.balancing { "on" } else { "off" });
    let _ = writeln!(o, "  CPU usage per node (% of one CPU):");
    let _ = writeln!(o, "    {:<20}{head}", "cgroup");
    for g in &r.groups {
        let cells: String = g.cpu_pct.iter().map(|v| format!("{:>9.0}%", v)).collect();
        let _ = writeln!(o, "    {:<20}{cells}", g.name);
    }
    let _ = writeln!(o, "  memory ratio per node:");
    let _ = writeln!(o, "    {:<20}{head}{:>10}", "cgroup", "MiB");
    for g in &r.groups {
        let cells: String = g.mem_pct.iter().map(|v| format!("{:>9.0}%", v)).collect();
        let _ = writeln!(o, "    {:<20}{cells}{:>10}", g.name, g.mem_mib);
    }
    let _ = writeln!(o, "  NUMA counters (base pages; tasks):");
    let _ = writeln!(
        o,
        "    {:<20}{:>12}{:>12}{:>12}{:>9}{:>9}{:>9}{:>10}",
        "cgroup", "hint_faults", "local", "migrated", "task_mig", "swapped", "mig_fail", "on_pref%"
    );
    for g in &r.groups {
        let c = &g.counters;
        let pref = if c.ticks_with_pref == 0 { 0.0 } else { c.ticks_on_pref as f64 * 100.0 / c.ticks_with_pref as f64 };
        let _ = writeln!(
            o,
            "    {:<20}{:>12}{:>12}{:>12}{:>9}{:>9}{:>9}{:>9.1}%",
            g.name, c.hint_faults, c.hint_faults_local, c.pages_migrated, c.task_migrated, c.task_swapped, c.task_migrate_failed, pref
        );
    }
}

/// The JSON object (`"numa"`), or None.
pub fn json(r: Option<&NumaReport>) -> Option<Value> {
    let r = r?;
    Some(json!({
        "balancing": r.balancing,
        "nodes": r.nodes,
        "groups": r.groups.iter().map(|g| {
            let c = &g.counters;
            json!({
                "name": g.name,
                "numa_group": g.numa_group,
                "cpu_pct_per_node": g.cpu_pct,
                "mem_pct_per_node": g.mem_pct,
                "mem_mib": g.mem_mib,
                "numa_hint_faults": c.hint_faults,
                "numa_hint_faults_local": c.hint_faults_local,
                "numa_pages_migrated": c.pages_migrated,
                "numa_pte_updates": c.pte_updates,
                "numa_task_migrated": c.task_migrated,
                "numa_task_swapped": c.task_swapped,
                "numa_task_migrate_failed": c.task_migrate_failed,
                "preferred_node_ticks": c.ticks_with_pref,
                "on_preferred_node_ticks": c.ticks_on_pref,
            })
        }).collect::<Vec<_>>(),
    }))
}
