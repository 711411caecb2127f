#!/usr/bin/env bash
# deploy/with-stack.sh — run one command against the local stack, then stop what was started.
#
#   deploy/with-stack.sh [stack.sh up flags] [--db NAME] -- COMMAND [ARGS...]
#
# Starts the stack (deploy/stack.sh up with the given flags), exports .dds/env (with
# DATABASE_URL pointing at database NAME when --db is given), runs COMMAND in the foreground and,
# when it ends — normally, on error, on Ctrl-C or SIGTERM — stops the services it started, unless
# another with-stack.sh call (a second `make test` in the same checkout) still uses them: then
# the last one to finish stops them. A stack that was already running (`make stack-up`, another
# terminal's `make run` started before) is left running. The exit status is COMMAND's.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${DDS_STATE_DIR:-$ROOT/.dds}

up_args=()
db=
while [ $# -gt 0 ]; do
	case $1 in
	--db) db=${2:?--db needs a database name}; shift 2 ;;
	--) shift; break ;;
	*) up_args+=("$1"); shift ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--with-minio] [--with-hydra] [--with-replica] [--profile run|test] [--db NAME] -- COMMAND..." >&2; exit 2; }

# Several callers may share one stack (two `make test` in one checkout): each registers in
# .dds/run/users/, and the services any of them started are stopped by the last one to leave.
RUN=$STATE/run
USERS=$RUN/users
mkdir -p "$USERS"
start_time() { # kernel start time of a live process; identifies it with its pid
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	echo "$stat" | awk '$1 != "Z" { print $20 }'
}
users_lock() { exec 7>"$RUN/.users.lock"; flock 7; }
users_unlock() { exec 7>&-; }

started=$(mktemp "${TMPDIR:-/tmp}/dds-started.XXXXXX")
cleanup() {
	local rc=$? f pid live=0
	trap - EXIT INT TERM
	users_lock
	rm -f "$USERS/$$"
	cat "$started" >>"$RUN/started-by-callers"
	rm -f "$started"
	for f in "$USERS"/*; do
		[ -e "$f" ] || continue
		pid=${f##*/}
		if [ -n "$(start_time "$pid")" ] && [ "$(start_time "$pid")" = "$(cat "$f")" ]; then
			live=1
		else
			rm -f "$f"
		fi
	done
	if [ "$live" -eq 0 ]; then
		bash "$ROOT/deploy/stack.sh" down --started-file "$RUN/started-by-callers" 7>&- || true
		rm -f "$RUN/started-by-callers"
	else
		echo "with-stack: the stack stays up for other callers still using it" >&2
	fi
	users_unlock
	exit "$rc"
}
# A signal ends the script through its EXIT trap. While COMMAND runs in the foreground, bash
# runs these only once it has returned (Ctrl-C reaches COMMAND directly from the terminal).
trap 'exit 130' INT
trap 'exit 143' TERM

# Register and start under the lock, so a caller leaving meanwhile sees us and keeps the stack.
users_lock
start_time $$ >"$USERS/$$"
trap cleanup EXIT
bash "$ROOT/deploy/stack.sh" up --started-file "$started" "${up_args[@]}" 7>&-
users_unlock

set -a
# shellcheck disable=SC1091
. "$STATE/env"
set +a
if [ -n "$db" ]; then
	DATABASE_URL="${DATABASE_URL%/*}/$db?sslmode=disable"
	export DATABASE_URL
	if [ -n "${DDS_TEST_PGBOUNCER_URL:-}" ]; then
		DDS_TEST_PGBOUNCER_URL="${DDS_TEST_PGBOUNCER_URL%/*}/$db?sslmode=disable"
		export DDS_TEST_PGBOUNCER_URL
	fi
	if [ -n "${DDS_TEST_REPLICA_URL:-}" ]; then
		DDS_TEST_REPLICA_URL="${DDS_TEST_REPLICA_URL%/*}/$db?sslmode=disable"
		export DDS_TEST_REPLICA_URL
	fi
fi

# Tests under the stack must find every service: a missing one fails them instead of
# skipping them (internal/testenv/teststack), so `make test` runs every test or fails.
export DDS_REQUIRE_STACK=1

set +e
"$@"
rc=$?
set -e
exit "$rc"
