#!/usr/bin/env bash
# The floor of a per-cell agent process on this machine (docs/performance.md "The
# floor"). Not run by CI. From any directory:
#
#   bench/floor.sh [STARTS]     # default 200 starts of each program
#
# It builds agentproof as the README does and bench/floor (the smallest Go program
# that does a fixture agent's network work: three JSON POSTs to a local server), then
# starts each program below STARTS times in a row, interleaved in rounds of 20, and
# prints the CPU (user + system, /usr/bin/time over each batch, so the loop's own
# fork is included) and the wall time per start:
#
#   /bin/true                the cost of one fork + exec here
#   /bin/echo                what promptfoo's exec case starts per case (bench/vs-promptfoo.sh)
#   python3 -c 'import re'   what promptfoo's exec-variant script imports
#   python3 urllib + json    what the example exec agent imports (examples/exec-agent.py)
#   bench/floor post URL     a minimal Go agent process (6 MB static binary)
#   agentproof fixture-child the start of agentproof as a fixture child (its environment:
#                            GOMAXPROCS=1, GOMEMLIMIT=64MiB), up to the fixture-child
#                            dispatch, which refuses the missing arguments (exit 64)
#
# A fixture-pass cell starts one agentproof fixture child; its work after the start
# (a few requests to its instance) is in `bench/run-overhead.sh`'s "descendants" CPU.
set -euo pipefail
STARTS=${1:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill "${srv:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof)
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/floor" ./bench/floor)
"$work/floor" serve > "$work/url" &
srv=$!
for _ in $(seq 50); do [[ -s $work/url ]] && break; sleep 0.1; done
url=$(cat "$work/url")
py=/usr/bin/python3; [[ -x $py ]] || py=python3

names=(true echo py-print py-urllib floor-go agentproof)
run_one() { # NAME
  case $1 in
    true) /bin/true ;;
    echo) /bin/echo PROMPTFOO-MARKER > /dev/null ;;
    py-print) "$py" -c 'import re, sys; print("x")' > /dev/null ;;
    py-urllib) "$py" -c 'import json, re, urllib.request, urllib.error; from datetime import datetime' ;;
    floor-go) "$work/floor" post "$url" ;;
    agentproof) GOMAXPROCS=1 GOMEMLIMIT=64MiB "$work/agentproof" fixture-child 2> /dev/null || [[ $? == 64 ]] ;;
  esac
}
export -f run_one
export work url py
declare -A cpu wall
for n in "${names[@]}"; do cpu[$n]=0 wall[$n]=0; done
rounds=$(( (STARTS + 19) / 20 ))
for _ in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    start=$(date +%s%N)
    /usr/bin/time -f "%U %S" -o "$work/t" bash -c 'for i in $(seq 20); do run_one '"$n"'; done'
    end=$(date +%s%N)
    read -r u s < "$work/t"
    cpu[$n]=$(awk -v a="${cpu[$n]}" -v u="$u" -v s="$s" 'BEGIN { print a + (u + s) * 1000 }')
    wall[$n]=$(( ${wall[$n]} + (end - start) / 1000000 ))
  done
done
echo "machine: $(nproc) cores, $(uptime)"
printf "%-12s %14s %15s\n" program "CPU ms/start" "wall ms/start"
for n in "${names[@]}"; do
  awk -v n="$n" -v c="${cpu[$n]}" -v w="${wall[$n]}" -v k="$(( rounds * 20 ))" \
    'BEGIN { printf "%-12s %14.2f %15.2f\n", n, c / k, w / k }'
done
