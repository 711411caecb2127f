#!/usr/bin/env bash
# deploy/stack.sh — run the services DDS needs, from binaries deploy/install.sh put in place,
# with their state under .dds/ in the repository (kept between runs).
#
#   deploy/stack.sh up [--with-minio] [--with-pgbouncer] [--with-hydra] [--with-replica] [--with-temporal-server] [--no-temporal-dev]
#                      [--profile run|test] [--started-file FILE]
#       Start PostgreSQL 15 (+ pgvector), the Temporal dev server and, with --with-minio or
#       FILE_STORAGE_DRIVER=s3, MinIO; with --with-pgbouncer, PgBouncer in transaction mode in
#       front of Postgres (as production runs it; see docs/operations.md); with --with-hydra, Ory
#       Hydra (an OpenID Connect provider for the identity tests: in-memory, HTTPS with a
#       certificate made here, JWT access tokens); with --with-replica, a streaming replica of
#       that Postgres (pg_basebackup -R, hot standby; ready once it has replayed what the primary
#       had when it started); --no-temporal-dev (or --no-temporal) leaves the Temporal dev server out (a caller
#       that brings its own, or needs none); with --with-temporal-server, the Temporal server
#       of the production topology (go.temporal.io/server, PostgreSQL persistence in the databases
#       temporal and temporal_visibility of this Postgres, built and cached by
#       deploy/temporal-server.sh on first use) beside the dev server, or instead of it. A
#       service already running (pid file + health check) is
#       left alone. Waits until each one answers. Writes .dds/env. With --started-file, appends
#       the names of the services this call started to FILE (so a caller can stop only those).
#       Profile "test" turns Postgres fsync off (fast, not crash-safe); "run" (default) keeps it.
#   deploy/stack.sh down [--started-file FILE]
#       Stop the services stack.sh started (only those named in FILE when given).
#   deploy/stack.sh restart postgres|temporal-server [--signal SIG]
#       Stop one service stack.sh started (SIG, default TERM; postgres: INT is a fast shutdown,
#       QUIT an immediate one, recovered like a crash) and start it again as it was, waiting until
#       it answers (make cluster-check's restart scenarios).
#   deploy/stack.sh status     One line per service.
#   deploy/stack.sh env        Print the `export` lines for the stack (same as .dds/env).
#
# Ports (all on 127.0.0.1): DDS_PG_PORT (54329), DDS_PG_REPLICA_PORT (54330), DDS_TEMPORAL_PORT (7233), DDS_TEMPORAL_UI_PORT
# (8233), DDS_MINIO_PORT (9100), DDS_MINIO_CONSOLE_PORT (9101), DDS_PGBOUNCER_PORT (64329),
# DDS_HYDRA_PUBLIC_PORT (4444), DDS_HYDRA_ADMIN_PORT (4445), DDS_TEMPORAL_SERVER_PORT (7333: the
# server's frontend; its other services use the ports up to +40, see temporal_server_config).
# Logs in .dds/logs/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${DDS_STATE_DIR:-$ROOT/.dds}
DDS_CACHE=${DDS_CACHE:-$HOME/.cache/dds}
LOGS=$STATE/logs
RUN=$STATE/run

PG_MAJOR=15
PGBIN=/usr/lib/postgresql/$PG_MAJOR/bin
PG_PORT=${DDS_PG_PORT:-54329}
REPLICA_PORT=${DDS_PG_REPLICA_PORT:-54330}
TEMPORAL_PORT=${DDS_TEMPORAL_PORT:-7233}
TEMPORAL_UI_PORT=${DDS_TEMPORAL_UI_PORT:-8233}
MINIO_PORT=${DDS_MINIO_PORT:-9100}
MINIO_CONSOLE_PORT=${DDS_MINIO_CONSOLE_PORT:-9101}
PGBOUNCER_PORT=${DDS_PGBOUNCER_PORT:-64329}
TEMPORAL_CLI=${DDS_TEMPORAL_CLI:-$DDS_CACHE/bin/temporal}
MINIO_BIN=${DDS_MINIO_BIN:-$DDS_CACHE/bin/minio}
HYDRA_PUBLIC_PORT=${DDS_HYDRA_PUBLIC_PORT:-4444}
HYDRA_ADMIN_PORT=${DDS_HYDRA_ADMIN_PORT:-4445}
HYDRA_BIN=${DDS_HYDRA_BIN:-$DDS_CACHE/bin/hydra}
TEMPORAL_SERVER_PORT=${DDS_TEMPORAL_SERVER_PORT:-7333}

# Fixed development credentials: every service listens on loopback only.
MINIO_USER=ddsminio
MINIO_PASSWORD=ddsminio-dev-secret
S3_BUCKET=dds
S3_REGION=us-east-1
DATABASES=(dds dds_test dds_bench)

TIMEOUT=${DDS_STACK_TIMEOUT:-120} # seconds to wait for one service to become ready

log() { printf 'stack: %s\n' "$*" >&2; }
die() { printf 'stack: ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
now_ms() { date +%s%3N; }

# start_time PID prints the kernel start time of a live process (field 22 of /proc/PID/stat),
# which together with the pid identifies it even if the pid is later reused.
start_time() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) } # the command name in parentheses may contain spaces
	echo "$stat" | awk '$1 != "Z" { print $20 }' # a zombie has exited already
}

# pid_of NAME prints the pid recorded for a service if that very process (same pid and start
# time) is still alive, else nothing (and forgets the stale pid file).
pid_of() {
	local f=$RUN/$1.pid pid st
	[ -f "$f" ] || return 0
	read -r pid st <"$f" || true
	if [ -n "$pid" ] && [ -n "${st:-}" ] && [ "$(start_time "$pid")" = "$st" ]; then
		echo "$pid"
	else
		rm -f "$f"
	fi
}

# wait_until NAME PID CMD... polls CMD until it succeeds, the process dies or TIMEOUT passes.
wait_until() {
	local name=$1 pid=$2 deadline=$(($(date +%s) + TIMEOUT))
	shift 2
	until "$@" >/dev/null 2>&1; do
		if [ -n "$pid" ] && [ -z "$(start_time "$pid")" ]; then
			log "$name exited during start-up; last lines of $LOGS/$name.log:"
			tail -n 30 "$LOGS/$name.log" >&2 || true
			exit 1
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "$name not ready after ${TIMEOUT}s; last lines of $LOGS/$name.log:"
			tail -n 30 "$LOGS/$name.log" >&2 || true
			exit 1
		fi
		sleep 0.1
	done
}

# spawn NAME CMD... starts CMD in its own session (so a Ctrl-C meant for `make run` does not
# reach it), output appended to .dds/logs/NAME.log, and records its pid.
spawn() {
	local name=$1
	shift
	printf '\n==== %s start %s\n' "$name" "$(date -u +%FT%TZ)" >>"$LOGS/$name.log"
	rm -f "$RUN/$name.pid"
	# bash writes its own pid, then execs the service in place: the pid file names the service.
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 8>&- &
	local i pid
	for i in $(seq 100); do [ -s "$RUN/$name.pid" ] && break; sleep 0.02; done
	pid=$(cat "$RUN/$name.pid" 2>/dev/null) || die "$name did not start; see $LOGS/$name.log"
	echo "$pid $(start_time "$pid")" >"$RUN/$name.pid"
	echo "$pid"
}

# signal_stop NAME SIGNAL asks a service stack.sh started to stop; prints its pid.
signal_stop() {
	local pid
	[ -f "$RUN/$1.pid" ] || return 0
	pid=$(pid_of "$1")
	if [ -z "$pid" ]; then
		log "$1 no longer running"
		return 0
	fi
	kill -"$2" "$pid" 2>/dev/null || true
	echo "$pid"
}

# await_stop NAME PID waits up to 30 s for the process to exit, then kills it.
await_stop() {
	local name=$1 pid=$2 i
	for i in $(seq 300); do
		[ -n "$(start_time "$pid")" ] || break # gone, or a zombie nobody reaped yet
		sleep 0.1
	done
	if [ -n "$(start_time "$pid")" ]; then
		log "$name (pid $pid) did not stop in 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN/$name.pid"
	log "$name stopped (pid $pid)"
}

record_started() { if [ -n "$STARTED_FILE" ]; then echo "$1" >>"$STARTED_FILE"; fi; }

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------
# Where the cluster lives. As root, Postgres runs as the `postgres` OS user, which must be able
# to reach the directory; a checkout under a private home directory (e.g. /root) is not
# reachable, so the cluster then lives under /var/lib/dds/<hash of the state dir> and
# .dds/pg is a symbolic link to it.
pg_home() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "$STATE/pg"
		return
	fi
	if [ -L "$STATE/pg" ]; then
		readlink -f "$STATE/pg"
		return
	fi
	mkdir -p "$STATE/pg"
	chown postgres:postgres "$STATE/pg"
	if runuser -u postgres -- test -w "$STATE/pg" 2>/dev/null; then
		echo "$STATE/pg"
	else
		local alt d owner pid
		# Forget clusters of checkouts that no longer exist (e.g. earlier CI clones).
		for d in /var/lib/dds/pg-*; do
			[ -f "$d/owner" ] || continue
			owner=$(cat "$d/owner")
			[ ! -e "$owner" ] || continue
			pid=$(head -n1 "$d/data/postmaster.pid" 2>/dev/null || true)
			if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -rf "$d"; fi
		done
		alt=/var/lib/dds/pg-$(printf '%s' "$STATE" | sha256sum | cut -c1-12)
		mkdir -p "$alt"
		echo "$STATE" >"$alt/owner"
		chown postgres:postgres "$alt"
		rmdir "$STATE/pg"
		ln -s "$alt" "$STATE/pg"
		echo "$alt"
	fi
}

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -t 1; }
psql_() { PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }

# pg_opts PORT SOCKET_DIR sets opts, the server settings of the primary and of its replica (a hot
# standby needs max_connections and the other limits at least as high as its primary's).
pg_opts() {
	opts=(
		-c listen_addresses=127.0.0.1 -c port="$1" -c unix_socket_directories="$2"
		-c timezone=UTC -c log_timezone=UTC -c max_connections=300
		-c shared_buffers=256MB -c log_min_messages=warning
		# pg_stat_statements lets `make bench` report database time per request.
		-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top
		# Streaming replication (--with-replica): Postgres 15's defaults, said here because
		# the replica depends on them; initdb's pg_hba.conf trusts replication from loopback.
		-c wal_level=replica -c max_wal_senders=10
	)
	if [ "$PROFILE" = test ]; then
		# Throwaway test data: trade crash safety for speed. Never for the run profile.
		opts+=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
	fi
}

pg_up() {
	local home data sock pid
	[ -x "$PGBIN/postgres" ] || die "PostgreSQL $PG_MAJOR is not installed: run deploy/install.sh"
	home=$(pg_home)
	data=$home/data
	sock=$home/run
	# A Unix socket path is limited to 107 bytes.
	if [ $((${#sock} + 20)) -gt 107 ]; then sock=/tmp/dds-pg-$PG_PORT; fi

	pid=$(pid_of postgres)
	if [ -n "$pid" ]; then
		wait_until postgres "$pid" pg_ready # ours; maybe still starting
		log "postgres already running (pid $pid, profile $(cat "$RUN/postgres.profile" 2>/dev/null || echo ?)) on 127.0.0.1:$PG_PORT"
	else
		if pg_ready; then
			# Ours after all if the postmaster of our data directory is the one answering (e.g.
			# the pid file was lost): adopt it rather than refuse.
			pid=$(head -n1 "$data/postmaster.pid" 2>/dev/null || true)
			if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(sed -n 4p "$data/postmaster.pid")" = "$PG_PORT" ]; then
				echo "$pid $(start_time "$pid")" >"$RUN/postgres.pid"
				log "postgres already running (pid $pid, adopted from $data/postmaster.pid) on 127.0.0.1:$PG_PORT"
			else
				die "port $PG_PORT already answers for a PostgreSQL that stack.sh did not start; set DDS_PG_PORT"
			fi
		fi
	fi
	if [ -z "$(pid_of postgres)" ]; then
		if [ ! -f "$data/PG_VERSION" ]; then
			log "postgres: initdb $data"
			as_pg "$PGBIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
				>>"$LOGS/postgres.log" 2>&1 || die "initdb failed, see $LOGS/postgres.log"
		fi
		mkdir -p "$sock"
		[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$sock"
		local opts
		pg_opts "$PG_PORT" "$sock"
		local runner=()
		[ "$(id -u)" -ne 0 ] || runner=(setpriv --reuid=postgres --regid=postgres --init-groups)
		pid=$(spawn postgres "${runner[@]}" "$PGBIN/postgres" -D "$data" "${opts[@]}")
		echo "$PROFILE" >"$RUN/postgres.profile"
		wait_until postgres "$pid" pg_ready
		record_started postgres
		log "postgres started (pid $pid, profile $PROFILE) on 127.0.0.1:$PG_PORT"
	fi

	# Databases and the vector extension (template1 too, so databases tests create have it).
	psql_ -d template1 -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
	local db
	for db in "${DATABASES[@]}"; do
		if [ -z "$(psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
			psql_ -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
			log "postgres: created database $db"
		fi
		psql_ -d "$db" -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
	done
}

# ---------------------------------------------------------------------------------------------
# Streaming replica (--with-replica)
# ---------------------------------------------------------------------------------------------
# A hot standby of the primary above, in its own data directory beside the primary's, made with
# pg_basebackup -R (which writes primary_conninfo and standby.signal). It keeps its data between
# runs and catches up from the primary's WAL when started again; when it cannot (the WAL it needs
# was recycled while it was down) it is made again from a fresh base backup. No replication slot:
# a replica left stopped must not make the primary keep WAL forever.
replica_ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$REPLICA_PORT" -U postgres -d postgres -t 1; }
replica_psql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$REPLICA_PORT" -U postgres -d postgres "$@"; }

# replica_caught_up LSN: the replica has replayed the primary's WAL up to LSN.
replica_caught_up() {
	[ "$(replica_psql -tAc "SELECT coalesce(pg_last_wal_replay_lsn() >= '$1'::pg_lsn, false)" 2>/dev/null)" = t ]
}

replica_base_backup() {
	local data=$1
	rm -rf "$data"
	log "replica: pg_basebackup from 127.0.0.1:$PG_PORT into $data"
	as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U postgres -D "$data" -R -X stream \
		--checkpoint=fast >>"$LOGS/replica.log" 2>&1 || die "pg_basebackup failed, see $LOGS/replica.log"
}

# replica_start DATA SOCK: starts the standby and waits until it has replayed what the primary
# had written when it started; returns 1 (standby stopped) if it does not within TIMEOUT.
replica_start() {
	local data=$1 sock=$2 pid lsn deadline opts
	pg_opts "$REPLICA_PORT" "$sock"
	# Queries on the standby hold back the primary's vacuum instead of being cancelled by it.
	opts+=(-c hot_standby=on -c hot_standby_feedback=on)
	local runner=()
	[ "$(id -u)" -ne 0 ] || runner=(setpriv --reuid=postgres --regid=postgres --init-groups)
	pid=$(spawn replica "${runner[@]}" "$PGBIN/postgres" -D "$data" "${opts[@]}")
	wait_until replica "$pid" replica_ready
	lsn=$(psql_ -d postgres -tAc 'SELECT pg_current_wal_insert_lsn()')
	deadline=$(($(date +%s) + TIMEOUT))
	until replica_caught_up "$lsn"; do
		if [ "$(date +%s)" -ge "$deadline" ] || [ -z "$(start_time "$pid")" ]; then
			kill -INT "$pid" 2>/dev/null || true
			await_stop replica "$pid"
			return 1
		fi
		sleep 0.1
	done
	echo "$pid"
}

replica_up() {
	local home data sock pid
	home=$(pg_home)
	data=$home/replica
	sock=$home/replica-run
	if [ $((${#sock} + 20)) -gt 107 ]; then sock=/tmp/dds-pg-$REPLICA_PORT; fi
	pid=$(pid_of replica)
	if [ -n "$pid" ]; then
		wait_until replica "$pid" replica_ready
		log "replica already running (pid $pid) on 127.0.0.1:$REPLICA_PORT"
		return
	fi
	if replica_ready; then
		die "port $REPLICA_PORT already answers for a PostgreSQL that stack.sh did not start; set DDS_PG_REPLICA_PORT"
	fi
	mkdir -p "$sock"
	[ "$(id -u)" -ne 0 ] || chown postgres:postgres "$sock"
	if [ ! -f "$data/standby.signal" ]; then replica_base_backup "$data"; fi
	if ! pid=$(replica_start "$data" "$sock"); then
		log "replica: did not catch up with the primary (its WAL may be gone); making it again"
		replica_base_backup "$data"
		pid=$(replica_start "$data" "$sock") || die "replica did not catch up with the primary, see $LOGS/replica.log"
	fi
	record_started replica
	log "replica started (pid $pid, streaming from 127.0.0.1:$PG_PORT) on 127.0.0.1:$REPLICA_PORT"
}

# ---------------------------------------------------------------------------------------------
# Temporal dev server
# ---------------------------------------------------------------------------------------------
temporal_ready() {
	"$TEMPORAL_CLI" operator cluster health --address "127.0.0.1:$TEMPORAL_PORT" --command-timeout 2s 2>/dev/null | grep -q SERVING
}

temporal_up() {
	local pid
	[ -x "$TEMPORAL_CLI" ] || die "Temporal CLI not found at $TEMPORAL_CLI: run deploy/install.sh"
	pid=$(pid_of temporal)
	if [ -n "$pid" ]; then
		wait_until temporal "$pid" temporal_ready # ours; maybe still starting
		log "temporal already running (pid $pid) on 127.0.0.1:$TEMPORAL_PORT"
		return
	fi
	if temporal_ready; then
		die "port $TEMPORAL_PORT already answers for a Temporal server that stack.sh did not start; set DDS_TEMPORAL_PORT"
	fi
	pid=$(spawn temporal "$TEMPORAL_CLI" server start-dev \
		--ip 127.0.0.1 --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
		--db-filename "$STATE/temporal.db" --log-level warn \
		--search-attribute DdsTenant=Keyword \
		--search-attribute DdsWebhook=Keyword \
		--search-attribute DdsEventType=Keyword \
		--search-attribute DdsJobType=Keyword)
	wait_until temporal "$pid" temporal_ready
	record_started temporal
	log "temporal started (pid $pid) on 127.0.0.1:$TEMPORAL_PORT, UI http://127.0.0.1:$TEMPORAL_UI_PORT"
}

# ---------------------------------------------------------------------------------------------
# Temporal server (--with-temporal-server): the production topology's, PostgreSQL persistence
# ---------------------------------------------------------------------------------------------
TEMPORAL_SERVER_DIR=$STATE/temporal-server
temporal_server_ready() {
	"$TEMPORAL_CLI" operator cluster health --address "127.0.0.1:$TEMPORAL_SERVER_PORT" --command-timeout 2s 2>/dev/null | grep -q SERVING
}

# temporal_server_schema TOOL SCHEMADIR DB KIND creates database DB if missing, installs the
# schema KIND (temporal or visibility) on an empty one, and applies the versions it lacks.
temporal_server_schema() {
	local tool=$1 dir=$2 db=$3 kind=$4
	local args=(--plugin postgres12 --endpoint 127.0.0.1 --port "$PG_PORT" --user postgres --database "$db")
	if [ -z "$(psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
		psql_ -d postgres -c "CREATE DATABASE \"$db\"" >/dev/null
		log "postgres: created database $db"
	fi
	if [ -z "$(psql_ -d "$db" -tAc "SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'")" ]; then
		"$tool" "${args[@]}" setup-schema -v 0.0 >>"$LOGS/temporal-server.log" 2>&1 ||
			die "temporal-sql-tool setup-schema on $db failed, see $LOGS/temporal-server.log"
	fi
	# The tool takes seconds to start on a busy machine: skip it when the newest version is in.
	local have want
	have=$(psql_ -d "$db" -tAc "SELECT curr_version FROM schema_version LIMIT 1" 2>/dev/null || true)
	want=$(find "$dir/postgresql/v12/$kind/versioned" -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' | sed 's/^v//' | sort -V | tail -n1)
	if [ -n "$have" ] && [ "$have" = "$want" ]; then return; fi
	"$tool" "${args[@]}" update-schema -d "$dir/postgresql/v12/$kind/versioned" >>"$LOGS/temporal-server.log" 2>&1 ||
		die "temporal-sql-tool update-schema on $db failed, see $LOGS/temporal-server.log"
}

# The server's configuration: every service on 127.0.0.1, gRPC ports from TEMPORAL_SERVER_PORT
# (frontend) up, membership ports 20 above each, no archival, 4 history shards (fixed when the
# schema is first set up: changing it later needs new databases).
temporal_server_config() {
	local p=$TEMPORAL_SERVER_PORT
	cat <<YAML
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:$PG_PORT"
        connectProtocol: tcp
        user: postgres
        password: ""
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "127.0.0.1:$PG_PORT"
        connectProtocol: tcp
        user: postgres
        password: ""
        maxConns: 4
        maxIdleConns: 4
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "127.0.0.1:$((p + 40))"
services:
  frontend:
    rpc: { grpcPort: $p, membershipPort: $((p + 20)), httpPort: $((p + 10)), bindOnIP: 127.0.0.1 }
  history:
    rpc: { grpcPort: $((p + 1)), membershipPort: $((p + 21)), bindOnIP: 127.0.0.1 }
  matching:
    rpc: { grpcPort: $((p + 2)), membershipPort: $((p + 22)), bindOnIP: 127.0.0.1 }
  worker:
    rpc: { grpcPort: $((p + 6)), membershipPort: $((p + 26)), bindOnIP: 127.0.0.1 }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:$p"
      httpAddress: "127.0.0.1:$((p + 10))"
dcRedirectionPolicy:
  policy: noop
YAML
}

# temporal_server_attribute ADDR NAME registers Keyword search attribute NAME on namespace
# default unless it is there.
temporal_server_attribute() {
	"$TEMPORAL_CLI" operator search-attribute list --address "$1" --namespace default 2>/dev/null | grep -qw "$2" ||
		"$TEMPORAL_CLI" operator search-attribute create --address "$1" --namespace default --name "$2" --type Keyword
}

temporal_server_up() {
	local pid server tool schema addr=127.0.0.1:$TEMPORAL_SERVER_PORT n
	[ -x "$TEMPORAL_CLI" ] || die "Temporal CLI not found at $TEMPORAL_CLI: run deploy/install.sh"
	pid=$(pid_of temporal-server)
	if [ -n "$pid" ]; then
		wait_until temporal-server "$pid" temporal_server_ready
		log "temporal-server already running (pid $pid) on $addr"
		return
	fi
	if temporal_server_ready; then
		die "port $TEMPORAL_SERVER_PORT already answers for a Temporal server that stack.sh did not start; set DDS_TEMPORAL_SERVER_PORT"
	fi
	bash "$ROOT/deploy/temporal-server.sh" build
	{ read -r server; read -r tool; read -r schema; } < <(bash "$ROOT/deploy/temporal-server.sh" paths)
	temporal_server_schema "$tool" "$schema" temporal temporal
	temporal_server_schema "$tool" "$schema" temporal_visibility visibility
	mkdir -p "$TEMPORAL_SERVER_DIR"
	temporal_server_config >"$TEMPORAL_SERVER_DIR/config.yaml"
	pid=$(spawn temporal-server "$server" --config-file "$TEMPORAL_SERVER_DIR/config.yaml" --allow-no-auth start)
	wait_until temporal-server "$pid" temporal_server_ready
	# The namespace DDS uses, and DDS's search attributes on it (package searchattr; the worker
	# registers them too, but the Temporal UI and `temporal workflow list` need them at once).
	if ! "$TEMPORAL_CLI" operator namespace describe --address "$addr" --namespace default >/dev/null 2>&1; then
		"$TEMPORAL_CLI" operator namespace create --address "$addr" --namespace default --retention 72h \
			>>"$LOGS/temporal-server.log" 2>&1 || die "could not register namespace default, see $LOGS/temporal-server.log"
		log "temporal-server: registered namespace default"
	fi
	# A new namespace reaches every service of the server within its registry refresh (seconds).
	for n in DdsTenant DdsWebhook DdsEventType DdsJobType; do
		wait_until temporal-server "$pid" temporal_server_attribute "$addr" "$n"
	done
	record_started temporal-server
	log "temporal-server started (pid $pid) on $addr, PostgreSQL persistence (databases temporal, temporal_visibility)"
}

# ---------------------------------------------------------------------------------------------
# MinIO
# ---------------------------------------------------------------------------------------------
minio_ready() { curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$MINIO_PORT/minio/health/live" 2>/dev/null; }
# s3 METHOD PATH: a SigV4-signed request to MinIO (curl signs it); prints the HTTP status.
s3() {
	curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -X "$1" \
		--aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$MINIO_USER:$MINIO_PASSWORD" \
		"http://127.0.0.1:$MINIO_PORT/$2"
}

minio_up() {
	local pid code
	[ -x "$MINIO_BIN" ] || die "MinIO not found at $MINIO_BIN: run deploy/install.sh"
	pid=$(pid_of minio)
	if [ -n "$pid" ]; then
		wait_until minio "$pid" minio_ready # ours; maybe still starting
		log "minio already running (pid $pid) on 127.0.0.1:$MINIO_PORT"
	else
		if minio_ready; then
			die "port $MINIO_PORT already answers for a MinIO that stack.sh did not start; set DDS_MINIO_PORT"
		fi
		mkdir -p "$STATE/minio"
		pid=$(spawn minio env MINIO_ROOT_USER="$MINIO_USER" MINIO_ROOT_PASSWORD="$MINIO_PASSWORD" \
			MINIO_UPDATE=off MINIO_REGION="$S3_REGION" \
			"$MINIO_BIN" server --quiet --address "127.0.0.1:$MINIO_PORT" \
			--console-address "127.0.0.1:$MINIO_CONSOLE_PORT" "$STATE/minio")
		wait_until minio "$pid" minio_ready
		record_started minio
		log "minio started (pid $pid) on 127.0.0.1:$MINIO_PORT"
	fi
	# The bucket is created with a signed request (curl signs SigV4) rather than by making a
	# directory in the data dir, so MinIO records its metadata (creation date, region).
	code=$(s3 HEAD "$S3_BUCKET") || true
	if [ "$code" = 404 ]; then
		code=$(s3 PUT "$S3_BUCKET") || true
		[ "$code" = 200 ] || die "could not create bucket $S3_BUCKET in MinIO (HTTP $code)"
		log "minio: created bucket $S3_BUCKET"
	elif [ "$code" != 200 ]; then
		die "bucket check on MinIO answered HTTP $code (expected 200)"
	fi
}

# ---------------------------------------------------------------------------------------------
# PgBouncer (transaction mode, in front of Postgres)
# ---------------------------------------------------------------------------------------------
pgbouncer_ready() { psql -X -q -h 127.0.0.1 -p "$PGBOUNCER_PORT" -U postgres -d dds -tAc 'SELECT 1' >/dev/null 2>&1; }

pgbouncer_up() {
	local pid dir bin
	bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
	[ -x "$bin" ] || die "pgbouncer is not installed: run deploy/install.sh"
	pid=$(pid_of pgbouncer)
	if [ -n "$pid" ]; then
		wait_until pgbouncer "$pid" pgbouncer_ready
		log "pgbouncer already running (pid $pid) on 127.0.0.1:$PGBOUNCER_PORT"
		return
	fi
	if pgbouncer_ready; then
		die "port $PGBOUNCER_PORT already answers for a PgBouncer that stack.sh did not start; set DDS_PGBOUNCER_PORT"
	fi
	# Beside the Postgres cluster: a directory the postgres user, which PgBouncer runs as, can
	# reach even when the checkout is under a private home directory.
	dir=$(pg_home)/pgbouncer
	mkdir -p "$dir"
	# Transaction mode, as a production deployment runs it in front of the API pool. The
	# settings DDS sends at connection time without a pooler (jit off, the HNSW candidate list
	# size) are the pooler's connect_query here: PgBouncer 1.18 refuses unknown startup
	# parameters and knows no protocol-level prepared statements.
	cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$PG_PORT user=postgres connect_query='SET jit = off; SET hnsw.ef_search = 400; SET client_connection_check_interval = 1000'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 60
server_reset_query =
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
INI
	[ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$dir"
	local runner=()
	[ "$(id -u)" -ne 0 ] || runner=(setpriv --reuid=postgres --regid=postgres --init-groups)
	pid=$(spawn pgbouncer "${runner[@]}" "$bin" "$dir/pgbouncer.ini")
	wait_until pgbouncer "$pid" pgbouncer_ready
	record_started pgbouncer
	log "pgbouncer started (pid $pid, transaction mode) on 127.0.0.1:$PGBOUNCER_PORT"
}

# ---------------------------------------------------------------------------------------------
# Ory Hydra (--with-hydra)
# ---------------------------------------------------------------------------------------------
# Hydra keeps everything in memory (DSN=memory): a restart forgets its clients and keys, which
# tests create for themselves. It serves HTTPS with a self-signed certificate for 127.0.0.1
# made here (DDS fetches provider URLs under the webhook rules: HTTPS, trusted through
# DDS_WEBHOOK_CA_FILE); the issuer is its public URL and access tokens are JWTs.
HYDRA_DIR=$STATE/hydra
hydra_ready() { curl -fsS -o /dev/null --max-time 1 --cacert "$HYDRA_DIR/cert.pem" "https://127.0.0.1:$HYDRA_PUBLIC_PORT/health/ready" 2>/dev/null; }

hydra_up() {
	local pid
	[ -x "$HYDRA_BIN" ] || die "Hydra not found at $HYDRA_BIN: run deploy/install.sh --with-hydra"
	pid=$(pid_of hydra)
	if [ -n "$pid" ]; then
		wait_until hydra "$pid" hydra_ready
		log "hydra already running (pid $pid) on 127.0.0.1:$HYDRA_PUBLIC_PORT (admin $HYDRA_ADMIN_PORT)"
		return
	fi
	mkdir -p "$HYDRA_DIR"
	if [ ! -s "$HYDRA_DIR/cert.pem" ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=127.0.0.1" \
			-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
			-keyout "$HYDRA_DIR/key.pem" -out "$HYDRA_DIR/cert.pem" >>"$LOGS/hydra.log" 2>&1 ||
			die "openssl could not make Hydra's certificate; see $LOGS/hydra.log"
	fi
	pid=$(spawn hydra env DSN=memory LOG_LEVEL=warn \
		URLS_SELF_ISSUER="https://127.0.0.1:$HYDRA_PUBLIC_PORT" \
		SERVE_PUBLIC_HOST=127.0.0.1 SERVE_PUBLIC_PORT="$HYDRA_PUBLIC_PORT" \
		SERVE_ADMIN_HOST=127.0.0.1 SERVE_ADMIN_PORT="$HYDRA_ADMIN_PORT" \
		SERVE_TLS_ENABLED=true SERVE_TLS_CERT_PATH="$HYDRA_DIR/cert.pem" SERVE_TLS_KEY_PATH="$HYDRA_DIR/key.pem" \
		SECRETS_SYSTEM=dds-hydra-dev-secret-0123456789abcdef STRATEGIES_ACCESS_TOKEN=jwt \
		"$HYDRA_BIN" serve all)
	wait_until hydra "$pid" hydra_ready
	# Hydra makes its signing keys on the first request for them (RSA 4096: seconds on a busy
	# machine); ask now, so a test's first token and JWKS fetch do not pay for it.
	curl -fsS -o /dev/null --max-time "$TIMEOUT" --cacert "$HYDRA_DIR/cert.pem" \
		"https://127.0.0.1:$HYDRA_PUBLIC_PORT/.well-known/jwks.json" || die "hydra did not serve its JWKS"
	record_started hydra
	log "hydra started (pid $pid) on 127.0.0.1:$HYDRA_PUBLIC_PORT (admin $HYDRA_ADMIN_PORT)"
}

# ---------------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------------
print_env() {
	local s3=http://127.0.0.1:$MINIO_PORT temporal=$TEMPORAL_PORT
	# Without the dev server (--no-temporal-dev), DDS talks to the Temporal server.
	if [ -z "$(pid_of temporal)" ] && [ -n "$(pid_of temporal-server)" ]; then temporal=$TEMPORAL_SERVER_PORT; fi
	cat <<EOF
export DATABASE_URL='postgres://postgres@127.0.0.1:$PG_PORT/dds?sslmode=disable'
export DDS_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:$PG_PORT/dds_test?sslmode=disable'
export DDS_BENCH_DATABASE_URL='postgres://postgres@127.0.0.1:$PG_PORT/dds_bench?sslmode=disable'
export TEMPORAL_ADDRESS='127.0.0.1:$temporal'
export DDS_TEMPORAL_UI_URL='http://127.0.0.1:$TEMPORAL_UI_PORT'
export DDS_TEMPORAL_CLI='$TEMPORAL_CLI'
export DDS_MINIO_BIN='$MINIO_BIN'
export FILE_STORAGE_S3_ENDPOINT='$s3'
export FILE_STORAGE_S3_ACCESS_KEY='$MINIO_USER'
export FILE_STORAGE_S3_SECRET_KEY='$MINIO_PASSWORD'
export FILE_STORAGE_S3_BUCKET='$S3_BUCKET'
export FILE_STORAGE_S3_REGION='$S3_REGION'
export DDS_TEST_S3_ENDPOINT='$s3'
export DDS_TEST_S3_ACCESS_KEY='$MINIO_USER'
export DDS_TEST_S3_SECRET_KEY='$MINIO_PASSWORD'
EOF
	if [ -n "$(pid_of replica)" ]; then
		echo "export DDS_TEST_REPLICA_URL='postgres://postgres@127.0.0.1:$REPLICA_PORT/dds_test?sslmode=disable'"
	fi
	if [ -n "$(pid_of pgbouncer)" ]; then
		echo "export DDS_TEST_PGBOUNCER_URL='postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/dds_test?sslmode=disable'"
	fi
	if [ -n "$(pid_of temporal-server)" ]; then
		echo "export DDS_TEMPORAL_SERVER_ADDRESS='127.0.0.1:$TEMPORAL_SERVER_PORT'"
	fi
	if [ -n "$(pid_of hydra)" ]; then
		cat <<EOF
export HYDRA_PUBLIC_URL='https://127.0.0.1:$HYDRA_PUBLIC_PORT'
export HYDRA_ADMIN_URL='https://127.0.0.1:$HYDRA_ADMIN_PORT'
export HYDRA_CA_FILE='$HYDRA_DIR/cert.pem'
EOF
	fi
}

cmd_up() {
	local t0
	t0=$(now_ms)
	mkdir -p "$LOGS" "$RUN"
	if [ -n "$STARTED_FILE" ]; then touch "$STARTED_FILE"; fi
	pg_up
	if [ "$WITH_REPLICA" -eq 1 ]; then replica_up; fi
	if [ "$WITH_TEMPORAL_DEV" -eq 1 ]; then temporal_up; fi
	if [ "$WITH_TEMPORAL_SERVER" -eq 1 ]; then temporal_server_up; fi
	if [ "$WITH_MINIO" -eq 1 ]; then minio_up; fi
	if [ "$WITH_PGBOUNCER" -eq 1 ]; then pgbouncer_up; fi
	if [ "$WITH_HYDRA" -eq 1 ]; then hydra_up; fi
	print_env >"$STATE/env"
	log "ready in $(($(now_ms) - t0)) ms; environment in $STATE/env"
}

cmd_down() {
	local names=(hydra pgbouncer minio temporal temporal-server replica postgres) n i
	if [ -n "$STARTED_FILE" ]; then
		[ -f "$STARTED_FILE" ] || return 0
		names=()
		for n in hydra pgbouncer minio temporal temporal-server replica postgres; do
			if grep -qx "$n" "$STARTED_FILE"; then names+=("$n"); fi
		done
	fi
	# Signal all first, then wait: the three shut down in parallel.
	local pids=() pid
	for n in "${names[@]}"; do
		case $n in
		postgres | replica) pid=$(signal_stop "$n" INT) ;; # fast shutdown: abort transactions, checkpoint
		*) pid=$(signal_stop "$n" TERM) ;;
		esac
		pids+=("$pid")
	done
	for i in "${!names[@]}"; do
		if [ -n "${pids[$i]}" ]; then await_stop "${names[$i]}" "${pids[$i]}"; fi
	done
}

cmd_restart() {
	local pid
	[ -n "$RESTART" ] || die "restart needs a service: postgres or temporal-server"
	pid=$(pid_of "$RESTART")
	[ -n "$pid" ] || die "$RESTART is not running (or not started by stack.sh)"
	kill -"$SIGNAL" "$pid" || die "could not signal $RESTART (pid $pid)"
	await_stop "$RESTART" "$pid"
	case $RESTART in
	postgres)
		PROFILE=$(cat "$RUN/postgres.profile" 2>/dev/null || echo "$PROFILE")
		pg_up
		;;
	temporal-server) temporal_server_up ;;
	esac
}

cmd_status() {
	local n pid addr
	for n in postgres replica temporal temporal-server minio pgbouncer hydra; do
		case $n in
		postgres) addr=127.0.0.1:$PG_PORT ;;
		replica) addr=127.0.0.1:$REPLICA_PORT ;;
		pgbouncer) addr=127.0.0.1:$PGBOUNCER_PORT ;;
		temporal) addr=127.0.0.1:$TEMPORAL_PORT ;;
		temporal-server) addr=127.0.0.1:$TEMPORAL_SERVER_PORT ;;
		minio) addr=127.0.0.1:$MINIO_PORT ;;
		hydra) addr=127.0.0.1:$HYDRA_PUBLIC_PORT ;;
		esac
		pid=$(pid_of "$n")
		if [ -n "$pid" ]; then
			printf '%-15s running  pid %-7s %s\n' "$n" "$pid" "$addr"
		else
			printf '%-15s stopped\n' "$n"
		fi
	done
}

cmd=${1:-}
[ $# -eq 0 ] || shift
WITH_MINIO=0
WITH_PGBOUNCER=0
WITH_HYDRA=0
WITH_REPLICA=0
WITH_TEMPORAL_DEV=1
WITH_TEMPORAL_SERVER=0
SIGNAL=TERM
RESTART=
[ "${FILE_STORAGE_DRIVER:-}" != s3 ] || WITH_MINIO=1
PROFILE=${DDS_STACK_PROFILE:-run}
STARTED_FILE=${DDS_STACK_STARTED_FILE:-}
while [ $# -gt 0 ]; do
	case $1 in
	--with-minio) WITH_MINIO=1 ;;
	--with-pgbouncer) WITH_PGBOUNCER=1 ;;
	--with-hydra) WITH_HYDRA=1 ;;
	--with-replica) WITH_REPLICA=1 ;;
	--no-temporal) WITH_TEMPORAL_DEV=0 ;;
	--with-temporal-server) WITH_TEMPORAL_SERVER=1 ;;
	--no-temporal-dev) WITH_TEMPORAL_DEV=0 ;;
	--signal) SIGNAL=${2:?--signal needs a signal name}; shift ;;
	postgres | temporal-server) [ "$cmd" = restart ] || die "unknown argument $1"; RESTART=$1 ;;
	--profile) PROFILE=${2:?--profile needs run or test}; shift ;;
	--started-file) STARTED_FILE=${2:?--started-file needs a path}; shift ;;
	*) die "unknown argument $1" ;;
	esac
	shift
done
case $PROFILE in run | test) ;; *) die "profile must be run or test, not $PROFILE" ;; esac

# One up/down at a time per state directory (two `make test` started together must not both
# start Postgres).
lock() {
	mkdir -p "$RUN"
	exec 8>"$RUN/.lock"
	flock 8
}

case $cmd in
up) lock; cmd_up ;;
down) lock; cmd_down ;;
restart) lock; cmd_restart ;;
status) cmd_status ;;
env) print_env ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
