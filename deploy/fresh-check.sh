#!/usr/bin/env bash
# deploy/fresh-check.sh — prove that a fresh Debian 12 machine runs the README's two commands.
#
#   deploy/fresh-check.sh            (make fresh-check; run by .ci/run; needs root)
#
# 1. root:    a minimal Debian bookworm root (debootstrap --variant=minbase, from the mirror this
#             machine's apt configuration names), unpacked from $DDS_CACHE/fresh/ when cached,
#             on a tmpfs when the machine has 8 GiB available (FRESH_TMPFS=0|1 decides), so
#             nothing is left to delete.
# 2. prereqs: inside it, apt-get installs only what the README lists as prerequisites (make, git)
#             and the machine gets the host's CA bundle and Go toolchain (/usr/local/go, read-only).
#             Shared with the host: the Go module and build caches (a build there only links).
#             Not shared: ~/.cache/dds (binaries, Node), apt state, PostgreSQL, pgvector.
# 3. run:     in a clone of the commit under test (at the repository's own path, so the host's later
#             `make test` finds its packages in the shared build cache), `make run` in the background
#             until its banner.
# 4. readme:  every call of the README's "first five minutes", answers asserted; then Ctrl-C
#             stops `make run` and everything it started.
# 5. test:    `make test`.
# Everything inside runs under `unshare --mount --pid --fork` and chroot: when the check ends, its
# processes die and its mounts vanish; the root directory is deleted (the cached tarball stays).
# Inside the root the services use the default ports (54329, 7233, 8233, 9100, 8080).
#
# Environment: DDS_CACHE (tarball cache), FRESH_DIR (where the root is built, default a new
# directory under /var/tmp), FRESH_KEEP=1 (keep the root afterwards, for debugging),
# FRESH_RUN_TIMEOUT (seconds `make run` may take to print its banner, default 1500).
set -euo pipefail

SUITE=bookworm
PREREQS=(make git) # exactly what README.md lists besides Go; keep the two in step

log() { printf 'fresh-check: %s\n' "$*" >&2; }
die() { printf 'fresh-check: FAILED: %s\n' "$*" >&2; exit 1; }

# phase NAME CMD... runs one phase and prints how long it took.
PHASES=()
phase() {
	local name=$1 t0=$SECONDS
	shift
	log "== $name"
	"$@" || die "phase '$name' failed after $((SECONDS - t0))s"
	PHASES+=("$(printf '%-8s %5ds' "$name" $((SECONDS - t0)))")
	log "== $name done in $((SECONDS - t0))s"
}

# =============================================================================================
# Inside the root (chroot, pid 1 of the namespace is the caller): steps 2–5.
# =============================================================================================
in_root() {
	local src=$SRC
	export HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive
	export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

	phase prereqs install_prereqs
	phase run start_run
	phase readme readme_calls
	phase stop stop_run
	phase test make -C "$src" test
	[ "$(stat -f -c %T /)" != tmpfs ] || log "the root (tmpfs) holds $(df -h --output=used / | tail -n1 | tr -d ' ')"
	log "phase times inside the root:"
	printf '  %s\n' "${PHASES[@]}" >&2
}

install_prereqs() {
	apt-get update -qq >/tmp/prereqs.log 2>&1 &&
		apt-get install -y -qq --no-install-recommends "${PREREQS[@]}" >>/tmp/prereqs.log 2>&1 ||
		{ cat /tmp/prereqs.log >&2; return 1; }
	go version
}

RUN_LOG=/tmp/make-run.log
RUN_PID=
start_run() {
	local timeout=${FRESH_RUN_TIMEOUT:-1500} t0=$SECONDS next=60
	# Job control gives `make run` its own process group, where Ctrl-C (SIGINT) reaches it as
	# it would from a terminal (without it a background job ignores SIGINT).
	: >"$RUN_LOG"
	set -m
	(cd "$SRC" && exec make run) >"$RUN_LOG" 2>&1 &
	RUN_PID=$!
	set +m
	until grep -q '^DDS is running' "$RUN_LOG"; do
		if ! kill -0 "$RUN_PID" 2>/dev/null; then
			run_failed "make run exited before printing its banner"
			return 1
		fi
		if [ $((SECONDS - t0)) -ge "$timeout" ]; then
			run_failed "no banner from make run after ${timeout}s"
			return 1
		fi
		if [ $((SECONDS - t0)) -ge "$next" ]; then
			log "waiting for the banner ($((SECONDS - t0))s): $(tail -n1 "$RUN_LOG")"
			next=$((next + 60))
		fi
		sleep 1
	done
	sleep 0.2 # the banner's remaining lines
	sed -n '/^DDS is running/,/Admin key/p' "$RUN_LOG" >&2
}

run_failed() {
	local f
	log "$1; the output of make run:"
	sed 's/^/  | /' "$RUN_LOG" >&2
	for f in /root/.cache/dds/logs/*.log "$SRC"/.dds/logs/*.log; do
		[ -f "$f" ] || continue
		log "last lines of $f:"
		tail -n 30 "$f" | sed 's/^/  | /' >&2
	done
}

# readme_calls runs the shell blocks of README.md's "Your first five minutes" as written, with
# curl wrapped to record each answer, then checks every answer. A README edit that breaks a call
# (or adds one) fails here.
readme_calls() {
	local readme=$SRC/README.md out=/tmp/readme-calls script=/tmp/readme-calls.sh
	local key tenant
	key=$(sed -n 's/^ *Admin key: *\([^ ]*\).*/\1/p' "$RUN_LOG" | head -n1)
	tenant=$(sed -n 's/^ *Tenant: *[^ ]* *(\([^)]*\)).*/\1/p' "$RUN_LOG" | head -n1)
	[ -n "$key" ] && [ -n "$tenant" ] || { log "no admin key or tenant id in the banner"; return 1; }
	rm -rf "$out" && mkdir -p "$out"
	# The sh blocks of the section, minus the two placeholders the reader fills in by hand.
	awk '/^## Your first five minutes/ { on = 1; next } /^## / { on = 0 }
		on && /^```sh/ { code = 1; next } on && /^```/ { code = 0; next }
		on && code' "$readme" | grep -Ev '^export (KEY|TENANT)=' >"$script"
	[ -s "$script" ] || { log "no sh blocks under '## Your first five minutes' in README.md"; return 1; }
	(
		set -e
		export KEY=$key TENANT=$tenant
		# The count lives in a file: a call inside $(...) runs in a subshell. The body goes to
		# stdout as curl's would, so a README line that captures it (USER_TOKEN=$(curl ...)) works.
		echo 0 >"$out/.n"
		curl() {
			local n
			n=$(($(cat "$out/.n") + 1))
			echo "$n" >"$out/.n"
			printf '%s\n' "$*" >"$out/$n.cmd"
			command curl -sS --max-time 30 -o "$out/$n.body" -w '%{http_code}' "$@" >"$out/$n.status"
			cat "$out/$n.body"
		}
		# shellcheck disable=SC1090
		. "$script"
	) || { log "a README call failed to run"; return 1; }

	local fail=0 calls
	calls=$(find "$out" -name '*.cmd' | wc -l)
	# expect N STATUS PATTERN... : answer N has STATUS and matches every extended regex.
	expect() {
		local n=$1 status=$2 p got
		shift 2
		if [ ! -f "$out/$n.status" ]; then
			log "README call $n: missing (the README has $calls calls)"
			fail=1
			return
		fi
		got=$(cat "$out/$n.status")
		if [ "$got" != "$status" ]; then
			log "README call $n answered $got, want $status: $(cat "$out/$n.cmd")"
			log "  body: $(head -c 600 "$out/$n.body")"
			fail=1
			return
		fi
		for p in "$@"; do
			if ! grep -Eq -- "$p" "$out/$n.body"; then
				log "README call $n: answer does not match /$p/: $(cat "$out/$n.cmd")"
				log "  body: $(head -c 600 "$out/$n.body")"
				fail=1
				return
			fi
		done
		log "README call $n: $got as expected"
	}
	# Patterns are extended regexes; " *: *" allows for either JSON spacing.
	expect 1 201 '"name" *: *"shop"' '"Product"' '"IN_CATEGORY"'
	expect 2 201 '"name" *: *"Desk lamp"' '"id" *: *"'
	expect 3 201 '"name" *: *"Floor lamp"'
	expect 4 400 '"code" *: *"VALIDATION_ERROR"' '"field" *: *"name"' '"field" *: *"price"'
	expect 5 200 '"Desk lamp"' '"count" *: *1 *[,}]'
	expect 6 200 '"Desk lamp"' '"Floor lamp"'
	expect 7 200 '"Desk lamp"'
	expect 8 200 '"products" *: *\[\{[^]]*"Desk lamp"' '"productsCount" *: *2 *[,}]'
	expect 9 200 'type Product'
	expect 10 201 '"key" *: *"dds_live_' 'entity:Product:read'
	expect 11 201 '"name" *: *"shopper"'
	expect 12 201 '"accessToken" *: *"'
	expect 13 200 '"credential" *: *"userToken"' '"userId" *: *"alice"' '"shopper"'
	grep -q '"errors"' "$out/8.body" && { log "README call 8 (GraphQL) answered errors: $(cat "$out/8.body")"; fail=1; }
	[ "$calls" -eq 13 ] || { log "README has $calls calls, this check knows 13: update readme_calls"; fail=1; }
	[ "$fail" -eq 0 ]
}

stop_run() {
	local t0=$SECONDS port
	kill -INT -- "-$RUN_PID" # Ctrl-C, as the README says
	while kill -0 "$RUN_PID" 2>/dev/null; do
		[ $((SECONDS - t0)) -lt 60 ] || { run_failed "make run still running 60s after Ctrl-C"; return 1; }
		sleep 0.5
	done
	wait "$RUN_PID" || true
	# Everything make run started must be gone: nothing listens on the stack's ports.
	for port in 54329 7233 8233 8080; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			run_failed "port $port still answers after Ctrl-C stopped make run"
			return 1
		fi
	done
}

# =============================================================================================
# In the new mount and pid namespaces (pid 1): mounts, then chroot.
# =============================================================================================
in_namespace() {
	local root=$1 gomod=$2 gocache=$3 tarball=$4 repo=$5 commit=$6 tmpfs=$7
	[ "$tmpfs" != 1 ] || mount -t tmpfs -o mode=755 tmpfs "$root"
	phase root make_root "$tarball" "$root"
	# The clone sits at the same path inside the root as the repository outside it: Go's build
	# cache (shared) keys a package by its directory, so the `make test` that CI runs on the host
	# afterwards finds every package of this commit compiled (minutes of CI saved); what the
	# check proves is unchanged, since nothing inside the root comes from that cache but
	# compiler output for the same sources.
	phase clone git clone -q --no-checkout "$repo" "$root$repo"
	git -C "$root$repo" -c advice.detachedHead=false checkout -q "$commit" || die "checkout $commit failed"
	cp "${BASH_SOURCE[0]}" "$root/root/fresh-check.sh"
	log "== chroot $root"

	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" # PostgreSQL's shared memory, private
	mkdir -p "$root/usr/local/go" "$root$gomod" "$root$gocache"
	mount --bind /usr/local/go "$root/usr/local/go"
	mount -o remount,bind,ro "$root/usr/local/go"
	mount --bind "$gomod" "$root$gomod"
	mount --bind "$gocache" "$root$gocache"
	local pass=() v
	# The machine's own network settings (a proxy, a CA bundle for a TLS-inspecting egress).
	for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY NODE_EXTRA_CA_CERTS \
		SSL_CERT_FILE CURL_CA_BUNDLE GIT_SSL_CAINFO GOPROXY GOSUMDB GONOSUMDB GOPRIVATE; do
		[ -n "${!v:-}" ] && pass+=("$v=${!v}")
	done
	exec chroot "$root" /usr/bin/env -i "${pass[@]}" TERM=dumb CI=true \
		GOMODCACHE="$gomod" GOCACHE="$gocache" SRC="$repo" FRESH_RUN_TIMEOUT="${FRESH_RUN_TIMEOUT:-1500}" \
		/bin/bash /root/fresh-check.sh --in-root
}

# =============================================================================================
# On the host: the root, the clone, the namespaces, the cleanup.
# =============================================================================================
bootstrap() { # bootstrap TARBALL: debootstrap a pristine root and cache it
	local tarball=$1 dir mirror codename
	command -v debootstrap >/dev/null || {
		log "apt-get install debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
			die "apt-get install debootstrap failed"
	}
	# shellcheck source=deploy/apt-mirror.sh
	. "$REPO/deploy/apt-mirror.sh"
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	mirror=$(mirror_uri "$SUITE")
	[ -n "$mirror" ] || mirror=$(mirror_uri "$codename")
	[ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources (/etc/apt)"
	dir=$(mktemp -d /var/tmp/dds-debootstrap.XXXXXX)
	log "debootstrap --variant=minbase $SUITE from $mirror (cached afterwards as $tarball)"
	if ! debootstrap --variant=minbase "$SUITE" "$dir" "$mirror" >"$dir.log" 2>&1; then
		tail -n 30 "$dir.log" >&2
		rm -rf --one-file-system "$dir"
		die "debootstrap failed (log $dir.log)"
	fi
	rm -f "$dir.log"
	chmod 755 "$dir" # mktemp made it 0700; it becomes the root's /
	mkdir -p "$(dirname "$tarball")" &&
		tar -C "$dir" --numeric-owner -czf "$tarball.tmp" . &&
		mv "$tarball.tmp" "$tarball" || die "could not write $tarball"
	rm -rf --one-file-system "$dir"
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "${WORK:-}" ] && [ -d "$WORK" ]; then
		if grep -q " $WORK[/ ]" /proc/self/mountinfo; then
			log "something is still mounted under $WORK; not deleting it"
		elif [ "${FRESH_KEEP:-0}" = 1 ]; then
			log "kept the root in $WORK"
		else
			local t0=$SECONDS
			rm -rf --one-file-system "$WORK"
			log "removed the root in $((SECONDS - t0))s"
		fi
	fi
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc) after $((SECONDS))s"
	exit "$rc"
}

main() {
	[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
	REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	local cache=${DDS_CACHE:-$HOME/.cache/dds} commit tarball gomod gocache
	tarball=$cache/fresh/debian-$SUITE-minbase.tar.gz
	commit=$(git -C "$REPO" rev-parse HEAD)
	[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] ||
		log "note: uncommitted changes in $REPO are not part of the check (it clones $commit)"
	gomod=$(go env GOMODCACHE)
	gocache=$(go env GOCACHE)

	WORK=${FRESH_DIR:-$(mktemp -d /var/tmp/dds-fresh.XXXXXX)}
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	local root=$WORK/root tmpfs=${FRESH_TMPFS:-}
	mkdir -p "$root"
	[ -f "$tarball" ] || phase bootstrap bootstrap "$tarball"
	if [ -z "$tmpfs" ]; then # in memory when there is plenty: nothing to delete afterwards
		tmpfs=0
		[ "$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)" -lt $((8 * 1024 * 1024)) ] || tmpfs=1
	fi
	log "checking $commit ($(git -C "$REPO" log -1 --format=%s "$commit"))"

	log "== in new mount and pid namespaces (unshare --mount --pid --fork), root $root$([ "$tmpfs" = 1 ] && echo ' (tmpfs)')"
	local t0=$SECONDS
	unshare --mount --pid --fork --kill-child --propagation private \
		bash "${BASH_SOURCE[0]}" --namespace "$root" "$gomod" "$gocache" "$tarball" "$REPO" "$commit" "$tmpfs" ||
		die "inside the root, after $((SECONDS - t0))s (see above)"
	PHASES+=("$(printf '%-8s %5ds' inside $((SECONDS - t0)))")
	log "passed in ${SECONDS}s:"
	printf '  %s\n' "${PHASES[@]}" >&2
}

make_root() { # make_root TARBALL DIR
	local tarball=$1 root=$2
	mkdir -p "$root" && tar -C "$root" --numeric-owner -xzf "$tarball" || return 1
	chmod 755 "$root"
	# The root is thrown away: its dpkg need not fsync every file it unpacks (minutes saved on
	# the several hundred packages of the first install; what gets installed is the same).
	echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/dds-fresh-check-unsafe-io"
	# The host's trust store and name resolution (a fresh machine has its own; this one may sit
	# behind a TLS-inspecting proxy whose CA only the host's bundle has).
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
	cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
	if compgen -G '/usr/local/share/ca-certificates/*' >/dev/null; then
		cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
	fi
}

case ${1:-} in
--in-root) in_root ;;
--namespace) shift; in_namespace "$@" ;;
"") main ;;
*) echo "usage: $0" >&2; exit 2 ;;
esac
