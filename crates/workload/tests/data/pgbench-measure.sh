#!/bin/sh
# Measures the real pgbench (PostgreSQL 15, Debian bookworm) on this machine:
# per-transaction CPU, context switches, wakeups and syscalls of the backends
# (postmaster + all backends it forks during the run, via perf's inherited
# counters) and of the pgbench client (one thread, -j 1).
# Usage: pgbench-measure.sh SCALE DURATION_S "CLIENTS..." "MODES..." > summary.txt
# synchronous_commit=off: TPC-B commits do not wait for the WAL fsync (the
# seed's figures are CPU-bound; fsync latency is not what the model is about).
# Run as root; starts a private cluster in a temp dir and always stops it.
set -eu
SCALE=${1:-1}; T=${2:-8}; CLIENTS=${3:-"1 2 4 8"}; MODES=${4:-"select tpcb"}
BIN=/usr/lib/postgresql/15/bin
PORT=54329
D=$(mktemp -d /tmp/pgb.XXXXXX); chown postgres "$D"
EV=task-clock,context-switches,cpu-migrations,sched:sched_wakeup,raw_syscalls:sys_enter
stop() { runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$D"; }
trap stop EXIT INT TERM
runuser -u postgres -- "$BIN/initdb" -D "$D/data" -A trust >/dev/null
runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -l "$D/log" -w \
  -o "-k $D -p $PORT -c listen_addresses='' -c autovacuum=off -c synchronous_commit=off" start >/dev/null
PG="-h $D -p $PORT -U postgres"
"$BIN/pgbench" $PG -i -q -s "$SCALE" postgres >/dev/null 2>&1
echo "# postgres $("$BIN/postgres" --version | awk '{print $3}') scale=$SCALE duration=${T}s kernel=$(uname -r) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\" nproc=$(nproc)"
echo "# db_size_bytes=$(psql $PG -Atc 'select pg_database_size(current_database())' postgres) shared_buffers=$(psql $PG -Atc 'show shared_buffers' postgres)"
for MODE in $MODES; do
  [ $MODE = select ] && OPT=-S || OPT=
  for C in $CLIENTS; do
    PM=$(head -1 "$D/data/postmaster.pid")
    perf stat -x, -e $EV -p "$PM" -o "$D/be.txt" &
    PERF=$!
    sleep 0.5
    perf stat -x, -e $EV -o "$D/cl.txt" -- "$BIN/pgbench" $PG -n $OPT -c "$C" -j 1 -T "$T" postgres > "$D/out.txt" 2>&1
    sleep 0.5
    kill -INT $PERF; wait $PERF || true
    N=$(awk '/number of transactions actually processed/ {print $NF}' "$D/out.txt" | cut -d/ -f1)
    get() { awk -F, -v e="$2" '$3==e {print $1}' "$1"; }
    printf 'mode=%s clients=%s txns=%s' $MODE $C "$N"
    for WHO in cl be; do
      printf ' %s_cpu_ms=%s %s_cs=%s %s_migr=%s %s_wakeups=%s %s_syscalls=%s' \
        $WHO "$(get $D/$WHO.txt task-clock)" $WHO "$(get $D/$WHO.txt context-switches)" \
        $WHO "$(get $D/$WHO.txt cpu-migrations)" $WHO "$(get $D/$WHO.txt sched:sched_wakeup)" \
        $WHO "$(get $D/$WHO.txt raw_syscalls:sys_enter)"
    done
    echo
  done
done
