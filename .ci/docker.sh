#!/usr/bin/env bash
# Makes docker answer for the container provider's docker tests (environment/container
# runs each real test once per engine present: podman, then docker). Meant to be
# sourced by .ci/run after Debian's docker.io is installed: when no docker daemon
# answers, starts dockerd in the background for containers with --network none only —
# no bridge, no iptables or forwarding changes (nothing of the host's network, loopback
# included, is touched) — and exports docker_pid, which .ci/run stops at the end. A
# daemon that answers already (a host's own service) is used as it is. Measured on a
# 2-core machine: the daemon answers within a second.
set -euo pipefail

docker_pid=""
if command -v dockerd >/dev/null 2>&1 && ! docker version >/dev/null 2>&1; then
	docker_log="${AGENTPROOF_ARTIFACTS:-/tmp}/dockerd.log"
	dockerd --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none >"$docker_log" 2>&1 &
	docker_pid=$!
	for _ in $(seq 1 300); do
		docker version >/dev/null 2>&1 && break
		sleep 0.1
	done
	if ! docker version >/dev/null 2>&1; then
		echo "docker.sh: dockerd did not answer within 30 s (its log: $docker_log); the docker tests will fail" >&2
	fi
fi
