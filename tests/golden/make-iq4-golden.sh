#!/bin/sh
# make-iq4-golden.sh — regenerates tests/golden/tiny-iq4_xs.gguf, a model quantized by
# llama.cpp's own llama-quantize to its IQ4_XS mix (qwenchat reads IQ4_XS and IQ4_NL
# but does not write them): a tests/mkmodel model of one layer, hidden 256 and an MLP
# of 288, so that ffn_down's rows of 288 fall back to IQ4_NL, the tied embedding is
# Q6_K and the rest IQ4_XS; and tests/golden/logits-iq4_xs.txt, its logits as a float64
# forward pass computes them on the weights gguf-py dequantizes (gguf-to-f32.py,
# tests/cli/ppl_reference.py). tests/cli/quant.sh checks qwenchat against them.
#
# usage: tests/golden/make-iq4-golden.sh BUILDDIR LLAMA_CPP_BUILD GGUF_PY_DIR
#   BUILDDIR         a build tree with tests/mkmodel built
#   LLAMA_CPP_BUILD  llama.cpp b10573's build directory (bin/llama-quantize)
#   GGUF_PY_DIR      the gguf-py directory of llama.cpp at tag b10573
# Needs /usr/bin/python3 with numpy.
set -eu
BUILD=$1 LLAMA=$2
export PYTHONPATH=$3
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FLAGS="--vocab-size 300 --hidden-size 256 --intermediate-size 288 --layers 1 --heads 4 --kv-heads 2 --head-dim 64 --bos-id 1 --eos-id 2 --seed 31"
IDS="5,17,200,3,99,140,7,250,211,42,100,64"
"$BUILD/tests/mkmodel" --out "$TMP/m" $FLAGS >/dev/null
cp "$HERE/template-tiny-tokenizer.json" "$TMP/m/tokenizer.json"
/usr/bin/python3 "$HERE/../mkgguf.py" "$TMP/m" "$TMP/bf16.gguf"
"$LLAMA/bin/llama-quantize" "$TMP/bf16.gguf" "$HERE/tiny-iq4_xs.gguf" IQ4_XS >/dev/null 2>&1
/usr/bin/python3 "$HERE/gguf-to-f32.py" "$HERE/tiny-iq4_xs.gguf" "$TMP/m" "$TMP/f32"
/usr/bin/python3 - "$HERE/../cli" "$TMP/f32" "$IDS" "$FLAGS" "$HERE/logits-iq4_xs.txt" <<'PYEOF'
import sys
sys.dont_write_bytecode = True  # no __pycache__ left in tests/cli
sys.path.insert(0, sys.argv[1])
import ppl_reference
cfg, w = ppl_reference.load(sys.argv[2])
ids = [int(i) for i in sys.argv[3].split(",")]
logits = ppl_reference.forward(cfg, w, ids)
with open(sys.argv[5], "w") as f:
    f.write("# float64 Qwen3 forward (tests/cli/ppl_reference.py) on the weights of\n"
            "# tiny-iq4_xs.gguf (llama-quantize IQ4_XS, llama.cpp b10573) dequantized by\n"
            "# gguf-py; made by tests/golden/make-iq4-golden.sh, checked by tests/cli/quant.sh\n")
    f.write("mkmodel %s\ntype iq4_xs\ntokens %s\n" % (sys.argv[4], sys.argv[3].replace(",", " ")))
    for row in logits:
        f.write(" ".join("%.7g" % v for v in row) + "\n")
PYEOF
