#!/usr/bin/env python3
"""ppl_reference.py — an independent float64 reference for `qwenchat perplexity`.

A Qwen3 forward pass in numpy float64, written from the Hugging Face transformers
modeling_qwen3.py semantics (embedding, RMSNorm, q/k/v projections, per-head q/k
RMSNorm, RoPE with rotate_half, config.json's rope_theta and its rope_scaling (linear
or YaRN, as transformers 4.51.3 computes them), causal grouped-query softmax
attention, SwiGLU MLP, final norm, tied or untied lm_head), reading the
model's safetensors itself (bf16, f16 or f32 widened to float64), and the sliding-
window loop of the transformers guide "Perplexity of fixed-length models":

    prev_end = 0
    for begin in range(0, len, stride):
        end = min(begin + ctx, len); trg_len = end - prev_end
        window = ids[begin:end]; labels = the last trg_len of them
        (the label at window position 0 has no logits before it: never scored)
        prev_end = end; stop after the window that reaches len

Each scored label adds -log softmax(logits of the position before it)[label]; the
result is the mean over the scored labels. With --kl-base MODEL2 it also sums
KL(P || Q) = sum_v P(v) (log P(v) - log Q(v)), P the model's, Q MODEL2's, and counts
the positions where both argmaxes agree.

With --llama it scores as llama.cpp's llama-perplexity does instead (tools/perplexity:
n_chunk = len // ctx whole chunks of ctx tokens, first = ctx / 2; the logits of chunk
positions first .. ctx - 2 score the tokens one further; STRIDE is ignored).

usage: ppl_reference.py MODEL_DIR IDS.u32 CTX STRIDE [--kl-base MODEL2_DIR] [--se] [--llama]
prints {"tokens": N, "nll": X, "ppl": Y[, "kl": K, "top1": T, and the statistics of
llama-perplexity's --kl-divergence: "base_nll", "base_ppl", "ln_ppl_ratio", "ppl_ratio",
"kl_median", "kl_p90", "kl_p99", "kl_p999", "kl_max", "dp", "dp_rms"]}; with --se, also
"nll_se" (the standard error of the mean NLL: the sample standard deviation of the
positions' NLLs over sqrt(N)) and, with a base, "kl_se", "ln_ppl_ratio_se", "dp_se".

Its forward() also makes the logits of tests/golden/logits-quant-*.txt
(tests/golden/make-quant-logits-golden.sh).
"""
import json
import math
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    """name -> float64 array, from one .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = raw[base + a:base + b]
        if t["dtype"] == "BF16":
            u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            x = u.view(np.float32)
        elif t["dtype"] == "F16":
            x = np.frombuffer(buf, dtype="<f2")
        elif t["dtype"] == "F32":
            x = np.frombuffer(buf, dtype="<f4")
        else:
            sys.exit("unsupported dtype %s" % t["dtype"])
        out[name] = x.astype(np.float64).reshape(t["shape"])
    return out


def load(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) \
        else ["model.safetensors"]
    w = {}
    for f in files:
        w.update(read_safetensors(os.path.join(model_dir, f)))
    return cfg, w


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope_inv_freq(cfg, hd):
    """RoPE's inverse frequencies and the factor on cos and sin, as transformers'
    _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters and
    _compute_yarn_parameters define them (in float64 here): YaRN's factor as given, as
    transformers 4.56+ takes it (4.51-4.55 replaced it by max_position_embeddings /
    original_max_position_embeddings)."""
    base = cfg["rope_theta"]
    pos_freqs = base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        return 1.0 / pos_freqs / rs["factor"], 1.0
    if kind != "yarn":
        return 1.0 / pos_freqs, 1.0
    factor = rs["factor"]
    orig = rs.get("original_max_position_embeddings") or cfg["max_position_embeddings"]

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    att = rs.get("attention_factor")
    if att is None:
        ms, ms_all = rs.get("mscale"), rs.get("mscale_all_dim")
        att = get_mscale(factor, ms) / get_mscale(factor, ms_all) if ms and ms_all \
            else get_mscale(factor)

    def corr_dim(rot):
        return hd * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(corr_dim(rs.get("beta_fast") or 32)), 0)
    high = min(math.ceil(corr_dim(rs.get("beta_slow") or 1)), hd - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(hd // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extra = 1 - ramp  # the share of the unscaled frequency
    return (1.0 / (factor * pos_freqs)) * (1 - extra) + (1.0 / pos_freqs) * extra, att


def forward(cfg, w, ids):
    """Logits (len(ids), vocab) of the positions 0.. of ids, from an empty context."""
    n = len(ids)
    H, KVH = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg["rms_norm_eps"]
    inv_freq, scale = rope_inv_freq(cfg, hd)
    freqs = np.outer(np.arange(n, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb)[:, None, :] * scale, np.sin(emb)[:, None, :] * scale  # (n, 1, hd)
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    x = w["model.embed_tokens.weight"][np.asarray(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, H, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, KVH, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, KVH, hd)
        q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
        k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, H // KVH, axis=1)  # head g*group+j uses kv head g
        v = np.repeat(v, H // KVH, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd) + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        att = np.einsum("hqk,khd->qhd", s, v).reshape(n, H * hd)
        x = x + att @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight")
    if cfg.get("tie_word_embeddings") or head is None:
        head = w["model.embed_tokens.weight"]
    return x @ head.T


def vs_base(each_nll, each_base, each_kl, top1, se=False):
    """The figures against a base over the scored positions (their NLLs under the model
    and the base, their KL, the count of equal argmaxes): the mean KL and top1, and
    llama-perplexity's --kl-divergence statistics, MODEL as its Q and MODEL2 as its base:
    the log of the perplexities' ratio, the KL's percentiles (numpy's linear interpolation
    between neighbours, as its percentile()) and p(token) - q(token); with se, the
    standard errors of the means."""
    n = len(each_nll)
    d = np.array(each_nll) - np.array(each_base)
    dp = np.exp(-np.array(each_nll)) - np.exp(-np.array(each_base))
    out = {"kl": float(np.mean(each_kl)), "top1": top1 / n,
           "base_nll": float(np.mean(each_base)), "ln_ppl_ratio": float(np.mean(d)),
           "dp": float(np.mean(dp)), "dp_rms": float(np.sqrt(np.mean(dp * dp)))}
    out["base_ppl"] = math.exp(out["base_nll"])
    out["ppl_ratio"] = math.exp(out["ln_ppl_ratio"])
    for key, pct in (("kl_median", 50), ("kl_p90", 90), ("kl_p99", 99), ("kl_p999", 99.9),
                     ("kl_max", 100)):
        out[key] = float(np.percentile(each_kl, pct))
    if se:
        for key, v in (("kl_se", each_kl), ("ln_ppl_ratio_se", d), ("dp_se", dp)):
            out[key] = float(np.std(v, ddof=1) / math.sqrt(n))
    return out


def log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))


def main():
    args = sys.argv[1:]
    base = None
    want_se = "--se" in args
    if want_se:
        args.remove("--se")
    llama = "--llama" in args
    if llama:
        args.remove("--llama")
    if "--kl-base" in args:
        i = args.index("--kl-base")
        base = load(args[i + 1])
        del args[i:i + 2]
    model_dir, ids_path, ctx, stride = args[0], args[1], int(args[2]), int(args[3])
    cfg, w = load(model_dir)
    ids = np.fromfile(ids_path, dtype="<u4").astype(np.int64)
    tokens, nll, top1 = 0, 0.0, 0
    each_nll, each_kl, each_base = [], [], []
    # (begin, end, the first window position whose label counts)
    if llama:
        windows = [(k * ctx, (k + 1) * ctx, ctx // 2 + 1) for k in range(len(ids) // ctx)]
    else:
        windows, prev_end = [], 0
        for begin in range(0, len(ids), stride):
            end = min(begin + ctx, len(ids))
            windows.append((begin, end, max(end - begin - (end - prev_end), 1)))
            prev_end = end
            if end == len(ids):
                break
    for begin, end, first in windows:
        window = ids[begin:end]
        if first < len(window):
            lp = log_softmax(forward(cfg, w, window))
            rows = np.arange(first - 1, len(window) - 1)
            nll -= lp[rows, window[first:]].sum()
            each_nll.extend(-lp[rows, window[first:]])
            tokens += len(rows)
            if base:
                lq = log_softmax(forward(base[0], base[1], window))
                p, q = lp[rows], lq[rows]
                each_base.extend(-lq[rows, window[first:]])
                each_kl.extend((np.exp(p) * (p - q)).sum(axis=-1))
                top1 += int((p.argmax(axis=-1) == q.argmax(axis=-1)).sum())
    out = {"tokens": tokens, "nll": nll / tokens, "ppl": math.exp(nll / tokens)}
    if base:
        out.update(vs_base(each_nll, each_base, each_kl, top1, want_se))
    if want_se:
        out["nll_se"] = float(np.std(each_nll, ddof=1) / math.sqrt(tokens))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
