//! The schedlab machine file (TOML). Reference: docs/machine-format.md; every
//! preset under `presets/` is an example.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::{validate_noise, validate_parts, CacheSizes, Costs, CpuInfo, CpuTopology, CpuVendor, IdleState, Machine, MachineError, Noise};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMachine {
    #[serde(default)]
    name: Option<String>,
    description: String,
    source: String,
    /// "intel" | "amd" | "other"; checked by hand so the error names the field.
    #[serde(default)]
    vendor: Option<String>,
    topology: FileTopology,
    caches: CacheSizes,
    costs: Costs,
    idle_states: Vec<IdleState>,
    /// Absent: [`Noise::BARE_METAL_DEFAULT`].
    #[serde(default)]
    noise: Option<Noise>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileTopology {
    packages: Option<u32>,
    nodes_per_package: Option<u32>,
    llcs_per_node: Option<u32>,
    llcs_per_package: Option<u32>,
    clusters_per_llc: Option<u32>,
    cores_per_llc: Option<u32>,
    threads_per_core: Option<u32>,
    numbering: Option<Numbering>,
    node_distance: Option<Vec<Vec<u32>>>,
    cpu: Option<Vec<FileCpu>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCpu {
    id: u16,
    core: u32,
    cluster: Option<u32>,
    llc: u32,
    node: u32,
    package: u32,
}

/// The `vendor` key's values, in the order the error message lists them.
const VENDORS: [(&str, CpuVendor); 3] = [("intel", CpuVendor::Intel), ("amd", CpuVendor::Amd), ("other", CpuVendor::Other)];

fn vendor_str(v: CpuVendor) -> &'static str {
    match v {
        CpuVendor::Intel => "intel",
        CpuVendor::Amd => "amd",
        CpuVendor::Other => "other",
    }
}

/// How Linux enumerates SMT siblings.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Numbering {
    /// All first threads of all packages, then all second threads (cpu N and
    /// N + nr_cores are siblings): Intel and AMD servers.
    SmtLast,
    /// Siblings adjacent (cpu 2k and 2k+1 with SMT2).
    SmtAdjacent,
}

impl Numbering {
    fn as_str(self) -> &'static str {
        match self {
            Numbering::SmtLast => "smt-last",
            Numbering::SmtAdjacent => "smt-adjacent",
        }
    }
}

/// The compact, regular form of a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compact {
    pub packages: u32,
    pub nodes_per_package: u32,
    pub llcs_per_node: u32,
    pub clusters_per_llc: u32,
    pub cores_per_llc: u32,
    pub threads_per_core: u32,
    pub numbering: Numbering,
}

impl Compact {
    /// Per-CPU infos, indexed by CPU id. Ids at every level are global and follow
    /// the first CPU of each group.
    pub(crate) fn cpus(&self) -> Vec<CpuInfo> {
        let cores_per_cluster = self.cores_per_llc / self.clusters_per_llc;
        let total_cores = self.packages * self.nodes_per_package * self.llcs_per_node * self.cores_per_llc;
        let threads = self.threads_per_core;
        let mut cpus = vec![CpuInfo { core: 0, cluster: 0, llc: 0, node: 0, package: 0 }; (total_cores * threads) as usize];
        for g in 0..total_cores {
            let llc = g / self.cores_per_llc;
            let node = llc / self.llcs_per_node;
            let info = CpuInfo { core: g, cluster: g / cores_per_cluster, llc, node, package: node / self.nodes_per_package };
            for t in 0..threads {
                let id = match self.numbering {
                    Numbering::SmtLast => t * total_cores + g,
                    Numbering::SmtAdjacent => g * threads + t,
                };
                cpus[id as usize] = info;
            }
        }
        cpus
    }

    /// The compact form that generates exactly `t`, if any.
    fn infer(t: &CpuTopology) -> Option<Compact> {
        let (cpus, cores, llcs, clusters, nodes, pkgs) =
            (t.nr_cpus(), t.nr_cores(), t.nr_llcs(), t.nr_clusters(), t.nr_nodes(), t.nr_packages());
        if nodes % pkgs != 0 || llcs % nodes != 0 || clusters % llcs != 0 || cores % llcs != 0 || cpus % cores != 0 {
            return None;
        }
        let base = Compact {
            packages: pkgs as u32,
            nodes_per_package: (nodes / pkgs) as u32,
            llcs_per_node: (llcs / nodes) as u32,
            clusters_per_llc: (clusters / llcs) as u32,
            cores_per_llc: (cores / llcs) as u32,
            threads_per_core: (cpus / cores) as u32,
            numbering: Numbering::SmtLast,
        };
        if !base.cores_per_llc.is_multiple_of(base.clusters_per_llc) {
            return None;
        }
        [Numbering::SmtLast, Numbering::SmtAdjacent]
            .into_iter()
            .map(|numbering| Compact { numbering, ..base })
            .find(|c| c.cpus() == t.cpus())
    }
}

/// Line (1-based) of the first `key = ` at the start of a line, searching after
/// the header of `table` when given.
fn line_of(text: &str, table: Option<&str>, key: &str) -> Option<usize> {
    let mut start = 0;
    let lines: Vec<&str> = text.lines().collect();
    if let Some(tab) = table {
        let hdr = format!("[{tab}]");
        start = lines.iter().position(|l| l.trim_start().starts_with(&hdr))?;
    }
    lines.iter().enumerate().skip(start).find_map(|(i, l)| {
        let l = l.trim_start();
        let rest = l.strip_prefix(key)?;
        rest.trim_start().starts_with('=').then_some(i + 1)
    })
}

/// The line of `key` inside the `n`-th (from 0) `[[arr]]` table of `text`.
fn line_in_array(text: &str, arr: &str, n: usize, key: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let hdr = format!("[[{arr}]]");
    let start = lines.iter().enumerate().filter(|(_, l)| l.trim_start().starts_with(&hdr)).nth(n)?.0;
    lines.iter().enumerate().skip(start + 1).take_while(|(_, l)| !l.trim_start().starts_with('[')).find_map(|(i, l)| {
        let rest = l.trim_start().strip_prefix(key)?;
        rest.trim_start().starts_with('=').then_some(i + 1)
    })
}

struct Ctx<'a> {
    text: &'a str,
    name: &'a str,
}

impl Ctx<'_> {
    /// Error about `field` (a dotted path such as `costs.smt_factor_pct`).
    fn err(&self, field: &str, msg: impl std::fmt::Display) -> MachineError {
        let (table, key) = match field.rsplit_once('.') {
            Some((t, k)) => (Some(t), k),
            None => (None, field),
        };
        // `idle_states[2].name` -> key `name` after the third `[[idle_states]]` header.
        let key = key.split('[').next().unwrap_or(key);
        let line = match table.and_then(|t| t.split_once('[')) {
            Some((arr, idx)) => idx.trim_end_matches(']').parse::<usize>().ok().and_then(|n| line_in_array(self.text, arr, n, key)),
            None => line_of(self.text, table, key),
        };
        let line = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        MachineError(format!("machine file {:?}: {field}{line}: {msg}", self.name))
    }
}

pub(crate) fn from_toml_str(text: &str, name: &str) -> Result<Machine, MachineError> {
    let file: FileMachine = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| format!(" line {}:", text[..s.start.min(text.len())].matches('\n').count() + 1));
        let msg = match e.message().trim_end() {
            "" => "a value is missing or cut off (a `key =` with nothing after it, or the file ends early)",
            m => m,
        };
        MachineError(format!(
            "machine file {name:?}:{} {msg}; fix the key or value (format: docs/machine-format.md)",
            line.unwrap_or_default()
        ))
    })?;
    let name = if name.is_empty() { file.name.clone().unwrap_or_default() } else { name.to_string() };
    let cx = Ctx { text, name: &name };
    if name.is_empty() {
        return Err(MachineError("machine file without a name: pass a name or set `name = \"...\"` in the file".into()));
    }
    for (f, v) in [("description", &file.description), ("source", &file.source)] {
        if v.contains('\n') || v.trim().is_empty() {
            return Err(cx.err(f, "must be one non-empty line"));
        }
    }
    let vendor = match file.vendor.as_deref() {
        None => CpuVendor::Other,
        Some(v) => VENDORS.iter().find(|(s, _)| *s == v).map(|(_, x)| *x).ok_or_else(|| {
            cx.err(
                "vendor",
                format!(
                    "is {v:?}; valid values: \"intel\", \"amd\", \"other\" (lower case; the CPUID vendor, \
                         e.g. \"amd\" for EPYC/Zen, or leave it out for \"other\")"
                ),
            )
        })?,
    };
    let topology = build_topology(&cx, &file.topology)?.with_vendor(vendor);
    validate_parts(&file.caches, &file.costs, &file.idle_states).map_err(|(f, m)| cx.err(&f, m))?;
    let noise = file.noise.unwrap_or_default();
    validate_noise(&noise).map_err(|(f, m)| cx.err(&f, m))?;
    Ok(Machine {
        name,
        description: file.description,
        source: file.source,
        topology,
        caches: file.caches,
        costs: file.costs,
        idle_states: file.idle_states,
        noise,
    })
}

fn build_topology(cx: &Ctx, t: &FileTopology) -> Result<CpuTopology, MachineError> {
    let compact_keys = [
        ("packages", t.packages.is_some()),
        ("nodes_per_package", t.nodes_per_package.is_some()),
        ("llcs_per_node", t.llcs_per_node.is_some()),
        ("llcs_per_package", t.llcs_per_package.is_some()),
        ("clusters_per_llc", t.clusters_per_llc.is_some()),
        ("cores_per_llc", t.cores_per_llc.is_some()),
        ("threads_per_core", t.threads_per_core.is_some()),
        ("numbering", t.numbering.is_some()),
    ];
    let cpus = if let Some(list) = &t.cpu {
        if let Some((k, _)) = compact_keys.iter().find(|(_, set)| *set) {
            return Err(cx.err(
                &format!("topology.{k}"),
                "cannot be combined with an explicit `cpu` list; give either the compact keys or the per-CPU list",
            ));
        }
        explicit_cpus(cx, list)?
    } else {
        compact(cx, t)?.cpus()
    };
    let nr_nodes = cpus.iter().map(|c| c.node).max().unwrap_or(0) as usize + 1;
    let dist = match &t.node_distance {
        Some(d) => {
            if d.len() != nr_nodes || d.iter().any(|r| r.len() != nr_nodes) {
                let shape = d.iter().map(|r| r.len().to_string()).collect::<Vec<_>>().join(",");
                return Err(cx.err(
                    "topology.node_distance",
                    format!(
                        "has {} rows (lengths {shape}) but the topology has {nr_nodes} nodes; give a {nr_nodes}x{nr_nodes} matrix \
                         (SLIT, 10 on the diagonal)",
                        d.len()
                    ),
                ));
            }
            d.clone()
        }
        None => default_distance(nr_nodes),
    };
    CpuTopology::new(cpus, dist).map_err(|e| cx.err("topology", e))
}

/// Linux's distances when the firmware has no SLIT: LOCAL_DISTANCE 10, REMOTE_DISTANCE 20.
pub(crate) fn default_distance(n: usize) -> Vec<Vec<u32>> {
    (0..n).map(|a| (0..n).map(|b| if a == b { 10 } else { 20 }).collect()).collect()
}

fn compact(cx: &Ctx, t: &FileTopology) -> Result<Compact, MachineError> {
    let need = |v: Option<u32>, k: &str, hint: &str| -> Result<u32, MachineError> {
        match v {
            None => Err(cx.err(&format!("topology.{k}"), format!("is missing; {hint} (or give an explicit `cpu` list)"))),
            Some(0) => Err(cx.err(&format!("topology.{k}"), format!("is 0; {hint}"))),
            Some(n) => Ok(n),
        }
    };
    let nonzero = |v: Option<u32>, k: &str, default: u32| -> Result<u32, MachineError> {
        match v {
            Some(0) => Err(cx.err(&format!("topology.{k}"), "is 0; it must be at least 1 (or leave it out)")),
            Some(n) => Ok(n),
            None => Ok(default),
        }
    };
    let packages = need(t.packages, "packages", "give the number of sockets, at least 1")?;
    let cores_per_llc = need(t.cores_per_llc, "cores_per_llc", "give the number of physical cores sharing one LLC, at least 1")?;
    let threads_per_core = need(t.threads_per_core, "threads_per_core", "give 1 (no SMT) or 2 (SMT2)")?;
    let nodes_per_package = nonzero(t.nodes_per_package, "nodes_per_package", 1)?;
    let clusters_per_llc = nonzero(t.clusters_per_llc, "clusters_per_llc", 1)?;
    let llcs_per_node = match (t.llcs_per_node, t.llcs_per_package) {
        (Some(_), Some(_)) => {
            return Err(cx.err("topology.llcs_per_package", "is given together with llcs_per_node; give only one of them"));
        }
        (Some(_), None) => nonzero(t.llcs_per_node, "llcs_per_node", 1)?,
        (None, Some(p)) => {
            let p = nonzero(Some(p), "llcs_per_package", 1)?;
            if p % nodes_per_package != 0 {
                return Err(cx.err(
                    "topology.llcs_per_package",
                    format!(
                        "is {p}, not a multiple of nodes_per_package = {nodes_per_package}; the compact form needs whole LLCs \
                         per node (describe LLCs spanning nodes with an explicit `cpu` list)"
                    ),
                ));
            }
            p / nodes_per_package
        }
        (None, None) => 1,
    };
    if cores_per_llc % clusters_per_llc != 0 {
        return Err(cx.err(
            "topology.clusters_per_llc",
            format!("is {clusters_per_llc}, which does not divide cores_per_llc = {cores_per_llc}; clusters must have equal core counts"),
        ));
    }
    let numbering = match (t.numbering, threads_per_core) {
        (Some(n), _) => n,
        (None, 1) => Numbering::SmtLast,
        (None, _) => {
            return Err(cx.err(
                "topology.numbering",
                "is missing; with SMT say how Linux numbers siblings: \"smt-last\" (cpu N and N+nr_cores, servers) \
                 or \"smt-adjacent\" (cpu 2k and 2k+1)",
            ))
        }
    };
    let total = packages as u64 * nodes_per_package as u64 * llcs_per_node as u64 * cores_per_llc as u64 * threads_per_core as u64;
    if total > schedlab_topology::MAX_CPUS as u64 {
        return Err(cx.err(
            "topology",
            format!("describes {total} CPUs, more than schedlab models ({}); reduce packages or cores", schedlab_topology::MAX_CPUS),
        ));
    }
    Ok(Compact { packages, nodes_per_package, llcs_per_node, clusters_per_llc, cores_per_llc, threads_per_core, numbering })
}

fn explicit_cpus(cx: &Ctx, list: &[FileCpu]) -> Result<Vec<CpuInfo>, MachineError> {
    if list.is_empty() {
        return Err(cx.err("topology.cpu", "is empty; list every CPU (id = 0, core = 0, llc = 0, node = 0, package = 0)"));
    }
    if list.len() > schedlab_topology::MAX_CPUS {
        return Err(cx.err("topology.cpu", format!("lists {} CPUs; at most {} are modelled", list.len(), schedlab_topology::MAX_CPUS)));
    }
    let mut out: Vec<Option<CpuInfo>> = vec![None; list.len()];
    for c in list {
        let slot = out.get_mut(c.id as usize).ok_or_else(|| {
            cx.err("topology.cpu", format!("has id = {} but only {} CPUs are listed; ids must be 0..{}", c.id, list.len(), list.len()))
        })?;
        if slot.is_some() {
            return Err(cx.err("topology.cpu", format!("lists id = {} twice; each CPU appears once", c.id)));
        }
        *slot = Some(CpuInfo { core: c.core, cluster: c.cluster.unwrap_or(c.llc), llc: c.llc, node: c.node, package: c.package });
    }
    Ok(out.into_iter().map(|c| c.expect("all ids 0..n present: n entries, no duplicates, all < n")).collect())
}

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(crate) fn to_toml(m: &Machine) -> String {
    let mut s = String::new();
    let t = &m.topology;
    let _ = writeln!(s, "# schedlab machine file (docs/machine-format.md)");
    let _ = writeln!(s, "name = {}", q(&m.name));
    let _ = writeln!(s, "description = {}", q(&m.description));
    let _ = writeln!(s, "source = {}", q(&m.source));
    let _ = writeln!(s, "vendor = {}", q(vendor_str(t.vendor())));
    let _ = writeln!(s, "\n[topology]");
    if let Some(c) = Compact::infer(t) {
        let _ = writeln!(s, "packages = {}", c.packages);
        let _ = writeln!(s, "nodes_per_package = {}", c.nodes_per_package);
        let _ = writeln!(s, "llcs_per_node = {}", c.llcs_per_node);
        let _ = writeln!(s, "clusters_per_llc = {}", c.clusters_per_llc);
        let _ = writeln!(s, "cores_per_llc = {}", c.cores_per_llc);
        let _ = writeln!(s, "threads_per_core = {}", c.threads_per_core);
        let _ = writeln!(s, "numbering = {}", q(c.numbering.as_str()));
    } else {
        let _ = writeln!(s, "cpu = [");
        for (i, c) in t.cpus().iter().enumerate() {
            let _ = writeln!(
                s,
                "  {{ id = {i}, core = {}, cluster = {}, llc = {}, node = {}, package = {} }},",
                c.core, c.cluster, c.llc, c.node, c.package
            );
        }
        let _ = writeln!(s, "]");
    }
    let _ = writeln!(s, "node_distance = [");
    for row in t.distance_matrix() {
        let r: Vec<String> = row.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(s, "  [{}],", r.join(", "));
    }
    let _ = writeln!(s, "]");
    let c = &m.caches;
    let _ = writeln!(s, "\n[caches]");
    let _ = writeln!(s, "l1d_kib = {}\nl2_kib = {}\nllc_kib = {}\nllc_inclusive = {}", c.l1d_kib, c.l2_kib, c.llc_kib, c.llc_inclusive);
    let k = &m.costs;
    let _ = writeln!(s, "\n[costs]");
    let fields: [(&str, u64); 18] = [
        ("freq_mhz", k.freq_mhz as u64),
        ("context_switch_ns", k.context_switch_ns),
        ("mm_switch_ns", k.mm_switch_ns),
        ("ipi_ns", k.ipi_ns),
        ("ipi_send_ns", k.ipi_send_ns),
        ("c2c_smt_ns", k.c2c_smt_ns),
        ("c2c_llc_ns", k.c2c_llc_ns),
        ("c2c_cross_llc_ns", k.c2c_cross_llc_ns),
        ("c2c_cross_package_ns", k.c2c_cross_package_ns),
        ("llc_hit_ns", k.llc_hit_ns),
        ("dram_local_ns", k.dram_local_ns),
        ("dram_remote_ns", k.dram_remote_ns),
        ("smt_factor_pct", k.smt_factor_pct as u64),
        ("mem_bw_llc_mbps", k.mem_bw_llc_mbps),
        ("mem_bw_node_mbps", k.mem_bw_node_mbps),
        ("mem_bw_core_mbps", k.mem_bw_core_mbps),
        ("rq_lock_hold_ns", k.rq_lock_hold_ns),
        ("idle_scan_ns_per_cpu", k.idle_scan_ns_per_cpu),
    ];
    for (f, v) in fields {
        let _ = writeln!(s, "{f} = {v}");
    }
    // Optional, written only when set (files of bare-metal machines stay as they were).
    if k.halt_evict_mbps != 0 {
        let _ = writeln!(s, "halt_evict_mbps = {}", k.halt_evict_mbps);
    }
    if k.l2_hit_ns != 0 {
        let _ = writeln!(s, "l2_hit_ns = {}", k.l2_hit_ns);
    }
    let n = &m.noise;
    let _ = writeln!(s, "\n[noise]");
    let _ = writeln!(
        s,
        "tick_ns = {}\nirq_per_s = {:?}\nirq_ns = {}\nkthread_per_s = {:?}\nkthread_run_ns = {}\nunbound_per_s = {:?}\nunbound_run_ns = {}",
        n.tick_ns, n.irq_per_s, n.irq_ns, n.kthread_per_s, n.kthread_run_ns, n.unbound_per_s, n.unbound_run_ns
    );
    // Optional, written only when not the default (files stay as they were).
    if n.unbound_tasks != crate::UNBOUND_TASKS {
        let _ = writeln!(s, "unbound_tasks = {}", n.unbound_tasks);
    }
    for st in &m.idle_states {
        let _ = writeln!(
            s,
            "\n[[idle_states]]\nname = {}\nexit_latency_ns = {}\ntarget_residency_ns = {}",
            q(&st.name),
            st.exit_latency_ns,
            st.target_residency_ns
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = include_str!("../../../examples/machines/numa-8cpu-2s-smt2.toml");

    fn err(text: &str) -> String {
        from_toml_str(text, "t").unwrap_err().0
    }

    #[test]
    fn unknown_key_is_rejected_with_its_line() {
        let text = GOOD.replace("[caches]", "[caches]\nl4_kib = 3");
        let e = err(&text);
        assert!(e.contains("unknown field `l4_kib`"), "{e}");
        let line = text.lines().position(|l| l.starts_with("l4_kib")).unwrap() + 1;
        assert!(e.contains(&format!("line {line}")), "{e}");
        let e = err(&GOOD.replace("[topology]", "[topology]\nsockets = 2"));
        assert!(e.contains("unknown field `sockets`") && e.contains("packages"), "{e}");
        let e = err(&format!("bogus = 1\n{GOOD}"));
        assert!(e.contains("unknown field `bogus`") && e.contains("line 1"), "{e}");
    }

    // `l2_hit_ns` is optional: absent, 14 cycles at freq_mhz; given, it
    // round-trips; slower than an LLC hit, it is refused with the fix.
    #[test]
    fn l2_hit_ns_is_optional_checked_and_round_trips() {
        let m = from_toml_str(GOOD, "t").unwrap();
        assert!(GOOD.contains("llc_hit_ns = 20"), "the replacements below edit that line");
        assert_eq!(m.costs.l2_hit_ns, 0);
        assert_eq!(m.costs.l2_hit_ns(), (14_000 + m.costs.freq_mhz as u64 / 2) / m.costs.freq_mhz as u64);
        assert!(!m.to_toml().contains("l2_hit_ns"), "written only when set");
        let text = GOOD.replace("llc_hit_ns = 20", "l2_hit_ns = 4\nllc_hit_ns = 20");
        let m = from_toml_str(&text, "t").unwrap();
        assert_eq!((m.costs.l2_hit_ns, m.costs.l2_hit_ns()), (4, 4));
        assert_eq!(from_toml_str(&m.to_toml(), "t").unwrap(), m);
        let e = err(&GOOD.replace("llc_hit_ns = 20", "l2_hit_ns = 40\nllc_hit_ns = 20"));
        assert!(e.contains("costs.l2_hit_ns") && e.contains("cannot be slower than an LLC hit"), "{e}");
    }

    #[test]
    fn noise_section_is_optional_checked_and_round_trips() {
        let m = from_toml_str(GOOD, "t").unwrap();
        assert_eq!(m.noise, Noise::BARE_METAL_DEFAULT);
        let text =
            format!("{GOOD}\n[noise]\ntick_ns = 5000\nirq_per_s = 20.0\nirq_ns = 5000\nkthread_per_s = 0.5\nkthread_run_ns = 9000\n");
        let m = from_toml_str(&text, "t").unwrap();
        assert_eq!(m.noise.kthread_per_s, 0.5);
        assert_eq!(from_toml_str(&m.to_toml(), "t").unwrap(), m);
        let e = err(&text.replace("kthread_per_s = 0.5", "kthread_per_s = -1.0"));
        assert!(e.contains("noise.kthread_per_s") && e.contains("between 0 and 100000"), "{e}");
        let e = err(&text.replace("tick_ns = 5000", "tick_ns = 5000000"));
        assert!(e.contains("noise.tick_ns") && e.contains("1 ms"), "{e}");
        let e = err(&text.replace("irq_ns = 5000", "irq_ns = 5000\njitter = 1"));
        assert!(e.contains("unknown field `jitter`"), "{e}");
        // The number of distinct unbound tasks: 1 unless given, written only
        // when not 1, checked.
        assert_eq!(m.noise.unbound_tasks, 1);
        assert!(!m.to_toml().contains("unbound_tasks"));
        let three = from_toml_str(&format!("{text}unbound_tasks = 3\n"), "t").unwrap();
        assert_eq!(three.noise.unbound_tasks, 3);
        assert!(three.to_toml().contains("unbound_tasks = 3"));
        assert_eq!(from_toml_str(&three.to_toml(), "t").unwrap(), three);
        let e = err(&format!("{text}unbound_tasks = 0\n"));
        assert!(e.contains("noise.unbound_tasks") && e.contains("1 to 16"), "{e}");
    }

    #[test]
    fn smt_factor_zero_is_rejected() {
        let text = GOOD.replace("smt_factor_pct = 60", "smt_factor_pct = 0");
        assert_ne!(text, GOOD);
        let e = err(&text);
        assert!(e.contains("costs.smt_factor_pct") && e.contains("1..=100"), "{e}");
        let line = text.lines().position(|l| l.starts_with("smt_factor_pct")).unwrap() + 1;
        assert!(e.contains(&format!("(line {line})")), "{e}");
        let e = err(&GOOD.replace("smt_factor_pct = 60", "smt_factor_pct = 101"));
        assert!(e.contains("costs.smt_factor_pct"), "{e}");
    }

    #[test]
    fn distance_matrix_of_wrong_size_is_rejected() {
        let text = GOOD.replace("node_distance = [[10, 20], [20, 10]]", "node_distance = [[10, 20, 20], [20, 10, 20], [20, 20, 10]]");
        assert_ne!(text, GOOD);
        let e = err(&text);
        assert!(e.contains("topology.node_distance") && e.contains("2x2"), "{e}");
        let e = err(&GOOD.replace("node_distance = [[10, 20], [20, 10]]", "node_distance = [[10, 20], [20]]"));
        assert!(e.contains("topology.node_distance"), "{e}");
        // asymmetric: reported by the topology check, through us
        let e = err(&GOOD.replace("node_distance = [[10, 20], [20, 10]]", "node_distance = [[10, 20], [21, 10]]"));
        assert!(e.contains("symmetric"), "{e}");
    }

    #[test]
    fn impossible_values_are_rejected() {
        let e = err(&GOOD.replace("cores_per_llc = 2", "cores_per_llc = 0"));
        assert!(e.contains("topology.cores_per_llc") && e.contains("is 0"), "{e}");
        let e = err(&GOOD.replace("packages = 2", ""));
        assert!(e.contains("topology.packages") && e.contains("missing"), "{e}");
        let e = err(&GOOD.replace("numbering = \"smt-adjacent\"", "numbering = \"interleaved\""));
        assert!(e.contains("unknown variant") && e.contains("smt-adjacent"), "{e}");
        let e = err(&GOOD.replace("dram_remote_ns = 131", "dram_remote_ns = 10"));
        assert!(e.contains("costs.dram_remote_ns"), "{e}");
        let e = err(&GOOD.replace("freq_mhz = 2500", "freq_mhz = -1"));
        assert!(e.contains("freq_mhz") || e.contains("invalid value"), "{e}");
        let e = err(&GOOD.replace("packages = 2", "packages = 600"));
        assert!(e.contains("more than schedlab models"), "{e}");
        let e = err(&GOOD.replace("llc_kib = 39424", "llc_kib = 4194304"));
        assert!(e.contains("caches.llc_kib") && e.contains("smaller than 4 GiB"), "{e}");
        assert!(from_toml_str(&GOOD.replace("llc_kib = 39424", "llc_kib = 4194303"), "t").is_ok());
        let e = err(&GOOD.replace("exit_latency_ns = 133000", "exit_latency_ns = 1"));
        assert!(e.contains("idle_states[3].exit_latency_ns"), "{e}");
        let e = err(&GOOD.replace("ipi_ns = 1000\n", ""));
        assert!(e.contains("missing field `ipi_ns`"), "{e}");
        let e = err(&GOOD.replace("clusters_per_llc = 1", "clusters_per_llc = 3"));
        assert!(e.contains("topology.clusters_per_llc"), "{e}");
    }

    #[test]
    fn vendor_key() {
        assert_eq!(from_toml_str(GOOD, "t").unwrap().topology.vendor(), CpuVendor::Intel);
        let text = GOOD.replace("vendor = \"intel\"", "vendor = \"amd\"");
        assert_ne!(text, GOOD);
        let m = from_toml_str(&text, "t").unwrap();
        assert_eq!(m.topology.vendor(), CpuVendor::Amd);
        assert!(m.to_toml().contains("vendor = \"amd\""));
        assert_eq!(from_toml_str(&m.to_toml(), "t").unwrap(), m);
        // absent: "other"
        let m = from_toml_str(&GOOD.replace("vendor = \"intel\"\n", ""), "t").unwrap();
        assert_eq!(m.topology.vendor(), CpuVendor::Other);
        assert_eq!(from_toml_str(&m.to_toml(), "t").unwrap(), m);
        // unknown values and wrong case are rejected, naming the field, line and valid values
        let bad = GOOD.replace("vendor = \"intel\"", "vendor = \"zhaoxin\"");
        let e = err(&bad);
        let line = bad.lines().position(|l| l.starts_with("vendor")).unwrap() + 1;
        assert!(e.contains("vendor") && e.contains("\"zhaoxin\""), "{e}");
        assert!(e.contains(&format!("(line {line})")), "{e}");
        for v in ["\"intel\"", "\"amd\"", "\"other\""] {
            assert!(e.contains(v), "{e}");
        }
        let e = err(&GOOD.replace("vendor = \"intel\"", "vendor = \"Intel\""));
        assert!(e.contains("vendor"), "{e}");
        let e = err(&GOOD.replace("vendor = \"intel\"", "vendor = 1"));
        assert!(e.contains("vendor") || e.contains("string"), "{e}");
    }

    #[test]
    fn explicit_cpu_list() {
        let text = r#"
description = "two cores, one node"
source = "test"
[topology]
cpu = [
  { id = 0, core = 0, llc = 0, node = 0, package = 0 },
  { id = 1, core = 1, llc = 0, node = 0, package = 0 },
  { id = 2, core = 0, llc = 0, node = 0, package = 0 },
]
[caches]
l1d_kib = 32
l2_kib = 512
llc_kib = 8192
llc_inclusive = false
[costs]
freq_mhz = 2000
context_switch_ns = 600
mm_switch_ns = 60
ipi_ns = 1000
c2c_smt_ns = 8
c2c_llc_ns = 30
c2c_cross_llc_ns = 30
c2c_cross_package_ns = 30
dram_local_ns = 90
dram_remote_ns = 90
smt_factor_pct = 60
mem_bw_llc_mbps = 20000
mem_bw_node_mbps = 20000
rq_lock_hold_ns = 300
idle_scan_ns_per_cpu = 30
llc_hit_ns = 15
[[idle_states]]
name = "POLL"
exit_latency_ns = 0
target_residency_ns = 0
"#;
        let m = from_toml_str(text, "odd").unwrap();
        assert_eq!(m.topology.nr_cpus(), 3);
        assert_eq!(m.topology.cpu(crate::CpuId(2)).core, 0);
        // irregular (core 1 has one thread): the explicit form is written back
        let out = m.to_toml();
        assert!(out.contains("cpu = ["), "{out}");
        assert_eq!(from_toml_str(&out, "odd").unwrap(), m);
        // the same list as [[topology.cpu]] tables
        let tables = text
            .replace("cpu = [\n", "")
            .replace("]\n[caches]", "[caches]")
            .replace(
                "  { id = 0, core = 0, llc = 0, node = 0, package = 0 },\n",
                "[[topology.cpu]]\nid = 0\ncore = 0\nllc = 0\nnode = 0\npackage = 0\n",
            )
            .replace(
                "  { id = 1, core = 1, llc = 0, node = 0, package = 0 },\n",
                "[[topology.cpu]]\nid = 1\ncore = 1\nllc = 0\nnode = 0\npackage = 0\n",
            )
            .replace(
                "  { id = 2, core = 0, llc = 0, node = 0, package = 0 },\n",
                "[[topology.cpu]]\nid = 2\ncore = 0\nllc = 0\nnode = 0\npackage = 0\n",
            );
        assert!(tables.contains("[[topology.cpu]]") && !tables.contains("{ id"), "{tables}");
        assert_eq!(from_toml_str(&tables, "odd").unwrap(), m);
        // mixing forms is refused
        let e = err(&text.replace("[topology]", "[topology]\npackages = 1"));
        assert!(e.contains("topology.packages") && e.contains("explicit"), "{e}");
        let e = err(&text.replace("id = 2", "id = 1"));
        assert!(e.contains("twice"), "{e}");
        let e = err(&text.replace("id = 2", "id = 7"));
        assert!(e.contains("id = 7"), "{e}");
    }

    #[test]
    fn llcs_per_package_form() {
        let text = GOOD.replace("llcs_per_node = 1", "llcs_per_package = 1");
        let a = from_toml_str(&text, "t").unwrap();
        assert_eq!(a, from_toml_str(GOOD, "t").unwrap());
        let e = err(&GOOD.replace("llcs_per_node = 1", "llcs_per_node = 1\nllcs_per_package = 1"));
        assert!(e.contains("only one"), "{e}");
    }

    #[test]
    fn name_argument_wins_over_file_name() {
        assert_eq!(from_toml_str(GOOD, "x").unwrap().name, "x");
        assert_eq!(from_toml_str(GOOD, "").unwrap().name, "numa-8cpu-2s-smt2");
    }

    #[test]
    fn line_of_finds_keys_in_tables() {
        let t = "a = 1\n[x]\na = 2\n";
        assert_eq!(line_of(t, None, "a"), Some(1));
        assert_eq!(line_of(t, Some("x"), "a"), Some(3));
        assert_eq!(line_of(t, Some("y"), "a"), None);
    }
}
