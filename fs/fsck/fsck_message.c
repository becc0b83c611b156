/* fsck's output: a line per note, the description of an inode in a
 * message, and the expansion of a problem's message and fix (the %
 * expansions the problem table's comment lists). */
#include "config.h"

#include <errno.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

static void emit(struct fsck_ctx *c, const char *line)
{
	if (c->o->out)
		c->o->out(c->o->ctx, line);
}

void fsck_note(struct fsck_ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->line, sizeof(c->line), "chunk %u: %s", c->index, msg);
	emit(c, c->line);
}

void fsck_describe(const struct fsck_ctx *c, const struct fsck_ino *r, char *buf, size_t n)
{
	if (!r) {
		snprintf(buf, n, "the fixed metadata region");
	} else if (r->ino.flags & OD_INF_CONT) {
		snprintf(buf, n, "%s in slot %u of inode %llu",
			 (r->ino.mode & 0170000) == 0040000 ? "directory part" : "continuation",
			 r->slot, (unsigned long long)r->ino.head_stable);
	} else if (r->slot != FSCK_NONE) {
		snprintf(buf, n, "inode %llu (slot %u)", (unsigned long long)r->ino.stable, r->slot);
	} else {
		snprintf(buf, n, "inode %llu", (unsigned long long)r->ino.stable);
	}
}

static size_t put_name(char *out, size_t room, const uint8_t *name, uint32_t len)
{
	size_t k = 0;

	if (room < 4)
		return 0;
	out[k++] = '\'';
	for (uint32_t i = 0; i < len && k + 5 < room; i++) {
		if (isprint(name[i]) && name[i] != '\'' && name[i] != '\\')
			out[k++] = (char)name[i];
		else
			k += (size_t)snprintf(out + k, room - k, "\\x%02x", name[i]);
	}
	out[k++] = '\'';
	out[k] = '\0';
	return k;
}

/* A message with its % expansions (see the table's comment). */
void fsck_expand(const struct fsck_ctx *c, const char *fmt, const struct fsck_pctx *pc,
		 char *out, size_t room)
{
	size_t k = 0;

	for (const char *p = fmt; *p && k + 1 < room; p++) {
		char tmp[320];
		if (*p != '%' || !p[1]) {
			out[k++] = *p;
			continue;
		}
		p++;
		tmp[0] = '\0';
		switch (*p) {
		case 'i':
			fsck_describe(c, pc->rec, tmp, sizeof(tmp));
			break;
		case 'j':
			fsck_describe(c, pc->rec2, tmp, sizeof(tmp));
			break;
		case 'I':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->ino);
			break;
		case 'J':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->ino2);
			break;
		case 'n':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->num);
			break;
		case 'N':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->num2);
			break;
		case 'x':
			snprintf(tmp, sizeof(tmp), "%llx", (unsigned long long)pc->num);
			break;
		case 'X':
			snprintf(tmp, sizeof(tmp), "%llx", (unsigned long long)pc->num2);
			break;
		case 'o':
			snprintf(tmp, sizeof(tmp), "%llo", (unsigned long long)pc->onum);
			break;
		case 'b':
			snprintf(tmp, sizeof(tmp), "%u", pc->blk);
			break;
		case 'c':
			snprintf(tmp, sizeof(tmp), "%d", pc->copy);
			break;
		case 'C':
			snprintf(tmp, sizeof(tmp), "%d", 1 - pc->copy);
			break;
		case 'S':
			snprintf(tmp, sizeof(tmp), "%u", pc->slot);
			break;
		case 's':
			snprintf(tmp, sizeof(tmp), "%s", pc->str ? pc->str : "");
			break;
		case 't':
			snprintf(tmp, sizeof(tmp), "%s", pc->str2 ? pc->str2 : "");
			break;
		case 'e':
			put_name(tmp, sizeof(tmp), pc->name, pc->name_len);
			break;
		case '%':
			tmp[0] = '%';
			tmp[1] = '\0';
			break;
		default:
			snprintf(tmp, sizeof(tmp), "%%%c", *p);
			break;
		}
		for (const char *q = tmp; *q && k + 1 < room; q++)
			out[k++] = *q;
	}
	out[k] = '\0';
}
