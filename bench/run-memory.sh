#!/usr/bin/env bash
# Memory of `agentproof run` in N (docs/performance.md "Memory of run in N"). Rerun from
# any directory:
#
#   bench/run-memory.sh [SMALL [LARGE [BASELINE [ROUNDS]]]]   # default 100 1000, 1 round
#
# It builds agentproof, generates two catalogs whose suite "bench" has SMALL and LARGE
# fixture-pass cells (as bench/run-overhead.sh does) and runs each suite as a campaign,
# each in a results directory of its own (no earlier campaign to compare with), at
# --max-parallel 4 with full isolation, each under /usr/bin/time, printing the peak RSS
# of the `run` process (GNU time's maximum resident set size: the largest single
# process of the tree, which is `run`, whose serve children are far smaller), the same
# for `agentproof report` regenerating the LARGE campaign, and the ratio peak(LARGE) / peak(SMALL) (the goal: at most 1.5). With
# BASELINE (another agentproof binary, for example one built from main) both run in
# each round interleaved: this SMALL, baseline SMALL, this LARGE, baseline LARGE.
set -euo pipefail
S=${1:-100}
L=${2:-1000}
BASE=${3:-}
ROUNDS=${4:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof) # as the README builds it
# catalog N: the default catalog plus N fixture-pass cells (suite "bench") in
# $work/catalog-N (bench/catalog.sh).
source "$root/bench/catalog.sh"
catalog() { bench_catalog "$work/catalog-$1" "$1" fixture; }
catalog "$S"
catalog "$L"

# peak LABEL BINARY ARGS...: runs an agentproof command under /usr/bin/time; prints
# "LABEL <wall s> <peak RSS KiB>".
peak() {
  local label=$1 bin=$2; shift 2
  env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work" /usr/bin/time -o "$work/$label.time" -f "%e %M" \
    "$bin" "$@" > "$work/$label.out" 2> "$work/$label.err" || { echo "$label: agentproof $1 failed"; tail -5 "$work/$label.err"; exit 1; }
  echo "$label $(cat "$work/$label.time")"
}
bins=(this)
[[ -n $BASE ]] && bins+=(baseline)
binary() { if [[ $1 == this ]]; then echo "$work/agentproof"; else echo "$BASE"; fi; }
echo "machine: $(nproc) cores, start: $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  for b in "${bins[@]}"; do
    peak "$b-run-$S-r$r" "$(binary "$b")" run --catalog "$work/catalog-$S" --results "$work/results-$b-$S-$r" --progress none \
      --campaign "small-$r" --max-parallel 4 --suite bench
  done
  for b in "${bins[@]}"; do
    peak "$b-run-$L-r$r" "$(binary "$b")" run --catalog "$work/catalog-$L" --results "$work/results-$b-$L-$r" --progress none \
      --campaign "large-$r" --max-parallel 4 --suite bench
  done
  for b in "${bins[@]}"; do
    peak "$b-report-$L-r$r" "$(binary "$b")" report --catalog "$work/catalog-$L" --results "$work/results-$b-$L-$r" --campaign "large-$r"
  done
done | tee "$work/lines"
echo "machine: $(nproc) cores, end: $(uptime)"
for b in "${bins[@]}"; do
  med() { grep "^$b-$1-r" "$work/lines" | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  s=$(med "run-$S") l=$(med "run-$L") rep=$(med "report-$L")
  echo "$b: run peak RSS  $S cells $((s / 1024)) MiB, $L cells $((l / 1024)) MiB, ratio $(awk -v a="$l" -v b="$s" 'BEGIN {printf "%.2f", a / b}')"
  echo "$b: report of $L cells, peak RSS $((rep / 1024)) MiB"
done
