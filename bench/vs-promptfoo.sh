#!/usr/bin/env bash
# agentproof against promptfoo 0.121.20, side by side in one run (docs/performance.md).
# Not run by CI. From any directory:
#
#   bench/vs-promptfoo.sh [N] [ROUNDS]      # default N=100 cells, ROUNDS=2
#   VARIANT=exec bench/vs-promptfoo.sh 100  # the exec-agent variant (below)
#   PROMPTFOO_INSTALL=1 bench/vs-promptfoo.sh 100   # install promptfoo first (npm)
#   AGENTPROOF_BASELINE=/path/to/agentproof bench/vs-promptfoo.sh 100
#       # adds another agentproof build (for example main's) to the same rotation,
#       # labelled "baseline", so that a before/after comes from one run; several
#       # builds separated by ':' are labelled baseline1, baseline2, ... in that order
#   AGENTPROOF_ARGS="--instance child" bench/vs-promptfoo.sh 100
#       # extra `agentproof run` flags for this tree's binary (not the baseline's)
#
# promptfoo lives in $PROMPTFOO_DIR (default ~/.cache/agentproof/bench/promptfoo-0.121.20);
# with PROMPTFOO_INSTALL=1 the script installs promptfoo@0.121.20 there with npm, else
# it must be there already. It generates N cases for each tool:
#
#   promptfoo  N tests of one prompt "PROMPTFOO-MARKER-<i>" against the exec provider
#              `exec: /bin/echo` (one process per test, which prints the prompt back),
#              each with a `contains` assertion on its marker; no isolation at all;
#              run inside `unshare -n` (it phones home), telemetry and updates off,
#              its config dir and HOME in a scratch directory, --max-concurrency 4.
#   agentproof N fixture-pass cells (the default catalog's process-exit case copied N
#              times, as bench/run-overhead.sh does) at --max-parallel 4 with full
#              isolation: per cell its own control-plane instance (in `run`, or an
#              `agentproof serve` child where the cell needs one) with its own SQLite
#              home and keys, its own workspace and fixture child process, the leak
#              scans, evidence and result.json; graded on the observed run status.
#
# VARIANT=exec compares an exec agent graded on its output instead, both tools running
# one Python 3 process per case (python3 in /usr/bin or /bin):
#
#   promptfoo  the exec provider `exec: /usr/bin/python3 <script>`, a script that prints
#              the marker the prompt asks for, graded by `contains`.
#   agentproof N cells of the example exec agent (examples/exec-agent.py, driver exec)
#              on N copies of the message-marker case ("Post exactly the text
#              BENCH-MARKER-<i>-<nonce> ..."): the agent reads its run context, posts the
#              marker as its message and completes its run through the agent API; the
#              cell is graded by message_exact and run_status on what the control plane
#              recorded, with the same isolation as above.
#
# The two are not the same work (agentproof's cell is an isolated control plane and a
# graded run; promptfoo's is one exec and a substring check); the comparison is what a
# user pays per case with each tool. Each round runs promptfoo T(1), agentproof T(1),
# promptfoo T(N), agentproof T(N) (interleaved A B A B, so load changes hit both), each
# under /usr/bin/time. It prints per tool the medians over rounds of T(1), T(N), the
# marginal wall time per case ((T(N) - T(1)) / (N - 1)), the marginal CPU (user +
# system of the whole process tree) per case, the peak RSS of the largest single
# process, and the ratios agentproof / promptfoo.
set -euo pipefail
N=${1:-100}
ROUNDS=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
PF=${PROMPTFOO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentproof/bench/promptfoo-0.121.20}
if [[ ${PROMPTFOO_INSTALL:-} == 1 && ! -x $PF/node_modules/.bin/promptfoo ]]; then
  mkdir -p "$PF"
  (cd "$PF" && npm install --no-audit --no-fund --loglevel=error promptfoo@0.121.20)
fi
if [[ ! -x $PF/node_modules/.bin/promptfoo ]]; then
  echo "promptfoo is not installed in $PF (set PROMPTFOO_INSTALL=1 to install it with npm)" >&2
  exit 2
fi
command -v unshare >/dev/null || { echo "unshare (util-linux) is required" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time (GNU time) is required" >&2; exit 2; }

work=$(mktemp -d)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof) # as the README builds it

VARIANT=${VARIANT:-fixture}
case $VARIANT in
  fixture) profile=fixture-pass prefix=bench-exit ;;
  exec) profile=bench-exec prefix=bench-marker
    [[ -x /usr/bin/python3 ]] || { echo "VARIANT=exec needs /usr/bin/python3" >&2; exit 2; } ;;
  *) echo "VARIANT must be fixture or exec, not $VARIANT" >&2; exit 2 ;;
esac

# agentproof catalog: the default catalog plus N cells (suite "bench"; bench/catalog.sh).
source "$root/bench/catalog.sh"
bench_catalog "$work/catalog" "$N" "$VARIANT"
first=$(printf "%0${#N}d" 1)

# promptfoo configs: 1 test and N tests.
cat > "$work/pf-agent.py" <<'PY'
import re, sys
# promptfoo's exec provider passes the rendered prompt as the first argument.
m = re.search(r"Post exactly the text (\S+)", sys.argv[1])
print(m.group(1) if m else "no marker")
PY
pfconfig() { # COUNT FILE
  {
    echo "description: agentproof bench"
    if [[ $VARIANT == exec ]]; then
      echo "prompts: ['Post exactly the text PROMPTFOO-MARKER-{{i}} as your final message.']"
      echo "providers: ['exec: /usr/bin/python3 $work/pf-agent.py']"
    else
      echo "prompts: ['PROMPTFOO-MARKER-{{i}}']"
      echo "providers: ['exec: /bin/echo']"
    fi
    echo "tests:"
    for i in $(seq -w 1 "$1"); do
      echo "  - vars: {i: '$i'}"
      echo "    assert: [{type: contains, value: 'PROMPTFOO-MARKER-$i'}]"
    done
  } > "$2"
}
pfconfig 1 "$work/pf-1.yaml"
pfconfig "$N" "$work/pf-$N.yaml"

# timed LABEL CMD...: runs CMD under /usr/bin/time; appends "LABEL wall_ms cpu_ms rss_kib"
# to $work/times.
timed() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.out" "$@" > "$work/$label.out" 2> "$work/$label.err" ||
    { echo "$label failed:"; tail -n 20 "$work/$label.out" "$work/$label.err"; exit 1; }
  read -r e u s m < <(tail -n1 "$work/time.out")
  awk -v l="$label" -v e="$e" -v u="$u" -v s="$s" -v m="$m" 'BEGIN { printf "%s %d %d %d\n", l, e * 1000, (u + s) * 1000, m }' >> "$work/times"
}
promptfoo() { # COUNT
  mkdir -p "$work/pfhome"
  timed "pf-$1" unshare -n env -i PATH=/usr/bin:/bin HOME="$work/pfhome" PROMPTFOO_CONFIG_DIR="$work/pfhome/.promptfoo" \
    PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_REMOTE_GENERATION=1 \
    "$PF/node_modules/.bin/promptfoo" eval -c "$work/pf-$1.yaml" --no-cache --no-table --no-progress-bar --no-write --max-concurrency 4
  grep -q "$1 passed" "$work/pf-$1.out" || grep -q "Successes: $1\|$1 passed\|Passed: $1" "$work/pf-$1.out" ||
    { echo "promptfoo did not pass $1 tests:"; tail -n 20 "$work/pf-$1.out"; exit 1; }
}
agentproof() { # COUNT CAMPAIGN [TOOL BINARY]
  local sel=(--suite bench) tool=${3:-ap} bin=${4:-$work/agentproof}
  [[ $1 == 1 ]] && sel=(--id "bench.$profile.local.$prefix-$first")
  # AGENTPROOF_ARGS (for example "--instance child") go to this tree's binary only.
  [[ $tool == ap && -n ${AGENTPROOF_ARGS:-} ]] && read -r -a extra <<<"$AGENTPROOF_ARGS" && sel+=("${extra[@]}")
  timed "$tool-$1" env -i PATH=/usr/bin:/bin HOME="$work" TMPDIR="$work" "$bin" run --catalog "$work/catalog" \
    --results "$work/results" --progress none --campaign "$tool-$2" --max-parallel 4 "${sel[@]}"
  grep -q "$1/$1 passed" "$work/$tool-$1.out" || { echo "$tool did not pass $1 cells:"; tail -n 5 "$work/$tool-$1.out"; exit 1; }
}
IFS=: read -r -a BASES <<<"${AGENTPROOF_BASELINE:-}"
tools=(pf)
for i in "${!BASES[@]}"; do tools+=("base$((i + 1))"); done
tools+=(ap)

echo "variant: $VARIANT; machine: $(nproc) cores, $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  promptfoo 1
  for i in "${!BASES[@]}"; do agentproof 1 "r$r-1" "base$((i + 1))" "${BASES[$i]}"; done
  agentproof 1 "r$r-1"
  promptfoo "$N"
  for i in "${!BASES[@]}"; do agentproof "$N" "r$r-$N" "base$((i + 1))" "${BASES[$i]}"; done
  agentproof "$N" "r$r-$N"
done
echo "machine after: $(uptime)"

# med TOOL COUNT FIELD: median over rounds of field (2 wall, 3 cpu, 4 rss) of TOOL-COUNT.
med() { awk -v l="$1-$2" -v f="$3" '$1 == l { print $f }' "$work/times" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf "%-11s %9s %9s %14s %13s %10s\n" tool "T(1) ms" "T($N) ms" "wall ms/case" "CPU ms/case" "peak KiB"
for t in "${tools[@]}"; do
  t1=$(med "$t" 1 2) tn=$(med "$t" "$N" 2) c1=$(med "$t" 1 3) cn=$(med "$t" "$N" 3) rss=$(med "$t" "$N" 4)
  name=promptfoo; [[ $t == ap ]] && name=agentproof; [[ $t == base* ]] && name=baseline${t#base}
  [[ $name == baseline1 && ${#BASES[@]} == 1 ]] && name=baseline
  awk -v n="$N" -v name="$name" -v t1="$t1" -v tn="$tn" -v c1="$c1" -v cn="$cn" -v rss="$rss" \
    'BEGIN { printf "%-11s %9d %9d %14.2f %13.2f %10d\n", name, t1, tn, (tn - t1) / (n - 1), (cn - c1) / (n - 1), rss }'
  eval "${t}_t1=$t1 ${t}_tn=$tn ${t}_c1=$c1 ${t}_cn=$cn"
done
awk -v n="$N" -v a1="$ap_t1" -v an="$ap_tn" -v p1="$pf_t1" -v pn="$pf_tn" -v ac1="$ap_c1" -v acn="$ap_cn" -v pc1="$pf_c1" -v pcn="$pf_cn" 'BEGIN {
  printf "ratio agentproof/promptfoo: T(1) %.2f, T(%d) %.2f, marginal wall per case %.2f, marginal CPU per case %.2f\n",
    a1 / p1, n, an / pn, (an - a1) / (pn - p1), (acn - ac1) / (pcn - pc1) }'
for i in "${!BASES[@]}"; do
  b=base$((i + 1)) label=baseline$((i + 1))
  [[ ${#BASES[@]} == 1 ]] && label=baseline
  eval "b1=\$${b}_t1 bn=\$${b}_tn bc1=\$${b}_c1 bcn=\$${b}_cn"
  awk -v l="$label" -v n="$N" -v a1="$b1" -v an="$bn" -v p1="$pf_t1" -v pn="$pf_tn" -v ac1="$bc1" -v acn="$bcn" -v pc1="$pf_c1" -v pcn="$pf_cn" 'BEGIN {
    printf "ratio %s/promptfoo: T(1) %.2f, T(%d) %.2f, marginal wall per case %.2f, marginal CPU per case %.2f\n",
      l, a1 / p1, n, an / pn, (an - a1) / (pn - p1), (acn - ac1) / (pcn - pc1) }'
done
echo "raw (label wall_ms cpu_ms peak_rss_kib):"
cat "$work/times"
