#!/bin/sh
# fsck.chunkfs's command line on files: -j 2 finds what -j 1 finds, line
# for line; --estimate prints one line per chunk with the header's counts
# (the same as a check finds) and a total, and exits 0; an image of one
# chunk alone (dd) is recognised and checked, damaged and repaired, as that
# chunk; the flags fsck(8) passes (-a, -C FD) work; usage errors exit 16.
. "$(dirname "$0")/functions.sh"
requires dd od cmp sort


src=$tmp/src
for d in 0 1 2 3 4 5 6 7; do
	mkdir -p "$src/d$d/sub"
	for f in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do
		head -c $(((f % 5) * 2500 + 7)) /dev/zero | tr '\0' "$d" >"$src/d$d/f$f"
	done
	for f in 0 1 2 3 4; do
		echo "file $d $f" >"$src/d$d/sub/g$f"
	done
done
make_volume -s 1M -n 4 -d "$src"
vol=$tmp/volume.img

# -j 2 and -j 4 against -j 1: the same lines (in another order) and the
# same summary but for the time.
fsck_run 0 -n -f -j 1 "$vol"
sed 's/, in [0-9.]* s$//' "$tmp/out" | sort >"$tmp/j1"
grep -q "^fsck.chunkfs: 4 chunks checked (0 clean), 0 problems, 0 fixed, 0 left$" "$tmp/j1" ||
	fail "-j 1 summary: $(tail -1 "$tmp/out")"
for j in 2 4; do
	fsck_run 0 -n -f -j $j "$vol"
	sed 's/, in [0-9.]* s$//' "$tmp/out" | sort >"$tmp/j$j"
	cmp -s "$tmp/j1" "$tmp/j$j" || {
		diff "$tmp/j1" "$tmp/j$j"
		fail "-j $j output differs from -j 1"
	}
done
# Every line is whole: each starts with a chunk number or the program name.
bad=$(grep -cv '^chunk [0-3]: \|^fsck.chunkfs: ' "$tmp/out")
[ "$bad" -eq 0 ] || fail "$bad mixed lines under -j 4"

# --estimate: a line per chunk, with what the check counted, and a total.
fsck_run 0 --estimate "$vol"
[ "$(grep -c '^chunk [0-3]: [0-9,]* inodes, [0-9,]* blocks used: about [0-9.]* ms' "$tmp/out")" -eq 4 ] ||
	fail "--estimate lines: $(cat "$tmp/out")"
grep -q '^estimate: 4 chunks, [0-9,]* inodes, [0-9,]* blocks used: about [0-9.]* ms$' "$tmp/out" ||
	fail "--estimate total: $(cat "$tmp/out")"
for c in 0 1 2 3; do
	est=$(sed -n "s/^chunk $c: \([0-9,]*\) inodes, \([0-9,]*\) blocks used: about.*/\1 \2/p" \
		"$tmp/out" | tr -d ,)
	got=$(sed -n "s/^chunk $c: \([0-9]*\) inodes, \([0-9]*\) blocks used, .*/\1 \2/p" "$tmp/j1")
	[ -n "$est" ] && [ "$est" = "$got" ] || fail "chunk $c: estimate counts '$est', check '$got'"
done
fsck_run 0 --estimate -j 2 -c 1 "$vol"
[ "$(grep -c '^chunk ' "$tmp/out")" -eq 1 ] || fail "--estimate -c 1: $(cat "$tmp/out")"
out_has "estimate: 1 chunk, "
fsck_run 0 --estimate -j 2 "$vol"
grep -q '^estimate: 4 chunks, .* (with -j 2: about [0-9.]* ms)$' "$tmp/out" ||
	fail "--estimate -j 2: $(cat "$tmp/out")"
fsck_run 16 --estimate -y "$vol"
fsck_run 16 --estimate -c 9 "$vol"

# An image of chunk 3 alone.
dd if="$vol" of="$tmp/c3.img" bs=1M skip=3 count=1 status=none || fail "dd"
fsck_run 0 -n -f "$tmp/c3.img"
out_has "chunk 3: checked alone (an image of this one chunk, 1 MiB)"
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
grep "^chunk 3: [0-9]* inodes" "$tmp/j1" >"$tmp/want"
grep -qxFf "$tmp/want" "$tmp/out" || fail "chunk 3 alone counts differ: $(cat "$tmp/want")"
fsck_run 0 -n -f -c 3 "$tmp/c3.img"
fsck_run 16 -n -c 0 "$tmp/c3.img"
out_has "the image holds chunk 3 alone, not chunk 0"
fsck_run 0 --estimate "$tmp/c3.img"
out_has "estimate: 1 chunk, "
# Damaged in copy 0 of its first inode-area block; the -a of fsck(8) is -p.
itable=$(od -An -tu4 -j152 -N4 "$tmp/c3.img" | tr -d ' ')
printf '\377\377' | dd of="$tmp/c3.img" bs=1 seek=$((itable * 4096 + 200)) conv=notrunc status=none
problem="chunk 3: [0x000001] inode-area block $itable: copy 0 is bad (checksum mismatch). Rewrite it from copy 1"
fsck_run 4 -n -f "$tmp/c3.img"
out_has "$problem: not fixed (-n)."
fsck_run 1 -a -f "$tmp/c3.img"
out_has "$problem: fixed."
fsck_run 0 -n -f "$tmp/c3.img"
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
# Chunk 0 alone (of a volume of four, with no room for a second chunk).
dd if="$vol" of="$tmp/c0.img" bs=1M count=1 status=none || fail "dd"
fsck_run 0 -n -f "$tmp/c0.img"
out_has "chunk 0: checked alone (an image of this one chunk, 1 MiB)"

# -C FD: e2fsck's progress lines, for fsck(8); -C with no terminal: nothing.
"$FSCK" -n -f -C 3 "$vol" >"$tmp/out" 3>"$tmp/progress" || fail "-C 3"
printf '1 0 4 %s\n1 1 4 %s\n1 2 4 %s\n1 3 4 %s\n1 4 4 %s\n' \
	"$vol" "$vol" "$vol" "$vol" "$vol" >"$tmp/want"
cmp -s "$tmp/progress" "$tmp/want" || fail "-C 3 wrote: $(cat "$tmp/progress")"
"$FSCK" -n -f -C3 -j 2 "$vol" >"$tmp/out" 3>"$tmp/progress" || fail "-C3 -j 2"
cmp -s "$tmp/progress" "$tmp/want" || fail "-C3 -j 2 wrote: $(cat "$tmp/progress")"
fsck_run 0 -n -f -C "$vol"
sed 's/, in [0-9.]* s$//' "$tmp/out" | sort | cmp -s - "$tmp/j1" || fail "-C with no terminal printed more"
fsck_run 0 -n -f -C 0 "$vol"
sed 's/, in [0-9.]* s$//' "$tmp/out" | sort | cmp -s - "$tmp/j1" || fail "-C 0 with no terminal printed more"
# On a terminal (script(1) gives one): the bar, ending at 4/4 100%.
if command -v script >/dev/null 2>&1; then
	script -qec "'$FSCK' -n -f -C '$vol'" /dev/null >"$tmp/tty" </dev/null ||
		fail "-C on a terminal"
	grep -q '4/4 chunks 100%' "$tmp/tty" || fail "no progress bar on a terminal"
	grep -q '0/4 chunks   0%' "$tmp/tty" || fail "no 0% progress bar on a terminal"
fi

# Usage errors: 16.
fsck_run 16 -n -y "$vol"
fsck_run 16 -p -y "$vol"
fsck_run 16 -j 0 "$vol"
fsck_run 16 -j x "$vol"
fsck_run 16 -c 4 "$vol"
out_has "no chunk 4 (the volume has 4)"
fsck_run 16 -q "$vol"
fsck_run 16
fsck_run 16 "$vol" "$vol"
fsck_run 0 -n -n -f "$vol"
fsck_run 8 -n "$tmp/no-such.img"
echo "PASS: -j, --estimate, lone chunk images, -C and fsck(8) flags"
