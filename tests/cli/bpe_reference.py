#!/usr/bin/env python3
"""bpe_reference.py — a deliberately naive byte-level BPE trainer, written for the
train-bpe tests as an independent reference (it shares no code with qwenchat).

It follows the CS336 assignment's rules literally: split each file on the special
tokens (longest first, via one regex alternation), pre-tokenize each piece with the
Qwen2 regex (the `regex` module, Debian python3-regex, for \\p{L}/\\p{N}), count the
pre-tokens, then for every merge recount all adjacent pairs from scratch and take
max over (count, (bytes_a, bytes_b)). Prints the merges in GPT-2 merges.txt form
(bytes mapped through GPT-2's bytes_to_unicode) so the output diffs directly
against the merges.txt that `qwenchat train-bpe` writes.

usage: bpe_reference.py --vocab-size N [--special TOKEN]... FILE...
(a FILE named *.jsonl or *.ndjson is JSON Lines: each record's "text" a document)
"""
import argparse
import collections
import json
import sys

import regex

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    """GPT-2's map: printable Latin-1 bytes stand for themselves, the rest get
    code points from 256 upwards in byte order."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1))
            + list(range(0xAE, 0xFF + 1)))
    extra = 0
    table = {}
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def count_pretokens(paths, specials):
    pat = regex.compile(QWEN2_PATTERN)
    split = None
    if specials:
        alts = sorted(specials, key=len, reverse=True)
        split = regex.compile("|".join(regex.escape(s) for s in alts))
    counts = collections.Counter()
    for path in paths:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
        # JSON Lines: each record's "text" is a document of its own, as a file is
        docs = [text]
        if path.endswith((".jsonl", ".ndjson")):
            docs = [json.loads(l)["text"] for l in text.lstrip("\ufeff").split("\n") if l.strip()]
        for doc in docs:
            pieces = split.split(doc) if split else [doc]
            for piece in pieces:
                for m in pat.finditer(piece):
                    counts[m.group(0).encode("utf-8")] += 1
    return counts


def train(counts, n_merges):
    words = {tuple(bytes([b]) for b in w): c for w, c in counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for i in range(len(w) - 1):
                pairs[(w[i], w[i + 1])] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        new_words = collections.Counter()
        for w, c in words.items():
            out = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] += c
        words = new_words
    return merges


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-size", type=int, required=True)
    ap.add_argument("--special", action="append", default=[])
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    merges = train(count_pretokens(a.files, a.special), a.vocab_size - 256 - len(a.special))
    table = bytes_to_unicode()
    out = ["#version: 0.2"]
    for x, y in merges:
        out.append("".join(table[b] for b in x) + " " + "".join(table[b] for b in y))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
