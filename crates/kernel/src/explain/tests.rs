//! Hand-built situations: each wakeup path, wake_affine clause and balance
//! refusal is named by the record as the kernel function would take it.

use super::*;
use crate::core::{Kernel, SwitchReason, TaskParams, WakeFlags};
use crate::fair::balance::{BalanceResult, IdleType};
use crate::profile::profile;
use crate::sched::{TaskId, TaskState};
use schedlab_topology::{CpuId, CpuInfo, CpuTopology};

/// One LLC of `n` CPUs without SMT.
use crate::test_topology::flat;

/// One LLC of `cores` cores x 2 threads; the sibling of cpu c is c + cores.
fn smt(cores: u32) -> CpuTopology {
    let cpus = (0..2 * cores).map(|c| CpuInfo { core: c % cores, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
    CpuTopology::new(cpus, vec![vec![10]]).unwrap()
}

fn kernel(topo: &CpuTopology, name: &str) -> Kernel {
    let mut k = Kernel::new(topo, profile(name).unwrap());
    k.enable_explain(true);
    k
}

/// A task running on `cpu`.
fn occupy(k: &mut Kernel, cpu: u16) -> TaskId {
    let p = k.sched_fork(&TaskParams { cpus_allowed: Some(vec![CpuId(cpu)]), ..Default::default() }, None, CpuId(cpu), 0);
    k.wake_up_new_task(p, CpuId(cpu), 0, &mut crate::core::Effects::default());
    k.schedule(CpuId(cpu), SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
    k.tasks[p.idx()].cpus_allowed = None;
    p
}

/// A sleeping task whose prev_cpu (and recent_used_cpu) is `cpu`.
fn sleeper_on(k: &mut Kernel, cpu: u16) -> TaskId {
    let p = k.sched_fork(&TaskParams::default(), None, CpuId(cpu), 0);
    let t = &mut k.tasks[p.idx()];
    t.cpu = CpuId(cpu);
    t.recent_used_cpu = CpuId(cpu);
    t.state = TaskState::Sleeping;
    p
}

fn last_wake(k: &Kernel) -> WakeRecord {
    let log = k.explain.as_ref().unwrap().log.as_ref().unwrap();
    match log.iter().rev().find(|r| matches!(r, Record::Wake(_))) {
        Some(Record::Wake(w)) => *w,
        _ => panic!("no wake record"),
    }
}

fn last_balance(k: &Kernel) -> BalanceRecord {
    let log = k.explain.as_ref().unwrap().log.as_ref().unwrap();
    match log.iter().rev().find(|r| matches!(r, Record::Balance(_))) {
        Some(Record::Balance(b)) => *b,
        _ => panic!("no balance record"),
    }
}

/// Wake `p` from `waker` on cpu0 and return the record.
fn wake(k: &mut Kernel, p: TaskId, waker: Option<TaskId>, wf: WakeFlags) -> WakeRecord {
    let r = k.try_to_wake_up(p, CpuId(0), waker, wf, 1000, &mut crate::core::Effects::default());
    let w = last_wake(k);
    assert_eq!(w.cpu, r.cpu.0, "the record names the CPU the wakeup chose");
    assert_eq!(w.wake_list, r.queued);
    w
}

// wake_affine_idle() v5.11+: prev idle -> prev; select_idle_sibling(): target (= prev) idle.
#[test]
fn target_idle_after_prev_idle_clause() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!((r.affine, r.path, r.cpu), (AffineRule::PrevIdle, Path::TargetIdle, 1));
    assert!(r.want_affine && !r.wake_wide && r.sis && !r.domain_search);
    assert_eq!(r.affine_level, 0);
}

// Sync wakeup by the only task of this_cpu pulls (sync-one-task); target busy, prev idle.
#[test]
fn prev_idle_after_sync_pull() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.affine, r.target, r.path, r.cpu), (AffineRule::SyncOneTask, 0, Path::PrevIdle, 1));
    assert!(r.wake_list, "v6.0+ ttwu_queue_cond(): an idle same-LLC target is woken through its wake list");
}

// recent_used_cpu idle after target and prev were busy.
#[test]
fn recent_used_cpu() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    occupy(&mut k, 1);
    let p = sleeper_on(&mut k, 1);
    k.tasks[p.idx()].recent_used_cpu = CpuId(3);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.cpu), (Path::RecentUsed, 3));
    assert!(r.recent_tried);
    let c = &k.explain.as_ref().unwrap().counts;
    assert_eq!((c.sis_recent_hit, c.sis_recent_miss), (1, 0));
}

// select_idle_smt(prev) (v5.13+): no idle core, prev's sibling idle.
#[test]
fn smt_prev() {
    let mut k = kernel(&smt(4), "v5.13");
    let w = occupy(&mut k, 0);
    for c in 1..4 {
        occupy(&mut k, c);
    }
    k.llc_shared[0].has_idle_cores = false;
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!((r.path, r.cpu), (Path::SmtPrev, 5));
    assert!(r.domain_search);
}

// select_idle_cpu() with SIS_UTIL: the first idle CPU after target, budget nr_idle_scan.
#[test]
fn idle_cpu_scan_sis_util() {
    let mut k = kernel(&flat(8), "v6.6");
    let w = occupy(&mut k, 0);
    for c in 1..4 {
        occupy(&mut k, c);
    }
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.cpu, r.budget, r.nr, r.scan_end), (Path::IdleCpu, 4, Budget::SisUtil, 8, ScanEnd::Found));
    // target 0: scan from cpu1: 1, 2, 3 busy, 4 idle.
    assert_eq!(r.domain_scanned, 4);
    let c = &k.explain.as_ref().unwrap().counts;
    assert_eq!((c.sis_search, c.sis_domain_search, c.sis_failed), (1, 1, 0));
    assert_eq!(c.sis_scanned, 1 + 4, "fast path counts 1, then each runqueue of the domain scan");
}

// select_idle_core(): has_idle_cores and a fully idle core.
#[test]
fn idle_core_scan() {
    let mut k = kernel(&smt(4), "v6.6");
    let w = occupy(&mut k, 0);
    occupy(&mut k, 1);
    k.llc_shared[0].has_idle_cores = true;
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.cpu), (Path::IdleCore, 2));
    assert!(r.core_search && r.core_hit);
}

// Nothing idle: target; SIS_UTIL with nr_idle_scan = 0 does not scan at all.
#[test]
fn fallback_and_util_zero() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    for c in 1..4 {
        occupy(&mut k, c);
    }
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.scan_end), (Path::Fallback, ScanEnd::Exhausted));
    k.llc_shared[0].nr_idle_scan = 0;
    let q = sleeper_on(&mut k, 2);
    let r = wake(&mut k, q, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.scan_end, r.domain_scanned), (Path::Fallback, ScanEnd::UtilZero, 0));
    assert_eq!(k.explain.as_ref().unwrap().counts.sis_failed, 2);
}

// SIS_PROP (v5.12): the budget runs out; the CPU at which it does counts as scanned.
#[test]
fn sis_prop_budget_out() {
    let mut k = kernel(&flat(8), "v5.12");
    let w = occupy(&mut k, 0);
    for c in 1..7 {
        occupy(&mut k, c);
    }
    k.rqs[0].avg_idle = 0; // budget 4
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::SYNC);
    assert_eq!((r.path, r.budget, r.nr, r.scan_end), (Path::Fallback, Budget::SisProp, 4, ScanEnd::BudgetOut));
    assert_eq!(r.domain_scanned, 4, "3 examined + the one at which !--nr stopped");
}

// Fork: find_idlest_cpu() descends to an idle CPU.
#[test]
fn fork_slow_path() {
    let mut k = kernel(&flat(4), "v6.6");
    let parent = occupy(&mut k, 0);
    let c = k.sched_fork(&TaskParams::default(), Some(parent), CpuId(0), 10);
    let res = k.wake_up_new_task(c, CpuId(0), 10, &mut crate::core::Effects::default());
    let r = last_wake(&k);
    assert_eq!((r.kind, r.path, r.slow_why, r.slow_level), (WakeKind::Fork, Path::SlowPath, SlowWhy::Descended, 0));
    assert_ne!(res.cpu, CpuId(0));
    assert_eq!(r.cpu, res.cpu.0);
}

// Single-CPU affinity: no selection.
#[test]
fn pinned() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    let p = sleeper_on(&mut k, 1);
    k.tasks[p.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(4, [CpuId(2)])));
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!((r.path, r.cpu), (Path::Pinned, 2));
}

// v3.10 shape: no affine domain (the wakee may not run on this_cpu) -> prev, no search.
#[test]
fn v3_10_prev_without_affine_domain() {
    let mut k = kernel(&flat(4), "v3.10");
    let w = occupy(&mut k, 0);
    let p = sleeper_on(&mut k, 1);
    occupy(&mut k, 1);
    k.tasks[p.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(4, [CpuId(1), CpuId(2)])));
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!((r.want_affine, r.affine, r.path, r.cpu), (false, AffineRule::NotAsked, Path::PrevNoSearch, 1));
}

// v3.10 select_idle_sibling(): a fully idle group; v2.6.38: the first idle CPU up the domains.
#[test]
fn old_select_idle_sibling_forms() {
    for (name, path) in [("v3.10", Path::IdleGroup), ("v2.6.38", Path::DomainWalk)] {
        let mut k = kernel(&flat(4), name);
        let w = occupy(&mut k, 0);
        occupy(&mut k, 1);
        let p = sleeper_on(&mut k, 1);
        let r = wake(&mut k, p, Some(w), WakeFlags::default());
        assert_eq!(r.path, path, "{name}");
        assert!(r.cpu == 2 || r.cpu == 3, "{name}: {r:?}");
        assert!(matches!(r.affine, AffineRule::OldBalanced | AffineRule::OldKeep | AffineRule::OldLightThis), "{name}: {r:?}");
    }
}

// wake_affine_weight(): the loads decide, and the record keeps them.
#[test]
fn wa_weight_pull_and_keep() {
    let mut k = kernel(&flat(4), "v5.11");
    let w = occupy(&mut k, 0);
    for _ in 0..4 {
        occupy(&mut k, 1);
    }
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    // (1024 + 1024) * 100 < (4096 - 1024) * 108: this side lighter with the wakee moved.
    assert_eq!(r.affine, AffineRule::WeightPull, "prev carries four tasks: {r:?}");
    assert!(r.this_load < r.prev_load);
    let mut k = kernel(&flat(4), "v5.11");
    let w = occupy(&mut k, 0);
    occupy(&mut k, 0);
    occupy(&mut k, 1);
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!(r.affine, AffineRule::WeightKeep, "{r:?}");
    assert!(r.this_load >= r.prev_load);
}

// wake_affine_idle(): an idle waking CPU (interrupt context) is cache-affine: this, or prev when idle too.
#[test]
fn this_idle_clauses() {
    let mut k = kernel(&flat(4), "v6.6");
    occupy(&mut k, 1);
    let p = sleeper_on(&mut k, 1);
    let r = wake(&mut k, p, None, WakeFlags::default());
    assert_eq!((r.affine, r.cpu), (AffineRule::IdleThis, 0));
    let mut k = kernel(&flat(4), "v6.6");
    let q = sleeper_on(&mut k, 2);
    let r = wake(&mut k, q, None, WakeFlags::default());
    assert_eq!((r.affine, r.cpu), (AffineRule::IdleThisPrevIdle, 2));
}

// v3.10 + wakee-flips: wake_wide() inside wake_affine() refuses the pull.
#[test]
fn old_wake_wide() {
    let mut prof = profile("v3.10").unwrap();
    prof.apply_patches("wakee-flips").unwrap();
    let mut k = Kernel::new(&flat(4), prof);
    k.enable_explain(true);
    let w = occupy(&mut k, 0);
    occupy(&mut k, 1);
    let p = sleeper_on(&mut k, 1);
    k.tasks[w.idx()].wakee_flips = 1000;
    k.tasks[p.idx()].wakee_flips = 10;
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!(r.affine, AffineRule::OldWide);
    assert!(r.wake_wide);
}

// v4.5+ wake_wide(): no affine domain asked at all.
#[test]
fn wake_wide_v4_5() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    let p = sleeper_on(&mut k, 1);
    k.tasks[w.idx()].wakee_flips = 1000;
    k.tasks[w.idx()].last_wakee = Some(p);
    k.tasks[p.idx()].wakee_flips = 10;
    let r = wake(&mut k, p, Some(w), WakeFlags::default());
    assert_eq!((r.wake_wide, r.want_affine, r.affine, r.affine_level), (true, false, AffineRule::NotAsked, NO_LEVEL));
    assert_eq!((r.waker_flips, r.wakee_flips), (1000, 10));
}

/// Three tasks on cpu0 of a flat 2-CPU machine (one running), hot at `now`.
fn three_on_cpu0(name: &str) -> (Kernel, Vec<TaskId>, u64) {
    let mut k = kernel(&flat(2), name);
    let ts: Vec<TaskId> = (0..3).map(|_| occupy(&mut k, 0)).collect();
    let now = 10_000_000;
    for &t in &ts {
        k.tasks[t.idx()].se.exec_start = now - 100_000;
    }
    (k, ts, now)
}

fn balance(k: &mut Kernel, now: u64) -> BalanceRecord {
    let mut out = BalanceResult::default();
    k.sched_balance_rq(CpuId(1), 0, IdleType::Idle, now, &mut out);
    let b = last_balance(k);
    assert_eq!(b.moved, out.pulled);
    b
}

// can_migrate_task(): the running task (running) and recently run ones (cache hot) stay.
#[test]
fn refusals_running_and_cache_hot() {
    let (mut k, _, now) = three_on_cpu0("v6.6");
    let b = balance(&mut k, now);
    assert_eq!(b.outcome, LbOutcome::Refused, "{b:?}");
    assert_eq!(b.refused[Refusal::Running as usize], 1);
    assert_eq!(b.refused[Refusal::CacheHot as usize], 2);
    assert_eq!((b.busiest_rq, b.migration, b.busiest_type, b.local_type), (0, 3, 3, 1), "task migration from an overloaded group: {b:?}");
    // Cold: one moves.
    let b = balance(&mut k, now + 10_000_000);
    assert_eq!((b.outcome, b.moved), (LbOutcome::Moved, 1), "{b:?}");
}

// can_migrate_task(): tasks pinned to the source.
#[test]
fn refusal_affinity() {
    let (mut k, ts, now) = three_on_cpu0("v6.6");
    for &t in &ts {
        k.tasks[t.idx()].cpus_allowed = Some(Box::new(crate::cpumask::CpuMask::from_cpus(2, [CpuId(0)])));
    }
    let b = balance(&mut k, now + 10_000_000);
    assert_eq!(b.outcome, LbOutcome::Refused);
    assert_eq!(b.refused[Refusal::Affinity as usize], 3, "{b:?}");
}

// 61b82dfb6b7e (v6.14, --patch delayed-accounting): a delayed task moves for migrate_load only.
#[test]
fn refusal_delayed() {
    let mut prof = profile("v6.12").unwrap();
    prof.apply_patches("delayed-accounting").unwrap();
    let mut k = Kernel::new(&flat(2), prof);
    k.enable_explain(true);
    let ts: Vec<TaskId> = (0..4).map(|_| occupy(&mut k, 0)).collect();
    let now = 10_000_000;
    let delayed: Vec<TaskId> = ts.iter().copied().filter(|&t| k.rqs[0].curr != Some(t)).take(2).collect();
    for &t in &delayed {
        k.mark_delayed(t);
        k.tasks[t.idx()].state = TaskState::Sleeping;
    }
    let b = balance(&mut k, now);
    assert_eq!(b.refused[Refusal::Delayed as usize], 2, "{b:?}");
}

// detach_tasks(): a task whose load exceeds what is left of the imbalance.
#[test]
fn refusal_too_big() {
    let mut k = kernel(&flat(2), "v6.6");
    let light = k.sched_fork(&TaskParams { nice: 19, cpus_allowed: Some(vec![CpuId(0)]), ..Default::default() }, None, CpuId(0), 0);
    k.wake_up_new_task(light, CpuId(0), 0, &mut crate::core::Effects::default());
    k.tasks[light.idx()].cpus_allowed = None;
    for _ in 0..3 {
        occupy(&mut k, 0);
    }
    // cpu1 busy too: both groups fully busy or overloaded -> migrate_load.
    let mut found = false;
    for _ in 0..3 {
        occupy(&mut k, 1);
        let b = balance(&mut k, 50_000_000);
        if b.migration == 1 && b.refused[Refusal::TooBig as usize] > 0 {
            found = true;
            break;
        }
    }
    assert!(found, "a migrate_load balance refuses a task heavier than the imbalance");
}

// Per-path counts add up to the wakeups; per-outcome balance counts to the attempts.
#[test]
fn counts_partition() {
    let mut k = kernel(&flat(4), "v6.6");
    let w = occupy(&mut k, 0);
    let mut n = 0;
    for cpu in 1..4 {
        let p = sleeper_on(&mut k, cpu);
        k.try_to_wake_up(p, CpuId(0), Some(w), WakeFlags::SYNC, 1000, &mut crate::core::Effects::default());
        n += 1;
    }
    let mut out = BalanceResult::default();
    for c in 0..4 {
        k.sched_balance_rq(CpuId(c), 0, IdleType::Idle, 2000, &mut out);
    }
    let c = &k.explain.as_ref().unwrap().counts;
    assert_eq!(c.wakeups, n);
    assert_eq!(c.wake_paths.iter().flatten().sum::<u64>(), c.wakeups);
    assert_eq!(c.affine.iter().flatten().sum::<u64>(), c.wakeups);
    assert_eq!(c.balance_attempts, 4);
    assert_eq!(c.lb.iter().flatten().flatten().sum::<u64>(), c.balance_attempts);
}
