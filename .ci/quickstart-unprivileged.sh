#!/usr/bin/env bash
# The README's quick start as an unprivileged user (uid/gid 65534 with a HOME of its
# own): `agentproof run --all` must run every cell this machine can run as that user —
# every one of them passing — and report each sandbox and container cell "not run
# here" with the reason (the sandbox's declared limits cannot be enforced by a normal
# user here: "… disk limit needs root …"; the container's lease needs root); the
# campaign is partial and exits 4. On first use the run installs the pinned agent CLIs
# with npm into that user's ~/.cache, as the README says; the HOME is kept between runs
# under /var/tmp so that a warm machine reuses those installs. Needs root (setpriv).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

work="$(mktemp -d /tmp/apquick-XXXXXX)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# The README's build: .ci/run's binary when it passes one ($AGENTPROOF_BIN, built with
# the README's line), else built here with that line.
if [ -n "${AGENTPROOF_BIN:-}" ]; then
  cp "$AGENTPROOF_BIN" "$work/agentproof"
else
  CGO_ENABLED=0 go build -ldflags="-s -w" -o "$work/agentproof" ./cmd/agentproof
fi
home=/var/tmp/agentproof-unprivileged-home
mkdir -p "$home" "$work/run"
chown -R 65534:65534 "$home" "$work/run"

start=$(date +%s)
set +e
# The README's command line: the environment as it is (proxy and CA settings npm
# needs), with that user's HOME and none of root's cache or temporary directories.
(cd "$work/run" && setpriv --reuid=65534 --regid=65534 --clear-groups \
  env -u AGENTPROOF_AGENTS_DIR -u XDG_CACHE_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u TMPDIR -u GOCACHE -u GOPATH HOME="$home" \
  "$work/agentproof" run --all --progress plain --results res --campaign quick >"$work/out.txt" 2>"$work/err.txt")
code=$?
set -e
echo "unprivileged quick start: exit $code in $(( $(date +%s) - start ))s" >&2
tail -n 8 "$work/out.txt" >&2
if [ "$code" -ne 4 ]; then
  echo "the unprivileged quick start must exit 4 (partial: every cell that ran passed, the sandbox cells not run here); stderr:" >&2
  tail -n 20 "$work/err.txt" >&2
  exit 1
fi
python3 - "$work/run/res/quick/campaign.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
# the environments whose cells need root here: the sandbox's (its declared limits: cgroup
# v1 here, and the disk limit needs root) and the container's leases
LEASED = ("sandbox", "sandbox-hostile", "container", "container-node", "container-hostile")
bad = []
for r in c["results"]:
    if r.get("notRunHere"):
        if r["environmentId"] not in LEASED or "root" not in r["notRunHere"]:
            bad.append("%s: not run here (%s)" % (r["executionId"], r["notRunHere"]))
    elif r["environmentId"] in LEASED:
        bad.append("%s: ran, though its environment (sandbox or container) needs root here" % r["executionId"])
ran = c["passed"] + c.get("knownFailures", 0)
if c["failed"] or c["inconclusive"] or ran + c.get("notRun", 0) != c["selected"] or not c.get("notRun") or not c["partial"]:
    bad.append("counts: %d passed, %d known failure(s), %d failed, %d inconclusive, %d not run here of %d (partial %s)" % (
        c["passed"], c.get("knownFailures", 0), c["failed"], c["inconclusive"], c.get("notRun", 0), c["selected"], c["partial"]))
if bad:
    sys.exit("unprivileged quick start:\n  " + "\n  ".join(bad))
print("unprivileged quick start: %d local cell(s) passed, %d sandbox and container cell(s) not run here" % (c["passed"], c["notRun"]), file=sys.stderr)
PY
