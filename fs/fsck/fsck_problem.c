/* The problem table of fsck.chunkfs: every problem the passes can report,
 * once, with its stable code. Output, preen safety, exit codes and the
 * tests all come from here; pass code only names a code (fix_problem()).
 *
 * Columns:
 *   code   stable number 0xPPNNNN: PP the pass that finds it (00: any pass,
 *          reading a metadata unit through its two copies; 06: the cross-
 *          chunk confirmations of -x), NNNN the problem. Never reused.
 *   msg    what is wrong. Expansions: %i %j an inode described (its number,
 *          or which continuation or directory part it is), %I %J a stable
 *          number, %n %N numbers, %x %X the same in hex, %o a mode in octal,
 *          %b a block, %c a copy and %C the other copy, %S an inode-area
 *          slot, %s %t two strings, %e an entry name (quoted), %% a percent.
 *   fix    what the repair does (same expansions); NULL when there is none.
 *   flags  PR_PREEN_OK: safe to make unasked (-p makes it);
 *          PR_FATAL: the chunk cannot be checked further;
 *          PR_NOFIX: no repair in this version, the problem is left (exit 4);
 *          PR_COMPLETE: made only when every owner of blocks was seen. */
#include "config.h"

#include <ctype.h>
#include <stddef.h>

#include "fs/fsck/fsck_int.h"

static const struct fsck_problem problems[] = {
	/* --- any pass: metadata units and their two copies --- */
	{ PR_0_UNIT_COPY_BAD, "%s %b: copy %c is bad (%t)",
	  "rewrite it from copy %C", PR_PREEN_OK },
	{ PR_0_UNIT_BOTH_BAD, "%s %b: both copies are bad",
	  "replace it with an empty one (what it held is lost)", 0 },
	{ PR_0_UNIT_COPIES_DIFFER, "%s %b: copy %c differs from copy %C and no dirty list names the "
				   "unit", "rewrite copy %c from copy %C (the newer, or copy 0)",
	  PR_PREEN_OK },
	{ PR_0_BITMAP_BOTH_BAD, "block bitmap block %b: both copies are bad",
	  "rebuild it from the blocks found in use", PR_PREEN_OK },
	{ PR_0_UNIT_CONFLICT, "block %b: read as a %s of %n blocks, and as a %t elsewhere", NULL,
	  PR_NOFIX },
	{ PR_0_UNIT_LIST_MISMATCH, "%s %b: its copies differ in a way the newest dirty list "
				   "(transaction %n) does not explain", "rewrite copy %c from copy %C",
	  PR_PREEN_OK },
	{ PR_0_TXN_DAMAGED, "dirty list of transaction %n: %N of the %I copies it wrote in this "
			    "chunk do not carry it, though transaction %J has begun since (damage "
			    "after it committed)", "roll this chunk's part of it back (every unit it "
			    "names from its older copy)", PR_PREEN_OK },
	{ PR_0_UNIT_NO_OLDER, "%s %b: in use, but new in transaction %n, which is rolled back in "
			      "this chunk: no version before it", "replace it with an empty one (what "
			      "it held is lost)", 0 },

	/* --- pass 1: the chunk header, fixed units, inode-area slots --- */
	{ PR_1_HDR_COPY_BAD, "chunk header: copy %c is bad (%s)", "rewrite it from copy %C",
	  PR_PREEN_OK },
	{ PR_1_HDR_BOTH_BAD, "chunk header: both copies are bad (copy 0: %s)", NULL, PR_FATAL },
	{ PR_1_HDR_INVALID, "chunk header: %s", NULL, PR_FATAL },
	{ PR_1_HDR_SIZE, "chunk header: %n blocks, but the chunk's store holds only %N", NULL,
	  PR_FATAL },
	{ PR_1_HDR_UUID, "chunk header: the chunk belongs to another volume", NULL, PR_FATAL },
	{ PR_1_HDR_COPIES_DIFFER,
	  "chunk header: copy %c differs from copy %C and no dirty list names it",
	  "rewrite copy %c from copy %C (the newer, or copy 0)", PR_PREEN_OK },
	{ PR_1_HDR_INDEX, "chunk header: says chunk %n, checked as chunk %N", NULL, PR_FATAL },
	{ PR_1_HDR_RO_COMPAT, "chunk header: unknown read-only features 0x%x: this fsck cannot "
			      "check the chunk", NULL, PR_FATAL },
	{ PR_1_HDR_REBUILD, "chunk header: both copies are bad (copy 0: %s)",
	  "make it again from chunk %n's header and this chunk's own blocks", 0 },
	{ PR_1_SLOT_FREE_GARBAGE, "inode slot %S: free (mode 0) but not zeroed", "zero the slot",
	  PR_PREEN_OK },
	{ PR_1_SLOT_BAD_MODE, "inode slot %S: mode 0%o is not a file type", "zero the slot", 0 },
	{ PR_1_SLOT_BAD_IDENTITY, "inode slot %S: %s", "zero the slot", 0 },
	{ PR_1_INO_FLAGS, "%i: unknown flags 0x%x", NULL, PR_NOFIX },
	{ PR_1_INO_NEXTENTS, "%i: %n extents in the inode (at most 7)", NULL, PR_NOFIX },
	{ PR_1_INO_INLINE, "%i: %s", NULL, PR_NOFIX },
	{ PR_1_INO_NEXT_RANGE, "%i: next pointer into chunk %n (the volume has %N)", NULL,
	  PR_NOFIX },
	{ PR_1_INO_HEAD_RANGE, "%i: head in chunk %n (the volume has %N)", NULL, PR_NOFIX },
	{ PR_1_INO_DUP_STABLE, "%i: number %I found twice in this chunk (also as %j)", NULL,
	  PR_NOFIX },
	{ PR_1_INO_INLINE_LEN, "%i: inline data %n bytes, size %N", "%s", 0 },
	{ PR_1_MAP_FLAGS, "map entry %n: unknown flags 0x%X", NULL, PR_NOFIX },
	{ PR_1_FTAB_BAD, "foster table (chunk 0's records past its header's) from block %b: %s",
	  "make it again from chunk 0's header, its whole units and the other chunks' headers "
	  "(%n records found there)", 0 },
	{ PR_1_FTAB_REC_LOST, "foster table from block %b: %s; chunk %n's record is in no header "
			      "it can be taken from (%t): its %N numbers (%n:0 up) cannot be reached; "
			      "the table is left as it is (repair the host's header, then check chunk "
			      "0 again)", NULL, PR_NOFIX },
	{ PR_1_FTAB_RECS_MISSING, "foster table from block %b: %s; %t; the table is left as it is",
	  NULL, PR_NOFIX },

	/* --- pass 2: directory units and entries --- */
	{ PR_2_DIR_EXTENT, "%i: unit %n at block %b (%N blocks) is not a directory unit place",
	  NULL, PR_NOFIX },
	{ PR_2_DIR_SEQ, "%i: unit sequence numbers not increasing (%n after %N)", NULL, PR_NOFIX },
	{ PR_2_UNIT_OWNER, "directory unit %b: owner %J, but it is listed by %i", NULL, PR_NOFIX },
	{ PR_2_REC_LEN, "directory unit %b: entry at offset %n: bad rec_len %N (rest of the unit "
			"not read)", NULL, PR_NOFIX },
	{ PR_2_KIND, "directory unit %b: entry at offset %n: unknown kind %N", NULL, PR_NOFIX },
	{ PR_2_USED, "directory unit %b: entry at offset %n needs %N bytes, more than its rec_len",
	  NULL, PR_NOFIX },
	{ PR_2_NAME, "directory unit %b: entry at offset %n: bad name (%s)", NULL, PR_NOFIX },
	{ PR_2_HASH, "entry %e in unit %b: hash 0x%x, the name's is 0x%X", NULL, PR_NOFIX },
	{ PR_2_FREE_MIDDLE, "directory unit %b: free entry at offset %n (only the first may be "
			    "free)", NULL, PR_NOFIX },
	{ PR_2_EMBED_STABLE, "entry %e in unit %b names %I, its embedded inode says %J", NULL,
	  PR_NOFIX },
	{ PR_2_EMBED_BAD, "entry %e in unit %b: the embedded inode is not one (%s)", NULL,
	  PR_NOFIX },
	{ PR_2_UNITS_ORPHAN, "%n directory units of directory %I (the first at block %b) are "
			     "reached from no inode of this chunk",
	  "make them a directory for lost+found (their entries are kept)", 0 },

	/* --- pass 3: block ownership --- */
	{ PR_3_RANGE, "%i: %s at block %b (%n blocks) outside the area it may use", NULL,
	  PR_NOFIX },
	{ PR_3_DUP, "block %b: claimed by %i and by %j", NULL, PR_NOFIX },
	{ PR_3_BLOCKS, "%i: maps %n data blocks, its block count says %N", NULL, PR_NOFIX },
	{ PR_3_EXT_ORDER, "%i: extents overlap or are out of order (logical block %n)", NULL,
	  PR_NOFIX },
	{ PR_3_EXT_START, "%i: extent at logical block %n, before its continuation start %N", NULL,
	  PR_NOFIX },
	{ PR_3_EXTU_BAD, "%i: extent unit %b: %s (the rest of the chain is not read)", NULL,
	  PR_NOFIX },
	{ PR_3_EXT_NONFILE, "%i: %s", NULL, PR_NOFIX },
	{ PR_3_DUP_CLONE, "block %b: data of %i, also claimed by %j",
	  "give %j a copy of the %n blocks of its extent", 0 },
	{ PR_3_PRED_BAD, "predictor table from block %b: %s",
	  "clear it (pred_start = 0, its units freed; no file is touched)", PR_PREEN_OK },

	/* --- pass 4: link counts, the map, continuation chains --- */
	{ PR_4_ENT_FREE, "entry %e in unit %b names inode %I, which is free", "clear the entry",
	  PR_PREEN_OK },
	{ PR_4_ENT_MISSING, "entry %e in unit %b names inode %I, which is not where the map "
			    "places it", "clear the entry", 0 },
	{ PR_4_ENT_ELSEWHERE, "entry %e in unit %b names inode %I, which the map places in chunk "
			      "%n", NULL, PR_NOFIX },
	{ PR_4_ENT_NOT_HERE, "entry %e in unit %b names inode %I of chunk %n, which is not in this "
			     "chunk", NULL, PR_NOFIX },
	{ PR_4_ENT_BAD_NUMBER, "entry %e in unit %b names %I, which is no inode number",
	  "clear the entry", PR_PREEN_OK },
	{ PR_4_LINK_COUNT, "%i: link count %n, counted %N", "set it to %N", PR_PREEN_OK },
	{ PR_4_ORPHAN, "%i: no entry names it", "link it into lost+found as %s", PR_COMPLETE },
	{ PR_4_DIR_NAMES, "%i: a directory named by %n entries", NULL, PR_NOFIX },
	{ PR_4_DIR_PARENT, "%i: parent %I, but its entry is in directory %J", NULL, PR_NOFIX },
	{ PR_4_MAP_DANGLING, "map entry %n (inode %I): no such inode at its location (block %b)",
	  "free the map entry", 0 },
	{ PR_4_MAP_GEN, "%i: generation %n, its map entry says %N", NULL, PR_NOFIX },
	{ PR_4_SLOT_UNMAPPED, "%i: its map entry %s", "zero the slot", 0 },
	{ PR_4_EMBED_UNMAPPED, "%i: its map entry %s", NULL, PR_NOFIX },
	{ PR_4_CONT_ORPHAN, "%i: its head %I is not in this chunk, where it says it is",
	  "zero the slot", 0 },
	{ PR_4_CONT_BAD_HEAD, "%i: its head %j is %s", NULL, PR_NOFIX },
	{ PR_4_NEXT_BAD, "%i: next pointer to block %b offset %n, %s",
	  "end the chain there (what it held reads as zeros)", 0 },
	{ PR_4_CONT_TWICE, "%i: reached from %n inodes of this chunk", NULL, PR_NOFIX },
	{ PR_4_ROOT, "root directory %I: %s", NULL, PR_NOFIX },
	{ PR_4_WATERMARK, "%s %n is at or above the watermark %N", NULL, PR_NOFIX },
	{ PR_4_PART_HOME, "%i: a directory part in the chunk of its own head", NULL, PR_NOFIX },
	{ PR_4_ENT_FREE_KEEP, "entry %e in unit %b names inode %I, which is free, but embeds %s",
	  NULL, PR_NOFIX },
	{ PR_4_MAP_WRONG_LOC, "map entry %n (inode %I) places it at block %b, where it is not; it "
			      "is %j", "point the entry at it", 0 },
	{ PR_4_ORPHAN_KEEP, "%i: no entry names it, and it cannot be linked into lost+found: %s",
	  NULL, PR_NOFIX },
	{ PR_4_ROOT_LOST, "root directory %I: not found in this chunk",
	  "make an empty root directory with its number (the orphans go to its lost+found)", 0 },
	{ PR_4_ORPHAN_CLEAR, "%i: no entry names it, and it cannot be linked into lost+found: %s",
	  "clear it (what it held is lost)", 0 },
	{ PR_4_LF_PART_LOST, "lost+found has no part in this chunk, where its chain expects one "
			     "(%s)", "make its part anew there", 0 },
	{ PR_4_HEAD_REBUILT, "directory %I: lost with its unit, but %n parts of it survive in other "
			     "chunks", "make its head again from their back pointers", 0 },
	{ PR_4_PART_BRIDGE, "directory %I: its part in this chunk (at %s) is lost with all it "
			    "listed, and the chain goes on beyond it",
	  "put an empty part there, so that the parts beyond stay reachable", 0 },
	{ PR_4_FOSTER_DANGLING, "foster map of chunk %N, entry %n (inode %I): no such inode at its "
				"location (block %b)", "free the entry", 0 },
	{ PR_4_FOSTER_WRONG_LOC, "foster map of chunk %N, entry %n (inode %I) places it at block %b, "
				 "where it is not; it is %j", "point the entry at it", 0 },

	/* --- pass 5: the bitmap and the header counters --- */
	{ PR_5_USED_MARKED_FREE, "block bitmap: %n blocks in use are marked free (the first: %b)",
	  "mark them used", PR_PREEN_OK },
	{ PR_5_FREE_MARKED_USED, "block bitmap: %n blocks marked used are not in use (the first: "
				 "%b)", "mark them free", PR_PREEN_OK | PR_COMPLETE },
	{ PR_5_BITMAP_TAIL, "block bitmap: %n bits set beyond the end of the chunk",
	  "clear them", PR_PREEN_OK },
	{ PR_5_FREE_BLOCKS, "chunk header: free_blocks is %n, counted %N", "set it to %N",
	  PR_PREEN_OK },
	{ PR_5_USED_INODES, "chunk header: used_inodes is %n, counted %N", "set it to %N",
	  PR_PREEN_OK },
	{ PR_5_BITMAP_UNINIT, "block bitmap: never written (BITMAP_UNINIT), but %n blocks are in "
			      "use", "write the bitmap", PR_PREEN_OK },

	/* --- -x: the far end of cross-chunk references --- */
	{ PR_6_HEAD, "%i: its head %I in chunk %n %s",
	  "adopt it into lost+found: a directory part becomes a directory with its entries, a "
	  "continuation a file with its data", 0 },
	{ PR_6_NEXT, "%i: its next pointer to chunk %n block %b %s",
	  "end the chain there (what it held reads as zeros)", 0 },
	{ PR_6_MAP_LOC, "map entry %n (inode %I): at chunk %N block %b %s", NULL, PR_NOFIX },
	{ PR_6_MAP_HOME, "%i: its map entry in chunk %n %s", NULL, PR_NOFIX },
	{ PR_6_ENTRY, "entry %e names inode %I of chunk %n, which %s", NULL, PR_NOFIX },
	{ PR_6_LF_UNREACHED, "%i: a part of lost+found that its chain does not reach (its head "
			     "%I in chunk %n %s); kept", NULL, PR_NOFIX },
	{ PR_6_HEAD_CLEAR, "%i: its head %I in chunk %n %s, and it cannot be adopted (%t)",
	  "zero its slot and free its blocks (what it held is lost)", 0 },
};

const struct fsck_problem *fsck_problem_find(uint32_t code)
{
	size_t lo = 0, hi = sizeof(problems) / sizeof(problems[0]);

	/* The table is in code order. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (problems[mid].code < code)
			lo = mid + 1;
		else if (problems[mid].code > code)
			hi = mid;
		else
			return &problems[mid];
	}
	return NULL;
}

int fsck_problem_info(unsigned i, uint32_t *code, const char **msg, const char **fix,
		      uint32_t *flags)
{
	if (i >= sizeof(problems) / sizeof(problems[0]))
		return -1;
	*code = problems[i].code;
	*msg = problems[i].msg;
	*fix = problems[i].fix;
	*flags = problems[i].flags;
	return 0;
}

/* Report a problem; 1 when its repair is to be made now. */
int fix_problem(struct fsck_ctx *c, uint32_t code, const struct fsck_pctx *pc)
{
	const struct fsck_problem *p = fsck_problem_find(code);
	char msg[640], fix[256];
	const char *answer;
	int doit = 0;

	if (!p) {
		fsck_note(c, "[0x%06x] (unknown problem code)", code);
		c->res.problems++;
		c->res.unfixed++;
		return 0;
	}
	c->res.problems++;
	fsck_expand(c, p->msg, pc, msg, sizeof(msg));
	if (p->flags & PR_FATAL) {
		c->fatal = 1;
		c->res.unfixed++;
		fsck_note(c, "[0x%06x] %s. Cannot check this chunk.", code, msg);
		return 0;
	}
	if ((p->flags & PR_NOFIX) || !p->fix) {
		c->res.unfixed++;
		fsck_note(c, "[0x%06x] %s. (No repair yet: left as it is.)", code, msg);
		return 0;
	}
	fsck_expand(c, p->fix, pc, fix, sizeof(fix));
	fix[0] = (char)toupper((unsigned char)fix[0]);
	if (c->o->mode == FSCK_CHECK_ONLY) {
		answer = "not fixed (-n)";
	} else if (c->o->mode == FSCK_PREEN && !(p->flags & PR_PREEN_OK)) {
		answer = "not fixed (not safe to preen: run with -y)";
	} else if ((p->flags & PR_COMPLETE) && c->incomplete) {
		answer = "not fixed (some owners of blocks could not be read)";
	} else {
		answer = "fixed";
		doit = 1;
	}
	if (doit)
		c->res.fixed++;
	else
		c->res.unfixed++;
	fsck_note(c, "[0x%06x] %s. %s: %s.", code, msg, fix, answer);
	return doit;
}
