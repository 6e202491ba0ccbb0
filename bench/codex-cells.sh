#!/usr/bin/env bash
# Harness share of a Codex cell driven through its app-server (app:codex) beside the
# same cell driven through `codex exec` (exec:codex), side by side in one campaign.
# Rerun from any directory (needs the pinned Codex: `agentproof agents install codex`):
#
#   bench/codex-cells.sh [REPEAT [ENVIRONMENTS]]   # default 5 repetitions, local
#
# ENVIRONMENTS is a comma-separated list (local, sandbox). Both profiles (codex: exec;
# codex-app: app-server, approvals on) play the default catalog's message-marker case
# (a progress comment and finish_task through the agentproof MCP server; no file
# change, so nothing for the app-server to ask) against the scripted model, REPEAT
# times each, one attempt at a time (--max-parallel 1) so neither competes with the
# other. Per cell it reads result.json: the cell's wall time (durationMs) and the agent
# process's life (termination.durationMs); the harness share is the part of the cell's
# wall time outside the agent process's life (control plane, fixtures, the flow,
# observation, grading, teardown; under sandbox the lease), as in docs/acp.md
# "Whole cells". It prints every cell and the medians per profile and environment.
set -euo pipefail
REPEAT=${1:-5}
ENVS=${2:-local}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/agentproof" ./cmd/agentproof)
envs=$(sed 's/,/, /g' <<<"$ENVS")
n=$(( 2 * $(tr ',' '\n' <<<"$ENVS" | wc -l) ))
cat > "$work/bench.yaml" <<Y
suites:
  - id: bench-codex-cells
    label: Codex exec beside Codex app-server (bench)
    description: The message-marker case with Codex through exec and through its app-server.
    groups: [core]
    profiles: [codex, codex-app]
    environments: [$envs]
    cases: [message-marker]
    expectedMatrixSize: $n
    manualOnly: true
Y
"$work/agentproof" run --catalog "$work/bench.yaml" --with-default --suite bench-codex-cells \
  --repeat "$REPEAT" --max-parallel 1 --max-automatic-retries 0 --results "$work/results" --progress none \
  > "$work/run.out" 2>&1 || { cat "$work/run.out"; exit 1; }
tail -n1 "$work/run.out"
echo "machine: $(nproc) cores, $(uptime)"
python3 - "$work/results" <<'PY'
import glob, json, statistics, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/**/result.json", recursive=True)):
    r = json.load(open(f))
    cell, agent = r["durationMs"], (r.get("termination") or {}).get("durationMs") or 0
    key = (r["profileId"], r["environmentId"])
    rows.setdefault(key, []).append((cell, agent, r["verdict"]))
    print(f"{r['profileId']:10} {r['environmentId']:8} {r['verdict']:8} cell {cell:6d} ms  agent {agent:6d} ms  harness {100 * (cell - agent) / cell:5.1f} %")
print()
print("profile    env      cells  median cell  median agent  median harness  harness share")
for (p, e), v in sorted(rows.items()):
    cell = statistics.median(c for c, _, _ in v)
    agent = statistics.median(a for _, a, _ in v)
    harness = statistics.median(c - a for c, a, _ in v)
    share = statistics.median((c - a) / c for c, a, _ in v)
    print(f"{p:10} {e:8} {len(v):5d}  {cell:8.0f} ms  {agent:9.0f} ms  {harness:11.0f} ms  {100 * share:11.1f} %")
PY
