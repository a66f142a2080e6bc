#!/usr/bin/python3
"""sft_ref.py — a float64 reference of `qwenchat train --sft --sequential`.

Written from the rules of `qwenchat train --help`, not from qwenchat's code: each
conversation is rendered with the chat_template of the tokenizer's
tokenizer_config.json by jinja2 (set up as transformers' apply_chat_template sets it
up, as tests/golden/make-template-golden.py does), without a generation prompt;
the answers are the text after each "<|im_start|>assistant\\n" through the next
"<|im_end|>"; the text is cut at the answers' bounds and each piece tokenized by a
byte-level BPE written here from tokenizer.json (added tokens split out, the Qwen2
pre-tokenizer regex, merges by rank); the answers' tokens are the targets. A
conversation longer than ctx + 1 tokens is cut after its last answer within them
(left out when there is none); each is one row padded to ctx; row b of micro-batch
a of step s is conversation ((s*A + a)*B + b) mod N. With --pack, the conversations
are packed first-fit decreasing (longest first, ties in file order, each into the
first row with room for its len - 1 positions), each at positions 0, 1, ... of its
own, the rest of a row padding at positions from 0; the rows stand for the
conversations in that rule. The training itself is train_ref.py's (float64 Qwen3,
AdamW, clipping, the schedule), its attention kept within each conversation.

  sft_ref.py run --init DIR --tokenizer DIR --data FILE... [options] --out REF.safetensors

prints one JSON object per step as train_ref.py run does; its `compare` checks the
result. The test conversations must not hold the template's markers in their text
(the reference does not mark where messages lie in the rendering).
Exit 77 when torch, numpy, jinja2 or regex is missing.
"""
import argparse
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jinja2
    import jinja2.ext
    import regex
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    import numpy as np
    import torch
    import train_ref
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (Debian: python3-torch, python3-numpy, python3-jinja2, python3-regex)",
          file=sys.stderr)
    sys.exit(77)

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
OPEN, CLOSE = "<|im_start|>assistant\n", "<|im_end|>"


def byte_chars():
    """GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1))
            + list(range(0xAE, 0xFF + 1)))
    extra, out = 0, {}
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


class BPE:
    def __init__(self, path):
        t = json.load(open(path, encoding="utf-8"))
        self.vocab = t["model"]["vocab"]
        merges = t["model"]["merges"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
        self.rank = {m: i for i, m in enumerate(merges)}
        self.added = {a["content"]: a["id"] for a in t["added_tokens"]}
        self.nfc = (t.get("normalizer") or {}).get("type") == "NFC"
        self.chars = byte_chars()
        alts = sorted(self.added, key=len, reverse=True)
        self.split = regex.compile("(" + "|".join(regex.escape(a) for a in alts) + ")") if alts else None
        self.pre = regex.compile(QWEN2_PATTERN)

    def word(self, w):
        syms = [self.chars[b] for b in w.encode("utf-8")]
        while len(syms) > 1:
            pairs = [(self.rank.get((syms[i], syms[i + 1]), None), i) for i in range(len(syms) - 1)]
            pairs = [p for p in pairs if p[0] is not None]
            if not pairs:
                break
            r = min(pairs)[0]
            out, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and self.rank.get((syms[i], syms[i + 1])) == r:
                    out.append(syms[i] + syms[i + 1])
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            syms = out
        return [self.vocab[s] for s in syms]

    def encode(self, text):
        parts = self.split.split(text) if self.split else [text]
        ids = []
        for k, p in enumerate(parts):
            if k % 2 == 1:
                ids.append(self.added[p])
                continue
            if self.nfc:
                p = unicodedata.normalize("NFC", p)
            for w in self.pre.findall(p):
                ids.extend(self.word(w))
        return ids


def template(tokdir):
    cfg = json.load(open(f"{tokdir}/tokenizer_config.json", encoding="utf-8"))

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    t = env.from_string(cfg["chat_template"])
    return lambda conv: t.render(messages=conv.get("messages"), tools=conv.get("tools"),
                                 documents=None, add_generation_prompt=False,
                                 bos_token=cfg.get("bos_token"), eos_token=cfg.get("eos_token"),
                                 pad_token=cfg.get("pad_token"))


def conversations(path):
    text = open(path, encoding="utf-8").read()
    if path.endswith(".jsonl"):
        out = [json.loads(l) for l in text.split("\n") if l.strip()]
    else:
        out = [json.loads(text)]
    return [c if isinstance(c, dict) else {"messages": c} for c in out]


def encode(bpe, render, conv):
    """(ids, scored) of a conversation."""
    text = render(conv)
    for m in conv["messages"]:
        for f in ("content", "reasoning_content"):
            assert OPEN not in (m.get(f) or "") and CLOSE not in (m.get(f) or "")
    ids, scored, pos = [], [], 0
    while True:
        a = text.find(OPEN, pos)
        if a < 0:
            break
        a += len(OPEN)
        e = text.index(CLOSE, a) + len(CLOSE)
        for piece, sc in ((text[pos:a], False), (text[a:e], True)):
            t = bpe.encode(piece)
            ids += t
            scored += [sc] * len(t)
        pos = e
    t = bpe.encode(text[pos:])
    return ids + t, scored + [False] * len(t)


def fit(scored, T):
    """How many tokens a row of T takes: to the end of the last answer within T + 1."""
    best = 0
    for i in range(2, len(scored) + 1):
        if scored[i - 1] and (i == len(scored) or not scored[i]) and i <= T + 1:
            best = i
    return best


def run(o):
    bpe = BPE(f"{o.tokenizer}/tokenizer.json")
    render = template(o.tokenizer)
    rows = []
    for path in o.data:
        for conv in conversations(path):
            if not any(m["role"] == "assistant" for m in conv["messages"]):
                continue
            ids, scored = encode(bpe, render, conv)
            m = fit(scored, o.ctx)
            if m:
                rows.append((ids[:m], scored[:m]))
    print(f"sft_ref: {len(rows)} conversations", file=sys.stderr)
    T, N = o.ctx, len(rows)
    if o.pack:
        return run_packed(o, rows)

    def batch(s, a):
        inp = np.zeros((o.batch, T), dtype=np.int64)
        tg = np.full((o.batch, T), -100, dtype=np.int64)
        for b in range(o.batch):
            ids, scored = rows[((s * o.accum + a) * o.batch + b) % N]
            inp[b, :len(ids) - 1] = ids[:-1]
            for i in range(1, len(ids)):
                if scored[i]:
                    tg[b, i - 1] = ids[i]
        return torch.from_numpy(inp), torch.from_numpy(tg)

    train_ref.train(o, o.init, batch)


def run_packed(o, rows):
    T = o.ctx
    order = sorted(range(len(rows)), key=lambda k: (-(len(rows[k][0]) - 1), k))
    packed, room = [], []
    for k in order:
        w = len(rows[k][0]) - 1
        r = next((i for i in range(len(room)) if room[i] >= w), None)
        if r is None:
            packed.append([])
            room.append(T)
            r = len(room) - 1
        packed[r].append(k)
        room[r] -= w
    print(f"sft_ref: {len(packed)} packed rows", file=sys.stderr)

    def batch(s, a):
        inp = np.zeros((o.batch, T), dtype=np.int64)
        tg = np.full((o.batch, T), -100, dtype=np.int64)
        pos = np.zeros((o.batch, T), dtype=np.int64)
        for b in range(o.batch):
            off = 0
            for k in packed[((s * o.accum + a) * o.batch + b) % len(packed)]:
                ids, scored = rows[k]
                n = len(ids) - 1
                inp[b, off:off + n] = ids[:-1]
                pos[b, off:off + n] = np.arange(n)
                for i in range(1, len(ids)):
                    if scored[i]:
                        tg[b, off + i - 1] = ids[i]
                off += n
            pos[b, off:] = np.arange(T - off)
        return torch.from_numpy(inp), torch.from_numpy(tg), torch.from_numpy(pos)

    train_ref.train(o, o.init, batch)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--init", required=True)
    r.add_argument("--tokenizer", required=True)
    r.add_argument("--data", required=True, nargs="+")
    r.add_argument("--out", required=True)
    r.add_argument("--pack", action="store_true")
    train_ref.options(r)
    o = ap.parse_args()
    train_ref.resolve(o)
    run(o)


if __name__ == "__main__":
    main()
