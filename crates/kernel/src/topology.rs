//! Scheduling domains: what `build_sched_domains()` (kernel/sched/topology.c)
//! builds from the firmware topology, per kernel profile (v2.6.38..v6.12).
//!
//! Levels bottom-up: SMT, CLS, MC, PKG (or NODE when a package holds several NUMA
//! nodes), then one NUMA level per distinct SLIT distance. Useless levels are
//! degenerated away as `sd_degenerate()` / `sd_parent_degenerate()` do.

use crate::cpumask::CpuMask;
use crate::profile::{KernelProfile, SdInitVariant};
use crate::stats::PerCpuLevels;
use schedlab_topology::{CpuId, CpuTopology, CpuVendor};
use std::collections::{HashMap, HashSet};

pub const SD_BALANCE_NEWIDLE: u32 = 0x1;
pub const SD_BALANCE_EXEC: u32 = 0x2;
pub const SD_BALANCE_FORK: u32 = 0x4;
pub const SD_BALANCE_WAKE: u32 = 0x8;
pub const SD_WAKE_AFFINE: u32 = 0x10;
pub const SD_ASYM_CPUCAPACITY: u32 = 0x20;
pub const SD_SHARE_CPUCAPACITY: u32 = 0x80;
pub const SD_CLUSTER: u32 = 0x100;
/// `SD_SHARE_PKG_RESOURCES` before ~v6.10.
pub const SD_SHARE_LLC: u32 = 0x200;
pub const SD_SERIALIZE: u32 = 0x400;
pub const SD_ASYM_PACKING: u32 = 0x800;
pub const SD_PREFER_SIBLING: u32 = 0x1000;
pub const SD_OVERLAP: u32 = 0x2000;
pub const SD_NUMA: u32 = 0x4000;

const FLAG_NAMES: &[(u32, &str)] = &[
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
    (SD_CLUSTER, "SD_CLUSTER"),
    (SD_SHARE_LLC, "SD_SHARE_LLC"),
    (SD_SERIALIZE, "SD_SERIALIZE"),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
    (SD_OVERLAP, "SD_OVERLAP"),
    (SD_NUMA, "SD_NUMA"),
];

/// Render flags as the kernel's debugfs `flags` file does.
pub fn flag_names(flags: u32) -> String {
    FLAG_NAMES.iter().filter(|(f, _)| flags & f != 0).map(|(_, n)| *n).collect::<Vec<_>>().join(" ")
}

/// What a level is, before naming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LevelKind {
    Smt,
    Cls,
    Mc,
    Pkg,
    /// NUMA-in-package: the node level x86 uses instead of PKG.
    Node,
    /// A NUMA level; the value is its SLIT distance.
    Numa(u32),
}

/// One `struct sched_domain`. All CPUs with the same span at a level share one
/// (their per-CPU balancing state lives elsewhere).
#[derive(Clone, Debug)]
pub struct SchedDomain {
    pub name: &'static str,
    pub kind: LevelKind,
    pub span: CpuMask,
    pub span_weight: u32,
    pub flags: u32,
    pub imbalance_pct: u32,
    pub busy_factor: u32,
    pub cache_nice_tries: u32,
    /// ms
    pub min_interval: u32,
    /// ms
    pub max_interval: u32,
    /// v5.18+ NUMA imbalance allowance (0 where it does not apply).
    pub imb_numa_nr: u32,
    /// v2.6.x-v4.x load indices into rq->cpu_load[]: busy_idx, idle_idx,
    /// newidle_idx (indexed by `IdleType`), as `get_sd_load_idx()` picks them.
    pub load_idx: [u8; 3],
    /// v2.6.x-v3.15 `sd->smt_gain` (SMT level only; 0 elsewhere): the
    /// cpu_power of a core, shared by its threads (`default_scale_smt_power()`).
    pub smt_gain: u32,
    /// The sched groups: spans of the child domains covering this span (single
    /// CPUs at the lowest level), first group the one holding the span's first CPU.
    pub groups: Vec<CpuMask>,
    /// The CPUs of each group, ascending, one list after the other: group `i`
    /// is `group_list[group_off[i]..group_off[i + 1]]`. Walking a group costs
    /// its CPUs, not the machine's mask words (`for_each_cpu(sched_group_span())`).
    group_list: Vec<CpuId>,
    group_off: Vec<u32>,
    /// (CPU, index of the first group holding it), by CPU: the local group of
    /// a CPU without testing every group's mask (a line per group on a wide domain).
    group_of_cpu: Vec<(CpuId, u32)>,
}

impl SchedDomain {
    /// An empty stand-in used while a domain is taken out of the arena (the
    /// v3.10 find_busiest_group() pass, `Kernel::find_busiest_group`).
    pub(crate) fn placeholder() -> SchedDomain {
        SchedDomain {
            name: "",
            kind: LevelKind::Smt,
            span: CpuMask::default(),
            span_weight: 0,
            flags: 0,
            imbalance_pct: 100,
            busy_factor: 1,
            cache_nice_tries: 0,
            min_interval: 1,
            max_interval: 1,
            imb_numa_nr: 0,
            load_idx: [0; 3],
            smt_gain: 0,
            groups: Vec::new(),
            group_list: Vec::new(),
            group_off: Vec::new(),
            group_of_cpu: Vec::new(),
        }
    }

    /// The CPUs of group `i`, ascending (as `groups[i].iter()`).
    #[inline]
    pub fn group_cpus(&self, i: usize) -> &[CpuId] {
        &self.group_list[self.group_off[i] as usize..self.group_off[i + 1] as usize]
    }

    /// Every group is a single CPU (the lowest level, and a flat LLC without
    /// SMT): group `i` is `group_cpus_from(0)[i]`.
    #[inline]
    pub fn singleton_groups(&self) -> bool {
        self.group_list.len() == self.groups.len()
    }

    /// The CPUs of groups `i..`, one group after the other (a walk of the
    /// groups in order visits them in this order).
    #[inline]
    pub fn group_cpus_from(&self, i: usize) -> &[CpuId] {
        &self.group_list[self.group_off[i] as usize..]
    }

    /// Index of the first group holding `c` (`sd.groups.iter().position(|g|
    /// g.test(c))`; NUMA groups may overlap), by a binary search of the
    /// domain's CPUs.
    #[inline]
    pub fn group_of(&self, c: CpuId) -> Option<usize> {
        let i = self.group_of_cpu.binary_search_by_key(&c, |&(cpu, _)| cpu).ok()?;
        Some(self.group_of_cpu[i].1 as usize)
    }

    /// Set the groups and their CPU lists.
    fn set_groups(&mut self, groups: Vec<CpuMask>) {
        self.group_list.clear();
        self.group_off.clear();
        self.group_off.push(0);
        for g in &groups {
            self.group_list.extend(g.iter());
            self.group_off.push(self.group_list.len() as u32);
        }
        self.group_of_cpu.clear();
        for (gi, g) in groups.iter().enumerate() {
            self.group_of_cpu.extend(g.iter().map(|c| (c, gi as u32)));
        }
        // Stable: of the entries of one CPU the first group's stays first.
        self.group_of_cpu.sort_by_key(|&(c, _)| c);
        self.group_of_cpu.dedup_by_key(|&mut (c, _)| c);
        self.groups = groups;
    }
}

/// The domain hierarchy of the machine plus the per-CPU cached pointers of
/// `update_top_cache_domain()`.
#[derive(Clone, Debug)]
pub struct SchedDomains {
    pub domains: Vec<SchedDomain>,
    /// Per CPU, domain ids bottom-up (`for_each_domain`), in one allocation
    /// (`per_cpu[c]` is CPU `c`'s slice; a wakeup walks it on the waker's
    /// CPU, and a heap block per CPU was a cache miss of its own on large machines).
    pub per_cpu: PerCpuLevels<u32>,
    /// Per CPU: index into `per_cpu[cpu]` of `sd_llc`, if any.
    pub sd_llc_level: Vec<Option<u8>>,
    pub sd_llc_size: Vec<u32>,
    pub sd_llc_id: Vec<u16>,
    /// Per CPU SMT sibling mask (`cpu_smt_mask`).
    pub smt_mask: Vec<CpuMask>,
    pub nr_cpus: usize,
}

fn level_flags(kind: LevelKind) -> u32 {
    match kind {
        LevelKind::Smt => SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
        LevelKind::Cls => SD_CLUSTER | SD_SHARE_LLC,
        LevelKind::Mc => SD_SHARE_LLC,
        LevelKind::Pkg | LevelKind::Node => 0,
        LevelKind::Numa(_) => SD_NUMA | SD_SERIALIZE | SD_OVERLAP,
    }
}

/// Flags and tunables of one level: `sd_init()` (v3.16+, kernel/sched/topology.c)
/// or, for the `V3` profiles, the SD_SIBLING_INIT / SD_MC_INIT / SD_CPU_INIT
/// macros of include/linux/topology.h and `sd_numa_init()` (v3.10).
fn sd_init(profile: &KernelProfile, kind: LevelKind, span_weight: u32, reclaim_distance: u32) -> SchedDomain {
    let mut flags = SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING | level_flags(kind);
    let (mut imbalance_pct, mut busy_factor) = match profile.sd_init {
        SdInitVariant::V3 => (125, 64),
        SdInitVariant::V4 => (125, 32),
        SdInitVariant::V5_10 => (117, 16),
    };
    let mut cache_nice_tries = 1;
    match kind {
        LevelKind::Smt => {
            imbalance_pct = 110;
            cache_nice_tries = 0;
        }
        LevelKind::Cls | LevelKind::Mc => {
            if profile.sd_init != SdInitVariant::V3 {
                imbalance_pct = 117;
            }
        }
        LevelKind::Numa(d) => {
            cache_nice_tries = 2;
            flags &= !SD_PREFER_SIBLING;
            if profile.sd_init == SdInitVariant::V3 {
                busy_factor = 32;
            }
            if d > reclaim_distance {
                flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
            }
        }
        LevelKind::Pkg | LevelKind::Node => {}
    }
    // sd_init() (v3.16+): intervals from the span weight. v3.10's macros:
    // SIBLING 1/2 ms, MC and CPU 1/4 ms; sd_numa_init() sd_weight/2*sd_weight.
    let (mut min_interval, mut max_interval) = (span_weight, 2 * span_weight);
    let mut load_idx = [0u8; 3];
    let mut smt_gain = 0;
    if profile.sd_init == SdInitVariant::V3 {
        match kind {
            LevelKind::Smt => {
                (min_interval, max_interval) = (1, 2);
                busy_factor = 64;
                smt_gain = 1178;
            }
            // SD_MC_INIT: busy_idx 2; SD_CPU_INIT: busy_idx 2, idle_idx 1.
            LevelKind::Cls | LevelKind::Mc => {
                (min_interval, max_interval) = (1, 4);
                load_idx = [2, 0, 0];
            }
            LevelKind::Pkg | LevelKind::Node => {
                (min_interval, max_interval) = (1, 4);
                load_idx = [2, 1, 0];
            }
            // sd_numa_init(): busy_idx 3, idle_idx 2.
            LevelKind::Numa(_) => load_idx = [3, 2, 0],
        }
    }
    SchedDomain {
        name: "",
        kind,
        span: CpuMask::default(),
        span_weight,
        flags,
        imbalance_pct,
        busy_factor,
        cache_nice_tries,
        min_interval,
        max_interval,
        imb_numa_nr: 0,
        load_idx,
        smt_gain,
        groups: Vec::new(),
        group_list: Vec::new(),
        group_off: Vec::new(),
        group_of_cpu: Vec::new(),
    }
}

/// The CPU attributes a level's span is drawn from (`SchedDomains::build`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Attr {
    Core,
    Cluster,
    Llc,
    Node,
}

impl SchedDomains {
    /// `build_sched_domains()` for every CPU.
    pub fn build(topo: &CpuTopology, profile: &KernelProfile) -> SchedDomains {
        let n = topo.nr_cpus();
        let cpus = topo.cpus();
        let reclaim_distance = if profile.tunables.amd_reclaim_distance_32 && topo.vendor() == CpuVendor::Amd {
            32
        } else {
            profile.tunables.reclaim_distance
        };
        // Distinct SLIT distances above LOCAL_DISTANCE, ascending: one NUMA level each.
        let mut dists: Vec<u32> = topo.distance_matrix().iter().flatten().copied().filter(|&d| d > 10).collect();
        dists.sort_unstable();
        dists.dedup();
        // Some package holds CPUs of two nodes (one pass: each package's first node).
        let mut pkg_node: HashMap<u32, u32> = HashMap::new();
        let numa_in_package = cpus.iter().any(|a| *pkg_node.entry(a.package).or_insert(a.node) != a.node);

        let mut kinds = vec![LevelKind::Smt];
        if profile.has_cluster_level {
            kinds.push(LevelKind::Cls);
        }
        kinds.push(LevelKind::Mc);
        kinds.push(if numa_in_package { LevelKind::Node } else { LevelKind::Pkg });
        kinds.extend(dists.iter().map(|&d| LevelKind::Numa(d)));

        // The CPUs of each core, cluster, LLC and node, gathered in one pass
        // (the spans below are built from them, not by a scan of every CPU
        // per span: on 1024 CPUs that was a million tests per level).
        let mut members: HashMap<(Attr, u32), Vec<CpuId>> = HashMap::new();
        for (i, me) in cpus.iter().enumerate() {
            for key in [(Attr::Core, me.core), (Attr::Cluster, me.cluster), (Attr::Llc, me.llc), (Attr::Node, me.node)] {
                members.entry(key).or_default().push(CpuId(i as u16));
            }
        }
        let nodes: Vec<u32> = {
            let mut v: Vec<u32> = cpus.iter().map(|i| i.node).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // A level's span depends on one attribute of the CPU (its core,
        // cluster, LLC or node): computed once per (level, attribute value).
        let mut spans: HashMap<(LevelKind, u32), CpuMask> = HashMap::new();
        let mut span_of = |kind: LevelKind, c: usize| -> CpuMask {
            let me = cpus[c];
            let attr = match kind {
                LevelKind::Smt => me.core,
                LevelKind::Cls => me.cluster,
                LevelKind::Mc => me.llc,
                LevelKind::Pkg | LevelKind::Node | LevelKind::Numa(_) => me.node,
            };
            spans
                .entry((kind, attr))
                .or_insert_with(|| {
                    let of = |a: Attr, v: u32| members[&(a, v)].iter().copied();
                    match kind {
                        LevelKind::Smt => CpuMask::from_cpus(n, of(Attr::Core, me.core)),
                        LevelKind::Cls => CpuMask::from_cpus(n, of(Attr::Cluster, me.cluster)),
                        LevelKind::Mc => CpuMask::from_cpus(n, of(Attr::Llc, me.llc)),
                        // cpu_cpu_mask() is cpumask_of_node(): the PKG level spans the node.
                        LevelKind::Pkg | LevelKind::Node => CpuMask::from_cpus(n, of(Attr::Node, me.node)),
                        LevelKind::Numa(d) => CpuMask::from_cpus(
                            n,
                            nodes.iter().filter(|&&o| topo.node_distance(me.node, o) <= d).flat_map(|&o| of(Attr::Node, o)),
                        ),
                    }
                })
                .clone()
        };

        let mut arena: Vec<SchedDomain> = Vec::new();
        // Lookup only (ids follow first appearance): a hash of the span's words.
        let mut index: HashMap<(LevelKind, CpuMask), u32> = HashMap::new();
        let mut per_cpu = Vec::with_capacity(n);
        for c in 0..n {
            // Degeneration: drop span-1 levels, and a parent with the same span as
            // its child (a single group adds nothing; the child keeps its flags).
            let mut kept: Vec<(LevelKind, CpuMask)> = Vec::new();
            for &k in &kinds {
                if k == LevelKind::Cls {
                    // A cluster equal to the core or the LLC degenerates (x86 without clusters).
                    let s = span_of(k, c);
                    if s == span_of(LevelKind::Smt, c) || s == span_of(LevelKind::Mc, c) {
                        continue;
                    }
                }
                let s = span_of(k, c);
                if s.weight() <= 1 {
                    continue;
                }
                if let Some((_, prev)) = kept.last() {
                    if *prev == s {
                        continue;
                    }
                }
                kept.push((k, s));
            }
            let mut ids = Vec::new();
            for (k, s) in kept {
                let id = *index.entry((k, s.clone())).or_insert_with(|| {
                    let mut sd = sd_init(profile, k, s.weight(), reclaim_distance);
                    sd.name = match k {
                        LevelKind::Smt => profile.level_names.smt,
                        LevelKind::Cls => profile.level_names.cls,
                        LevelKind::Mc => profile.level_names.mc,
                        LevelKind::Pkg => profile.level_names.pkg,
                        LevelKind::Node => "NODE",
                        LevelKind::Numa(_) => "NUMA",
                    };
                    sd.span = s.clone();
                    arena.push(sd);
                    (arena.len() - 1) as u32
                });
                ids.push(id);
            }
            per_cpu.push(ids);
        }
        // Groups: the child domain spans of the CPUs in the span (single CPUs at the bottom).
        for id in 0..arena.len() {
            let span = arena[id].span.clone();
            let mut groups: Vec<CpuMask> = Vec::new();
            // Membership only (the groups keep their first-appearance order).
            let mut seen: HashSet<CpuMask> = HashSet::new();
            for c in span.iter() {
                let lvls = &per_cpu[c.idx()];
                let pos = lvls.iter().position(|&x| x as usize == id).expect("cpu in span has the domain");
                let g = if pos == 0 { CpuMask::from_cpus(n, [c]) } else { arena[lvls[pos - 1] as usize].span.clone() };
                if seen.insert(g.clone()) {
                    groups.push(g);
                }
            }
            arena[id].set_groups(groups);
        }
        let mut sd = SchedDomains {
            domains: arena,
            per_cpu: PerCpuLevels::from_rows(per_cpu),
            sd_llc_level: vec![None; n],
            sd_llc_size: vec![1; n],
            sd_llc_id: (0..n as u16).collect(),
            // (topo.smt_siblings(), from the core lists gathered above.)
            smt_mask: cpus.iter().map(|i| CpuMask::from_cpus(n, members[&(Attr::Core, i.core)].iter().copied())).collect(),
            nr_cpus: n,
        };
        for c in 0..n {
            // update_top_cache_domain(): highest domain with SD_SHARE_LLC.
            let llc = sd.per_cpu[c].iter().rposition(|&id| sd.domains[id as usize].flags & SD_SHARE_LLC != 0);
            if let Some(l) = llc {
                let d = &sd.domains[sd.per_cpu[c][l] as usize];
                sd.sd_llc_level[c] = Some(l as u8);
                sd.sd_llc_size[c] = d.span_weight;
                sd.sd_llc_id[c] = d.span.first().unwrap().0;
            }
        }
        if profile.version >= (5, 18) {
            sd.set_imb_numa_nr();
        }
        sd
    }

    /// `imb_numa_nr` (v5.18+, `build_sched_domains()`) for the domains above the LLC.
    fn set_imb_numa_nr(&mut self) {
        for c in 0..self.nr_cpus {
            let lvls = self.per_cpu[c].to_vec();
            let mut imb = 0u32;
            let mut imb_span = 1u32;
            for (i, &id) in lvls.iter().enumerate() {
                if i == 0 {
                    continue;
                }
                let child = &self.domains[lvls[i - 1] as usize];
                let sd = &self.domains[id as usize];
                if sd.flags & SD_SHARE_LLC != 0 {
                    continue;
                }
                if child.flags & SD_SHARE_LLC != 0 {
                    let nr_llcs = sd.span_weight / child.span_weight;
                    imb = if nr_llcs == 1 { sd.span_weight >> 3 } else { nr_llcs }.max(1);
                    // imb_span: span of the first SD_NUMA ancestor, else this span.
                    imb_span = lvls[i..]
                        .iter()
                        .map(|&x| &self.domains[x as usize])
                        .find(|d| d.flags & SD_NUMA != 0)
                        .map_or(sd.span_weight, |d| d.span_weight);
                    self.domains[id as usize].imb_numa_nr = imb;
                } else if imb > 0 {
                    let f = (sd.span_weight / imb_span).max(1);
                    self.domains[id as usize].imb_numa_nr = imb * f;
                }
            }
        }
    }

    /// Domains of `cpu`, bottom-up (`for_each_domain(cpu, sd)`).
    #[inline]
    pub fn of(&self, cpu: CpuId) -> impl DoubleEndedIterator<Item = &SchedDomain> + '_ {
        self.per_cpu[cpu.idx()].iter().map(|&id| &self.domains[id as usize])
    }
    /// `sd_llc` of `cpu`.
    pub fn sd_llc(&self, cpu: CpuId) -> Option<&SchedDomain> {
        self.sd_llc_level[cpu.idx()].map(|l| &self.domains[self.per_cpu[cpu.idx()][l as usize] as usize])
    }
    /// `cpus_share_cache()`.
    #[inline]
    pub fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.sd_llc_id[a.idx()] == self.sd_llc_id[b.idx()]
    }
    /// The level names present on `cpu`, bottom-up.
    pub fn level_names(&self, cpu: CpuId) -> Vec<&'static str> {
        self.of(cpu).map(|d| d.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile;
    use schedlab_topology::CpuInfo;

    /// zen3-2s-nps4 as Linux numbers it: 2 packages x 64 cores, CCX of 8 cores
    /// (16 CPUs), node = 2 CCX, SMT siblings at +128; SLIT 10/12/32.
    pub(crate) fn zen3_nps4() -> CpuTopology {
        let mut cpus = Vec::new();
        for cpu in 0..256u32 {
            let core = cpu % 128;
            let package = core / 64;
            let llc = core / 8;
            let node = core / 16;
            cpus.push(CpuInfo { core, cluster: llc, llc, node, package });
        }
        let dist = (0..8)
            .map(|a: u32| {
                (0..8)
                    .map(|b: u32| {
                        if a == b {
                            10
                        } else if a / 4 == b / 4 {
                            12
                        } else {
                            32
                        }
                    })
                    .collect()
            })
            .collect();
        CpuTopology::new(cpus, dist).unwrap().with_vendor(CpuVendor::Amd)
    }

    /// spr-112: one package, 56 cores x 2 threads, one LLC, one node.
    pub(crate) fn spr112() -> CpuTopology {
        let cpus = (0..112u32).map(|c| CpuInfo { core: c % 56, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        CpuTopology::new(cpus, vec![vec![10]]).unwrap().with_vendor(CpuVendor::Intel)
    }

    // build_sched_domains() (v6.x): zen3-2s-nps4 has SMT span 2, MC span 16, then the node
    // (NUMA in package: NODE, 32), the socket (NUMA distance 12, 128) and the
    // machine (NUMA distance 32, 256).
    #[test]
    fn zen3_nps4_domains() {
        let sd = SchedDomains::build(&zen3_nps4(), &profile("v6.6").unwrap());
        let spans: Vec<(&str, u32)> = sd.of(CpuId(0)).map(|d| (d.name, d.span_weight)).collect();
        assert_eq!(spans, vec![("SMT", 2), ("MC", 16), ("NODE", 32), ("NUMA", 128), ("NUMA", 256)]);
        let smt = sd.of(CpuId(0)).next().unwrap();
        assert_eq!(smt.span.iter().map(|c| c.0).collect::<Vec<_>>(), vec![0, 128]);
        assert_eq!(smt.imbalance_pct, 110);
        assert_eq!(sd.sd_llc_size[0], 16);
        assert_eq!(sd.sd_llc_size[200], 16);
        // node 0 = CPUs 0-15 and 128-143
        let node = sd.of(CpuId(0)).nth(2).unwrap();
        assert!(node.span.test(CpuId(143)) && !node.span.test(CpuId(16)));
        // Zen raises node_reclaim_distance to 32 (v5.4+): the distance-32 level keeps SD_WAKE_AFFINE.
        let top = sd.of(CpuId(0)).last().unwrap();
        assert!(top.flags & SD_WAKE_AFFINE != 0 && top.flags & SD_NUMA != 0);
        assert_eq!(top.groups.len(), 2);
        // MC groups are the 8 SMT cores of the CCX.
        assert_eq!(sd.of(CpuId(0)).nth(1).unwrap().groups.len(), 8);
        // imb_numa_nr: NODE (first above LLC) has 2 LLCs -> 2
        assert_eq!(node.imb_numa_nr, 2);
    }

    // v3.10 (no AMD reclaim-distance fix): the distance-32 level loses SD_WAKE_AFFINE.
    #[test]
    fn zen3_v3_10_no_cross_socket_wake_affine() {
        let sd = SchedDomains::build(&zen3_nps4(), &profile("v3.10").unwrap());
        let top = sd.of(CpuId(0)).last().unwrap();
        assert_eq!(top.flags & (SD_WAKE_AFFINE | SD_BALANCE_FORK), 0);
        assert_eq!(top.imbalance_pct, 125);
        assert_eq!(sd.level_names(CpuId(0))[0], "SIBLING");
    }

    // build_sched_domains() + sd_parent_degenerate() (v6.x): spr-112 has MC span 112 and PKG degenerates into it.
    #[test]
    fn spr112_domains() {
        let sd = SchedDomains::build(&spr112(), &profile("v6.12").unwrap());
        let spans: Vec<(&str, u32)> = sd.of(CpuId(5)).map(|d| (d.name, d.span_weight)).collect();
        assert_eq!(spans, vec![("SMT", 2), ("MC", 112)]);
        assert_eq!(sd.sd_llc_size[5], 112);
        assert!(sd.cpus_share_cache(CpuId(0), CpuId(111)));
    }

    // group_of() is the first group whose mask holds the CPU, on every domain
    // (overlapping NUMA groups included) and for CPUs outside the span.
    #[test]
    fn group_of_is_the_first_group_holding_the_cpu() {
        let topos = [zen3_nps4(), spr112()];
        for (t, v) in topos.iter().flat_map(|t| ["v3.10", "v6.6"].map(|v| (t, v))) {
            let sd = SchedDomains::build(t, &profile(v).unwrap());
            let mut checked = 0;
            for d in &sd.domains {
                for c in 0..t.nr_cpus() as u16 {
                    let c = CpuId(c);
                    assert_eq!(d.group_of(c), d.groups.iter().position(|g| g.test(c)), "{v} {} cpu {}", d.name, c.0);
                    checked += d.group_of(c).is_some() as u32;
                }
            }
            assert!(checked > 0);
        }
    }

    #[test]
    fn single_cpu_has_no_domains() {
        let t = CpuTopology::new(vec![CpuInfo { core: 0, cluster: 0, llc: 0, node: 0, package: 0 }], vec![vec![10]]).unwrap();
        let sd = SchedDomains::build(&t, &profile("v6.6").unwrap());
        assert!(sd.per_cpu[0].is_empty());
        assert_eq!(sd.sd_llc_size[0], 1);
    }
}
