#!/usr/bin/env bash
# Starts a throw-away PostgreSQL for the store's tests and exports
# AGENTPROOF_TEST_POSTGRES_URL. Meant to be sourced by .ci/run (as root, on a fresh
# Debian machine): `source .ci/postgres.sh`. Installs Debian's postgresql when missing,
# initialises a cluster under /tmp owned by postgres, starts it on 127.0.0.1 on a free
# port (trust authentication, loopback only) and creates database agentproof_test.
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql
fi
pg_bin="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"

pg_dir="$(mktemp -d /tmp/agentproof-pg.XXXXXX)"
chown postgres:postgres "$pg_dir"
chmod 0700 "$pg_dir"

# A free port: a random one in 20000-59999 that nothing answers on 127.0.0.1.
pg_port=""
for _ in $(seq 1 100); do
	candidate=$((20000 + RANDOM % 40000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
		pg_port="$candidate"
		break
	fi
done
if [ -z "$pg_port" ]; then
	echo "postgres.sh: no free port found" >&2
	exit 1
fi

runuser -u postgres -- "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust --no-sync >/dev/null
runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
	-o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$pg_dir -c fsync=on" start >/dev/null
# Stop the server (and drop its directory) when the shell that sourced this exits.
trap 'runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$pg_dir"' EXIT
runuser -u postgres -- "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres agentproof_test

export AGENTPROOF_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/agentproof_test?sslmode=disable"
echo "AGENTPROOF_TEST_POSTGRES_URL=$AGENTPROOF_TEST_POSTGRES_URL"
