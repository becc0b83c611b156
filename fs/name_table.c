/* The one table of name patterns that placement knows (fs/name_table.h):
 * each pattern with its expected size class and write behaviour. The
 * order matters: the first match wins, so a suffix that names the
 * content (*.tar, *.log) comes before the loose infix *lock*. Only
 * NAME_SIZE_LARGE changes placement today (a large-file chunk when the
 * volume has one); the other classes say what delayed allocation and a
 * learned predictor would start from. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fs/fs.h"
#include "fs/name_table.h"

struct name_rule {
	const char *pattern;
	enum name_size size;
	enum name_write write;
};

static const struct name_rule rules[] = {
	/* media, written once and large */
	{ "*.mp4", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.mkv", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.avi", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.mov", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.webm", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.mp3", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.flac", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.wav", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	/* disk images and virtual machine disks */
	{ "*.iso", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.img", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.qcow2", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.vmdk", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.vdi", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.squashfs", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	/* archives and compressed files (a rotated, compressed log too) */
	{ "*.tar", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.tgz", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.gz", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.xz", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.zst", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.bz2", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.zip", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.7z", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.rar", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.deb", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	{ "*.rpm", NAME_SIZE_LARGE, NAME_WRITE_ONCE },
	/* logs and journals: start small, grow by appends */
	{ "*.log", NAME_SIZE_GROWS, NAME_WRITE_APPEND },
	{ "*.journal", NAME_SIZE_GROWS, NAME_WRITE_APPEND },
	/* lock and pid files: stay empty (or a few bytes) */
	{ "*.pid", NAME_SIZE_EMPTY, NAME_WRITE_NONE },
	{ "*.lck", NAME_SIZE_EMPTY, NAME_WRITE_NONE },
	{ "*lock*", NAME_SIZE_EMPTY, NAME_WRITE_NONE },
	/* source code and build files: small, rewritten whole by editors */
	{ "*.c", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.h", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.cc", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.cpp", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.hpp", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.py", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.sh", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.rs", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.go", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.java", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.js", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.ts", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.mk", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "makefile", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	/* configuration and text */
	{ "*.conf", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.cfg", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.ini", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.json", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.yaml", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.yml", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.toml", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.xml", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.md", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.txt", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.html", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.css", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	/* editors' and tools' temporary files */
	{ "*.swp", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*.tmp", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
	{ "*~", NAME_SIZE_SMALL, NAME_WRITE_REWRITE },
};

static int lower(int ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

/* a[0..n) equals b[0..n), ignoring ASCII case. */
static int same(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* Does name[0..len) match pattern: *SUFFIX (with at least one byte
 * before it), PREFIX*, *INFIX* (anywhere) or an exact name? */
static int matches(const char *pattern, const char *name, size_t len)
{
	size_t plen = strlen(pattern);
	int lead = plen > 0 && pattern[0] == '*';
	int trail = plen > 1 && pattern[plen - 1] == '*';
	const char *core = pattern + lead;
	size_t n = plen - (size_t)lead - (size_t)trail;

	if (n > len)
		return 0;
	if (lead && trail) {
		for (size_t i = 0; i + n <= len; i++)
			if (same(name + i, core, n))
				return 1;
		return 0;
	}
	if (lead) /* something before the suffix: ".gz" alone is no archive */
		return n < len && same(name + len - n, core, n);
	if (trail)
		return same(name, core, n);
	return n == len && same(name, core, n);
}

int name_table_lookup(const char *name, size_t len, struct name_hint *out)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		if (matches(rules[i].pattern, name, len)) {
			out->pattern = rules[i].pattern;
			out->size = rules[i].size;
			out->write = rules[i].write;
			return 0;
		}
	}
	out->pattern = NULL;
	out->size = NAME_SIZE_UNKNOWN;
	out->write = NAME_WRITE_UNKNOWN;
	return -ENOENT;
}

int name_table_kind(const char *name, size_t len)
{
	struct name_hint h;

	if (name_table_lookup(name, len, &h) == 0 && h.size == NAME_SIZE_LARGE)
		return FS_KIND_LARGE;
	return FS_KIND_SMALL;
}
