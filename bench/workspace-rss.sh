#!/usr/bin/env bash
# Peak RSS of the controller (`agentproof run`) when an agent leaves a 3 GiB sparse
# file in its workspace. Rerun from the repository root:
#
#   bench/workspace-rss.sh [BINARY ...]   # default: agentproof built from this tree
#
# Pass several binaries (for example one built from main) to compare them side by side
# in one run. For each it runs one cell whose exec agent is
# `/usr/bin/truncate -s 3G big.bin` (case message-marker: the cell fails, which is not
# what is measured) and prints the VmHWM of the `run` process itself, polled from
# /proc while it runs (its serve children are not counted), and the wall time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  (cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof) # as the README builds it
  bins=("$work/agentproof")
fi
mkdir -p "$work/catalog"
cp -R "$root"/catalog/default/. "$work/catalog/" # the YAML files and the files/ tree its cases name
cat > "$work/catalog/zz-sparse.yaml" <<'Y'
profiles:
  - id: sparse-exec
    label: An exec agent that leaves a 3 GiB sparse file in its workspace
    generation: native
    groups: [builtin]
    driver: exec
    driverConfig: {command: /usr/bin/truncate, args: [-s, 3G, big.bin]}
    provider: agentproof
    model: agentproof/sparse
    modelQualification: {source: builtin, qualificationId: "builtin:sparse"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
suites:
  - id: sparse
    label: Sparse workspace file
    description: The controller's memory stays bounded by a 3 GiB sparse workspace file.
    profiles: [sparse-exec]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
Y
for bin in "${bins[@]}"; do
  res=$(mktemp -d -p "$work")
  start=$(date +%s.%N)
  "$bin" run --catalog "$work/catalog" --suite sparse --results "$res" --campaign rss \
    --max-automatic-retries 0 --progress none >/dev/null 2>"$res/stderr" &
  pid=$!
  hwm=0
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
    sleep 0.05
  done
  wait "$pid" || true
  end=$(date +%s.%N)
  printf '%s: controller peak RSS %d MiB, wall %.1f s\n' "$bin" $((hwm / 1024)) "$(echo "$end - $start" | bc)"
done
