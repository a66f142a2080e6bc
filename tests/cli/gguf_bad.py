#!/usr/bin/env python3
"""gguf_bad.py — writes malformed GGUF files for tests/cli/gguf.sh from a small valid
model directory: byte patches of a valid file (truncations, counts, lengths, types,
offsets) and files written with bad metadata or tensors (tests/mkgguf.py's writer).

usage: gguf_bad.py MODEL_DIR OUT_DIR
Prints one line per file: COMMAND <tab> FILE <tab> TEXT the error must contain, where
COMMAND is the qwenchat command that must refuse it (info loads the weights, tokenize
the tokenizer).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mkgguf as mk  # noqa: E402


def main():
    model, out = sys.argv[1], sys.argv[2]
    cfg = mk.json.load(open(model + "/config.json"))
    kvs = mk.metadata(None, cfg, mk.vocab(model, cfg), "bf16")
    tens = mk.tensors(model, "bf16", "f32")
    good = os.path.join(out, "good.gguf")
    L = mk.write_file(good, kvs, tens, 32, 3)
    base = open(good, "rb").read()
    cases = []

    def patch(name, cmd, expect, at, data, cut=None):
        b = bytearray(base)
        b[at:at + len(data)] = data
        if cut is not None:
            b = b[:cut]
        path = os.path.join(out, name + ".gguf")
        open(path, "wb").write(b)
        cases.append((cmd, path, expect))

    def write(name, cmd, expect, kv=None, tensors=None, alignment=32):
        path = os.path.join(out, name + ".gguf")
        mk.write_file(path, kv if kv is not None else kvs,
                      tensors if tensors is not None else tens, alignment, 3)
        cases.append((cmd, path, expect))

    def with_kv(key, t, v, elem=None):
        out_kvs = [k for k in kvs if k[0] != key]
        return out_kvs + [(key, t, v) if elem is None else (key, t, v, elem)]

    q64 = lambda v: struct.pack("<Q", v)  # noqa: E731
    u32 = lambda v: struct.pack("<I", v)  # noqa: E731
    kv = L["kv"]
    ti = L["tensors"]
    names = list(ti)
    tok = kv["tokenizer.ggml.tokens"]
    arch = kv["general.architecture"]
    q = ti["blk.0.attn_q.weight"]
    norm = ti["blk.0.attn_norm.weight"]
    tokens = next(k for k in kvs if k[0] == "tokenizer.ggml.tokens")[2]
    types = next(k for k in kvs if k[0] == "tokenizer.ggml.token_type")[2]
    merges = next(k for k in kvs if k[0] == "tokenizer.ggml.merges")[2]

    # the file's structure
    patch("empty", "info", "truncated", 0, b"", cut=0)
    patch("magic", "info", "not a GGUF file", 0, b"GGUX")
    patch("version1", "info", "GGUF version 1 is not supported", 4, u32(1))
    patch("bigendian", "info", "big-endian", 4, u32(3 << 24))
    patch("cut-header", "info", "not even a GGUF header", 0, b"", cut=22)
    patch("cut-kvs", "info", "%d key/values cannot fit" % len(kvs), 0, b"", cut=30)
    at = tok["value_at"] + 12  # past the element type and count: the first string
    for t in tokens:
        n = len(t.encode("utf-8"))
        if n >= 2:
            break
        at += 8 + n
    patch("cut-kv", "info", "array of %d elements does not fit" % len(tokens), 0, b"",
          cut=at + 9)  # inside string t
    patch("cut-infos", "info", "is larger than the file", 0, b"", cut=L["infos_end"] - 3)
    patch("cut-data", "info", "run past the end of the file", 0, b"", cut=L["size"] - 40)
    patch("ntensors", "info", "tensors cannot fit", L["n_tensors_at"], q64(1 << 40))
    patch("ntensors-neg", "info", "are absurd", L["n_tensors_at"], q64(1 << 63))
    patch("nkv", "info", "key/values cannot fit", L["n_kv_at"], q64(1 << 40))
    patch("strlen", "info", "runs past the end of the file", arch["value_at"], q64(1 << 60))
    patch("arraylen", "info", "does not fit", tok["value_at"] + 4, q64(1 << 50))
    patch("valuetype", "info", "unknown value type 99", arch["value_at"] - 4, u32(99))
    patch("nested", "info", "arrays of arrays", tok["value_at"], u32(9))
    # tensor infos
    patch("ttype", "info", "unknown type 99", q["type_at"], u32(99))
    patch("iq2", "info", "type IQ2_XXS, which qwenchat does not support", q["type_at"],
          u32(16))
    patch("misaligned", "info", "is not a multiple of the alignment", q["offset_at"],
          q64(q["offset"] + 1))
    patch("offset", "info", "run past the end", q["offset_at"], q64(1 << 40))
    # aligned, and past any mapping: the pointer to it must not even be formed
    patch("offset-2^63", "info", "run past the end", q["offset_at"], q64(1 << 63))
    patch("overlap", "info", "overlaps", q["offset_at"], q64(norm["offset"]))
    patch("shape", "info", "has shape [32] (ne0 first)", norm["ne_at"], q64(32))
    patch("ndims", "info", "5 dimensions", q["ndim_at"], u32(5))
    patch("q4k-row", "info", "not a whole number of Q4_K blocks", q["type_at"], u32(12))
    # metadata the model needs
    write("arch", "info", 'general.architecture is "llama"',
          with_kv("general.architecture", mk.STRING, "llama"))
    write("no-layers", "info", "key qwen3.block_count is missing",
          [k for k in kvs if k[0] != "qwen3.block_count"])
    write("layers0", "info", "qwen3.block_count = 0 is out of range",
          with_kv("qwen3.block_count", mk.U32, 0))
    write("layers-type", "info", "key qwen3.block_count is a string",
          with_kv("qwen3.block_count", mk.STRING, "2"))
    write("dupkey", "info", "is given twice", kvs + [kvs[0]])
    write("align", "info", "general.alignment = 48 is not a power of 2",
          kvs + [("general.alignment", mk.U32, 48)])
    write("missing-tensor", "info", "tensor blk.1.ffn_up.weight is missing",
          tensors=[t for t in tens if t[0] != "blk.1.ffn_up.weight"])
    write("extra-tensor", "info", "unexpected tensor rope_freqs.weight",
          tensors=tens + [("rope_freqs.weight", [8], mk.GGML_F32, b"\0" * 32)])
    write("dup-tensor", "info", "tensor blk.0.attn_q.weight is given twice",
          tensors=tens + [t for t in tens if t[0] == "blk.0.attn_q.weight"])
    write("long-name", "info", "64 bytes or longer",
          tensors=tens + [("x" * 64, [8], mk.GGML_F32, b"\0" * 32)])
    # the tokenizer
    write("types-len", "tokenize", "token_type has %d entries" % (len(types) - 1),
          with_kv("tokenizer.ggml.token_type", mk.ARRAY, types[:-1], mk.I32))
    write("type-byte", "tokenize", "token_type[5] = 6 is not supported",
          with_kv("tokenizer.ggml.token_type", mk.ARRAY, types[:5] + [6] + types[6:], mk.I32))
    write("merge-unknown", "tokenize", "entry 2: its left token is not in tokenizer.ggml.tokens",
          with_kv("tokenizer.ggml.merges", mk.ARRAY,
                  merges[:2] + ["\u0100\u0100\u0100\u0100 " + merges[2].split(" ")[1]] +
                  merges[3:], mk.STRING))
    write("merge-form", "tokenize", "entry 0 \"ab\" is not two tokens",
          with_kv("tokenizer.ggml.merges", mk.ARRAY, ["ab"] + merges[1:], mk.STRING))
    write("tok-model", "tokenize", 'tokenizer.ggml.model is "llama"',
          with_kv("tokenizer.ggml.model", mk.STRING, "llama"))
    n_layers = cfg["num_hidden_layers"]
    write("ffn-layers", "info", "feed_forward_length differs between layers",
          with_kv("qwen3.feed_forward_length", mk.ARRAY,
                  [cfg["intermediate_size"]] * (n_layers - 1) + [8], mk.I32))
    write("ffn-count", "info", "is an array of 1 values, not one per layer",
          with_kv("qwen3.attention.head_count", mk.ARRAY, [4], mk.I32))
    write("tok-pre", "tokenize", 'tokenizer.ggml.pre is "llama3"',
          with_kv("tokenizer.ggml.pre", mk.STRING, "llama3"))
    write("eos", "tokenize", "tokenizer.ggml.eos_token_id = %d is not a token id" % len(tokens),
          with_kv("tokenizer.ggml.eos_token_id", mk.U32, len(tokens)))
    # a token list longer than the embedding, its end-of-text past the rows: the
    # list is named, not the id
    more = [k for k in kvs if k[0] not in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                           "tokenizer.ggml.eos_token_id")]
    more += [("tokenizer.ggml.tokens", mk.ARRAY, tokens + ["<x%d>" % i for i in range(10)],
              mk.STRING),
             ("tokenizer.ggml.token_type", mk.ARRAY, types + [3] * 10, mk.I32),
             ("tokenizer.ggml.eos_token_id", mk.U32, len(tokens) + 5)]
    write("tokens-past-rows", "info",
          "key tokenizer.ggml.tokens has %d tokens but token_embd.weight has %d rows"
          % (len(tokens) + 10, len(tokens)), more)
    write("no-tokens", "tokenize", "key tokenizer.ggml.tokens is missing",
          [k for k in kvs if k[0] != "tokenizer.ggml.tokens"])
    for c in cases:
        print("\t".join(c))


if __name__ == "__main__":
    main()
