/*
 * sha256.c - SHA-256 as specified by FIPS 180-4 section 6.2, written from the
 * standard: message schedule of 64 words, 64 rounds, big-endian words,
 * padding with 0x80, zeros and the 64-bit bit length.
 *
 * Used by salvage for the image digest (before/after, proving the image was
 * not written) and the per-file digests of the manifest.  Not constant-time;
 * nothing secret is hashed.
 */
#include "rfs/sha256.h"

#include <string.h>

#include "sha256_ni.h"

const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t p[64])
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

/* -1 undecided, 0 portable, 1 SHA extensions: decided once, on first use. */
static int accel = -1;

bool rfs_sha256_accel(bool want)
{
	accel = want && sha256_ni_available();
	return accel == 1;
}

static void compress_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
	if (accel < 0)
		accel = sha256_ni_available();
	if (accel) {
		sha256_ni_blocks(h, p, n);
		return;
	}
	for (; n > 0; n--, p += 64)
		compress(h, p);
}

void rfs_sha256_init(struct rfs_sha256 *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(c->h, iv, sizeof(iv));
	c->total = 0;
	c->fill = 0;
}

void rfs_sha256_update(struct rfs_sha256 *c, const void *data, size_t n)
{
	const uint8_t *p = data;
	c->total += n;
	if (c->fill) {
		size_t take = 64 - c->fill < n ? 64 - c->fill : n;
		memcpy(c->block + c->fill, p, take);
		c->fill += take;
		p += take;
		n -= take;
		if (c->fill < 64)
			return;
		compress_blocks(c->h, c->block, 1);
		c->fill = 0;
	}
	if (n >= 64) {
		compress_blocks(c->h, p, n / 64);
		p += n / 64 * 64;
		n %= 64;
	}
	if (n) {
		memcpy(c->block, p, n);
		c->fill = n;
	}
}

void rfs_sha256_zeros(struct rfs_sha256 *c, uint64_t n)
{
	static const uint8_t zeros[65536];
	while (n) {
		size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		rfs_sha256_update(c, zeros, k);
		n -= k;
	}
}

void rfs_sha256_final(struct rfs_sha256 *c, uint8_t out[RFS_SHA256_LEN])
{
	uint64_t bits = c->total * 8;
	c->block[c->fill++] = 0x80;
	if (c->fill > 56) {
		memset(c->block + c->fill, 0, 64 - c->fill);
		compress_blocks(c->h, c->block, 1);
		c->fill = 0;
	}
	memset(c->block + c->fill, 0, 56 - c->fill);
	for (int i = 0; i < 8; i++)
		c->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	compress_blocks(c->h, c->block, 1);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
	c->fill = 0;
}

void rfs_sha256_hex(const uint8_t digest[RFS_SHA256_LEN], char hex[RFS_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < RFS_SHA256_LEN; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 15];
	}
	hex[RFS_SHA256_HEX_LEN] = 0;
}

rfs_status rfs_sha256_selftest(struct rfs_error *err)
{
	/* FIPS 180-2 appendix B.1, B.2, B.3, and the empty message. */
	static const struct { const char *msg; unsigned repeat; const char *hex; } v[] = {
		{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  10000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct rfs_sha256 c;
		uint8_t d[RFS_SHA256_LEN];
		char hex[RFS_SHA256_HEX_LEN + 1];
		rfs_sha256_init(&c);
		for (unsigned r = 0; r < v[i].repeat; r++)
			rfs_sha256_update(&c, v[i].msg, strlen(v[i].msg));
		rfs_sha256_final(&c, d);
		rfs_sha256_hex(d, hex);
		if (strcmp(hex, v[i].hex) != 0)
			return rfs_error_set(err, RFS_ERR_SELFTEST, RFS_NO_BLOCK,
					     "SHA-256 known-answer test %zu failed", i + 1);
	}
	return RFS_OK;
}
