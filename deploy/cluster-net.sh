#!/usr/bin/env bash
# deploy/cluster-net.sh — the network namespace make cluster-check runs one `dds serve` in, so
# that a fault can cut that server off from Postgres while the balancer still reaches it.
#
#   deploy/cluster-net.sh up NAME N     create namespace NAME with two veth pairs to the host:
#       the database link  host 10.231.N.1 <-> NAME 10.231.N.2   (Postgres, PgBouncer, Temporal)
#       the balancer link  host 10.232.N.1 <-> NAME 10.232.N.2   (HAProxy -> the server)
#     The namespace has no default route: each /30 is reachable only over its own pair, so a
#     database link that is down leaves the server no way to Postgres (the host accepts packets
#     for any of its addresses on any interface, so a route over the balancer link would do).
#     Anything left from an earlier run under the same names is removed first.
#   deploy/cluster-net.sh cut NAME      take the database link down (host side: the server's
#                                       packets are dropped, its connections stall as on a real cut)
#   deploy/cluster-net.sh restore NAME  bring it up again
#   deploy/cluster-net.sh down NAME     delete the namespace (and with it both pairs)
#
# Needs root (CAP_NET_ADMIN) and iproute2. Interface names are NAME-db/NAME-lb on the host side,
# so NAME has at most 12 characters.
set -euo pipefail

die() { printf 'cluster-net: ERROR: %s\n' "$*" >&2; exit 1; }

cmd=${1:-}
name=${2:-}
[ -n "$name" ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ ${#name} -le 12 ] || die "namespace name $name is longer than 12 characters"
command -v ip >/dev/null || die "iproute2 (ip) is not installed"

down() {
	if ip netns list | awk '{ print $1 }' | grep -qx "$name"; then ip netns delete "$name"; fi
	# A host side whose peer was never moved into the namespace survives its deletion.
	local l
	for l in "$name-db" "$name-lb"; do
		if ip link show "$l" >/dev/null 2>&1; then ip link delete "$l"; fi
	done
}

up() {
	local n=${1:?up needs the subnet number N (1-254)}
	case $n in '' | *[!0-9]*) die "N must be a number, not $n" ;; esac
	[ "$n" -ge 1 ] && [ "$n" -le 254 ] || die "N must be 1-254"
	down
	# A half-built namespace is removed again.
	trap 'down' ERR
	ip netns add "$name"
	ip -n "$name" link set lo up
	local kind net
	for kind in db lb; do
		case $kind in db) net=10.231.$n ;; lb) net=10.232.$n ;; esac
		ip link add "$name-$kind" type veth peer name "$kind" netns "$name"
		ip addr add "$net.1/30" dev "$name-$kind"
		ip link set "$name-$kind" up
		ip -n "$name" addr add "$net.2/30" dev "$kind"
		ip -n "$name" link set "$kind" up
	done
	trap - ERR
}

case $cmd in
up) up "${3:-}" ;;
cut) ip link set "$name-db" down ;;
restore) ip link set "$name-db" up ;;
down) down ;;
*) die "unknown command $cmd (up, cut, restore, down)" ;;
esac
