/*
 * bytes.h - little-endian loads from decoded buffers.
 *
 * Contract: callers check that off + width <= the buffer's length BEFORE calling
 * these (the decoders in src/ do one explicit length check per structure and
 * return RFS_ERR_CORRUPT when it fails).  They never cast a struct over disk
 * bytes, so alignment and host byte order do not matter.
 */
#ifndef RFS_BYTES_H
#define RFS_BYTES_H

#include <stdint.h>
#include <stddef.h>

static inline uint16_t le16_at(const uint8_t *p, size_t off)
{
	return (uint16_t)(p[off] | (uint16_t)p[off + 1] << 8);
}

static inline uint32_t le32_at(const uint8_t *p, size_t off)
{
	return (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16 |
	       (uint32_t)p[off + 3] << 24;
}

static inline uint64_t le64_at(const uint8_t *p, size_t off)
{
	return (uint64_t)le32_at(p, off) | (uint64_t)le32_at(p, off + 4) << 32;
}

static inline void le16_put(uint8_t *p, size_t off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}

static inline void le32_put(uint8_t *p, size_t off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static inline void le64_put(uint8_t *p, size_t off, uint64_t v)
{
	le32_put(p, off, (uint32_t)v);
	le32_put(p, off + 4, (uint32_t)(v >> 32));
}

#endif
