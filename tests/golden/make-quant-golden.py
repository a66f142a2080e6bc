#!/usr/bin/env python3
"""make-quant-golden.py — writes tests/golden/quant-golden.txt: fp32 rows and the bytes
ggml's own reference code makes of them (tests/unit/test_quantize_golden.c checks
engine/quantize.c against it).

The expected bytes come from llama.cpp's libggml-base through ctypes: the
quantize_row_*_ref functions (what llama-quantize writes without an importance matrix),
ggml_fp32_to_fp16_row and ggml_fp32_to_bf16_row_ref. The inputs come from a fixed
Python PRNG (random.Random, stable across Python versions), so a rerun writes the same
file.

    python3 tests/golden/make-quant-golden.py LIBGGML_BASE > tests/golden/quant-golden.txt

LIBGGML_BASE is libggml-base.so of llama.cpp at tag b10573, built from its source
tree with `cmake -B build && cmake --build build --target ggml-base`
(build/bin/libggml-base.so).

The file: '#' comments; `in ID N HEX` gives row ID as N float32s (8 hex digits each,
the bit pattern, most significant first); `out ID TYPE HEX` gives the bytes of that row
as TYPE (F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, Q4_1, Q5_1, Q2_K, Q3_K) in
file order.
"""
import ctypes
import math
import random
import struct
import sys


# bytes per block, weights per block
TYPES = {
    "Q8_0": (34, 32, "quantize_row_q8_0_ref"),
    "Q4_0": (18, 32, "quantize_row_q4_0_ref"),
    "Q5_0": (22, 32, "quantize_row_q5_0_ref"),
    "Q4_K": (144, 256, "quantize_row_q4_K_ref"),
    "Q5_K": (176, 256, "quantize_row_q5_K_ref"),
    "Q6_K": (210, 256, "quantize_row_q6_K_ref"),
    "Q4_1": (20, 32, "quantize_row_q4_1_ref"),
    "Q5_1": (24, 32, "quantize_row_q5_1_ref"),
    "Q2_K": (84, 256, "quantize_row_q2_K_ref"),
    "Q3_K": (110, 256, "quantize_row_q3_K_ref"),
    "F16": (2, 1, "ggml_fp32_to_fp16_row"),
    "BF16": (2, 1, "ggml_fp32_to_bf16_row_ref"),
}
ALL = list(TYPES)


def bits(v):
    """The float32 bit pattern of v (rounded to float32)."""
    return struct.unpack("<I", struct.pack("<f", v))[0]


def normal(rng, n, scale):
    return [rng.gauss(0.0, 1.0) * scale for _ in range(n)]


def cases():
    """(name, values, types): the rows, each a multiple of 256 long."""
    rng = random.Random(20240611)
    out = []
    for scale in (1e-3, 0.02, 1.0, 300.0):
        for n in (256, 1024):
            out.append((f"normal*{scale} n={n}", normal(rng, n, scale), ALL))
    for k in range(3):  # like real checkpoints: bfloat16 weights
        v = [struct.unpack("<f", struct.pack("<I", bits(x) + 0x7fff + (bits(x) >> 16 & 1)
                                              & 0xffff0000))[0] for x in normal(rng, 1024, 0.03)]
        out.append((f"bf16-exact normal*0.03 #{k}", v, ALL))
    out.append(("zeros", [0.0] * 256, ALL))
    v = normal(rng, 512, 0.02)
    v[77] = 1e4
    out.append(("one huge outlier", v, ALL))
    v = normal(rng, 256, 0.05)
    for b in range(0, 256, 32):
        v[b + rng.randrange(32)] = rng.choice((-1, 1)) * rng.uniform(2, 20)
    out.append(("an outlier in every block of 32", v, ALL))
    out.append(("all equal, positive", [0.5] * 256, ALL))
    out.append(("all equal, negative", [-0.25] * 256, ALL))
    out.append(("each block of 32 constant",
                [c for c in (rng.gauss(0, 1) for _ in range(8)) for _ in range(32)], ALL))
    out.append(("all negative", [-abs(x) for x in normal(rng, 256, 0.1)], ALL))
    out.append(("all positive", [abs(x) for x in normal(rng, 256, 0.1)], ALL))
    for scale in (1e-5, 1e-7, 6e-8, 1e-9):
        out.append((f"tiny normal*{scale} (f16 subnormal range)", normal(rng, 256, scale), ALL))
    out.append(("float32 subnormals", [x * 1e-39 for x in normal(rng, 256, 1.0)], ALL))
    v = normal(rng, 256, 1.0)
    for b in range(0, 256, 16):  # the extreme of each 16 (and so each 32) is negative
        i = max(range(b, b + 16), key=lambda k: abs(v[k]))
        v[i] = -abs(v[i]) * 1.5
    out.append(("block maxima negative", v, ALL))
    v = [rng.randrange(-127, 127) + 0.5 for _ in range(256)]
    for b in range(0, 256, 32):
        v[b] = 127.0  # d = 1: Q8_0 sees exact halves
    out.append(("Q8_0 ties: halves with absmax 127", v, ALL))
    v = [rng.randrange(-8, 7) + 0.5 for _ in range(256)]
    for b in range(0, 256, 32):
        v[b + 5] = -8.0  # d = 1: Q4_0 rounds exact halves
    out.append(("Q4_0 ties: halves with max -8", v, ALL))
    v = [rng.randrange(-16, 15) + 0.5 for _ in range(256)]
    for b in range(0, 256, 32):
        v[b + 9] = -16.0
    out.append(("Q5_0 ties: halves with max -16", v, ALL))
    out.append(("on a grid of 1/16", [rng.randrange(-64, 65) / 16 for _ in range(512)], ALL))
    out.append(("15 levels (already Q4-like)", [rng.randrange(0, 16) * 0.1 - 0.7
                                                 for _ in range(256)], ALL))
    out.append(("uniform [-1, 1)", [rng.uniform(-1, 1) for _ in range(768)], ALL))
    out.append(("laplace", [rng.expovariate(30) * rng.choice((-1, 1)) for _ in range(512)], ALL))
    out.append(("sparse: 90% zeros", [rng.gauss(0, 1) if rng.random() < 0.1 else 0.0
                                       for _ in range(512)], ALL))
    out.append(("one nonzero per 16", [rng.gauss(0, 1) if i % 16 == 3 else 0.0
                                        for i in range(256)], ALL))
    out.append(("ramp", [(i - 128) / 128 for i in range(256)], ALL))
    out.append(("sine", [math.sin(i * 0.37) * 2 for i in range(256)], ALL))
    out.append(("shifted: mean 1, sd 0.01", [1 + rng.gauss(0, 0.01) for _ in range(256)], ALL))
    out.append(("large: normal*1e5 (f16 scales overflow)", normal(rng, 256, 1e5), ALL))
    out.append(("mixed scales per block", [rng.gauss(0, 1) * 10 ** rng.randrange(-4, 3)
                                            for b in range(16) for _ in range(16)], ALL))
    out.append(("f16 halfway ties", f16_ties(), ["F16", "BF16"]))
    out.append(("special values", specials(), ["F16", "BF16"]))
    return out


def f16_ties():
    """Floats exactly halfway between neighbouring halves (and bfloat16s), normal and
    subnormal, both signs, plus their float neighbours."""
    v = []
    for e in range(-24, 16):
        for m in (0, 1, 2, 3, 1022, 1023):
            lo = (1024 + m) * 2.0 ** (e - 10)  # a half (normal layout), then half an ulp up
            mid = lo + 2.0 ** (e - 11)
            for x in (mid, -mid):
                u = bits(x)
                v += [u, u + 1, u - 1]
    v += [0x3f808000, 0x3f818000, 0x3f808001, 0x7f7f8000]  # bf16 ties, one to infinity
    return (v + [0] * 256)[: (len(v) + 255) // 256 * 256]


def specials():
    inf = float("inf")
    v = [0.0, -0.0, 65504.0, -65504.0, 65519.99, 65520.0, -65520.0, 1e6, inf, -inf,
         2.0 ** -24, 2.0 ** -25, -(2.0 ** -25), 2.0 ** -25 * 1.0000001, 2.0 ** -26,
         3 * 2.0 ** -25, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25, 6.1e-5, 5.96e-8,
         1e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.1, 1 / 3]
    nans = [0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fa00000, 0x7fffffff]
    # as bit patterns: a signalling NaN would not survive a trip through a Python float
    return [bits(x) for x in v] + nans + [0] * (256 - len(v) - len(nans))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-quant-golden.py LIBGGML_BASE > tests/golden/quant-golden.txt")
    lib = ctypes.CDLL(sys.argv[1])
    w = sys.stdout
    w.write("# ggml reference quantization (llama.cpp b10573 libggml-base: quantize_row_*_ref,\n"
            "# ggml_fp32_to_fp16_row, ggml_fp32_to_bf16_row_ref) of fixed rows; written by\n"
            "# python3 tests/golden/make-quant-golden.py LIBGGML_BASE (llama.cpp b10573's\n"
            "# build/bin/libggml-base.so), checked by test_quantize_golden.\n")
    for cid, (name, vals, types) in enumerate(cases()):
        n = len(vals)
        assert n % 256 == 0, name
        u = [x if isinstance(x, int) else bits(x) for x in vals]  # ints are bit patterns
        src = (ctypes.c_uint32 * n)(*u)
        w.write(f"# {name}\nin {cid} {n} {''.join(f'{b:08x}' for b in u)}\n")
        for t in types:
            bsize, bw, fn = TYPES[t]
            dst = ctypes.create_string_buffer(n // bw * bsize)
            f = getattr(lib, fn)
            f.restype = None
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            f(src, dst, n)
            w.write(f"out {cid} {t} {dst.raw.hex()}\n")


if __name__ == "__main__":
    main()
