/*
 * sha256.h - SHA-256 (FIPS 180-4), streaming, for salvage's image and file
 * digests.  Our own implementation so that a salvage report does not depend
 * on a crypto library; rfs_sha256_selftest() checks it against the FIPS 180-2
 * known answers before any digest is trusted (style habit 18).
 *
 * Invariants: a context is usable after rfs_sha256_init(); rfs_sha256_final()
 * leaves it finished (call init again to reuse).  Messages up to 2^61 - 1
 * bytes (the bit length must fit 64 bits).
 */
#ifndef RFS_SHA256_H
#define RFS_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rfs/status.h"

enum { RFS_SHA256_LEN = 32, RFS_SHA256_HEX_LEN = 64 };

struct rfs_sha256 {
	uint32_t h[8];               /* chaining state */
	uint64_t total;              /* bytes absorbed so far */
	uint8_t block[64];           /* pending partial block */
	size_t fill;                 /* bytes in block */
};

void rfs_sha256_init(struct rfs_sha256 *c);
void rfs_sha256_update(struct rfs_sha256 *c, const void *data, size_t n);
/* Adds n zero bytes (a hole) without the caller holding a buffer of them. */
void rfs_sha256_zeros(struct rfs_sha256 *c, uint64_t n);
void rfs_sha256_final(struct rfs_sha256 *c, uint8_t out[RFS_SHA256_LEN]);

/* Writes the 64 lower-case hex digits of digest and a NUL into hex. */
void rfs_sha256_hex(const uint8_t digest[RFS_SHA256_LEN], char hex[RFS_SHA256_HEX_LEN + 1]);

/* Chooses the compression function: the CPU's SHA extensions when want is
 * true and the CPU has them (the default, decided on first use), else the
 * portable one.  Returns whether the extensions are in use.  For tests and
 * benchmarks; not thread-safe against hashing in progress. */
bool rfs_sha256_accel(bool want);

/* Known-answer test ("abc", "", the 448-bit message, a million 'a').
 * RFS_ERR_SELFTEST naming the failing vector. */
rfs_status rfs_sha256_selftest(struct rfs_error *err);

#endif
