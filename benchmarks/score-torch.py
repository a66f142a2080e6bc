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
import argparse, json, time

import torch

from qwen3_torch import Qwen3  # beside this script
from score_requests import requests

ap = argparse.ArgumentParser()
ap.add_argument("model")
for name, default in [("threads", 2), ("contexts", 8), ("ctx", 96), ("cont", 16), ("choices", 4)]:
    ap.add_argument("--" + name, type=int, default=default)
a = ap.parse_args()
torch.set_num_threads(a.threads)

m = Qwen3(a.model)


def logprobs(ids):
    return torch.log_softmax(m.hidden(ids) @ m.head.T, -1)


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
