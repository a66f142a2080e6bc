#!/bin/sh
# train-ref.sh — `qwenchat train --exact --sequential` against tests/cli/train_ref.py, a
# float64 PyTorch reference written from the documented rules: 3 steps of 2
# micro-batches with the warm-up, clipping and weight decay all active, tied and
# untied (grouped-query) models, odd widths, heads two wide, a bigram model (--ctx 1)
# with other rules, betas next to 1, the --val loss, and --sft on conversations, one a
# row and packed (tests/cli/sft_ref.py). The losses and gradient norms of
# train-log.jsonl must be within 1e-5 relative of the reference's, every tensor of the
# final model.safetensors within 2e-3 of the reference's update
# (||w - w_ref|| / ||w_ref - w_0||).
# SKIP (77) without python3-torch and python3-numpy.
. "$TOP_SRCDIR/tests/lib.sh"

need_torch
REF="$PY $TOP_SRCDIR/tests/cli/train_ref.py"

# 6000 token ids below 1000, fixed
"$PY" -c '
import random, struct, sys
r = random.Random(5)
sys.stdout.buffer.write(b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(6000)))
' >"$TMP/data.u32"

rules="--ctx 16 --batch 3 --accum 2 --lr 1e-2 --warmup 2 --cosine-steps 3 --clip 0.5 --weight-decay 0.1"

# compare_ref NAME INIT RUN NOTE: RUN's log and weights against $TMP/NAME-ref.*
compare_ref() {
	if $REF compare --log "$3/train-log.jsonl" --ref-log "$TMP/$1-ref.jsonl" --init "$2" \
		--ref "$TMP/$1-ref.safetensors" --model "$3/model.safetensors" >"$TMP/$1-cmp" 2>&1; then
		pass "$1: losses, gradient norms and every tensor's update match the float64 reference$4"
	else
		fail "$1: differs from the float64 reference:
$(grep -E 'FAIL|differ|steps' "$TMP/$1-cmp" | head -n 10)"
	fi
}

# check NAME SHAPE-FLAGS [RULES]
check() {
	name=$1 shape=$2 step_rules=${3:-$rules}
	args="--vocab-size 1000 --layers 2 --hidden-size 64 --intermediate-size 96 $shape
		--data $TMP/data.u32 --exact --sequential --threads 2 $step_rules"
	# The initial weights (--steps 0), then 3 steps from the same seed.
	# shellcheck disable=SC2086
	if ! "$QWENCHAT" train --out "$TMP/$name-0" $args --steps 0 2>"$TMP/err" ||
	   ! "$QWENCHAT" train --out "$TMP/$name-3" $args --steps 3 2>"$TMP/err"; then
		fail "$name: qwenchat train failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	# shellcheck disable=SC2086
	if ! $REF run --init "$TMP/$name-0" --data "$TMP/data.u32" --steps 3 $step_rules \
		--out "$TMP/$name-ref.safetensors" >"$TMP/$name-ref.jsonl" 2>"$TMP/err"; then
		fail "$name: the reference failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	compare_ref "$name" "$TMP/$name-0" "$TMP/$name-3" ""
}

check tied "--tie --heads 4"
check untied-gqa "--no-tie --heads 4 --kv-heads 2"
# A tied model whose file also holds an lm_head.weight (some exporters write one):
# transformers ties it away, and so must --init (trained, and not saved).
cp -r "$TMP/tied-0" "$TMP/stray-0"
"$PY" - "$TMP/stray-0/model.safetensors" <<'PY'
import json, struct, sys
import numpy as np
path = sys.argv[1]
b = open(path, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head = {k: v for k, v in json.loads(b[8:8 + n]).items()}
data = b[8 + n:]
shape = head["model.embed_tokens.weight"]["shape"]
extra = np.random.RandomState(3).normal(0, 0.02, shape).astype("<f4").tobytes()
head["lm_head.weight"] = {"dtype": "F32", "shape": shape,
                          "data_offsets": [len(data), len(data) + len(extra)]}
h = json.dumps(head).encode()
h += b" " * (-len(h) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data + extra)
PY
# shellcheck disable=SC2086
if "$QWENCHAT" train --init "$TMP/stray-0" --out "$TMP/stray-3" --data "$TMP/data.u32" --exact \
	--sequential --threads 2 --steps 3 $rules 2>"$TMP/err" &&
   $REF run --init "$TMP/stray-0" --data "$TMP/data.u32" --steps 3 $rules \
	--out "$TMP/stray-ref.safetensors" >"$TMP/stray-ref.jsonl" 2>>"$TMP/err"; then
	compare_ref stray "$TMP/stray-0" "$TMP/stray-3" " (a tied model's stray lm_head unused)"
else
	fail "stray lm_head: a run failed: $(tail -n 3 "$TMP/err")"
fi
# Widths that fill no vector register, heads wider than hidden / heads, one kv head.
check odd-widths "--no-tie --hidden-size 100 --intermediate-size 130 --heads 3 --kv-heads 1
	--head-dim 40 --rope-theta 500"
# The narrowest heads RoPE allows (head_dim 2: one rotated pair, q/k norms over two
# values) in three groups of three query heads.
check narrow-heads "--no-tie --heads 9 --kv-heads 3 --head-dim 2 --hidden-size 33
	--intermediate-size 5"
# Micro-batches of 300 rows: products over more than one block of 256 rows, whose
# operands the products pack once for every block.
check long-rows "--no-tie --heads 4 --kv-heads 2" "--ctx 100 --batch 3 --accum 2 --lr 1e-2
	--warmup 2 --cosine-steps 3 --clip 0.5 --weight-decay 0.1"
# A bigram model (windows of one token) with 3 micro-batches, no warm-up, the cosine
# ending before the last step, and AdamW's moments without momentum; its MLP of width 1
# makes down_proj a matrix of one column (decayed, as every matrix is).
check bigram "--tie --heads 2 --intermediate-size 1" "--ctx 1 --batch 5 --accum 3 --lr 3e-2
	--min-lr 1e-3 --cosine-steps 2 --clip 0.05 --weight-decay 0.5 --beta1 0 --beta2 0.5"

# AdamW's betas next to 1: their 1 - beta in fp32 is taken from the double (rounding
# beta2 = 0.99999999 first makes it 1, and v would stay 0).
check betas-near-one "--tie --heads 4" "$rules --beta1 0.999999 --beta2 0.99999999 --clip 0"

# --val: the loss of the initial weights (--steps 0 evaluates them) and of the weights
# after 2 steps, each against the reference's mean over the consecutive windows: 13
# of them (and 10 tokens left over), so that the last batch of 3 rows holds one and a
# mean of the batches' means would differ from the mean over every target.
"$PY" -c '
import random, struct, sys
r = random.Random(6)
sys.stdout.buffer.write(b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(219)))
' >"$TMP/val.u32"
for n in 0 2; do
	# shellcheck disable=SC2086
	"$QWENCHAT" train --out "$TMP/val-$n" --vocab-size 1000 --layers 2 --hidden-size 64 \
		--heads 4 --kv-heads 2 --data "$TMP/data.u32" --val "$TMP/val.u32" --exact \
		--sequential --threads 2 $rules --steps $n 2>"$TMP/err" &&
		want=$($REF eval --init "$TMP/val-$n" --data "$TMP/val.u32" --ctx 16) &&
		"$PY" - "$TMP/val-$n/train-log.jsonl" "$want" "$n" <<'EOF' &&
import json, sys
log, want, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
evals = [json.loads(l) for l in open(log) if "val_loss" in l]
assert [e["step"] for e in evals] == [n], evals
assert abs(evals[0]["val_loss"] - want) <= 1e-6 * want, (evals[0], want)
EOF
		pass "--val after $n steps: val_loss equals the reference's ($want)" ||
		fail "--val after $n steps: $(tail -n 2 "$TMP/err"; cat "$TMP/val-$n/train-log.jsonl") against ${want:-none}"
done

# --sft: conversations (JSON Lines with a system prompt, reasoning in several turns, a
# tool call and its tools, one without an answer, one too long; and a saved
# conversation with its reasoning in <think>) against tests/cli/sft_ref.py, which
# renders them with jinja2 and tokenizes them with a BPE of its own.
if ! "$PY" -c 'import jinja2, regex' 2>/dev/null; then
	echo "sft: skipped: python3 with jinja2 and regex is missing" >&2
	finish
fi
SFT_REF="$PY $TOP_SRCDIR/tests/cli/sft_ref.py"
"$PY" "$TOP_SRCDIR/tests/cli/convgen.py" "$TMP"
"$QWENCHAT" train-bpe -q --chat --vocab-size 420 --out "$TMP/chat-tok" "$TMP/corpus.txt" ||
	fail "sft: train-bpe --chat failed"
model="--tokenizer $TMP/chat-tok --layers 2 --hidden-size 64 --intermediate-size 96 --heads 4
	--kv-heads 2 --sft --data $TMP/conv.jsonl $TMP/saved.json --exact --sequential --threads 2"
rules="--accum 2 --lr 1e-2 --warmup 2 --cosine-steps 3 --clip 0.5 --weight-decay 0.1"
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/sft-0" $model --steps 0 2>"$TMP/err" ||
	fail "sft: the initial weights: $(tail -n 3 "$TMP/err")"

# sft_check NAME FLAGS: 3 steps of `train FLAGS` from sft-0 against sft_ref.py FLAGS.
sft_check() {
	name=$1 flags=$2
	# shellcheck disable=SC2086
	if ! "$QWENCHAT" train --out "$TMP/$name" $model $flags $rules --steps 3 2>"$TMP/err"; then
		fail "$name: qwenchat train failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	rows=$(grep '^rows: ' "$TMP/err")
	# shellcheck disable=SC2086
	if ! $SFT_REF run $flags --init "$TMP/sft-0" --tokenizer "$TMP/sft-0" \
		--data "$TMP/conv.jsonl" "$TMP/saved.json" --steps 3 $rules \
		--out "$TMP/$name-ref.safetensors" >"$TMP/$name-ref.jsonl" 2>"$TMP/err"; then
		fail "$name: the reference failed: $(tail -n 3 "$TMP/err")"
	else
		compare_ref "$name" "$TMP/sft-0" "$TMP/$name" " ($rows)"
	fi
}
sft_check sft "--ctx 80 --batch 3"
# --pack: the same conversations several to a row (rows of 160 hold two to four of
# them), each attending only to itself, against the reference's own packing and masks
sft_check pack "--ctx 160 --batch 2 --pack"
finish
