#!/bin/sh
# The systemd units as built (etc/*.service from their .in files): the
# settings issue 8 asks for are there, and `systemd-analyze verify` finds
# nothing to say about either (with ExecStart pointing at the binaries just
# built, since verify checks that the executables exist).
. "$(dirname "$0")/functions.sh"
requires systemd-analyze
units="$builddir/etc/chunkfsd.service $builddir/etc/chunkfs-nbd@.service
	$builddir/etc/chunkfs-scrub.service $builddir/etc/chunkfs-scrub.timer"
for u in $units; do
	[ -f "$u" ] || fail "$u was not built"
done

# has UNIT LINE: the unit has exactly this line.
has() {
	grep -qxF -- "$2" "$1" || fail "$(basename "$1") lacks the line '$2'"
}
d=$builddir/etc/chunkfsd.service
for line in Type=notify 'ExecReload=/bin/kill -HUP $MAINPID' Restart=on-failure \
	ProtectSystem=strict ReadWritePaths=/var/lib/chunkfs ProtectHome=yes PrivateTmp=yes \
	NoNewPrivileges=yes CapabilityBoundingSet=CAP_NET_BIND_SERVICE RuntimeDirectory=chunkfs \
	StateDirectory=chunkfs; do
	has "$d" "$line"
done
grep -q '^ExecStart=/.*/chunkfsd -f -c /.*/chunkfsd.conf$' "$d" ||
	fail "chunkfsd.service: ExecStart is not 'chunkfsd -f -c CONFIG' with absolute paths"
n=$builddir/etc/chunkfs-nbd@.service
has "$n" "CapabilityBoundingSet=CAP_NET_BIND_SERVICE"
has "$n" "ProtectSystem=strict"
grep -q 'chunkfs volume=${CHUNKFS_VOLUME}' "$n" || fail "chunkfs-nbd@.service does not run the chunkfs plugin"
grep -q 'default-export=%i exportname=%i exportname-strict=true' "$n" ||
	fail "chunkfs-nbd@.service does not limit the server to chunk %i"
grep -q '^EnvironmentFile=/.*/default/chunkfs-nbd$' "$n" || fail "chunkfs-nbd@.service: no EnvironmentFile"
s=$builddir/etc/chunkfs-scrub.service
grep -q '^ExecStart=/.*/chunkfsctl scrub start$' "$s" || fail "chunkfs-scrub.service does not run chunkfsctl scrub start"
has "$s" "Type=oneshot"
has "$builddir/etc/chunkfs-scrub.timer" "OnCalendar=weekly"
has "$builddir/etc/chunkfs-scrub.timer" "WantedBy=timers.target"

mkdir -p "$tmp/units"
sed -e "s|^ExecStart=/[^ ]*/chunkfsctl |ExecStart=$builddir/chunkfsctl |" "$s" >"$tmp/units/chunkfs-scrub.service"
cp "$builddir/etc/chunkfs-scrub.timer" "$tmp/units/"
sed -e "s|^\(Exec[A-Za-z]*=\)/[^ ]*/chunkfsd |\1$builddir/chunkfsd |" "$d" >"$tmp/units/chunkfsd.service"
sed -e "s|^ExecStart=[^ ]*nbdkit |ExecStart=$(command -v nbdkit || echo /usr/bin/nbdkit) |" "$n" \
	>"$tmp/units/chunkfs-nbd@.service"
cp "$tmp/units/chunkfs-nbd@.service" "$tmp/units/chunkfs-nbd@3.service"
# verify runs man(1) on every Documentation= page: they are the pages built.
for page in "$builddir"/doc/*.[158]; do
	sec=${page##*.}
	mkdir -p "$tmp/man/man$sec"
	cp "$page" "$tmp/man/man$sec/"
done
MANPATH=$tmp/man:$(manpath 2>/dev/null || echo /usr/share/man)
export MANPATH
cd "$tmp/units" || fail "cd"
systemd-analyze verify ./chunkfsd.service ./chunkfs-nbd@3.service ./chunkfs-scrub.service \
	./chunkfs-scrub.timer >"$tmp/verify.out" 2>&1
status=$?
if grep -qi 'failed to connect to bus\|not booted with systemd\|running in a container' "$tmp/verify.out" &&
	[ "$status" -ne 0 ]; then
	cat "$tmp/verify.out"
	echo "SKIP: systemd-analyze verify cannot run here"
	exit 77
fi
cat "$tmp/verify.out"
[ "$status" -eq 0 ] || fail "systemd-analyze verify exited with $status"
[ ! -s "$tmp/verify.out" ] || fail "systemd-analyze verify printed warnings (above)"
# The hardening as systemd rates it (0 best, 10 worst): at most 3.0.
systemd-analyze security --offline=yes --threshold=30 ./chunkfsd.service >"$tmp/security.out" 2>&1 ||
	{ tail -3 "$tmp/security.out"; fail "systemd-analyze security rates chunkfsd.service above 3.0"; }
grep 'Overall exposure level' "$tmp/security.out"
echo "PASS: both units have the settings asked for; systemd-analyze verify is silent on them"
