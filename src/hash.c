/*
 * hash.c - r5, tea ("keyed") and rupasov ("yura") name hashes, written from the
 * description in ../shared/docs/reiserfs-format.md section 1.8.
 *
 * Every byte enters as a signed value (-128..127) and every operation is done
 * on uint32_t, so overflow wraps as the on-disk values require and no signed
 * overflow or shift of a negative number happens in C.
 */
#include "rfs/hash.h"

#include <string.h>

/* Byte as the kernel's signed char, widened to u32 (sign-extended). */
static inline uint32_t sbyte(uint8_t b)
{
	return (uint32_t)(int32_t)(int8_t)b;
}

/* Arithmetic right shift by 4 of a signed byte value, as a u32. */
static inline uint32_t sbyte_shr4(uint8_t b)
{
	int v = (int8_t)b;
	int q = v >= 0 ? v / 16 : -((-v + 15) / 16);   /* floor(v / 16) */
	return (uint32_t)(int32_t)q;
}

uint32_t rfs_hash_r5(const uint8_t *name, size_t len)
{
	uint32_t a = 0;
	for (size_t i = 0; i < len; i++) {
		a += sbyte(name[i]) << 4;
		a += sbyte_shr4(name[i]);
		a *= 11;
	}
	return a;
}

static void tea_rounds(uint32_t h[2], uint32_t a, uint32_t b, uint32_t c, uint32_t d,
		       int rounds)
{
	uint32_t sum = 0, b0 = h[0], b1 = h[1];
	for (int n = 0; n < rounds; n++) {
		sum += 0x9E3779B9u;
		b0 += ((b1 << 4) + a) ^ (b1 + sum) ^ ((b1 >> 5) + b);
		b1 += ((b0 << 4) + c) ^ (b0 + sum) ^ ((b0 >> 5) + d);
	}
	h[0] += b0;
	h[1] += b1;
}

/* Four bytes as one little-endian word, each byte sign-extended first. */
static uint32_t tea_word(const uint8_t *p)
{
	return sbyte(p[0]) | sbyte(p[1]) << 8 | sbyte(p[2]) << 16 | sbyte(p[3]) << 24;
}

uint32_t rfs_hash_tea(const uint8_t *name, size_t len)
{
	uint32_t h[2] = { 0x9464a485u, 0x542e1a94u };
	uint32_t pad = (uint32_t)len | (uint32_t)len << 8;
	pad |= pad << 16;

	while (len >= 16) {
		tea_rounds(h, tea_word(name), tea_word(name + 4), tea_word(name + 8),
			   tea_word(name + 12), 6);
		name += 16;
		len -= 16;
	}
	/* Last block: whole words as above; the partial word starts as pad and
	 * takes the leftover bytes from the right; missing words are pad. */
	uint32_t w[4] = { pad, pad, pad, pad };
	size_t whole = len / 4;
	for (size_t i = 0; i < whole; i++)
		w[i] = tea_word(name + 4 * i);
	if (whole < 4) {
		for (size_t i = 4 * whole; i < len; i++)
			w[whole] = (w[whole] << 8) | sbyte(name[i]);
	}
	tea_rounds(h, w[0], w[1], w[2], w[3], 10);
	return h[0] ^ h[1];
}

uint32_t rfs_hash_rupasov(const uint8_t *name, size_t len)
{
	/* sum of (byte - '0') * 10^(len-1-i), all mod 2^32, by Horner's rule
	 * (the reference computes each power afresh, quadratic in len) */
	uint32_t a = 0;
	for (size_t i = 0; i < len; i++)
		a = a * 10 + (sbyte(name[i]) - 48u);
	/* plus the constant tail sum of k for k = max(len, 40) .. 255 */
	for (size_t k = len > 40 ? len : 40; k < 256; k++)
		a += (uint32_t)k;
	return a << 7;
}

uint32_t rfs_hash_by_code(unsigned code, const uint8_t *name, size_t len)
{
	switch (code) {
	case 1: return rfs_hash_tea(name, len);
	case 2: return rfs_hash_rupasov(name, len);
	case 3: return rfs_hash_r5(name, len);
	default: return 0;
	}
}

uint32_t rfs_hash_entry_offset(unsigned code, const uint8_t *name, size_t len)
{
	if (len == 0 || (len == 1 && name[0] == '.'))
		return 1;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return 2;
	uint32_t h = rfs_hash_by_code(code, name, len) & RFS_HASH_VALUE_MASK;
	return h ? h : 128;
}

bool rfs_hash_offset_matches(unsigned code, const uint8_t *name, size_t len, uint32_t offset)
{
	uint32_t want = rfs_hash_entry_offset(code, name, len);
	/* "." and ".." sit at fixed offsets with no generation number */
	if (want <= 2)
		return offset == want;
	return want == (offset & ~(uint32_t)RFS_HASH_GEN_MASK);
}

const char *rfs_hash_name(unsigned code)
{
	switch (code) {
	case 0: return "unset";
	case 1: return "tea";
	case 2: return "rupasov";
	case 3: return "r5";
	default: return "unknown";
	}
}

unsigned rfs_hash_code_from_name(const char *s)
{
	if (strcmp(s, "tea") == 0)
		return 1;
	if (strcmp(s, "rupasov") == 0 || strcmp(s, "yura") == 0)
		return 2;
	if (strcmp(s, "r5") == 0)
		return 3;
	return 0;
}

/* Vectors from the format reference (value before masking). */
static const struct {
	const char *name;
	uint32_t r5, tea, rupasov;
} hash_vectors[] = {
	{ "a", 0x000042f2u, 0x3a17e4e6u, 0x003e5280u },
	{ "disk.img", 0xa229cf25u, 0x03b4888fu, 0x6a0e2880u },
	{ "inner_file", 0xa7f88236u, 0xea8031a8u, 0xc6f5d280u },
	{ "lost+found", 0xfbd7df7bu, 0xdaec1218u, 0xe46ff000u },
	{ "\xc3\xa9", 0xfffdf4bau, 0x65cfcaa1u, 0x003bd580u },
	{ "abcdefghijklmnop", 0x5af9c74bu, 0x5f7662efu, 0x9d0ba500u },
	{ "abcdefghijklmnopqrstuvwxyz0123", 0x65dee777u, 0x30813238u, 0xd6855780u },
	{ "caf\xc3\xa9_\xff\x80xyz", 0x0678a66fu, 0x299ad511u, 0x0b58a400u },
	{ "12345678901", 0xc2afcd95u, 0x3ff1a092u, 0xee4c5480u },
};

rfs_status rfs_hash_selftest(struct rfs_error *err)
{
	for (size_t i = 0; i < sizeof(hash_vectors) / sizeof(hash_vectors[0]); i++) {
		const uint8_t *n = (const uint8_t *)hash_vectors[i].name;
		size_t len = strlen(hash_vectors[i].name);
		if (rfs_hash_r5(n, len) != hash_vectors[i].r5 ||
		    rfs_hash_tea(n, len) != hash_vectors[i].tea ||
		    rfs_hash_rupasov(n, len) != hash_vectors[i].rupasov)
			return rfs_error_set(err, RFS_ERR_SELFTEST, RFS_NO_BLOCK,
					     "hash known-answer test %zu failed", i);
	}
	return RFS_OK;
}
