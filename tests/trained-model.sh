#!/bin/sh
# trained-model.sh — the test suite's trained models, for the tests where a model that
# has learnt something tells more than random weights: a train-bpe --chat tokenizer
# (2048 tokens, DIR/tok); a 2-layer Qwen3 (hidden 256, 2.1M parameters) trained from
# scratch for 150 steps of 16 x 128 tokens on the first 1 MB of the Brown corpus
# (tests/fetch-corpus.sh), validated on its held-out texts (DIR/model); and that model
# fine-tuned with --sft for 300 steps on conversations made of the corpus (a sentence
# asked, the next answered), so that it answers with a sentence and ends its turn
# (DIR/chat: after 150 steps, some base models trained to the same loss still ended
# only two answers in three within 200 tokens, caught in loops of digits). About a
# minute on 2 cores with AVX-512 BF16; 4 on AVX2 alone (fp32 products) beside the
# rest of the suite. DIR/unigram: the held-out cross-entropy of the
# training tokens' unigram distribution (add-one smoothed), the baseline DIR/model must
# beat. Made once into the test cache (a lock keeps parallel tests from making it
# twice; the sanitizer build reuses it) and printed.
# Exit 0 with the directory; 77 (SKIP) or 1 (CI=true) when the corpus is missing; 1
# when training fails. Needs QWENCHAT (the harness exports it).
set -u
: "${QWENCHAT:?run through make check}"
src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=${TOP_BUILDDIR:-.}/tests/cache
mkdir -p "$cache" || exit 1
corpus=$(sh "$src/tests/fetch-corpus.sh") || exit $?
dir=$cache/trained-v3 # a new recipe gets a new name

if [ ! -f "$dir/done" ]; then
	exec 9>"$cache/trained.lock"
	flock 9 || exit 1
fi
if [ -f "$dir/done" ]; then
	echo "$dir"
	exit 0
fi
rm -rf "$dir.new"
mkdir -p "$dir.new" || exit 1
log=$dir.new/make.log
if ! "$QWENCHAT" train-bpe --chat --vocab-size 2048 -q --out "$dir.new/tok" \
	"$corpus/small.txt" >"$log" 2>&1 ||
   ! "$QWENCHAT" train --out "$dir.new/model" --tokenizer "$dir.new/tok" --layers 2 \
	--hidden-size 256 --heads 4 --kv-heads 2 --head-dim 64 --intermediate-size 768 \
	--data "$corpus/small.txt" --val "$corpus/val.txt" --ctx 128 --batch 16 --steps 150 \
	--lr 3e-3 --warmup 10 --eval-every 150 --save-every 150 --seed 1 >>"$log" 2>&1 ||
   ! python3 - "$corpus/small.txt" >"$dir.new/conv.jsonl" <<'PY' ||
import json, sys
lines = [l.strip() for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
for a, b in zip(lines, lines[1:]):
    if len(a.split()) <= 30 and len(b.split()) <= 30:
        print(json.dumps({"messages": [{"role": "user", "content": a},
                                       {"role": "assistant", "content": b}]}))
PY
   ! "$QWENCHAT" train --sft --init "$dir.new/model" --out "$dir.new/chat" \
	--data "$dir.new/conv.jsonl" --ctx 128 --batch 16 --steps 300 --lr 3e-3 --warmup 10 \
	--save-every 300 --eval-every 1000 --seed 1 >>"$log" 2>&1; then
	echo "trained-model: training failed:" >&2
	tail -n 5 "$log" >&2
	exit 1
fi
# the unigram baseline on the same token streams (train's cache of them)
python3 - "$dir.new/model/train-state" >"$dir.new/unigram" <<'PY' || exit 1
import math, struct, sys
from collections import Counter
def ids(path):
    raw = open(path, "rb").read()
    return struct.unpack("<%dI" % (len(raw) // 4), raw)
train, val = ids(sys.argv[1] + "/data.u32"), ids(sys.argv[1] + "/val.u32")
counts, V = Counter(train), 2048
total = len(train) + V
print("%.6f" % (-sum(math.log((counts[t] + 1) / total) for t in val[1:]) / (len(val) - 1)))
PY
touch "$dir.new/done"
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "$dir"
