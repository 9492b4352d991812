#!/bin/sh
# Measures the real pgbench (PostgreSQL 15, Debian bookworm) on this machine:
# per-transaction CPU, context switches, wakeups and syscalls of the backends
# (postmaster + all backends it forks) and of the pgbench client (one thread,
# -j 1). Each configuration runs twice (docs/CALIBRATION.md "What perf's
# counters cost the measured programs"): a clean run without perf gives the
# transactions and each side's CPU (the side's cgroup v2 cpu.stat usage_usec:
# the postmaster is started inside one group, pgbench inside the other); a
# counted run under cgroup-filtered system-wide perf counters (`perf stat -a
# -G`) gives the switches, migrations, sched_wakeup and sys_enter counts, with
# its transactions as cnt_txns (the counts are per cnt_txns). Until session 13
# both came from per-task counters (`perf stat -p` / `perf stat -- pgbench`),
# whose work went into the CPU figures.
# Usage: pgbench-measure.sh SCALE DURATION_S "CLIENTS..." "MODES..." > summary.txt
# synchronous_commit=off: TPC-B commits do not wait for the WAL fsync (the
# seed's figures are CPU-bound; fsync latency is not what the model is about).
# Run as root; starts a private cluster in a temp dir and always stops it.
set -eu
SCALE=${1:-1}; T=${2:-8}; CLIENTS=${3:-"1 2 4 8"}; MODES=${4:-"select tpcb"}
BIN=/usr/lib/postgresql/15/bin
PORT=54329
D=$(mktemp -d /tmp/pgb.XXXXXX); chown postgres "$D"
CG=/sys/fs/cgroup/unified
[ -f "$CG/cgroup.procs" ] || CG=/sys/fs/cgroup
grep -q cgroup2 /proc/mounts && [ -f "$CG/cgroup.procs" ] || { echo "pgbench-measure.sh: needs a cgroup v2 hierarchy at /sys/fs/cgroup/unified or /sys/fs/cgroup" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "pgbench-measure.sh: run as root (it creates cgroups and counts system-wide)" >&2; exit 2; }
command -v perf > /dev/null || { echo "pgbench-measure.sh: perf not found: apt-get install linux-perf" >&2; exit 2; }
mkdir -p "$CG/pgb-be" "$CG/pgb-cl"
perf stat -x, -a -e context-switches -G pgb-cl -o /dev/null -- true 2> /dev/null \
  || { echo "pgbench-measure.sh: perf cannot count per cgroup here (perf stat -a -G pgb-cl failed): check perf_event_paranoid and the cgroup v2 mount" >&2; exit 2; }
EV="context-switches cpu-migrations sched:sched_wakeup raw_syscalls:sys_enter"
GEV=; GGRP=
for g in pgb-be pgb-cl; do for e in $EV; do GEV="$GEV${GEV:+,}$e"; GGRP="$GGRP${GGRP:+,}$g"; done; done
usage_us() { awk '$1=="usage_usec" {print $2}' "$CG/$1/cpu.stat"; }
stop() { runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$D"; sleep 0.2; rmdir "$CG/pgb-be" "$CG/pgb-cl" 2>/dev/null || true; }
trap stop EXIT INT TERM
runuser -u postgres -- "$BIN/initdb" -D "$D/data" -A trust >/dev/null
sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG/pgb-be" runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -l "$D/log" -w \
  -o "-k $D -p $PORT -c listen_addresses='' -c autovacuum=off -c synchronous_commit=off" start >/dev/null
PG="-h $D -p $PORT -U postgres"
"$BIN/pgbench" $PG -i -q -s "$SCALE" postgres >/dev/null 2>&1
echo "# postgres $("$BIN/postgres" --version | awk '{print $3}') scale=$SCALE duration=${T}s kernel=$(uname -r) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\" nproc=$(nproc)"
echo "# db_size_bytes=$(psql $PG -Atc 'select pg_database_size(current_database())' postgres) shared_buffers=$(psql $PG -Atc 'show shared_buffers' postgres)"
for MODE in $MODES; do
  [ $MODE = select ] && OPT=-S || OPT=
  for C in $CLIENTS; do
    B0=$(usage_us pgb-be); C0=$(usage_us pgb-cl)
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG/pgb-cl" "$BIN/pgbench" $PG -n $OPT -c "$C" -j 1 -T "$T" postgres > "$D/out.txt" 2>&1
    B1=$(usage_us pgb-be); C1=$(usage_us pgb-cl)
    sleep 0.5
    perf stat -x, -a -e "$GEV" -G "$GGRP" -o "$D/cnt.txt" -- sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG/pgb-cl" \
      "$BIN/pgbench" $PG -n $OPT -c "$C" -j 1 -T "$T" postgres > "$D/cnt.out" 2>&1
    sleep 0.5
    txns() { awk '/number of transactions actually processed/ {print $NF}' "$1" | cut -d/ -f1; }
    get() { awk -F, -v e="$2" -v g="pgb-$1" '$3==e && $4==g {print $1}' "$D/cnt.txt"; }
    printf 'mode=%s clients=%s txns=%s cnt_txns=%s cl_cpu_ms=%.2f be_cpu_ms=%.2f' $MODE $C "$(txns "$D/out.txt")" "$(txns "$D/cnt.out")" \
      "$(echo "($C1 - $C0) / 1000" | bc -l)" "$(echo "($B1 - $B0) / 1000" | bc -l)"
    for WHO in cl be; do
      printf ' %s_cs=%s %s_migr=%s %s_wakeups=%s %s_syscalls=%s' \
        $WHO "$(get $WHO context-switches)" $WHO "$(get $WHO cpu-migrations)" \
        $WHO "$(get $WHO sched:sched_wakeup)" $WHO "$(get $WHO raw_syscalls:sys_enter)"
    done
    echo
  done
done
