#!/bin/bash
# age-layout.sh: where an aged chunkfs volume's extents come from. Reads
# what bench/age-bench.sh --keep leaves in its directory (chunkfs-aged.hist:
# how age_bench wrote each file of the replay; chunkfs-aged.files: each
# file's extents by age_count -l) and prints, for the replay's files, the
# extents by how many sync intervals the file grew in (each a placement of
# its own through chunkfsd: created, then appended to after a COMMIT) and
# by size, and the extra extents (beyond one a file) each group holds; then
# the probe set's. A file counts in several groups; the share is of all
# extra extents of the volume.
#
# usage: bash bench/age-layout.sh DIR
set -u
dir=${1:?usage: age-layout.sh DIR (kept by age-bench.sh --keep)}
[ -f "$dir/chunkfs-aged.hist" ] && [ -f "$dir/chunkfs-aged.files" ] ||
	{ echo "age-layout: $dir has no chunkfs-aged.hist and .files (age-bench.sh --keep)" >&2; exit 1; }
awk '
	function kv(line, key,   i, n, a, b) {
		n = split(line, a, " ")
		for (i = 1; i <= n; i++) { if (split(a[i], b, "=") == 2 && b[1] == key) return b[2] }
		return ""
	}
	function sizeclass(s) {
		return s < 64 * 1024 ? "a <64K" : s < 1048576 ? "b 64K-1M" : s < 8388608 ? "c 1M-8M" : "d >=8M"
	}
	function add(g, e) { n[g]++; ext[g] += e; one[g] += e == 1; extra[g] += e - 1 }
	FNR == NR { gs[$2] = kv($0, "grow_syncs"); ap[$2] = kv($0, "appends"); next }
	$1 == "file" {
		e = kv($0, "extents"); s = kv($0, "size")
		all_extra += e - 1
		if ($2 ~ /^\/age\//) {
			g = gs[$2] + 0
			add("grew " (g == 1 ? "1" : g == 2 ? "2" : g <= 4 ? "3-4" : g <= 16 ? "5-16" : "17+") " times", e)
			add("size " sizeclass(s), e)
			if (g == 1) add("grew once, size " sizeclass(s), e)
			else add("grew 2+, size " sizeclass(s), e)
		} else {
			add("probe " ($2 ~ /\/large\// ? "large" : "small"), e)
		}
	}
	END {
		printf "%-32s %7s %8s %8s %7s %12s\n", "group", "files", "extents", "ext/file", "1-ext", "extra (share)"
		for (g in n) rows[++k] = g
		for (i = 1; i <= k; i++) for (j = i; j > 1 && rows[j - 1] > rows[j]; j--) { t = rows[j]; rows[j] = rows[j - 1]; rows[j - 1] = t }
		for (i = 1; i <= k; i++) {
			g = rows[i]
			printf "%-32s %7d %8d %8.2f %6.1f%% %6d (%4.1f%%)\n", g, n[g], ext[g], ext[g] / n[g],
				100 * one[g] / n[g], extra[g], all_extra ? 100 * extra[g] / all_extra : 0
		}
	}' "$dir/chunkfs-aged.hist" "$dir/chunkfs-aged.files"

# How close together the probe's small files lie, young and aged: taken in
# the order age_bench wrote them (by name), the share whose first block
# follows the last block of the file written before it (same chunk), and
# the median distance between the two in blocks; then how many 1 MiB
# stretches of the volume hold them (fewer: more of them a cold read's
# read-ahead can bring in together).
for st in young aged; do
	f=$dir/chunkfs-$st.files
	[ -f "$f" ] || continue
	grep ' /probe/s[0-9]*/' "$f" | sort -k2,2 | awk -v st="$st" '
		function kv(line, key,   i, n, a, b) {
			n = split(line, a, " ")
			for (i = 1; i <= n; i++) { if (split(a[i], b, "=") == 2 && b[1] == key) return b[2] }
			return ""
		}
		{
			nr = split(kv($0, "runs"), r, ",")
			split(r[1], a, "[@:]"); len = a[1]; ch = a[2]; pb = a[3]
			if (n++ && ch == pch) { d = pb - pend; dist[++nd] = d < 0 ? -d : d; next_to += d == 0 }
			else if (n > 1) dist[++nd] = 1e9
			for (i = 1; i <= nr; i++) { split(r[i], a, "[@:]"); mib[a[2] ":" int(a[3] / 256)] = 1 }
			pch = ch; split(r[nr], a, "[@:]"); pend = a[3] + a[1]
		}
		END {
			if (!n) exit
			for (i = 1; i <= nd; i++) for (j = i; j > 1 && dist[j - 1] > dist[j]; j--) { t = dist[j]; dist[j] = dist[j - 1]; dist[j - 1] = t }
			for (k in mib) m++
			med = dist[int((nd + 1) / 2)]
			printf "probe small files, %s: %d with blocks, %.1f%% right after the one written before, median distance %s blocks, in %d stretches of 1 MiB\n",
				st, n, 100 * next_to / (n - 1), (med >= 1e9 ? "(another chunk)" : med), m
		}'
done
