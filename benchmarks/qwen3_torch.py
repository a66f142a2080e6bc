# qwen3_torch.py — the float32 PyTorch Qwen3 forward that score-torch.py and
# embed-torch.py time: transformers' modeling_qwen3 arithmetic (RMSNorm, q/k norms,
# RoPE, GQA softmax attention, SwiGLU), the weights read from a model directory's
# safetensors (the causal LM's names, or the bare Qwen3Model's of Qwen3-Embedding).
import math, os, sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
import ppl_reference as pr  # noqa: E402  (reads safetensors into float64 numpy)


class Qwen3:
    def __init__(self, model_dir):
        cfg, w64 = pr.load(model_dir)
        self.cfg = cfg
        self.w = {("model." + k if not k.startswith(("model.", "lm_head")) else k):
                  torch.from_numpy(v).float() for k, v in w64.items()}
        del w64
        self.H, self.KVH = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.hd = cfg.get("head_dim") or cfg["hidden_size"] // self.H
        self.eps = cfg["rms_norm_eps"]
        self.head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])
        self.inv_freq = 1.0 / (cfg.get("rope_theta", 1e6) **
                               (torch.arange(0, self.hd, 2).float() / self.hd))

    def norm(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rot(self, x, cos, sin):
        h = self.hd // 2
        return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin

    @torch.no_grad()
    def hidden(self, ids):
        """The final-normed hidden states (len(ids), hidden_size) from an empty context."""
        w, H, KVH, hd, n = self.w, self.H, self.KVH, self.hd, len(ids)
        f = torch.outer(torch.arange(n).float(), self.inv_freq)
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
        mask = torch.full((n, n), float("-inf")).triu(1)
        x = w["model.embed_tokens.weight"][torch.tensor(ids)]
        for l in range(self.cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            h = self.norm(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(n, H, hd)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(n, KVH, hd)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, KVH, hd)
            q = self.rot(self.norm(q, w[p + "self_attn.q_norm.weight"]), cos, sin)
            k = self.rot(self.norm(k, w[p + "self_attn.k_norm.weight"]), cos, sin)
            k = k.repeat_interleave(H // KVH, 1)
            v = v.repeat_interleave(H // KVH, 1)
            s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd) + mask
            att = torch.einsum("hqk,khd->qhd", s.softmax(-1), v).reshape(n, H * hd)
            x = x + att @ w[p + "self_attn.o_proj.weight"].T
            h = self.norm(x, w[p + "post_attention_layernorm.weight"])
            g = h @ w[p + "mlp.gate_proj.weight"].T
            x = x + (torch.nn.functional.silu(g) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
                w[p + "mlp.down_proj.weight"].T
        return self.norm(x, w["model.norm.weight"])
