#!/usr/bin/env bash
# deploy/temporal-server.sh — build and cache the Temporal server of the production topology.
#
#   deploy/temporal-server.sh build
#       Build go.temporal.io/server (cmd/server) and its SQL schema tool (cmd/tools/sql) at the
#       pinned version into $DDS_CACHE/bin as temporal-server-<version> and
#       temporal-sql-tool-<version>, and copy the versioned SQL schemas that ship in the module
#       source to $DDS_CACHE/temporal-server-<version>/schema. A no-op when all three are present.
#       About 3 minutes on a cold cache (2 cores).
#   deploy/temporal-server.sh paths
#       Print the server binary, the schema tool and the schema directory, one a line.
#
# deploy/stack.sh calls it only for `up --with-temporal-server` (make cluster-check): `make run`
# and `make test` keep the Temporal CLI's dev server and never pay for this build.
# The server needs a newer Go than DDS itself (>= 1.26.10): the go command fetches that tool chain
# (GOTOOLCHAIN below) for this build only.
# Environment: DDS_CACHE, TEMPORAL_SERVER_VERSION, TEMPORAL_SERVER_GOTOOLCHAIN.
set -euo pipefail

TEMPORAL_SERVER_VERSION=${TEMPORAL_SERVER_VERSION:-v1.32.2}
TEMPORAL_SERVER_GOTOOLCHAIN=${TEMPORAL_SERVER_GOTOOLCHAIN:-go1.27.3}
DDS_CACHE=${DDS_CACHE:-$HOME/.cache/dds}
BIN=$DDS_CACHE/bin
LOGS=$DDS_CACHE/logs
SERVER=$BIN/temporal-server-$TEMPORAL_SERVER_VERSION
SQLTOOL=$BIN/temporal-sql-tool-$TEMPORAL_SERVER_VERSION
SCHEMA=$DDS_CACHE/temporal-server-$TEMPORAL_SERVER_VERSION/schema
MODULE=go.temporal.io/server

log() { printf 'temporal-server: %s\n' "$*" >&2; }
die() { printf 'temporal-server: ERROR: %s\n' "$*" >&2; exit 1; }

build() {
	if [ -x "$SERVER" ] && [ -x "$SQLTOOL" ] && [ -d "$SCHEMA/postgresql/v12/temporal/versioned" ]; then
		log "$MODULE $TEMPORAL_SERVER_VERSION present"
		return
	fi
	command -v go >/dev/null || die "Go is required to build the Temporal server and 'go' is not on PATH"
	mkdir -p "$BIN" "$LOGS"
	# One build at a time per cache (two cluster checks started together must not race).
	exec 9>>"$DDS_CACHE/temporal-server.lock"
	flock 9
	if [ -x "$SERVER" ] && [ -x "$SQLTOOL" ] && [ -d "$SCHEMA/postgresql/v12/temporal/versioned" ]; then
		return
	fi
	local tmp log=$LOGS/temporal-server.log start=$SECONDS dir
	tmp=$(mktemp -d "$BIN/.temporal-server.XXXXXX")
	log "go install $MODULE/cmd/server and cmd/tools/sql @$TEMPORAL_SERVER_VERSION with $TEMPORAL_SERVER_GOTOOLCHAIN (log: $log; about 3 minutes cold)"
	# Outside the repository so its go.mod does not interfere; the caller's GOFLAGS (-mod=vendor)
	# would break a module-mode install.
	if ! (cd / && GOTOOLCHAIN=$TEMPORAL_SERVER_GOTOOLCHAIN GOBIN=$tmp GOFLAGS=-buildvcs=false \
		go install "$MODULE/cmd/server@$TEMPORAL_SERVER_VERSION" "$MODULE/cmd/tools/sql@$TEMPORAL_SERVER_VERSION") >"$log" 2>&1; then
		rm -rf "$tmp"
		tail -n 20 "$log" >&2
		die "go install of the Temporal server failed, see $log"
	fi
	dir=$(cd / && GOTOOLCHAIN=$TEMPORAL_SERVER_GOTOOLCHAIN GOFLAGS=-mod=mod go mod download -json "$MODULE@$TEMPORAL_SERVER_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir/schema/postgresql/v12" ] || die "no schema/postgresql/v12 in the module source ($dir)"
	rm -rf "$SCHEMA" && mkdir -p "$SCHEMA"
	cp -r "$dir/schema/postgresql" "$SCHEMA/" && chmod -R u+w "$SCHEMA"
	mv "$tmp/server" "$SERVER"
	mv "$tmp/sql" "$SQLTOOL"
	rm -rf "$tmp"
	log "built $SERVER and $SQLTOOL in $((SECONDS - start)) s"
}

case ${1:-} in
build) build ;;
paths) printf '%s\n%s\n%s\n' "$SERVER" "$SQLTOOL" "$SCHEMA" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
