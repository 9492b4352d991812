//! Import of the machine schedlab runs on, from Linux sysfs
//! (`sys/devices/system/cpu`, `sys/devices/system/node` under a root directory).
//!
//! Topology: cores from `topology/core_cpus_list` (or `thread_siblings_list`),
//! packages from `physical_package_id`, the LLC from the highest-level Data or
//! Unified `cache/index*/` (its `shared_cpu_list`), clusters from
//! `cluster_cpus_list` when they group several cores inside one LLC, nodes from
//! `node/nodeN/cpulist` and `distance`. Ids are renumbered densely in order of
//! each group's first CPU. Costs are generic ([assumed], docs/CALIBRATION.md).

use std::fs;
use std::path::{Path, PathBuf};

use crate::format::default_distance;
use crate::{
    generic_costs, parse_cpulist, shape, vendor_from_cpuid, CacheSizes, CpuInfo, CpuTopology, IdleState, Machine, MachineError, Renumber,
};

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn err(msg: String) -> MachineError {
    MachineError(format!("local machine (sysfs): {msg}"))
}

fn list(p: &Path) -> Result<Option<Vec<u16>>, MachineError> {
    match read(p) {
        None => Ok(None),
        Some(s) => parse_cpulist(&s).map(Some).map_err(|e| err(format!("{}: {e}", p.display()))),
    }
}

/// `32K`, `1024K`, `12M` -> KiB.
fn size_kib(s: &str) -> Option<u32> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1),
        'M' | 'm' => (&s[..s.len() - 1], 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u32>().ok().map(|n| n * mul)
}

/// Numbered entries `prefixN` of a directory, sorted by N.
fn numbered(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.strip_prefix(prefix)?.parse::<u32>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort();
    v
}

struct Cache {
    level: u32,
    kind: String,
    size_kib: Option<u32>,
    shared: Option<Vec<u16>>,
}

fn caches(cpu_dir: &Path) -> Result<Vec<Cache>, MachineError> {
    let mut out = Vec::new();
    for (_, d) in numbered(&cpu_dir.join("cache"), "index") {
        let Some(level) = read(&d.join("level")).and_then(|l| l.parse().ok()) else {
            continue;
        };
        out.push(Cache {
            level,
            kind: read(&d.join("type")).unwrap_or_default(),
            size_kib: read(&d.join("size")).and_then(|s| size_kib(&s)),
            shared: list(&d.join("shared_cpu_list"))?,
        });
    }
    Ok(out)
}

pub(crate) fn from_sysfs(root: &Path) -> Result<Machine, MachineError> {
    let cpu_root = root.join("sys/devices/system/cpu");
    if !cpu_root.is_dir() {
        return Err(err(format!(
            "{} does not exist: not Linux, or sysfs is not mounted; use a preset or a machine file (.toml or .xml) instead",
            cpu_root.display()
        )));
    }
    let online = match list(&cpu_root.join("online"))? {
        Some(v) => v,
        None => numbered(&cpu_root, "cpu").into_iter().map(|(n, _)| n as u16).collect(),
    };
    if online.is_empty() {
        return Err(err(format!("no CPUs found under {}", cpu_root.display())));
    }
    if let Some((i, &c)) = online.iter().enumerate().find(|(i, &c)| c as usize != *i) {
        return Err(err(format!(
            "online CPUs are {} but schedlab needs CPUs numbered 0..n without gaps (cpu{i} is missing, next is cpu{c}); \
             bring all CPUs online (echo 1 > /sys/devices/system/cpu/cpuN/online) or describe the machine in a .toml file",
            schedlab_topology::cpulist(online.iter().map(|&c| crate::CpuId(c)))
        )));
    }
    let n = online.len();
    if n > schedlab_topology::MAX_CPUS {
        return Err(err(format!("{n} CPUs; schedlab models at most {}", schedlab_topology::MAX_CPUS)));
    }

    // Per-CPU raw groups.
    let mut core_r = Renumber::default();
    let mut pkg_r = Renumber::default();
    let mut llc_r = Renumber::default();
    let mut cluster_r = Renumber::default();
    let mut raw = Vec::with_capacity(n);
    let mut cluster_sets = Vec::with_capacity(n);
    let mut llc_sets = Vec::with_capacity(n);
    let mut dies = std::collections::BTreeSet::new();
    let mut cache0 = Vec::new();
    for &c in &online {
        let d = cpu_root.join(format!("cpu{c}"));
        let topo = d.join("topology");
        let pkg: i64 = read(&topo.join("physical_package_id")).and_then(|s| s.parse().ok()).unwrap_or(0);
        let die: i64 = read(&topo.join("die_id")).and_then(|s| s.parse().ok()).unwrap_or(0);
        dies.insert((pkg, die));
        let core_set = match list(&topo.join("core_cpus_list"))? {
            Some(v) => v,
            None => match list(&topo.join("thread_siblings_list"))? {
                Some(v) => v,
                None => {
                    // No sibling lists: group by (package, core_id).
                    let id: i64 = read(&topo.join("core_id")).and_then(|s| s.parse().ok()).unwrap_or(c as i64);
                    vec![u16::MAX, pkg as u16, id as u16]
                }
            },
        };
        let cs = caches(&d)?;
        let llc = cs.iter().filter(|k| k.kind == "Unified" || k.kind == "Data").max_by_key(|k| k.level);
        let llc_set = llc.and_then(|k| k.shared.clone());
        if c == 0 {
            cache0 = cs.iter().map(|k| (k.level, k.kind.clone(), k.size_kib)).collect();
        }
        let cluster_set = list(&topo.join("cluster_cpus_list"))?;
        let core = core_r.id(core_set);
        let package = pkg_r.id(pkg);
        // Without cache information the LLC is the package.
        let llc = match &llc_set {
            Some(s) => llc_r.id(s.clone()),
            None => llc_r.id(vec![u16::MAX, package as u16]),
        };
        raw.push((core, package, llc));
        cluster_sets.push(cluster_set);
        llc_sets.push(llc_set);
    }

    // Clusters: only when every cluster groups several cores inside one LLC and is
    // smaller than it; otherwise the cluster level is the LLC (no CLS domain).
    let clusters_real = cluster_sets.iter().zip(&llc_sets).enumerate().all(|(i, (cl, llc))| {
        let Some(cl) = cl else { return false };
        let cores_in = {
            let mut v: Vec<u32> = cl.iter().filter_map(|&c| raw.get(c as usize).map(|r| r.0)).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let inside_llc = match llc {
            Some(l) => cl.iter().all(|c| l.contains(c)) && cl.len() < l.len(),
            None => cl.iter().all(|&c| raw.get(c as usize).is_some_and(|r| r.1 == raw[i].1)),
        };
        cores_in > 1 && inside_llc
    });

    // Nodes.
    let node_root = root.join("sys/devices/system/node");
    let all_nodes = numbered(&node_root, "node");
    let mut node_of = vec![None; n];
    let mut kept: Vec<usize> = Vec::new(); // positions in all_nodes of nodes with CPUs
    for (pos, (_, d)) in all_nodes.iter().enumerate() {
        let cpus = list(&d.join("cpulist"))?.unwrap_or_default();
        let cpus: Vec<u16> = cpus.into_iter().filter(|&c| (c as usize) < n).collect();
        if cpus.is_empty() {
            continue; // memory-only node: not modelled
        }
        for c in cpus {
            node_of[c as usize] = Some(kept.len() as u32);
        }
        kept.push(pos);
    }
    let mut note = String::new();
    let distance = if kept.is_empty() {
        node_of = vec![Some(0); n];
        vec![vec![10]]
    } else {
        if let Some(c) = node_of.iter().position(|x| x.is_none()) {
            return Err(err(format!("cpu{c} is in no node's cpulist under {}; the NUMA information is inconsistent", node_root.display())));
        }
        let rows: Option<Vec<Vec<u32>>> = kept
            .iter()
            .map(|&p| {
                let row: Vec<u32> = read(&all_nodes[p].1.join("distance"))?.split_whitespace().filter_map(|x| x.parse().ok()).collect();
                (row.len() == all_nodes.len()).then(|| kept.iter().map(|&q| row[q]).collect())
            })
            .collect();
        match rows {
            Some(r) => r,
            None => {
                note = "; node distances unreadable, Linux default 10/20 used".into();
                default_distance(kept.len())
            }
        }
    };

    let cpus: Vec<CpuInfo> = raw
        .iter()
        .enumerate()
        .map(|(i, &(core, package, llc))| {
            let cluster = if clusters_real { cluster_r.id(cluster_sets[i].clone().unwrap_or_default()) } else { llc };
            CpuInfo { core, cluster, llc, node: node_of[i].unwrap_or(0), package }
        })
        .collect();
    // Cluster ids from a separate counter can collide with nothing (the cluster
    // level is compared only with itself), but keep them nested: checked below.
    let topology = CpuTopology::new(cpus, distance).map_err(|e| err(format!("inconsistent topology: {e}")))?;

    let size = |pred: &dyn Fn(u32, &str) -> bool| cache0.iter().filter(|(l, k, _)| pred(*l, k)).find_map(|(_, _, s)| *s);
    let llc_level = cache0.iter().filter(|(_, k, _)| k == "Unified" || k == "Data").map(|(l, _, _)| *l).max();
    let caches = CacheSizes {
        l1d_kib: size(&|l, k| l == 1 && (k == "Data" || k == "Unified")).unwrap_or(32),
        l2_kib: size(&|l, k| l == 2 && k != "Instruction").unwrap_or(1024),
        llc_kib: llc_level.and_then(|lv| size(&|l, k| l == lv && k != "Instruction")).unwrap_or(32 * 1024),
        llc_inclusive: false,
    };

    let cpuinfo = read(&root.join("proc/cpuinfo")).unwrap_or_default();
    let field = |k: &str| {
        cpuinfo.lines().find_map(|l| {
            let (a, b) = l.split_once(':')?;
            (a.trim() == k).then(|| b.trim().to_string())
        })
    };
    let guest = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    let model = field("model name").unwrap_or_else(|| "unknown CPU".into());
    // No cpuinfo (or no x86 vendor_id line, e.g. arm64): Other.
    let topology = topology.with_vendor(vendor_from_cpuid(field("vendor_id").as_deref().unwrap_or("")));
    let freq_mhz = read(&cpu_root.join("cpu0/cpufreq/cpuinfo_max_freq"))
        .and_then(|k| k.parse::<u64>().ok())
        .map(|khz| (khz / 1000) as u32)
        .or_else(|| field("cpu MHz").and_then(|m| m.parse::<f64>().ok()).map(|m| m.round() as u32))
        .filter(|&f| f > 0)
        .unwrap_or(2500);

    let mut idle_states: Vec<IdleState> = numbered(&cpu_root.join("cpu0/cpuidle"), "state")
        .into_iter()
        .filter_map(|(_, d)| {
            Some(IdleState {
                name: read(&d.join("name"))?,
                exit_latency_ns: read(&d.join("latency"))?.parse::<u64>().ok()? * 1000,
                target_residency_ns: read(&d.join("residency"))?.parse::<u64>().ok()? * 1000,
            })
        })
        .collect();
    if guest {
        // A halted vCPU comes back only after the host wakes its thread and
        // re-enters the guest: cpuidle's declared latencies (haltpoll: 1 us)
        // leave that out. Every halting state costs at least the measured
        // guest figure (docs/CALIBRATION.md, local).
        for s in idle_states.iter_mut().filter(|s| s.name != "POLL") {
            s.exit_latency_ns = s.exit_latency_ns.max(crate::GUEST_HLT_EXIT_NS);
            s.target_residency_ns = s.target_residency_ns.max(s.exit_latency_ns);
        }
        // cpuidle-haltpoll with guest_halt_poll_ns = 0 (the default when the
        // host polls): the haltpoll governor never selects the POLL state
        // (haltpoll_select() returns the halt state when the poll limit is 0),
        // so the model's governor must not either.
        // FIDELITY(F-449): a nonzero guest_halt_poll_ns (adaptive guest-side polling) is not modelled.
        let driver = read(&cpu_root.join("cpuidle/current_driver"));
        let poll_ns = read(&root.join("sys/module/haltpoll/parameters/guest_halt_poll_ns")).and_then(|v| v.parse::<u64>().ok());
        if driver.as_deref() == Some("haltpoll") && poll_ns.unwrap_or(0) == 0 && idle_states.len() > 1 {
            idle_states.retain(|s| s.name != "POLL");
        }
    }
    // Keep the list shallowest-first with unique names, as validation requires.
    idle_states.sort_by_key(|s| s.exit_latency_ns);
    let mut seen = std::collections::BTreeSet::new();
    idle_states.retain(|s| seen.insert(s.name.clone()));
    if idle_states.is_empty() {
        // No cpuidle driver: the idle loop's default_idle() halts (HLT; in a
        // guest the vCPU exits to the host). A halted CPU does not poll
        // TIF_NEED_RESCHED, so a remote wakeup needs an IPI: no POLL state here.
        // Exit latency: a C1-like halt [assumed 1 us] on bare metal; in a guest
        // the host must wake the vCPU thread first (measured on the EPYC KVM
        // guest, docs/CALIBRATION.md "local").
        let exit = if guest { crate::GUEST_HLT_EXIT_NS } else { 1_000 };
        idle_states.push(IdleState { name: "HLT".into(), exit_latency_ns: exit, target_residency_ns: 0 });
    }

    let dies_note =
        if dies.len() > topology.nr_packages() { format!(", {} dies (not a modelled level)", dies.len()) } else { String::new() };
    let m = Machine {
        name: "local".into(),
        description: format!("this machine ({model}): {}{dies_note}{}", shape(&topology), if guest { ", virtual machine" } else { "" }),
        source: format!(
            "Linux sysfs under {}{note}; costs are generic [assumed] values{} (docs/CALIBRATION.md, local)",
            root.display(),
            if guest {
                ", except the context switch, IPI send, halt exit, halt cache eviction and vCPU-to-vCPU line transfer measured on a 2-vCPU EPYC KVM guest"
            } else {
                ", not measured"
            }
        ),
        topology,
        caches,
        costs: generic_costs(freq_mhz, guest),
        idle_states,
        // The guest figures were measured on a KVM guest (docs/CALIBRATION.md "Machine noise").
        noise: if guest { crate::Noise::GUEST_MEASURED } else { crate::Noise::BARE_METAL_DEFAULT },
    };
    m.validate()?;
    Ok(m)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A scratch directory removed on drop.
    pub(crate) struct TempDir(pub PathBuf);
    impl TempDir {
        pub(crate) fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p =
                std::env::temp_dir().join(format!("schedlab-machine-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn put(root: &Path, rel: &str, content: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{content}\n")).unwrap();
    }

    /// 2 packages x 2 cores x 2 threads, smt-last numbering (siblings N, N+4),
    /// one L3 per package, 2 nodes, plus a memory-only node 2.
    fn fake_tree(root: &Path, with_nodes: bool) {
        put(root, "sys/devices/system/cpu/online", "0-7");
        for c in 0..8u16 {
            let core = c % 4;
            let pkg = core / 2;
            let sib = format!("{core},{}", core + 4);
            let d = format!("sys/devices/system/cpu/cpu{c}");
            put(root, &format!("{d}/topology/physical_package_id"), &pkg.to_string());
            put(root, &format!("{d}/topology/core_id"), &(core % 2).to_string());
            put(root, &format!("{d}/topology/die_id"), "0");
            put(root, &format!("{d}/topology/core_cpus_list"), &sib);
            put(root, &format!("{d}/topology/cluster_cpus_list"), &sib);
            put(root, &format!("{d}/topology/cluster_id"), "65535");
            let l3 = if pkg == 0 { "0-1,4-5" } else { "2-3,6-7" };
            for (i, (lvl, ty, size, shared)) in [
                (1, "Data", "48K", sib.as_str()),
                (1, "Instruction", "32K", sib.as_str()),
                (2, "Unified", "2048K", sib.as_str()),
                (3, "Unified", "105M", l3),
            ]
            .into_iter()
            .enumerate()
            {
                let ix = format!("{d}/cache/index{i}");
                put(root, &format!("{ix}/level"), &lvl.to_string());
                put(root, &format!("{ix}/type"), ty);
                put(root, &format!("{ix}/size"), size);
                put(root, &format!("{ix}/shared_cpu_list"), shared);
            }
        }
        for (s, name, lat, res) in [(0, "POLL", 0, 0), (1, "C1", 1, 1), (2, "C1E", 2, 4), (3, "C6", 290, 800)] {
            let d = format!("sys/devices/system/cpu/cpu0/cpuidle/state{s}");
            put(root, &format!("{d}/name"), name);
            put(root, &format!("{d}/latency"), &lat.to_string());
            put(root, &format!("{d}/residency"), &res.to_string());
        }
        put(root, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "2000000");
        if with_nodes {
            put(root, "sys/devices/system/node/node0/cpulist", "0-1,4-5");
            put(root, "sys/devices/system/node/node0/distance", "10 21 17");
            put(root, "sys/devices/system/node/node1/cpulist", "2-3,6-7");
            put(root, "sys/devices/system/node/node1/distance", "21 10 28");
            put(root, "sys/devices/system/node/node2/cpulist", "");
            put(root, "sys/devices/system/node/node2/distance", "17 28 10");
        }
        put(root, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Fake Xeon\nflags\t\t: fpu sse2\n");
    }

    #[test]
    fn fake_two_socket_tree() {
        let dir = TempDir::new("sysfs");
        fake_tree(&dir.0, true);
        let m = from_sysfs(&dir.0).unwrap();
        let t = &m.topology;
        assert_eq!((t.nr_cpus(), t.nr_cores(), t.nr_packages(), t.nr_llcs(), t.nr_nodes()), (8, 4, 2, 2, 2));
        assert_eq!(t.smt_siblings(crate::CpuId(1)).map(|c| c.0).collect::<Vec<_>>(), vec![1, 5]);
        assert_eq!(t.distance_matrix(), &[vec![10, 21], vec![21, 10]]);
        assert_eq!(t.cpu(crate::CpuId(6)).node, 1);
        // cluster = one core on x86: no cluster level, cluster == llc
        assert!(t.cpus().iter().all(|c| c.cluster == c.llc));
        assert_eq!(m.caches, CacheSizes { l1d_kib: 48, l2_kib: 2048, llc_kib: 105 * 1024, llc_inclusive: false });
        assert_eq!(m.costs.freq_mhz, 2000);
        assert_eq!(m.costs.ipi_ns, 1000);
        assert_eq!(m.idle_states.len(), 4);
        assert_eq!(m.idle_states[3].exit_latency_ns, 290_000);
        assert!(m.description.contains("Fake Xeon"), "{}", m.description);
        assert_eq!(t.vendor(), crate::CpuVendor::Intel);
        // round trip, compact form recognised
        let text = m.to_toml();
        assert!(text.contains("numbering = \"smt-last\""), "{text}");
        assert_eq!(crate::from_toml_str(&text, "local").unwrap(), m);
    }

    #[test]
    fn no_node_directory_means_one_node() {
        let dir = TempDir::new("sysfs-nonode");
        fake_tree(&dir.0, false);
        let m = from_sysfs(&dir.0).unwrap();
        assert_eq!(m.topology.distance_matrix(), &[vec![10]]);
    }

    #[test]
    fn vendor_from_proc_cpuinfo() {
        let dir = TempDir::new("sysfs-vendor");
        fake_tree(&dir.0, true);
        let cpuinfo = |v: &str| format!("processor\t: 0\nvendor_id\t: {v}\nmodel name\t: X\n\nprocessor\t: 1\nvendor_id\t: {v}\n");
        for (v, want) in [
            ("AuthenticAMD", crate::CpuVendor::Amd),
            ("HygonGenuine", crate::CpuVendor::Amd),
            ("GenuineIntel", crate::CpuVendor::Intel),
            ("CentaurHauls", crate::CpuVendor::Other),
        ] {
            put(&dir.0, "proc/cpuinfo", &cpuinfo(v));
            let m = from_sysfs(&dir.0).unwrap();
            assert_eq!(m.topology.vendor(), want, "{v}");
            assert_eq!(crate::from_toml_str(&m.to_toml(), "local").unwrap(), m);
        }
        // arm64-style cpuinfo without vendor_id, and no cpuinfo at all
        put(&dir.0, "proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\n");
        assert_eq!(from_sysfs(&dir.0).unwrap().topology.vendor(), crate::CpuVendor::Other);
        fs::remove_file(dir.0.join("proc/cpuinfo")).unwrap();
        assert_eq!(from_sysfs(&dir.0).unwrap().topology.vendor(), crate::CpuVendor::Other);
    }

    #[test]
    fn gaps_in_online_cpus_are_refused() {
        let dir = TempDir::new("sysfs-gap");
        fake_tree(&dir.0, true);
        put(&dir.0, "sys/devices/system/cpu/online", "0-2,4-7");
        let e = from_sysfs(&dir.0).unwrap_err().0;
        assert!(e.contains("cpu3 is missing"), "{e}");
    }

    #[test]
    fn missing_sysfs_is_explained() {
        let dir = TempDir::new("sysfs-empty");
        let e = from_sysfs(&dir.0).unwrap_err().0;
        assert!(e.contains("does not exist") && e.contains("preset"), "{e}");
    }

    #[test]
    fn sizes() {
        assert_eq!(size_kib("32K"), Some(32));
        assert_eq!(size_kib("12M"), Some(12288));
        assert_eq!(size_kib("x"), None);
    }
}
