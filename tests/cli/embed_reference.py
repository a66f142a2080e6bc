#!/usr/bin/env python3
"""embed_reference.py — an independent float64 reference for `qwenchat embed`, and the
maker of the embedding-model layout the test runs it on.

    embed_reference.py convert CAUSAL_DIR OUT_DIR
        OUT_DIR: the model of CAUSAL_DIR as Qwen3-Embedding's checkpoints are laid out:
        the bare Qwen3Model's tensor names (no "model." prefix, no lm_head: it is tied),
        and a tokenizer.json whose post-processor is the TemplateProcessing that appends
        <|endoftext|> (as Qwen3-Embedding's does), plus sentence-transformers' files
        (modules.json, 1_Pooling/config.json with last-token pooling).

    embed_reference.py embed MODEL_DIR IDS_JSON [--dimensions N] [--no-normalize]
        IDS_JSON: a list of lists of token ids (the texts as the tokenizer's encode gives
        them, without special tokens). Each gets the special tokens the tokenizer.json's
        TemplateProcessing "single" template puts around $A (read here from the file),
        runs through a float64 Qwen3 forward (ppl_reference.py's, the transformers
        semantics), and its last position's final-normed hidden state is pooled, cut to
        the first N values and divided by its L2 norm (torch.nn.functional.normalize),
        as sentence-transformers' Qwen3-Embedding pipeline does. Prints a JSON list of
        vectors.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppl_reference as ref  # noqa: E402


def write_safetensors(path, tensors, dtypes):
    """tensors: name -> raw little-endian bytes; dtypes: name -> (dtype, shape)."""
    header, off = {}, 0
    for name, raw in tensors.items():
        dt, shape = dtypes[name]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in tensors.values():
            f.write(raw)


def convert(src, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    tensors, dtypes = {}, {}
    for name, t in header.items():
        if name == "__metadata__" or name == "lm_head.weight":
            continue
        new = name[len("model."):] if name.startswith("model.") else name
        a, b = t["data_offsets"]
        tensors[new] = raw[base + a:base + b]
        dtypes[new] = (t["dtype"], t["shape"])
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtypes)
    for f in ("config.json", "generation_config.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), out)
    tj = json.load(open(os.path.join(src, "tokenizer.json")))
    eot = next(t for t in tj["added_tokens"] if t["content"] == "<|endoftext|>")
    tj["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}],
        "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [eot["id"]],
                                             "tokens": ["<|endoftext|>"]}},
    }
    json.dump(tj, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
              open(os.path.join(out, "modules.json"), "w"))
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    json.dump({"word_embedding_dimension": json.load(open(os.path.join(src, "config.json")))["hidden_size"],
               "pooling_mode_lasttoken": True, "include_prompt": True},
              open(os.path.join(out, "1_Pooling", "config.json"), "w"))


def template_ends(model_dir):
    """The ids before and after $A in the post-processor's "single" template."""
    pp = json.load(open(os.path.join(model_dir, "tokenizer.json"))).get("post_processor") or {}
    procs = pp.get("processors", [pp]) if pp.get("type") == "Sequence" else [pp]
    before, after = [], []
    for p in procs:
        if p.get("type") != "TemplateProcessing":
            continue
        side = before
        for e in p["single"]:
            if "Sequence" in e:
                side = after
            else:
                side.extend(p["special_tokens"][e["SpecialToken"]["id"]]["ids"])
    return before, after


def hidden_last(cfg, w, ids):
    """The last position's final-normed hidden state: ppl_reference's forward with the
    output layer taken off (an identity of hidden_size in its place)."""
    w = dict(w)
    d = cfg["hidden_size"]
    w["lm_head.weight"] = np.eye(d)
    cfg = dict(cfg, tie_word_embeddings=False)
    return ref.forward(cfg, w, ids)[-1]


def embed(model_dir, ids_list, dims, normalize):
    cfg, w = ref.load(model_dir)
    w = {("model." + k if not k.startswith(("model.", "lm_head")) else k): v for k, v in w.items()}
    before, after = template_ends(model_dir)
    out = []
    for ids in ids_list:
        h = hidden_last(cfg, w, before + list(ids) + after)[:dims or None]
        if normalize:
            h = h / max(np.sqrt(np.sum(h * h)), 1e-12)
        out.append([float(x) for x in h])
    return out


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) < 4 or sys.argv[1] != "embed":
        sys.exit(__doc__)
    args = sys.argv[4:]
    dims = int(args[args.index("--dimensions") + 1]) if "--dimensions" in args else 0
    ids_list = json.load(open(sys.argv[3]))
    print(json.dumps(embed(sys.argv[2], ids_list, dims, "--no-normalize" not in args)))


if __name__ == "__main__":
    main()
