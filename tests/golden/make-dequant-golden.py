#!/usr/bin/env python3
"""Writes tests/golden/dequant-golden.txt: blocks of each GGUF quantized type and their
values as gguf-py (llama.cpp's Python package, b10573) dequantizes them.

usage: PYTHONPATH=/path/to/llama.cpp/gguf-py make-dequant-golden.py > dequant-golden.txt

Each line: TYPE NBLOCKS BYTES_HEX FLOAT32_BITS_HEX (one 8-digit word per weight,
big-endian digits). Blocks are random bytes with their f16 scales forced finite, plus
hand-made ones: zero scales, the largest and smallest (subnormal) f16 scales,
negative scales, every quant value at its extremes."""
import random
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

# (name, block bytes, offsets of the f16 scales in a block)
TYPES = [("Q8_0", 34, [0]), ("Q4_0", 18, [0]), ("Q5_0", 22, [0]),
         ("Q4_K", 144, [0, 2]), ("Q5_K", 176, [0, 2]), ("Q6_K", 210, [208]),
         ("Q4_1", 20, [0, 2]), ("Q5_1", 24, [0, 2]), ("Q2_K", 84, [80, 82]),
         ("Q3_K", 110, [108]), ("IQ4_NL", 18, [0]), ("IQ4_XS", 136, [0])]
SPECIAL_SCALES = [0x0000, 0x8000, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x3C00, 0x2E66]

rng = random.Random(20261124)


def finite_half(h):
    return h & ~0x0400 if (h >> 10) & 31 == 31 else h  # exponent 31 -> 30


def block(size, scales, fill=None, scale=None):
    b = bytearray(rng.getrandbits(8) for _ in range(size)) if fill is None else \
        bytearray([fill] * size)
    for off in scales:
        h = finite_half(b[off] | b[off + 1] << 8) if scale is None else scale
        b[off:off + 2] = struct.pack("<H", h)
    return bytes(b)


def line(name, blocks):
    data = b"".join(blocks)
    y = dequantize(np.frombuffer(data, dtype=np.uint8), getattr(T, name))
    bits = np.asarray(y, dtype=np.float32).view(np.uint32)
    return "%s %d %s %s" % (name, len(blocks), data.hex(), "".join("%08x" % v for v in bits))


def main():
    for name, size, scales in TYPES:
        for _ in range(12):
            print(line(name, [block(size, scales) for _ in range(rng.randint(1, 3))]))
        for s in SPECIAL_SCALES:
            print(line(name, [block(size, scales, scale=s)]))
        for fill in (0x00, 0xFF, 0x80, 0x7F, 0x55):
            print(line(name, [block(size, scales, fill=fill, scale=0x3C00)]))


if __name__ == "__main__":
    sys.exit(main())
