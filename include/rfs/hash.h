/*
 * hash.h - the three directory-name hash functions of ReiserFS v3 and the
 * mapping from a name to its directory entry offset.
 *
 * All three treat name bytes as SIGNED char, as the kernel and reiserfsprogs do;
 * every result is computed in explicit 32-bit modular arithmetic, so the values
 * are exact on any host.  rfs_hash_selftest() checks them against the vectors of
 * the format reference; callers refuse hash-based verdicts when it fails.
 */
#ifndef RFS_HASH_H
#define RFS_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

uint32_t rfs_hash_r5(const uint8_t *name, size_t len);
uint32_t rfs_hash_tea(const uint8_t *name, size_t len);
uint32_t rfs_hash_rupasov(const uint8_t *name, size_t len);

/* Raw hash under a superblock hash code (1 tea, 2 rupasov, 3 r5); 0 for others. */
uint32_t rfs_hash_by_code(unsigned code, const uint8_t *name, size_t len);

/* The hash part of a directory entry offset for name: bits 7..30 of the hash,
 * 128 when those are all zero; 1 for ".", 2 for "..".  The stored offset is
 * this value plus a generation number 0..127. */
uint32_t rfs_hash_entry_offset(unsigned code, const uint8_t *name, size_t len);

/* Whether a stored entry offset (generation bits ignored; "." and ".." only at
 * exactly 1 and 2) is name's under code:
 * the one test behind check's PR_DIR_BAD_HASH, the superblock hash detection and
 * rebuild's hash votes, so all three agree on what "confirmed" means. */
bool rfs_hash_offset_matches(unsigned code, const uint8_t *name, size_t len, uint32_t offset);

/* "tea", "rupasov", "r5", or "unset"/"unknown". */
const char *rfs_hash_name(unsigned code);
/* Parses a hash name ("r5", "tea", "rupasov" or "yura"); 0 if unknown. */
unsigned rfs_hash_code_from_name(const char *s);

/* Known-answer test of all three functions.  RFS_OK or RFS_ERR_SELFTEST. */
rfs_status rfs_hash_selftest(struct rfs_error *err);

enum { RFS_HASH_GEN_MASK = 0x7f, RFS_HASH_VALUE_MASK = 0x7fffff80 };

#endif
