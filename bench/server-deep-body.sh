#!/usr/bin/env bash
# Peak RSS of `agentproof serve` under deeply nested request bodies. Rerun from the
# repository root:
#
#   bench/server-deep-body.sh [DEPTH] [CONCURRENT]     # default 9000 and 8
#
# It builds agentproof, starts `agentproof serve` on a fresh home, creates a company and
# prints the server's peak RSS (VmHWM, KiB) after startup, then after each batch of
# CONCURRENT simultaneous requests whose body nests DEPTH arrays ([[[…]]], 2×DEPTH
# bytes) inside the field a route walks:
#   agents        POST /api/companies/{c}/agents        adapterConfig (secret references)
#   environments  POST /api/companies/{c}/environments  config (secret references)
#   commands      POST /api/companies/{c}/commands      command
#   events        POST /api/companies/{c}/events        payload
# Each line is "<batch> <status codes> VmHWM <KiB> (+<KiB> over startup)".
set -euo pipefail
DEPTH=${1:-9000}
N=${2:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof) # as the README builds it
env -i PATH=/usr/bin:/bin HOME="$work" "$work/agentproof" serve --home "$work/home" > "$work/ready" 2> "$work/serve.err" &
pid=$!
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
addr=$(jq -r .addr "$work/ready")
token=$(cat "$work/home/board.token")
api() { curl -sS -o "$work/out" -w '%{http_code}' -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$pid/status"; }

api -X POST "http://$addr/api/companies" -d '{"name":"Bench","issuePrefix":"BEN"}' > /dev/null
company=$(jq -r .id "$work/out")
deep=$(printf '%*s' "$DEPTH" '' | tr ' ' '['; printf '%*s' "$DEPTH" '' | tr ' ' ']')
printf '{"name":"a","role":"engineer","adapterConfig":{"x":%s}}' "$deep" > "$work/agents.json"
printf '{"name":"e","kind":"ssh","config":{"x":%s}}' "$deep" > "$work/environments.json"
printf '{"runId":"run-1","idempotencyKey":"k","command":{"kind":"report_progress","x":%s}}' "$deep" > "$work/commands.json"
printf '{"schema":"paperclip.prp.event.v1","sourceEventId":"s:1","sourceSeq":1,"sourceInstanceId":"s","sourceKind":"runner","runId":"run-1","eventType":"item.delta","schemaVersion":1,"priority":2,"emittedAt":"2026-08-09T00:00:00Z","payload":{"x":%s}}' "$deep" > "$work/events.json"
base=$(hwm)
echo "body: depth $DEPTH, $(wc -c < "$work/agents.json") bytes (agents); $N concurrent requests per batch"
echo "startup VmHWM $base KiB"
for route in agents environments commands events; do
  codes=() curls=()
  for i in $(seq "$N"); do
    curl -sS -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      -X POST "http://$addr/api/companies/$company/$route" --data-binary "@$work/$route.json" > "$work/code.$i" &
    curls+=($!)
  done
  wait "${curls[@]}" || true
  for i in $(seq "$N"); do codes+=("$(cat "$work/code.$i")"); done
  h=$(hwm)
  echo "$route ${codes[*]} VmHWM $h KiB (+$((h - base)) KiB over startup)"
done
