#!/usr/bin/python3
"""ppl_sft_ref.py — a float64 reference for `qwenchat perplexity --sft`.

Written from the rules of `man qwenchat`, not from qwenchat's code: the conversations
are rendered (jinja2) and tokenized (a BPE written in Python) by sft_ref.py, which
checks `train --sft`; each is cut as a training row of CTX - 1 inputs is (after its
last answer within CTX tokens; left out when its first answer ends past them; one
without an answer is not scored) and run alone through ppl_reference.py's float64
Qwen3, and each of its answer tokens adds -log softmax(the logits before it)[token].
With --kl-base MODEL2, the statistics ppl_reference.py gives against a base, over
the same tokens.

usage: ppl_sft_ref.py MODEL_DIR CONVS CTX [--kl-base MODEL2_DIR]
prints {"tokens", "nll", "ppl", "conversations", "cut", "left_out", "no_answer"[, the
base's statistics as ppl_reference.py names them]}.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppl_reference as pr  # noqa: E402
import sft_ref  # noqa: E402  (exits 77 without torch, numpy, jinja2 or regex)
import numpy as np  # noqa: E402


def rows(model_dir, path, ctx):
    """The conversations' (ids, scored) as a window of ctx tokens takes them, and counts."""
    bpe = sft_ref.BPE(os.path.join(model_dir, "tokenizer.json"))
    render = sft_ref.template(model_dir)
    out, n = [], {"conversations": 0, "cut": 0, "left_out": 0, "no_answer": 0}
    for conv in sft_ref.conversations(path):
        if not any(m["role"] == "assistant" for m in conv["messages"]):
            n["no_answer"] += 1
            continue
        ids, scored = sft_ref.encode(bpe, render, conv)
        m = sft_ref.fit(scored, ctx - 1)
        if not m:
            n["left_out"] += 1
            continue
        n["cut"] += m < sft_ref.fit(scored, len(ids))
        n["conversations"] += 1
        out.append((np.array(ids[:m]), scored[:m]))
    return out, n


def main():
    args = sys.argv[1:]
    base = None
    if "--kl-base" in args:
        i = args.index("--kl-base")
        base = pr.load(args[i + 1])
        del args[i:i + 2]
    model_dir, path, ctx = args[0], args[1], int(args[2])
    cfg, w = pr.load(model_dir)
    convs, out = rows(model_dir, path, ctx)
    nll, bnll, kl, top1 = [], [], [], 0
    for ids, scored in convs:
        at = [i for i in range(1, len(ids)) if scored[i]]
        lp = pr.log_softmax(pr.forward(cfg, w, ids))[[i - 1 for i in at]]
        nll.extend(-lp[k, ids[i]] for k, i in enumerate(at))
        if base:
            lq = pr.log_softmax(pr.forward(base[0], base[1], ids))[[i - 1 for i in at]]
            bnll.extend(-lq[k, ids[i]] for k, i in enumerate(at))
            kl.extend((np.exp(lp) * (lp - lq)).sum(axis=-1))
            top1 += int((lp.argmax(axis=-1) == lq.argmax(axis=-1)).sum())
    n = len(nll)
    out.update(tokens=n, nll=float(np.mean(nll)), ppl=math.exp(np.mean(nll)))
    if base:
        out.update(pr.vs_base(nll, bnll, kl, top1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
