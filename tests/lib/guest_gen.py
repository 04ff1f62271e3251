#!/usr/bin/env python3
"""guest_gen.py - the corpus generator of corpus/tools/guesthelper.c
(`guesthelper gen SEED SIZE KIND`), re-implemented so that tests can build
the exact bytes a recipe wrote without compiling the guest tool.

  text: byte p of the stream is line[(p % 4096) % len(line)] where line is
        "seed S block B | rfsck corpus text line\\n" and B = p // 4096;
  rand: xorshift64* seeded with seed * 0x9E3779B97F4A7C15 + 0x1234567 (1 if
        that is 0), one byte (the top 8 bits) per step.

Usage: guest_gen.py SEED SIZE text|rand   (the bytes on stdout)
"""
import sys

MASK = (1 << 64) - 1


def gen_text(seed, size):
    out = bytearray()
    blk = 0
    while len(out) < size:
        line = b"seed %d block %d | rfsck corpus text line\n" % (seed, blk)
        out += (line * (4096 // len(line) + 2))[:4096]
        blk += 1
    return bytes(out[:size])


def gen_rand(seed, size):
    s = (seed * 0x9E3779B97F4A7C15 + 0x1234567) & MASK
    if s == 0:
        s = 1
    out = bytearray(size)
    for i in range(size):
        s ^= s >> 12
        s ^= (s << 25) & MASK
        s ^= s >> 27
        out[i] = ((s * 0x2545F4914F6CDD1D) & MASK) >> 56
    return bytes(out)


def gen(seed, size, kind):
    return gen_text(seed, size) if kind == "text" else gen_rand(seed, size)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("text", "rand"):
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.stdout.buffer.write(gen(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
