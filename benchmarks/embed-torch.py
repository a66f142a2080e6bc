#!/usr/bin/python3
# embed-torch.py — the PyTorch side of BENCHMARKS.md's embedding table: what
# sentence-transformers does with Qwen3-Embedding on a CPU, in float32 (transformers'
# modeling_qwen3 arithmetic: RMSNorm, q/k norms, RoPE, GQA softmax attention, SwiGLU),
# each text run alone under torch.no_grad() (no padding: the least work per text), its
# last position's final-normed hidden state L2-normalized.
#
#   /usr/bin/python3 benchmarks/embed-torch.py MODEL_DIR IDS.json [--threads 2]
#       [--out VECTORS.json]
#
# IDS.json: a list of lists of token ids, each text's as the tokenizer encodes it with
# its special tokens (the <|endoftext|> Qwen3-Embedding appends included). MODEL_DIR
# may hold the bare Qwen3Model's names (Qwen3-Embedding's) or the causal LM's.
# Prints the seconds of the forwards and the tokens per second.
import argparse, json, os, sys, time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
import ppl_reference as pr  # noqa: E402  (reads safetensors into float64 numpy)

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("ids")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--out")
a = ap.parse_args()
torch.set_num_threads(a.threads)

cfg, w64 = pr.load(a.model)
w = {("model." + k if not k.startswith(("model.", "lm_head")) else k): torch.from_numpy(v).float()
     for k, v in w64.items()}
del w64
H, KVH = cfg["num_attention_heads"], cfg["num_key_value_heads"]
hd = cfg.get("head_dim") or cfg["hidden_size"] // H
eps = cfg["rms_norm_eps"]
inv_freq = 1.0 / (cfg.get("rope_theta", 1e6) ** (torch.arange(0, hd, 2).float() / hd))


def norm(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rot(x, cos, sin):
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


@torch.no_grad()
def embed(ids):
    n = len(ids)
    f = torch.outer(torch.arange(n).float(), inv_freq)
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    mask = torch.full((n, n), float("-inf")).triu(1)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = norm(x, w[p + "input_layernorm.weight"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(n, H, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(n, KVH, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, KVH, hd)
        q = rot(norm(q, w[p + "self_attn.q_norm.weight"]), cos, sin)
        k = rot(norm(k, w[p + "self_attn.k_norm.weight"]), cos, sin)
        k = k.repeat_interleave(H // KVH, dim=1)
        v = v.repeat_interleave(H // KVH, dim=1)
        s = torch.einsum("qhd,khd->hqk", q, k) / hd ** 0.5 + mask
        att = torch.einsum("hqk,khd->qhd", s.softmax(-1), v).reshape(n, H * hd)
        x = x + att @ w[p + "self_attn.o_proj.weight"].T
        h = norm(x, w[p + "post_attention_layernorm.weight"])
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    last = norm(x[-1], w["model.norm.weight"])
    return torch.nn.functional.normalize(last, dim=0)


texts = json.load(open(a.ids))
t0 = time.perf_counter()
vecs = [embed(ids) for ids in texts]
dt = time.perf_counter() - t0
tokens = sum(len(ids) for ids in texts)
print(json.dumps({"texts": len(texts), "tokens": tokens, "seconds": round(dt, 3),
                  "tok_s": round(tokens / dt, 1)}))
if a.out:
    json.dump([v.tolist() for v in vecs], open(a.out, "w"))
