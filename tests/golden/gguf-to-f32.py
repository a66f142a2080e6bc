#!/usr/bin/env python3
"""Writes a GGUF Qwen3 model's weights as a Hugging Face directory of float32
safetensors, each tensor dequantized by gguf-py (llama.cpp's own Python package,
b10573), so that a float64 reference forward pass (tests/cli/ppl_reference.py) computes
what the quantized model means exactly, isolating kernel error from quantization error
(tests/golden/make-quant-logits-golden.sh).

usage: PYTHONPATH=llama.cpp/gguf-py gguf-to-f32.py MODEL.gguf CONFIG_DIR OUT_DIR
CONFIG_DIR holds the model's config.json (and tokenizer files, copied along)."""
import json
import os
import shutil
import struct
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
         "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
         "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
         "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def hf_name(name):
    base = name[:-len(".weight")]
    if base == "token_embd":
        return "model.embed_tokens.weight"
    if base == "output_norm":
        return "model.norm.weight"
    if base == "output":
        return "lm_head.weight"
    _, layer, part = base.split(".", 2)
    return "model.layers.%s.%s.weight" % (layer, NAMES[part])


def main():
    src, cfg_dir, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(cfg_dir):
        if f.endswith(".json") and f != "model.safetensors.index.json":
            shutil.copy(os.path.join(cfg_dir, f), out)
    r = GGUFReader(src)
    tensors = []
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = [int(x) for x in reversed(t.shape)] if len(t.shape) > 1 else [int(t.shape[0])]
        tensors.append((hf_name(t.name), a.reshape(shape)))
    header, off = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, a in tensors:
            f.write(np.ascontiguousarray(a).tobytes())
    cfg = json.load(open(os.path.join(out, "config.json")))
    cfg["torch_dtype"] = "float32"
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
