/*
 * sha256_ni.h - SHA-256 block compression on the x86 SHA extensions
 * (src/sha256_ni.c), for sha256.c only.
 *
 * Invariant: sha256_ni_blocks() may be called only after
 * sha256_ni_available() returned true; it then computes exactly what the
 * portable compression function computes, for n consecutive 64-byte blocks.
 */
#ifndef RFS_SHA256_NI_H
#define RFS_SHA256_NI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The 64 round constants of FIPS 180-4 4.2.2 (defined in sha256.c). */
extern const uint32_t sha256_k[64];

bool sha256_ni_available(void);
void sha256_ni_blocks(uint32_t h[8], const uint8_t *p, size_t n);

#endif
