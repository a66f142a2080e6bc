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
import argparse, json, time

import torch

from qwen3_torch import Qwen3  # beside this script

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("ids")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--out")
a = ap.parse_args()
torch.set_num_threads(a.threads)

m = Qwen3(a.model)


def embed(ids):
    return torch.nn.functional.normalize(m.hidden(ids)[-1], dim=0)


texts = json.load(open(a.ids))
t0 = time.perf_counter()
vecs = [embed(ids) for ids in texts]
dt = time.perf_counter() - t0
tokens = sum(len(ids) for ids in texts)
print(json.dumps({"texts": len(texts), "tokens": tokens, "seconds": round(dt, 3),
                  "tok_s": round(tokens / dt, 1)}))
if a.out:
    json.dump([v.tolist() for v in vecs], open(a.out, "w"))
