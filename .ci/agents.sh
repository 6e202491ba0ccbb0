#!/usr/bin/env bash
# Installs the pinned real agent CLIs (Codex, OpenCode, Codex ACP, Gemini CLI, Pi;
# docs/clis.md, docs/acp.md, docs/pi.md) with `agentproof agents install`, and the
# optional Claude Code by name (its native boundaries, app:claude, are tested in CI;
# docs/clis.md), and prints the cache directory on stdout, for the tests
# that run the real CLIs against the scripted model (agent/clis, AGENTPROOF_AGENTS_DIR).
# Progress goes to stderr. A warm machine reuses the installs already in the cache.
#
# Use from .ci/run (two lines, so a failure here stops the run under set -e):
#   AGENTPROOF_AGENTS_DIR="$(.ci/agents.sh)"
#   export AGENTPROOF_AGENTS_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

dir="${AGENTPROOF_AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentproof/agents}"

# npm fetches the CLIs (Node 20 is on the machines; Debian's nodejs/npm otherwise).
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq nodejs npm >&2
fi

# The agentproof binary: $AGENTPROOF_BIN when set (.ci/run's, built as the README
# says), else one built here once for both installs.
bin="${AGENTPROOF_BIN:-}"
if [ -z "$bin" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  bin="$tmp/agentproof"
  go build -o "$bin" ./cmd/agentproof
fi

start=$(date +%s)
"$bin" agents install --dir "$dir" >&2
"$bin" agents install --dir "$dir" claude >&2
echo "agent CLIs ready in $dir ($(( $(date +%s) - start ))s)" >&2
echo "$dir"
