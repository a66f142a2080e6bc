#!/usr/bin/env python3
"""make-quantize-types.py — writes tests/golden/quantize-types.json: the type
llama.cpp's llama-quantize (b10573, no importance matrix) gives each tensor of small
Qwen3 models in every mix qwenchat offers (tests/unit/test_quantize.c checks
engine/ftype.c against it).

    PYTHONPATH=LLAMA_CPP/gguf-py make-quantize-types.py BUILDDIR LLAMA_QUANTIZE \\
        > tests/golden/quantize-types.json

BUILDDIR is a qwenchat build directory (its tests/mkmodel writes the models, with a
1,024-token tokenizer its qwenchat train-bpe learns from README.md);
LLAMA_QUANTIZE is llama.cpp's llama-quantize binary. Each model is written by
tests/mkmodel, converted to a BF16 GGUF by tests/mkgguf.py (norms F32, as
convert_hf_to_gguf.py writes them), quantized by llama-quantize, and its tensor types
read back with gguf-py's GGUFReader."""
import json
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

MIXES = ["Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S", "Q4_1",
         "Q4_0", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K"]
# name -> the mkmodel flags of the shape (test_quantize.c holds the same shapes)
SHAPES = {
    "cases": "--vocab-size 1024 --hidden-size 256 --intermediate-size 512 --layers 8 "
             "--heads 2 --kv-heads 1 --head-dim 128 --bos-id 1 --eos-id 1023 --seed 4",
    "cases-gqa4": "--vocab-size 1024 --hidden-size 256 --intermediate-size 512 --layers 16 "
                  "--heads 4 --kv-heads 1 --head-dim 64 --bos-id 1 --eos-id 1023 --seed 5",
}
HERE = os.path.dirname(os.path.abspath(__file__))


def types_of(builddir, quantize, flags, tie, mix, tmp):
    model = os.path.join(tmp, "m")
    subprocess.run([os.path.join(builddir, "tests", "mkmodel"), "--out", model,
                    "--tokenizer", os.path.join(tmp, "tok"),
                    "--tie" if tie else "--no-tie"] + flags.split(),
                   check=True, stdout=subprocess.DEVNULL)
    src, out = os.path.join(tmp, "in.gguf"), os.path.join(tmp, "out.gguf")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "mkgguf.py"), model, src],
                   check=True)
    subprocess.run([quantize, src, out, mix], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return {t.name: t.tensor_type.name for t in GGUFReader(out).tensors}


def main():
    builddir, quantize = sys.argv[1], sys.argv[2]
    doc = {"about": "Per-tensor types llama.cpp's llama-quantize (b10573) chose, without "
           "an importance matrix, for Qwen3 models made by tests/mkmodel FLAGS --[no-]tie "
           "with a train-bpe tokenizer of 1,024 tokens "
           "(FLAGS under \"shapes\"), written as GGUF by tests/mkgguf.py (BF16, norms F32), "
           "then llama-quantize IN.gguf OUT.gguf TYPE; types read with gguf-py's "
           "GGUFReader (tests/golden/make-quantize-types.py).",
           "shapes": SHAPES}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([os.path.join(builddir, "qwenchat"), "train-bpe", "--vocab-size", "1024",
                        "--special", "<|endoftext|>", "--out", os.path.join(tmp, "tok"),
                        os.path.join(HERE, "..", "..", "README.md")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for key, flags in SHAPES.items():
            doc[key] = {mix: {name: types_of(builddir, quantize, flags, name == "tie", mix,
                                             tmp)
                              for name in ("no-tie", "tie")}
                        for mix in MIXES}
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    sys.exit(main())
