/*
 * sha256_ni.c - the SHA-256 compression function on the x86 SHA extensions
 * (SHA-NI: sha256rnds2, sha256msg1, sha256msg2), many blocks per call.
 *
 * Same function as compress() in sha256.c, only faster (about ten times on
 * the machines measured in docs/robustness.md, F7; 1.6 GB/s on one core of
 * the benchmark machine, as fast as OpenSSL there): salvage hashes the whole
 * image twice and every file once, which made hashing the slowest part of a
 * salvage.  Used only when the CPU says it has the extensions (CPUID leaf 7,
 * EBX bit 29, with SSSE3 and SSE4.1); tests/unit/test_sha256.c compares both
 * paths on random messages of every length up to a few blocks.
 *
 * State layout: the instructions keep the eight working variables as two
 * vectors, ABEF and CDGH (highest lane first); they are shuffled in from
 * h[0..7] and back out after the last block.
 */
#include "sha256_ni.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

bool sha256_ni_available(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return false;
	bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return ssse3 && sse41 && (b & (1u << 29));
}


__attribute__((target("sha,ssse3,sse4.1")))
void sha256_ni_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
	/* big-endian words: reverse the bytes of each 32-bit lane */
	const __m128i be = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i dcba = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
	__m128i hgfe = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);
	__m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
	__m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
	__m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
	__m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);

	for (; n > 0; n--, p += 64) {
		__m128i save_abef = abef, save_cdgh = cdgh;
		__m128i w[4];
		/* unrolled, w[] lives in registers and the schedule of a later
		 * group overlaps the rounds of this one; as a loop, each group
		 * waited for its words through memory (1.05 GB/s against 1.6) */
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) {
			/* w[i % 4] holds W[4i-16..4i-13] until it becomes W[4i..4i+3] */
			__m128i *cur = &w[i & 3];
			if (i < 4) {
				*cur = _mm_shuffle_epi8(
					_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), be);
			} else {
				__m128i w1 = w[(i + 1) & 3], w2 = w[(i + 2) & 3], w3 = w[(i + 3) & 3];
				__m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(*cur, w1),
							  _mm_alignr_epi8(w3, w2, 4));
				*cur = _mm_sha256msg2_epu32(t, w3);
			}
			__m128i m = _mm_add_epi32(*cur,
				_mm_loadu_si128((const __m128i *)(const void *)&sha256_k[4 * i]));
			cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
			abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(m, 0x0E));
		}
		abef = _mm_add_epi32(abef, save_abef);
		cdgh = _mm_add_epi32(cdgh, save_cdgh);
	}

	__m128i feba = _mm_shuffle_epi32(abef, 0x1B);
	__m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
	dcba = _mm_blend_epi16(feba, dchg, 0xF0);
	hgfe = _mm_alignr_epi8(dchg, feba, 8);
	_mm_storeu_si128((__m128i *)(void *)&h[0], dcba);
	_mm_storeu_si128((__m128i *)(void *)&h[4], hgfe);
}

#else

bool sha256_ni_available(void)
{
	return false;
}

void sha256_ni_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
	(void)h;
	(void)p;
	(void)n;
}

#endif
