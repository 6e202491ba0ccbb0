#!/usr/bin/env bash
# Benchmark of `agentproof run`. Rerun from any directory:
#
#   bench/run-overhead.sh [CELLS [BASELINE]]   # default 500 cells
#
# With BASELINE (another agentproof binary, for example one built from main) both
# binaries run the same campaigns interleaved (this tree's 1 cell, the baseline's 1 cell,
# this tree's CELLS, the baseline's CELLS), so a before/after comes from one run on a
# loaded machine; each line is labelled "this" or "baseline".
#
# It builds agentproof, generates a catalog whose suite "bench" has CELLS fixture-pass
# cells (the default catalog plus CELLS copies of the process-exit case), and runs
#   1. one cell (startup: wall time of a 1-cell campaign),
#   2. all CELLS cells at --max-parallel 4 with full isolation (own control-plane
#      instance, in `run` or an `agentproof serve` child, SQLite home and workspace per
#      attempt),
# printing wall times, the marginal wall time per cell ((T_N - T_1) / (N - 1)), the
# peak RSS (VmHWM) of the `run` process itself (its serve children are not counted),
# and the CPU (user + system) per cell of the N-cell campaign split into `run`'s own
# (the harness: instances in `run`, evidence, scans, report) and its descendants'
# (the fixture agent processes, serve children): the whole tree's CPU from
# /usr/bin/time, `run`'s own from its /proc/PID/stat, read every 50 ms while it runs
# (the last read misses at most 50 ms of it).
# The per-cell harness overhead of reference × message-marker is the Go benchmark
#   go test ./internal/cli -run '^$' -bench BenchmarkCellOverhead -benchtime 20x
set -euo pipefail
N=${1:-500}
BASE=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof) # as the README builds it
source "$root/bench/catalog.sh"
bench_catalog "$work/catalog" "$N" fixture

# run_timed LABEL BINARY ARGS...: runs agentproof run, prints wall ms and peak RSS (KiB).
# run_timed LABEL BINARY ARGS...: prints "LABEL wall_ms peak_rss_kib tree_cpu_ms run_cpu_ms".
run_timed() {
  local label=$1 bin=$2; shift 2
  local start end tpid pid="" hwm=0 h own=0 o tick
  tick=$(getconf CLK_TCK)
  start=$(date +%s%N)
  /usr/bin/time -f "%U %S" -o "$work/$label.time" env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work" \
    "$bin" run --catalog "$work/catalog" --results "$work/results" --progress none "$@" \
    > "$work/$label.out" 2> "$work/$label.err" &
  tpid=$!
  while kill -0 "$tpid" 2>/dev/null; do
    [[ -z $pid ]] && pid=$(pgrep -P "$tpid" || true)
    if [[ -n $pid ]]; then
      h=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      [[ -n "$h" && "$h" -gt "$hwm" ]] && hwm=$h
      # utime and stime are fields 14 and 15 of /proc/PID/stat (12 and 13 after the ")").
      o=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || true)
      [[ -n "$o" ]] && own=$o
    fi
    sleep 0.05
  done
  wait "$tpid" || { echo "$label: agentproof run exited $?"; cat "$work/$label.err"; exit 1; }
  end=$(date +%s%N)
  read -r u s < <(tail -n1 "$work/$label.time")
  echo "$label $(( (end - start) / 1000000 )) $hwm $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }') $(( own * 1000 / tick ))"
}

bins=(this)
[[ -n $BASE ]] && bins+=(baseline)
binary() { if [[ $1 == this ]]; then echo "$work/agentproof"; else echo "$BASE"; fi; }
declare -A one all
for b in "${bins[@]}"; do
  one[$b]=$(run_timed "one-$b" "$(binary "$b")" --id "bench.fixture-pass.local.bench-exit-$(printf "%0${#N}d" 1)" --campaign "bench-1-$b" --max-parallel 4)
done
for b in "${bins[@]}"; do
  all[$b]=$(run_timed "all-$b" "$(binary "$b")" --suite bench --campaign "bench-$N-$b" --max-parallel 4)
done
echo "machine: $(nproc) cores, $(uptime)"
for b in "${bins[@]}"; do
  tail -n1 "$work/all-$b.out"
  read -r _ t1 rss1 _ _ <<<"${one[$b]}"
  read -r _ tn rssn cpun ownn <<<"${all[$b]}"
  echo "$b: startup (1 cell):            ${t1} ms wall, peak RSS ${rss1} KiB"
  echo "$b: $N cells (--max-parallel 4):  ${tn} ms wall, peak RSS $((rssn / 1024)) MiB"
  awk -v b="$b" -v t1="$t1" -v tn="$tn" -v n="$N" 'BEGIN { printf "%s: marginal wall time per cell: %.2f ms\n", b, (tn - t1) / (n - 1) }'
  awk -v b="$b" -v c="$cpun" -v o="$ownn" -v n="$N" 'BEGIN { printf "%s: CPU per cell of the %d-cell campaign: %.2f ms, of which run itself %.2f ms, its descendants %.2f ms\n", b, n, c / n, o / n, (c - o) / n }'
done
