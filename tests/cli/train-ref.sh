#!/bin/sh
# train-ref.sh — `qwenchat train --exact --sequential` against tests/cli/train_ref.py, a
# float64 PyTorch reference written from the documented rules: 3 steps of 2
# micro-batches with the warm-up, clipping and weight decay all active, tied and
# untied (grouped-query) models. The losses and gradient norms of train-log.jsonl must
# be within 1e-5 relative of the reference's, every tensor of the final model.safetensors
# within 2e-3 of the reference's update (||w - w_ref|| / ||w_ref - w_0||).
# SKIP (77) without python3-torch and python3-numpy.
. "$TOP_SRCDIR/tests/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
	echo "SKIP: python3 with torch and numpy (Debian: python3-torch) is missing" >&2
	exit 77
fi
REF="$PY $TOP_SRCDIR/tests/cli/train_ref.py"

# 6000 token ids below 1000, fixed
"$PY" -c '
import random, struct, sys
r = random.Random(5)
sys.stdout.buffer.write(b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(6000)))
' >"$TMP/data.u32"

rules="--ctx 16 --batch 3 --accum 2 --lr 1e-2 --warmup 2 --cosine-steps 3 --clip 0.5 --weight-decay 0.1"

# check NAME SHAPE-FLAGS
check() {
	name=$1 shape=$2
	args="--vocab-size 1000 --layers 2 --hidden-size 64 --intermediate-size 96 $shape
		--data $TMP/data.u32 --exact --sequential --threads 2 $rules"
	# The initial weights (--steps 0), then 3 steps from the same seed.
	# shellcheck disable=SC2086
	if ! "$QWENCHAT" train --out "$TMP/$name-0" $args --steps 0 2>"$TMP/err" ||
	   ! "$QWENCHAT" train --out "$TMP/$name-3" $args --steps 3 2>"$TMP/err"; then
		fail "$name: qwenchat train failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	# shellcheck disable=SC2086
	if ! $REF run --init "$TMP/$name-0" --data "$TMP/data.u32" --steps 3 $rules \
		--out "$TMP/$name-ref.safetensors" >"$TMP/$name-ref.jsonl" 2>"$TMP/err"; then
		fail "$name: the reference failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	if $REF compare --log "$TMP/$name-3/train-log.jsonl" --ref-log "$TMP/$name-ref.jsonl" \
		--init "$TMP/$name-0" --ref "$TMP/$name-ref.safetensors" \
		--model "$TMP/$name-3/model.safetensors" >"$TMP/$name-cmp" 2>&1; then
		pass "$name: losses, gradient norms and every tensor's update match the float64 reference"
	else
		fail "$name: differs from the float64 reference:
$(grep -E 'FAIL|differ|steps' "$TMP/$name-cmp" | head -n 10)"
	fi
}

check tied "--tie --heads 4"
check untied-gqa "--no-tie --heads 4 --kv-heads 2"
finish
