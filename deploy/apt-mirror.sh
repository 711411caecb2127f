# deploy/apt-mirror.sh — sourced by install.sh and fresh-check.sh (not run on its own).
#
# mirror_uri CODENAME prints the URI of the first apt source serving the Debian main archive for
# that release (deb822 *.sources first, then the one-line format), or nothing. Never a constant:
# the machine's own apt configuration decides which mirror is used.
mirror_uri() {
	local codename=$1 f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$(basename "$f")" = dds-src.sources ] && continue
		awk -v want="$codename" '
			function flush() { if (uri != "" && hit) { print uri; found = 1; exit } uri = ""; hit = 0 }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]*#/ { next }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
			END { if (!found) flush() }' "$f"
	done | head -n1 | grep . && return 0
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v want="$codename" '
			$1 == "deb" { sub(/\[[^]]*\][ \t]*/, ""); if ($3 == want) { print $2; exit } }'
}
