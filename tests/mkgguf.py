#!/usr/bin/env python3
"""mkgguf.py — writes a GGUF file from a Hugging Face Qwen3 directory (config.json,
model.safetensors, tokenizer.json, tokenizer_config.json) the way llama.cpp's
convert_hf_to_gguf.py (b10573) does for Qwen3ForCausalLM: the same keys, token list
and token types, merges, special token ids, chat template, tensor names and shapes,
1-D tensors in F32. A test fixture generator: an implementation of the GGUF format
of its own (Python standard library only), written from llama.cpp's docs/gguf and
ggml's gguf.cpp, so that make check needs neither llama.cpp nor its gguf-py.

usage: mkgguf.py MODEL_DIR OUT.gguf [--outtype bf16|f16|f32] [--norm-type f32|bf16]
                 [--split N] [--alignment A] [--version 2|3] [--layout FILE.json]
                 [--q8-tensor NAME]

generation_config.json's sampling defaults become general.sampling.* as gguf-py's
Metadata writes them. --q8-tensor NAME stores that tensor (GGUF name) in Q8_0, as
llama-quantize's --token-embedding-type q8_0 leaves a float file with one quantized
tensor.

--norm-type bf16 keeps the norms in BF16 (convert writes F32; a BF16-only engine can
then run the file). --split N writes OUT-0000K-of-0000N.gguf files as llama.cpp's
gguf-split does (split.no, split.count, split.tensors.count; the metadata in the first
one). --merged writes one file with split.count 0, as gguf-split --merge leaves it.
--layout writes where each field is, for the malformed-file tests.
"""
import argparse
import json
import math
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
GGML_F32, GGML_F16, GGML_BF16, GGML_Q8_0 = 0, 1, 30, 8
# gguf-py's TokenType
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], t["shape"], data[b:e])
    return out


def bf16_to_f32(raw):
    out = bytearray(len(raw) * 2)
    out[2::4] = raw[0::2]
    out[3::4] = raw[1::2]
    return bytes(out)


def f16_to_f32(raw):
    vals = struct.unpack("<%de" % (len(raw) // 2), raw)
    return struct.pack("<%df" % len(vals), *vals)


def f32_to_f16(raw):
    # IEEE half, round to nearest even (struct's 'e', as numpy's astype(float16))
    vals = struct.unpack("<%df" % (len(raw) // 4), raw)
    return struct.pack("<%de" % len(vals), *vals)


def f32_to_bf16(raw):
    # round to nearest even, as torch does
    vals = struct.unpack("<%dI" % (len(raw) // 4), raw)
    r = [((v + 0x7FFF + ((v >> 16) & 1)) >> 16) & 0xFFFF for v in vals]
    return struct.pack("<%dH" % len(r), *r)


def hf_to_gguf_name(name):
    """model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight (llama.cpp's
    tensor_mapping.py for qwen3)."""
    fixed = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight",
    }
    if name in fixed:
        return fixed[name]
    parts = {
        "input_layernorm": "attn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "self_attn.q_norm": "attn_q_norm",
        "self_attn.k_norm": "attn_k_norm",
        "post_attention_layernorm": "ffn_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    pre = "model.layers."
    assert name.startswith(pre) and name.endswith(".weight"), name
    layer, rest = name[len(pre):-len(".weight")].split(".", 1)
    return "blk.%s.%s.weight" % (layer, parts[rest])


def looks_special(tok):
    # convert_hf_to_gguf.py's does_token_look_special, for the forms Qwen uses
    return (tok.startswith("<|") and tok.endswith("|>")) or tok in ("<pad>", "<mask>")


def vocab(model_dir, cfg):
    """tokens, token types, merges and special ids as convert's get_vocab_base and
    gguf-py's SpecialVocab give them."""
    tj = json.load(open(model_dir + "/tokenizer.json", encoding="utf-8"))
    try:
        tc = json.load(open(model_dir + "/tokenizer_config.json", encoding="utf-8"))
    except FileNotFoundError:
        tc = {}
    rev = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {}
    for a in tj["added_tokens"]:
        rev[a["id"]] = a["content"]
        added[a["id"]] = a
    for k, a in tc.get("added_tokens_decoder", {}).items():
        if int(k) not in added:
            rev[int(k)] = a["content"]
            added[int(k)] = a
    size = cfg.get("vocab_size", len(rev))
    tokens, types = [], []
    for i in range(size):
        if i not in rev:
            tokens.append("[PAD%d]" % i)
            types.append(UNUSED)
        elif i in added:
            special = added[i].get("special", False)
            tokens.append(rev[i])
            types.append(CONTROL if special or looks_special(rev[i]) else USER_DEFINED)
        else:
            tokens.append(rev[i])
            types.append(NORMAL)
    merges = tj["model"]["merges"]
    if merges and isinstance(merges[0], list):
        merges = [" ".join(p) for p in merges]
    ids = {t: i for i, t in enumerate(tokens)}

    def token_of(v):
        if isinstance(v, dict):
            v = v.get("content")
        return ids.get(v) if isinstance(v, str) else None

    special = {}
    for typ in ("bos", "eos", "unk", "pad"):
        tid = token_of(tc.get(typ + "_token"))
        if tid is None and isinstance(cfg.get(typ + "_token_id"), int):
            tid = cfg[typ + "_token_id"]  # SpecialVocab falls back to config.json
        if tid is not None:
            special[typ] = tid
    add_bos = tc.get("add_bos_token")
    return tokens, types, merges, special, add_bos, tc.get("chat_template")


class Writer:
    def __init__(self):
        self.buf = bytearray()
        self.layout = {"kv": {}, "tensors": {}}

    def u32(self, v):
        self.buf += struct.pack("<I", v)

    def u64(self, v):
        self.buf += struct.pack("<Q", v)

    def string(self, s):
        b = s.encode("utf-8") if isinstance(s, str) else s
        self.u64(len(b))
        self.buf += b

    def value(self, t, v):
        fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
               BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
        if t == STRING:
            self.string(v)
        else:
            self.buf += struct.pack(fmt[t], v)

    def kv(self, key, t, v, elem=None):
        at = len(self.buf)
        self.string(key)
        self.u32(t)
        value_at = len(self.buf)
        if t == ARRAY:
            self.u32(elem)
            self.u64(len(v))
            for x in v:
                self.value(elem, x)
        else:
            self.value(t, v)
        self.layout["kv"][key] = {"at": at, "value_at": value_at, "end": len(self.buf)}


def metadata(w, cfg, voc, outtype):
    tokens, types, merges, special, add_bos, template = voc
    a = "qwen3"
    kvs = [
        ("general.architecture", STRING, a),
        ("general.type", STRING, "model"),
        ("general.name", STRING, "mkgguf test model"),
        ("%s.block_count" % a, U32, cfg["num_hidden_layers"]),
        ("%s.context_length" % a, U32, cfg["max_position_embeddings"]),
        ("%s.embedding_length" % a, U32, cfg["hidden_size"]),
        ("%s.feed_forward_length" % a, U32, cfg["intermediate_size"]),
        ("%s.attention.head_count" % a, U32, cfg["num_attention_heads"]),
        ("%s.attention.head_count_kv" % a, U32, cfg.get("num_key_value_heads",
                                                       cfg["num_attention_heads"])),
    ]
    rs = cfg.get("rope_scaling") or {}
    rtype = rs.get("rope_type", rs.get("type"))
    if rtype == "linear":
        kvs += [("%s.rope.scaling.type" % a, STRING, "linear"),
                ("%s.rope.scaling.factor" % a, F32, rs["factor"])]
    elif rtype == "yarn":
        kvs += [("%s.rope.scaling.type" % a, STRING, "yarn"),
                ("%s.rope.scaling.factor" % a, F32, rs["factor"])]
        if rs.get("original_max_position_embeddings"):
            kvs.append(("%s.rope.scaling.original_context_length" % a, U32,
                        rs["original_max_position_embeddings"]))
        for k, g in (("attention_factor", "yarn_attn_factor"), ("beta_fast", "yarn_beta_fast"),
                     ("beta_slow", "yarn_beta_slow")):
            if rs.get(k) is not None:
                kvs.append(("%s.rope.scaling.%s" % (a, g), F32, rs[k]))
    kvs += [("%s.rope.freq_base" % a, F32, cfg.get("rope_theta", 10000.0)),
            ("%s.attention.layer_norm_rms_epsilon" % a, F32, cfg.get("rms_norm_eps", 1e-6))]
    if cfg.get("head_dim") is not None:
        kvs += [("%s.attention.key_length" % a, U32, cfg["head_dim"]),
                ("%s.attention.value_length" % a, U32, cfg["head_dim"])]
    kvs += [("general.file_type", U32, {"f32": 0, "f16": 1, "bf16": 32}[outtype]),
            ("general.quantization_version", U32, 2),
            ("tokenizer.ggml.model", STRING, "gpt2"),
            ("tokenizer.ggml.pre", STRING, "qwen2"),
            ("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
            ("tokenizer.ggml.token_type", ARRAY, types, I32),
            ("tokenizer.ggml.merges", ARRAY, merges, STRING)]
    for typ in ("eos", "pad", "bos", "unk"):
        if typ in special:
            name = "padding" if typ == "pad" else typ
            kvs.append(("tokenizer.ggml.%s_token_id" % name, U32, special[typ]))
    if isinstance(add_bos, bool):
        kvs.append(("tokenizer.ggml.add_bos_token", BOOL, add_bos))
    if isinstance(template, str):
        kvs.append(("tokenizer.chat_template", STRING, template))
    return kvs


def sampling(model_dir):
    """generation_config.json's top_k, top_p, min_p and temperature (gguf-py's
    Metadata.load: int32 and float32 keys), where the file has them."""
    try:
        gen = json.load(open(model_dir + "/generation_config.json"))
    except FileNotFoundError:
        return []
    keys = (("top_k", "general.sampling.top_k", I32), ("top_p", "general.sampling.top_p", F32),
            ("min_p", "general.sampling.min_p", F32), ("temperature", "general.sampling.temp", F32))
    return [(key, typ, gen[name]) for name, key, typ in keys if gen.get(name) is not None]


def q8_0(raw_f32):
    """ggml's quantize_row_q8_0_ref: blocks of 32, d = max|x| / 127 (fp16), q = round(x / d)."""
    xs = struct.unpack("<%df" % (len(raw_f32) // 4), raw_f32)
    out = bytearray()
    for b in range(0, len(xs), 32):
        blk = xs[b:b + 32]
        d = max(abs(x) for x in blk) / 127
        inv = 1 / d if d else 0.0
        out += struct.pack("<e", d)
        # roundf: halves away from zero
        out += struct.pack("<32b", *(int(math.copysign(math.floor(abs(x * inv) + 0.5), x))
                                     for x in blk))
    return bytes(out)


def tensors(model_dir, outtype, norm_type):
    st = read_safetensors(model_dir + "/model.safetensors")
    out = []
    for name in st:  # convert writes them in the checkpoint's order
        dtype, shape, raw = st[name]
        assert dtype in ("BF16", "F32"), dtype
        want = norm_type if len(shape) == 1 else outtype
        if dtype == "BF16" and want != "bf16":
            raw = bf16_to_f32(raw)
        elif dtype == "F32" and want == "bf16":
            raw = f32_to_bf16(raw)
        if want == "f16":
            raw = f32_to_f16(raw)
        gtype = {"f32": GGML_F32, "f16": GGML_F16, "bf16": GGML_BF16}[want]
        out.append((hf_to_gguf_name(name), list(reversed(shape)), gtype, raw))
    return out


def write_file(path, kvs, tens, alignment, version):
    w = Writer()
    w.buf += b"GGUF"
    w.u32(version)
    w.layout["n_tensors_at"] = len(w.buf)
    w.u64(len(tens))
    w.layout["n_kv_at"] = len(w.buf)
    w.u64(len(kvs))
    for k in kvs:
        w.kv(*k)
    offset = 0
    for name, ne, gtype, raw in tens:
        info = {"at": len(w.buf)}
        w.string(name)
        info["ndim_at"] = len(w.buf)
        w.u32(len(ne))
        info["ne_at"] = len(w.buf)
        for n in ne:
            w.u64(n)
        info["type_at"] = len(w.buf)
        w.u32(gtype)
        info["offset_at"] = len(w.buf)
        w.u64(offset)
        info.update(offset=offset, nbytes=len(raw), ne=ne, type=gtype)
        w.layout["tensors"][name] = info
        offset += (len(raw) + alignment - 1) // alignment * alignment
    w.layout["infos_end"] = len(w.buf)
    w.buf += b"\0" * (-len(w.buf) % alignment)
    w.layout["data_start"] = len(w.buf)
    for name, ne, gtype, raw in tens:
        w.buf += raw
        w.buf += b"\0" * (-len(w.buf) % alignment)
    w.layout["size"] = len(w.buf)
    w.layout["alignment"] = alignment
    with open(path, "wb") as f:
        f.write(w.buf)
    return w.layout


def quirks(kvs, tens, cfg, names):
    n_layers = cfg["num_hidden_layers"]
    for q in names:
        if q == "layer-arrays":
            arr = ("qwen3.feed_forward_length", "qwen3.attention.head_count",
                   "qwen3.attention.head_count_kv")
            kvs = [(k, ARRAY, [v] * n_layers, I32) if k in arr else (k, t, v, *e)
                   for k, t, v, *e in kvs]
        elif q == "fused-qkv":  # blk.N.attn_qkv.weight: Q's rows, then K's, then V's
            byname = {n: (ne, g, raw) for n, ne, g, raw in tens}
            out = []
            for n, ne, g, raw in tens:
                if n.endswith(".attn_q.weight"):
                    p = n[:-len("attn_q.weight")]
                    parts = [byname[p + x + ".weight"] for x in ("attn_q", "attn_k", "attn_v")]
                    out.append((p + "attn_qkv.weight", [ne[0], sum(x[0][1] for x in parts)],
                                g, b"".join(x[2] for x in parts)))
                elif not (n.endswith(".attn_k.weight") or n.endswith(".attn_v.weight")):
                    out.append((n, ne, g, raw))
            tens = out
        elif q == "trailing-ones":
            tens = [(n, ne + [1], g, raw) for n, ne, g, raw in tens]
        elif q == "pre-alias":  # a name llama.cpp reads as qwen2's pre-tokenizer
            kvs = [(k, t, "deepseek-r1-qwen" if k == "tokenizer.ggml.pre" else v, *e)
                   for k, t, v, *e in kvs]
        elif q in ("no-pre", "no-token-type"):
            key = {"no-pre": "tokenizer.ggml.pre",
                   "no-token-type": "tokenizer.ggml.token_type"}[q]
            kvs = [kv for kv in kvs if kv[0] != key]
        elif q in ("rope-no-type", "rope-scale-linear", "rope-none"):
            # a factor without a type (llama.cpp reads it as linear), under the older
            # key rope.scale_linear, or with the type none (nothing scaled)
            typ, fac = "qwen3.rope.scaling.type", "qwen3.rope.scaling.factor"
            if q == "rope-none":
                kvs = [(k, t, "none" if k == typ else v, *e) for k, t, v, *e in kvs]
            else:
                kvs = [kv for kv in kvs if kv[0] != typ]
            if q == "rope-scale-linear":
                kvs = [("qwen3.rope.scale_linear" if k == fac else k, t, v, *e)
                       for k, t, v, *e in kvs]
        elif q == "bad-padding":
            n = len(next(kv for kv in kvs if kv[0] == "tokenizer.ggml.tokens")[2])
            kvs = [kv for kv in kvs if kv[0] != "tokenizer.ggml.padding_token_id"]
            kvs.append(("tokenizer.ggml.padding_token_id", U32, n + 5))
        else:
            sys.exit("mkgguf.py: unknown quirk %s" % q)
    return kvs, tens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=("bf16", "f16", "f32"), default="bf16")
    ap.add_argument("--norm-type", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--split", type=int, default=1)
    ap.add_argument("--merged", action="store_true")
    ap.add_argument("--alignment", type=int, default=32)
    ap.add_argument("--version", type=int, default=3)
    ap.add_argument("--layout")
    ap.add_argument("--q8-tensor")
    ap.add_argument("--quirks", default="",
                    help="comma-separated, what other writers do that llama.cpp still "
                         "loads: layer-arrays (per-layer sizes as arrays), trailing-ones "
                         "(shapes stored with a last dimension of 1), fused-qkv, pre-alias, no-pre, "
                         "no-token-type, bad-padding (a padding id past the tokens), "
                         "rope-no-type, rope-scale-linear, rope-none (see quirks)")
    a = ap.parse_args()
    cfg = json.load(open(a.model_dir + "/config.json"))
    kvs = metadata(None, cfg, vocab(a.model_dir, cfg), a.outtype) + sampling(a.model_dir)
    if a.alignment != 32:
        kvs.append(("general.alignment", U32, a.alignment))
    tens = tensors(a.model_dir, a.outtype, a.norm_type)
    kvs, tens = quirks(kvs, tens, cfg, [q for q in a.quirks.split(",") if q])
    if a.q8_tensor:
        tens = [(n, ne, GGML_Q8_0, q8_0(raw if g == GGML_F32 else f16_to_f32(raw)
                                        if g == GGML_F16 else bf16_to_f32(raw)))
                if n == a.q8_tensor else (n, ne, g, raw) for n, ne, g, raw in tens]
    if a.merged:  # llama-gguf-split --merge: split.count 0, "do not merge again"
        kvs = kvs + [("split.no", U16, 0), ("split.count", U16, 0),
                     ("split.tensors.count", I32, len(tens))]
    if a.split <= 1:
        layout = write_file(a.out, kvs, tens, a.alignment, a.version)
    else:
        # gguf-split: tensors in order, spread over N files; the first holds the metadata
        base = a.out[:-5] if a.out.endswith(".gguf") else a.out
        per = (len(tens) + a.split - 1) // a.split
        layout = {}
        for k in range(a.split):
            split_kvs = [("split.no", U16, k), ("split.count", U16, a.split),
                         ("split.tensors.count", I32, len(tens))]
            if k == 0:
                split_kvs = kvs + split_kvs
            path = "%s-%05d-of-%05d.gguf" % (base, k + 1, a.split)
            layout[path] = write_file(path, split_kvs, tens[k * per:(k + 1) * per],
                                      a.alignment, a.version)
    if a.layout:
        json.dump(layout, open(a.layout, "w"))


if __name__ == "__main__":
    sys.exit(main())
