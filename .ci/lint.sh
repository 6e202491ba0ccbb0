#!/usr/bin/env bash
# Runs the pinned golangci-lint (tools/go.mod) with the repository's .golangci.yml over
# every package and fails on any finding.
#
# The linter is built once per version of the tools module and kept in
# ${XDG_CACHE_HOME:-~/.cache}/agentproof/ci (a cold build takes minutes on two cores; a
# kept one starts at once). GOLANGCI_LINT=<binary> uses that binary instead when it is
# the pinned version. Usage: .ci/lint.sh (from anywhere in the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

want="$(awk '$1 == "github.com/golangci/golangci-lint/v2" { print $2 }' tools/go.mod)"
bin="${GOLANGCI_LINT:-}"
if [ -n "$bin" ] && ! "$bin" version 2>&1 | grep -q "version ${want#v} "; then
  echo "lint: $bin is not golangci-lint $want (tools/go.mod); building the pinned one" >&2
  bin=""
fi
if [ -z "$bin" ]; then
  key="$(cat tools/go.mod tools/go.sum | sha256sum | cut -c1-16)"
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/agentproof/ci"
  bin="$dir/golangci-lint-$key"
  if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    start=$SECONDS
    go build -C tools -o "$bin.tmp.$$" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
    mv "$bin.tmp.$$" "$bin"
    echo "lint: built golangci-lint $want in $((SECONDS - start))s: $bin"
  fi
fi

# --allow-serial-runners: wait for another golangci-lint of this machine, never fail on it.
exec "$bin" run --allow-serial-runners ./...
