//! The firmware's view of a machine.
//!
//! This is what the Linux kernel learns about a machine at boot from ACPI / device
//! tree and exposes in `/sys/devices/system/cpu/cpuN/topology` and
//! `/sys/devices/system/node`: for each logical CPU its core (SMT siblings share a
//! core), its cluster (CPUs sharing an L2 or LLC tag, `cluster_id`), its LLC, its
//! package and its NUMA node, plus the SLIT node-distance matrix.
//!
//! It is the only hardware knowledge the kernel model receives: both
//! `schedlab-machine` (which builds it from presets and files) and
//! `schedlab-kernel` (which builds sched domains from it) depend on this crate, and
//! the kernel model never sees the cost model.

use std::fmt;

/// Dense logical CPU number, as Linux numbers CPUs (`cpuN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CpuId(pub u16);

impl CpuId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where one logical CPU sits. All ids are machine-wide unique (the core id of
/// CPU 5 on package 1 is not reused on package 0), so two CPUs share a level iff
/// their ids at that level are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// Physical core: CPUs with the same `core` are SMT siblings.
    pub core: u32,
    /// Cluster (CONFIG_SCHED_CLUSTER): cores sharing an L2 or an LLC tag. Equal to
    /// the LLC id where the machine has no cluster level.
    pub cluster: u32,
    /// Last-level cache instance.
    pub llc: u32,
    /// NUMA node.
    pub node: u32,
    /// Physical package (socket).
    pub package: u32,
}

/// The topology of a machine, validated on construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    cpus: Vec<CpuInfo>,
    vendor: CpuVendor,
    /// SLIT distances, `node_distance[a][b]`; nodes are numbered `0..nr_nodes`.
    node_distance: Vec<Vec<u32>>,
}

/// A topology that cannot exist; the message says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for TopologyError {}

/// CPU vendor as the kernel sees it from CPUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CpuVendor {
    Intel,
    Amd,
    #[default]
    Other,
}

/// Largest machine schedlab models.
pub const MAX_CPUS: usize = 1024;

impl CpuTopology {
    /// Build and validate. Requirements: 1..=1024 CPUs; nodes numbered densely
    /// from 0; a square distance matrix with 10 on the diagonal and values >= 10
    /// elsewhere; every level nested in the next (a core in one cluster, a cluster
    /// in one LLC, an LLC in one node... LLCs may span nodes only if they stay in
    /// one package); and every node has at least one CPU.
    pub fn new(cpus: Vec<CpuInfo>, node_distance: Vec<Vec<u32>>) -> Result<Self, TopologyError> {
        let err = |s: String| Err(TopologyError(s));
        if cpus.is_empty() {
            return err("a machine needs at least one CPU".into());
        }
        if cpus.len() > MAX_CPUS {
            return err(format!("{} CPUs is more than schedlab models ({MAX_CPUS}); describe a smaller machine", cpus.len()));
        }
        let nr_nodes = node_distance.len();
        if nr_nodes == 0 {
            return err("the node distance matrix is empty; give at least [[10]]".into());
        }
        for (a, row) in node_distance.iter().enumerate() {
            if row.len() != nr_nodes {
                return err(format!(
                    "node distance row {a} has {} entries but there are {nr_nodes} nodes; the matrix must be square",
                    row.len()
                ));
            }
            for (b, &d) in row.iter().enumerate() {
                if a == b && d != 10 {
                    return err(format!("node distance [{a}][{a}] is {d}; the local distance must be 10 (LOCAL_DISTANCE)"));
                }
                if a != b && d <= 10 {
                    return err(format!("node distance [{a}][{b}] is {d}; remote distances must be above 10"));
                }
                if node_distance[b][a] != d {
                    return err(format!(
                        "node distance [{a}][{b}]={d} but [{b}][{a}]={}; the matrix must be symmetric",
                        node_distance[b][a]
                    ));
                }
            }
        }
        let mut seen_node = vec![false; nr_nodes];
        for (i, c) in cpus.iter().enumerate() {
            if c.node as usize >= nr_nodes {
                return err(format!("cpu{i} is on node {} but the distance matrix has only {nr_nodes} nodes", c.node));
            }
            seen_node[c.node as usize] = true;
        }
        if let Some(n) = seen_node.iter().position(|s| !s) {
            return err(format!("node {n} has no CPUs; memory-only nodes are not modelled, drop it from the distance matrix"));
        }
        // Nesting: each finer id maps to exactly one coarser id.
        fn nested(
            cpus: &[CpuInfo],
            fine: impl Fn(&CpuInfo) -> u32,
            coarse: impl Fn(&CpuInfo) -> u32,
            what: &str,
        ) -> Result<(), TopologyError> {
            let mut map: Vec<(u32, u32, usize)> = cpus.iter().enumerate().map(|(i, c)| (fine(c), coarse(c), i)).collect();
            map.sort_unstable();
            for w in map.windows(2) {
                if w[0].0 == w[1].0 && w[0].1 != w[1].1 {
                    return Err(TopologyError(format!(
                        "cpu{} and cpu{} share a {what} but not the level above it; each level must nest in the next",
                        w[0].2, w[1].2
                    )));
                }
            }
            Ok(())
        }
        nested(&cpus, |c| c.core, |c| c.cluster, "core")?;
        nested(&cpus, |c| c.cluster, |c| c.llc, "cluster")?;
        nested(&cpus, |c| c.llc, |c| c.package, "LLC")?;
        nested(&cpus, |c| c.node, |c| c.package, "NUMA node")
            .or_else(|_| nested(&cpus, |c| c.package, |c| c.node, "package"))
            .map_err(|_| TopologyError("nodes and packages do not nest: a node must lie in one package or a package in one node".into()))?;
        Ok(CpuTopology { cpus, node_distance, vendor: CpuVendor::Other })
    }

    /// Set the CPU vendor (the kernel reads it from CPUID; it changes e.g.
    /// node_reclaim_distance on AMD).
    pub fn with_vendor(mut self, vendor: CpuVendor) -> Self {
        self.vendor = vendor;
        self
    }
    pub fn vendor(&self) -> CpuVendor {
        self.vendor
    }
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
    pub fn nr_nodes(&self) -> usize {
        self.node_distance.len()
    }
    #[inline]
    pub fn cpu(&self, c: CpuId) -> &CpuInfo {
        &self.cpus[c.idx()]
    }
    pub fn cpus(&self) -> &[CpuInfo] {
        &self.cpus
    }
    pub fn node_distance(&self, a: u32, b: u32) -> u32 {
        self.node_distance[a as usize][b as usize]
    }
    pub fn distance_matrix(&self) -> &[Vec<u32>] {
        &self.node_distance
    }
    /// CPUs sharing `c`'s core (including `c`), ascending.
    pub fn smt_siblings(&self, c: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        let core = self.cpus[c.idx()].core;
        self.ids_where(move |i| i.core == core)
    }
    /// All CPU ids whose info satisfies `f`, ascending.
    pub fn ids_where<'a>(&'a self, f: impl Fn(&CpuInfo) -> bool + 'a) -> impl Iterator<Item = CpuId> + 'a {
        self.cpus.iter().enumerate().filter(move |(_, i)| f(i)).map(|(n, _)| CpuId(n as u16))
    }
    /// CPUs of each core, cores in order of their first CPU (hwloc's logical
    /// core order; what will-it-scale binds its copies to).
    pub fn core_groups(&self) -> Vec<Vec<u16>> {
        let mut cores: Vec<(u32, Vec<u16>)> = Vec::new();
        for (i, c) in self.cpus.iter().enumerate() {
            match cores.iter_mut().find(|(id, _)| *id == c.core) {
                Some((_, v)) => v.push(i as u16),
                None => cores.push((c.core, vec![i as u16])),
            }
        }
        cores.into_iter().map(|(_, v)| v).collect()
    }

    pub fn threads_per_core(&self) -> usize {
        self.smt_siblings(CpuId(0)).count()
    }
    fn count_distinct(&self, f: impl Fn(&CpuInfo) -> u32) -> usize {
        let mut v: Vec<u32> = self.cpus.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    }
    pub fn nr_cores(&self) -> usize {
        self.count_distinct(|c| c.core)
    }
    pub fn nr_llcs(&self) -> usize {
        self.count_distinct(|c| c.llc)
    }
    pub fn nr_packages(&self) -> usize {
        self.count_distinct(|c| c.package)
    }
    pub fn nr_clusters(&self) -> usize {
        self.count_distinct(|c| c.cluster)
    }
}

/// Format a CPU list the way the kernel prints cpumasks in `*_list` files: `0-15,128-143`.
pub fn cpulist(cpus: impl IntoIterator<Item = CpuId>) -> String {
    let mut v: Vec<u16> = cpus.into_iter().map(|c| c.0).collect();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

/// Parse a kernel cpulist (`0-3,8,10-11`). Errors name the bad token.
pub fn parse_cpulist(s: &str) -> Result<Vec<u16>, String> {
    let mut out = Vec::new();
    for tok in s.trim().split(',').filter(|t| !t.is_empty()) {
        let parse = |x: &str| x.trim().parse::<u16>().map_err(|_| format!("bad CPU number {x:?} in cpulist {s:?}"));
        if let Some((a, b)) = tok.split_once('-') {
            let (a, b) = (parse(a)?, parse(b)?);
            if a > b {
                return Err(format!("descending range {tok:?} in cpulist {s:?}"));
            }
            out.extend(a..=b);
        } else {
            out.push(parse(tok)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(core: u32, llc: u32, node: u32) -> CpuInfo {
        CpuInfo { core, cluster: llc, llc, node, package: node }
    }

    #[test]
    fn cpulist_roundtrip() {
        let l = cpulist([0, 1, 2, 3, 8, 10, 11].map(CpuId));
        assert_eq!(l, "0-3,8,10-11");
        assert_eq!(parse_cpulist(&l).unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("x").is_err());
    }

    #[test]
    fn rejects_bad_topologies() {
        assert!(CpuTopology::new(vec![], vec![vec![10]]).is_err());
        // asymmetric matrix
        let e = CpuTopology::new(vec![info(0, 0, 0), info(1, 1, 1)], vec![vec![10, 20], vec![21, 10]]).unwrap_err();
        assert!(e.0.contains("symmetric"), "{e}");
        // a core split across LLCs
        let e = CpuTopology::new(vec![info(0, 0, 0), info(0, 1, 0)], vec![vec![10]]).unwrap_err();
        assert!(e.0.contains("nest"), "{e}");
        // node without CPUs
        let e = CpuTopology::new(vec![info(0, 0, 0)], vec![vec![10, 20], vec![20, 10]]).unwrap_err();
        assert!(e.0.contains("node 1 has no CPUs"), "{e}");
    }

    #[test]
    fn siblings_and_counts() {
        let t = CpuTopology::new(vec![info(0, 0, 0), info(1, 0, 0), info(0, 0, 0), info(1, 0, 0)], vec![vec![10]]).unwrap();
        assert_eq!(t.smt_siblings(CpuId(1)).collect::<Vec<_>>(), vec![CpuId(1), CpuId(3)]);
        assert_eq!(t.threads_per_core(), 2);
        assert_eq!(t.nr_cores(), 2);
        assert_eq!(t.core_groups(), vec![vec![0, 2], vec![1, 3]]);
    }
}
