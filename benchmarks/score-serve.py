#!/usr/bin/python3
# score-serve.py — a log-likelihood task as lm-evaluation-harness's local-completions
# model sends it to a server's /v1/completions: CONTEXTS contexts of CTX token ids, each
# sent with CHOICES continuations of CONT ids (a multiple-choice question), BATCH
# prompts per request as arrays of token ids with echo, logprobs 1, max_tokens 1 and
# temperature 0; the continuation's log-likelihood read from token_logprobs. The
# requests are the ones benchmarks/score-torch.py scores (score_requests.py).
#
#   python3 benchmarks/score-serve.py PORT [--contexts 8] [--ctx 96] [--cont 16]
#       [--choices 4] [--batch 1]
#
# Prints the seconds and the prompt tokens per second.
import argparse, http.client, json, time

from score_requests import requests

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
for name, default in [("contexts", 8), ("ctx", 96), ("cont", 16), ("choices", 4), ("batch", 1)]:
    ap.add_argument("--" + name, type=int, default=default)
a = ap.parse_args()
reqs = requests(a.contexts, a.ctx, a.cont, a.choices)
t0 = time.time()
tokens = 0
for i in range(0, len(reqs), a.batch):
    part = reqs[i:i + a.batch]
    body = json.dumps({"model": "m", "prompt": [c + k for c, k in part], "max_tokens": 1,
                       "logprobs": 1, "echo": True, "temperature": 0, "seed": 1234})
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    conn.request("POST", "/v1/completions", body=body,
                 headers={"Content-Type": "application/json"})
    r = json.loads(conn.getresponse().read())
    for (c, k), choice in zip(part, sorted(r["choices"], key=lambda x: x["index"])):
        sum(choice["logprobs"]["token_logprobs"][len(c):-1])
        tokens += len(c) + len(k)
dt = time.time() - t0
print(json.dumps({"prompts": len(reqs), "tokens": tokens, "seconds": round(dt, 2),
                  "tok_s": round(tokens / dt, 1)}))
