#!/bin/sh
# make-quant-logits-golden.sh — regenerates tests/golden/logits-quant-TYPE.txt: the
# logits of a tests/mkmodel model quantized by `qwenchat quantize --type TYPE`, as a
# float64 forward pass computes them on the dequantized weights: gguf-py (llama.cpp
# b10573's own Python package) dequantizes every tensor (gguf-to-f32.py), and the
# numpy float64 Qwen3 forward of tests/cli/ppl_reference.py runs on them. That
# isolates the kernels' error from the quantization's. (The quantized bytes themselves
# are ggml's: tests/unit/test_quantize_golden.)
#
# usage: tests/golden/make-quant-logits-golden.sh BUILDDIR GGUF_PY_DIR
#   BUILDDIR     a build tree with qwenchat and tests/mkmodel built (make check)
#   GGUF_PY_DIR  the gguf-py directory of llama.cpp at tag b10573
# Needs /usr/bin/python3 with numpy.
set -eu
BUILD=$1
export PYTHONPATH=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FLAGS="--hidden-size 256 --intermediate-size 512 --layers 2 --heads 4 --kv-heads 2 --head-dim 64 --seed 21"
IDS="5,17,200,3,99,140,7,250,311,42,1000,64"
"$BUILD/tests/mkmodel" --out "$TMP/m" $FLAGS >/dev/null
cp "$HERE/template-tiny-tokenizer.json" "$TMP/m/tokenizer.json"
for t in q8_0 q6_k q5_k_m q4_k_m q4_0 q5_0 q4_1 q5_1 q3_k_m q2_k; do
	"$BUILD/qwenchat" quantize -m "$TMP/m" --type "$t" --out "$TMP/$t.gguf" >/dev/null
	rm -rf "$TMP/f32"
	/usr/bin/python3 "$HERE/gguf-to-f32.py" "$TMP/$t.gguf" "$TMP/m" "$TMP/f32"
	/usr/bin/python3 - "$HERE/../cli" "$TMP/f32" "$IDS" "$TMP/ref.bin" <<'PYEOF'
import sys
sys.dont_write_bytecode = True  # no __pycache__ left in tests/cli
sys.path.insert(0, sys.argv[1])
import ppl_reference
cfg, w = ppl_reference.load(sys.argv[2])
ids = [int(i) for i in sys.argv[3].split(",")]
ppl_reference.forward(cfg, w, ids).astype("<f4").tofile(sys.argv[4])
PYEOF
	/usr/bin/python3 - "$TMP/ref.bin" "$t" "$FLAGS" "$IDS" "$HERE/logits-quant-$t.txt" <<'PYEOF'
import sys
import numpy as np
path, t, flags, ids, out = sys.argv[1:]
n = len(ids.split(","))
a = np.fromfile(path, "<f4").reshape(n, -1)
with open(out, "w") as f:
    f.write("# float64 Qwen3 forward (tests/cli/ppl_reference.py) on the weights of\n"
            "# `qwenchat quantize --type %s` dequantized by gguf-py (llama.cpp b10573); made by\n"
            "# tests/golden/make-quant-logits-golden.sh BUILDDIR GGUF_PY_DIR, checked by\n"
            "# tests/cli/quant.sh\n" % t)
    f.write("mkmodel %s\ntype %s\ntokens %s\n" % (flags, t, ids.replace(",", " ")))
    for row in a:
        f.write(" ".join("%.7g" % v for v in row) + "\n")
PYEOF
done
