#!/usr/bin/python3
# score-torch.py — what lm-evaluation-harness's "hf" model does on a CPU for a
# log-likelihood task, the side of BENCHMARKS.md's scoring table that `qwenchat serve`'s
# /v1/completions is compared with: a float32 PyTorch Qwen3 (transformers'
# modeling_qwen3 arithmetic: RMSNorm, q/k norms, RoPE, GQA softmax attention, SwiGLU),
# the weights read from MODEL_DIR's safetensors, each request (context + continuation)
# run whole under torch.no_grad() and its continuation's tokens read from log_softmax,
# as lm-eval's _loglikelihood_tokens does with batch size 1.
#
#   /usr/bin/python3 benchmarks/score-torch.py MODEL_DIR [--threads 2] [--contexts 8]
#       [--ctx 96] [--cont 16] [--choices 4]
#
# The requests are the ones benchmarks/score-serve.py sends (score_requests.py).
# Prints the seconds and the prompt tokens per second.
import argparse, json, math, os, sys, time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
import ppl_reference as pr  # noqa: E402  (reads safetensors into float64 numpy)
from score_requests import requests  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
for name, default in [("threads", 2), ("contexts", 8), ("ctx", 96), ("cont", 16), ("choices", 4)]:
    ap.add_argument("--" + name, type=int, default=default)
a = ap.parse_args()
torch.set_num_threads(a.threads)

cfg, w64 = pr.load(a.model)
w = {k: torch.from_numpy(v).float() for k, v in w64.items()}
del w64
H, KVH = cfg["num_attention_heads"], cfg["num_key_value_heads"]
hd = cfg.get("head_dim") or cfg["hidden_size"] // H
eps = cfg["rms_norm_eps"]
head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
inv_freq = 1.0 / (cfg.get("rope_theta", 1e6) ** (torch.arange(0, hd, 2).float() / hd))


def norm(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rot(x, cos, sin):
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


@torch.no_grad()
def logprobs(ids):
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
        k = k.repeat_interleave(H // KVH, 1)
        v = v.repeat_interleave(H // KVH, 1)
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd) + mask
        att = torch.einsum("hqk,khd->qhd", s.softmax(-1), v).reshape(n, H * hd)
        x = x + att @ w[p + "self_attn.o_proj.weight"].T
        h = norm(x, w[p + "post_attention_layernorm.weight"])
        g = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
            w[p + "mlp.down_proj.weight"].T
    return torch.log_softmax(norm(x, w["model.norm.weight"]) @ head.T, -1)


reqs = requests(a.contexts, a.ctx, a.cont, a.choices)
logprobs(reqs[0][0][:8])  # warm-up
t0 = time.time()
tokens = 0
for ctx, cont in reqs:
    lp = logprobs(ctx + cont)
    got = lp[len(ctx) - 1:-1].gather(1, torch.tensor(cont)[:, None]).sum()
    tokens += len(ctx) + len(cont)
dt = time.time() - t0
print(json.dumps({"prompts": len(reqs), "tokens": tokens, "seconds": round(dt, 2),
                  "tok_s": round(tokens / dt, 1)}))
