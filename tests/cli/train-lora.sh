#!/bin/sh
# train-lora.sh — `qwenchat train --lora` against tests/cli/lora_ref.py, a float64
# PyTorch reference of PEFT's LoRA written from the documented rules: 3 steps of 2
# micro-batches with the warm-up, clipping and weight decay active, on a tied and an
# untied grouped-query model and a Q8_0 GGUF (its weights dequantized as ggml does),
# some matrices adapted or all of them; the losses and
# gradient norms within 1e-5, every adapter tensor and every merged matrix of
# model.safetensors within 2e-3 of the reference's update, every frozen tensor the
# model's own. Then: the --val loss of the adapters equals the float64 loss of the
# merged model, a resumed run repeats an uninterrupted one byte for byte, a resume on
# changed or missing frozen weights is refused, --recompute changes no bit, --steps 0
# writes the model itself, --lora-init takes a PEFT adapter made by numpy (and refuses
# what it cannot compute), the flags that make no LoRA run are refused, and --sft
# --pack trains adapters.
# SKIP (77) without python3-torch and python3-numpy.
. "$TOP_SRCDIR/tests/lib.sh"

need_torch
# Under the sanitizers (CI's second pass, 3-5x slower) the runs that only add shapes to
# the float64 comparisons are left to the plain pass: the LoRA paths all run still.
SHAPES=1
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && SHAPES=0
REF="$PY $TOP_SRCDIR/tests/cli/lora_ref.py"
TRAIN_REF="$PY $TOP_SRCDIR/tests/cli/train_ref.py"

# 6000 token ids below 1000, and 219 held out
"$PY" -c '
import random, struct, sys
for seed, n, path in ((5, 6000, sys.argv[1]), (6, 219, sys.argv[2])):
    r = random.Random(seed)
    open(path, "wb").write(b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(n)))
' "$TMP/data.u32" "$TMP/val.u32"

rules="--ctx 16 --batch 3 --accum 2 --lr 1e-2 --warmup 2 --cosine-steps 3 --clip 0.5 --weight-decay 0.1"
shape="--vocab-size 1000 --layers 2 --hidden-size 64 --intermediate-size 96 --heads 4"
# the models LoRA adapts: their initial weights (--steps 0 of a run from scratch)
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/tied" $shape --tie --data "$TMP/data.u32" --steps 0 2>"$TMP/err" &&
	"$QWENCHAT" train --out "$TMP/untied" $shape --no-tie --kv-heads 2 --data "$TMP/data.u32" \
		--steps 0 2>>"$TMP/err" || fail "the base models: $(tail -n 3 "$TMP/err")"

# check NAME BASE LORA-FLAGS [MORE [REF-BASE]]: --steps 0 and 3 steps of LoRA on the model
# BASE against the reference, which starts from the --steps 0 run's adapters, on its
# merged weights (the model itself while B is zero) or on REF-BASE's
check() {
	name=$1 base=$2 lora=$3 more=${4:-} refbase=${5:-$TMP/$1-0}
	args="--init $base --data $TMP/data.u32 --exact --sequential --threads 2 $rules $lora"
	# shellcheck disable=SC2086
	if ! "$QWENCHAT" train --out "$TMP/$name-0" $args --steps 0 2>"$TMP/err" ||
	   ! "$QWENCHAT" train --out "$TMP/$name-3" $args $more --steps 3 2>"$TMP/err"; then
		fail "$name: qwenchat train failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	# shellcheck disable=SC2086
	if ! $REF run --init "$TMP/$name-0" --base "$refbase" --data "$TMP/data.u32" --steps 3 $rules \
		--out "$TMP/$name-ref.safetensors" >"$TMP/$name-ref.jsonl" 2>"$TMP/err"; then
		fail "$name: the reference failed: $(tail -n 3 "$TMP/err")"
		return
	fi
	if $REF compare --log "$TMP/$name-3/train-log.jsonl" --ref-log "$TMP/$name-ref.jsonl" \
		--init "$TMP/$name-0" --base "$refbase" --ref "$TMP/$name-ref.safetensors" \
		--run "$TMP/$name-3" \
		>"$TMP/$name-cmp" 2>&1; then
		pass "$name: losses, gradient norms, adapters and merged weights match the float64 reference"
	else
		fail "$name: differs from the float64 reference:
$(grep -E 'FAIL|differ|steps|Error' "$TMP/$name-cmp" | head -n 10)"
	fi
}

check tied-some "$TMP/tied" "--lora 4 --lora-alpha 8 --lora-targets q,v,o,up,down"
if [ "$SHAPES" = 1 ]; then
	check untied-all "$TMP/untied" "--lora 2"
	# PEFT's module names, a rank above the narrowest width, a model saved in BF16
	check bf16-save "$TMP/untied" "--lora 5 --lora-alpha 2.5 --lora-targets k_proj,gate_proj" \
		"--save-dtype bf16"
fi

# --lora-init: a PEFT adapter as PeftModel.save_pretrained writes one (made here with
# numpy: BF16 tensors, rsLoRA's scale alpha / sqrt(r), target_modules as bare names and
# as "mlp.down_proj", dropout, which a run without dropout ignores) as the first
# adapters. --steps 0 writes its merged model: W + alpha / sqrt(r) B A in float64,
# rounded once, against numpy's; then 3 steps from it against the reference.
"$PY" - "$TMP/peft" <<'EOF' || fail "--lora-init: the adapter could not be made"
import json, os, struct, sys
import numpy as np
out, r = sys.argv[1], 3
os.makedirs(out)
json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 6,
           "use_rslora": True, "target_modules": ["q_proj", "v_proj", "mlp.down_proj"],
           "lora_dropout": 0.05, "bias": "none", "fan_in_fan_out": False,
           "modules_to_save": None, "layers_to_transform": None, "rank_pattern": {},
           "alpha_pattern": {}, "use_dora": False}, open(out + "/adapter_config.json", "w"))
rng = np.random.RandomState(1)
header, blobs, off = {}, [], 0
for l in range(2):
    for m, (o, i) in (("self_attn.q_proj", (64, 64)), ("self_attn.v_proj", (32, 64)),
                      ("mlp.down_proj", (64, 96))):
        for ab, shape in (("A", (r, i)), ("B", (o, r))):
            u = rng.normal(0, 0.1, shape).astype("<f4").view("<u4").astype(np.uint64)
            b = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()
            header[f"base_model.model.model.layers.{l}.{m}.lora_{ab}.weight"] = {
                "dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + len(b)]}
            blobs.append(b)
            off += len(b)
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(out + "/adapter_model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
EOF
check lora-init "$TMP/untied" "--lora-init $TMP/peft" "" "$TMP/untied"
"$PY" - "$TMP/untied" "$TMP/peft" "$TMP/lora-init-0" "$TOP_SRCDIR/tests/cli" <<'EOF' &&
import json, math, sys
import numpy as np
sys.path.insert(0, sys.argv[4])
from train_ref import read_safetensors
base = read_safetensors(sys.argv[1] + "/model.safetensors")
peft, run = read_safetensors(sys.argv[2] + "/adapter_model.safetensors"), sys.argv[3]
merged, kept = read_safetensors(run + "/model.safetensors"), read_safetensors(run + "/train-state/adapter_model.safetensors")
assert set(kept) == set(peft) and all(np.array_equal(kept[k], peft[k]) for k in peft)
s = 6 / math.sqrt(3)
assert abs(json.load(open(run + "/train-state/adapter_config.json"))["lora_alpha"] - 6 * math.sqrt(3)) < 1e-12
for name, w in base.items():
    pre = "base_model.model." + name[:-len(".weight")]
    want = w if pre + ".lora_A.weight" not in peft else \
        w + s * peft[pre + ".lora_B.weight"] @ peft[pre + ".lora_A.weight"]
    assert np.array_equal(merged[name].astype(np.float32), want.astype(np.float32)), name
EOF
	pass "--lora-init --steps 0: the adapter's merged model, bit for bit numpy's" ||
	fail "--lora-init --steps 0: not the adapter's merged model"
cp -r "$TMP/peft" "$TMP/dora"
sed 's/"use_dora": false/"use_dora": true/' "$TMP/peft/adapter_config.json" >"$TMP/dora/adapter_config.json"
train_usage 1 "--lora-init of a DoRA adapter" "use_dora: DoRA is not supported" \
	--out "$TMP/x" --init "$TMP/untied" --lora-init "$TMP/dora" --data "$TMP/data.u32"
sed 's/"mlp.down_proj"/"model.layers.0.mlp.down_proj"/' "$TMP/peft/adapter_config.json" \
	>"$TMP/dora/adapter_config.json"
train_usage 1 "--lora-init of one layer's matrix" "(in every layer)" \
	--out "$TMP/x" --init "$TMP/untied" --lora-init "$TMP/dora" --data "$TMP/data.u32"
sed 's/"v_proj", //' "$TMP/peft/adapter_config.json" >"$TMP/dora/adapter_config.json"
train_usage 1 "--lora-init: a tensor the config does not name" "an adapter of a matrix" \
	--out "$TMP/x" --init "$TMP/untied" --lora-init "$TMP/dora" --data "$TMP/data.u32"
train_usage 1 "--lora-init on another shape" "not of shape" \
	--out "$TMP/x" --init "$TMP/tied" --lora-init "$TMP/peft" --data "$TMP/data.u32"
train_usage 2 "--lora-init with --lora" "give no --lora" \
	--out "$TMP/x" --init "$TMP/untied" --lora-init "$TMP/peft" --lora 3 --data "$TMP/data.u32"

# --steps 0: B is zero, so the merged model is the model, bit for bit
"$PY" - "$TMP/tied/model.safetensors" "$TMP/tied-some-0/model.safetensors" <<'EOF' &&
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a == b, sorted(k for k in a if a[k] != b.get(k))
EOF
	pass "--steps 0: model.safetensors is the model's own" ||
	fail "--steps 0: model.safetensors is not the model's own"

# --val: the loss the adapters give in training's forward against the float64 loss of
# the merged model the checkpoint holds
run="--init $TMP/untied --lora 3 --data $TMP/data.u32 --val $TMP/val.u32 --exact --sequential
	--threads 2 $rules"
# shellcheck disable=SC2086
if "$QWENCHAT" train --out "$TMP/val" $run --steps 2 2>"$TMP/err" &&
	want=$($TRAIN_REF eval --init "$TMP/val" --data "$TMP/val.u32" --ctx 16) &&
	"$PY" - "$TMP/val/train-log.jsonl" "$want" <<'EOF'; then
import json, sys
evals = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l]
want = float(sys.argv[2])
assert [e["step"] for e in evals] == [2], evals
assert abs(evals[0]["val_loss"] - want) <= 1e-6 * want, (evals[0], want)
EOF
	pass "--val: the adapters' loss equals the merged model's float64 loss ($want)"
else
	fail "--val: $(tail -n 2 "$TMP/err"; grep val_loss "$TMP/val/train-log.jsonl") against ${want:-none}"
fi

# Resume: 2 steps and a resume to 4 against 4 steps in one run, at random windows with
# the bf16 products, byte for byte
run="--init $TMP/tied --lora 4 --data $TMP/data.u32 --threads 2 --ctx 16 --batch 3 --accum 2
	--lr 1e-2 --warmup 1 --clip 0.5"
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/r4" $run --steps 4 2>"$TMP/err" &&
	"$QWENCHAT" train --out "$TMP/r2" $run --steps 2 2>>"$TMP/err" &&
	"$QWENCHAT" train --resume "$TMP/r2" --steps 4 2>>"$TMP/err" ||
	fail "resume: a run failed: $(tail -n 3 "$TMP/err")"
same_run "resume: 2 steps + 2 equal 4 in one run, byte for byte (merged model, moments, log)" \
	"$TMP/r4" "$TMP/r2"
cmp -s "$TMP/r4/train-state/adapter_model.safetensors" "$TMP/r2/train-state/adapter_model.safetensors" &&
	pass "resume: the adapters too" || fail "resume: the adapters differ"
# --recompute makes each layer's forward again, its adapters' products too: the same bits
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/rc" $run --steps 4 --recompute 2>"$TMP/err" ||
	fail "--recompute: $(tail -n 3 "$TMP/err")"
same_run "--recompute: the same bytes as keeping every layer's activations" "$TMP/r4" "$TMP/rc"

# The frozen weights are read from --init again: changed or gone, the resume is refused
# and the checkpoint kept
cp -r "$TMP/tied" "$TMP/moved"
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/c2" $(echo "$run" | sed "s#$TMP/tied#$TMP/moved#") --steps 2 \
	2>"$TMP/err" || fail "frozen weights: the run failed: $(tail -n 3 "$TMP/err")"
"$PY" - "$TMP/moved/model.safetensors" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[8 + struct.unpack("<Q", b[:8])[0] + 100] ^= 1
open(sys.argv[1], "wb").write(b)
EOF
before=$(cksum <"$TMP/c2/train-state/adapter_model.safetensors")
train_usage 1 "a resume on changed frozen weights" "not the weights this LoRA run began from" \
	--resume "$TMP/c2" --steps 4
rm -r "$TMP/moved"
train_usage 1 "a resume whose frozen weights are gone" "frozen weights (--init $TMP/moved)" \
	--resume "$TMP/c2" --steps 4
# another run's optimizer state, of more matrices, is not taken for this run's
# shellcheck disable=SC2086
"$QWENCHAT" train --out "$TMP/kq" $run --lora-targets q,k,v,o,gate,up,down,q --steps 2 \
	2>"$TMP/err" && "$QWENCHAT" train --out "$TMP/kv" --init "$TMP/tied" --lora 4 \
	--lora-targets q,v --data "$TMP/data.u32" --ctx 16 --batch 3 --warmup 2 --steps 2 \
	2>>"$TMP/err" &&
	cp "$TMP/kq/train-state/optimizer.safetensors" "$TMP/kv/train-state/" ||
	fail "another run's state: $(tail -n 2 "$TMP/err")"
train_usage 1 "a resume with another run's optimizer state" "the checkpoint is inconsistent" \
	--resume "$TMP/kv" --steps 3
[ "$(cksum <"$TMP/c2/train-state/adapter_model.safetensors")" = "$before" ] &&
	pass "a refused resume leaves the checkpoint as it was" ||
	fail "a refused resume changed the checkpoint"

# Flags that make no LoRA run
# shellcheck disable=SC2086
train_usage 2 "--lora from scratch" "give --init MODEL" \
	--out "$TMP/x" $shape --lora 4 --data "$TMP/data.u32"
train_usage 2 "--lora-targets of an unknown matrix" "'foo' is not one of" \
	--out "$TMP/x" --init "$TMP/tied" --lora 4 --lora-targets q,foo --data "$TMP/data.u32"
train_usage 2 "--lora-alpha without --lora" "give --lora R" \
	--out "$TMP/x" --init "$TMP/tied" --lora-alpha 4 --data "$TMP/data.u32"
train_usage 2 "--lora on CUDA" "CPU backend" \
	--out "$TMP/x" --init "$TMP/tied" --lora 4 --backend cuda --data "$TMP/data.u32"
train_usage 2 "--lora beyond 4096" "--lora" \
	--out "$TMP/x" --init "$TMP/tied" --lora 5000 --data "$TMP/data.u32"
train_usage 2 "a resume with another rank" "--lora 8 conflicts" --resume "$TMP/r2" --steps 5 --lora 8
train_usage 2 "a resume with an alpha other than the default's" "--lora-alpha 3 conflicts" \
	--resume "$TMP/r2" --steps 5 --lora-alpha 3
"$QWENCHAT" train --resume "$TMP/r2" --steps 4 --lora-targets down,up,gate_proj,o,v,k,q \
	--lora-alpha 4 2>"$TMP/err" && grep -q "at step 4 already" "$TMP/err" &&
	pass "a resume naming the same targets and alpha otherwise is no conflict" ||
	fail "a resume naming the same targets otherwise: $(tail -n 1 "$TMP/err")"
train_usage 2 "--lora-targets ending in a comma" "ends in a comma" \
	--out "$TMP/x" --init "$TMP/tied" --lora 4 --lora-targets q, --data "$TMP/data.u32"
[ ! -e "$TMP/x" ] && pass "refused runs leave no directory" || fail "a refused run left $TMP/x"

# A quantized base (a Q8_0 GGUF from quantize): its weights are frozen as ggml
# dequantizes them, which the --steps 0 model holds (against ggml's reference rounding
# redone in numpy's float32), and the adapters train on them as on any model
if [ "$SHAPES" = 1 ] && TOK_DIR=$(sh "$TOP_SRCDIR/tests/fetch-tokenizer.sh" 2>/dev/null); then
	"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/q" --tokenizer "$TOK_DIR" --hidden-size 64 \
		--intermediate-size 96 --layers 1 --heads 2 --kv-heads 1 --head-dim 32 \
		--vocab-size 151936 >/dev/null &&
		"$QWENCHAT" quantize -m "$TMP/q" --type q8_0 --out "$TMP/q.gguf" 2>"$TMP/err" ||
		fail "the Q8_0 base: $(tail -n 1 "$TMP/err")"
	check q8-base "$TMP/q.gguf" "--lora 4 --lora-alpha 16"
	"$PY" - "$TMP/q" "$TMP/q8-base-0" "$TOP_SRCDIR/tests/cli" <<'EOF' &&
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from train_ref import read_safetensors

def q8_0(w):
    """ggml's quantize_row_q8_0_ref in float32, then its dequantize_row_q8_0."""
    x = w.astype(np.float32).reshape(-1, 32)
    d = np.abs(x).max(1) / np.float32(127)
    inv = (np.float32(1) / np.where(d != 0, d, 1)) * (d != 0)
    x0 = x * inv[:, None].astype(np.float32)
    q = np.sign(x0) * np.floor(np.abs(x0) + np.float32(0.5))  # roundf: halves away from 0
    return (d.astype(np.float16).astype(np.float32)[:, None] * q).reshape(w.shape)

src = read_safetensors(sys.argv[1] + "/model.safetensors")
got = read_safetensors(sys.argv[2] + "/model.safetensors")
assert set(src) == set(got), set(src) ^ set(got)
bad = [n for n, w in src.items() if not np.array_equal(
    w.astype(np.float32) if w.ndim == 1 else q8_0(w), got[n].astype(np.float32))]
assert not bad, bad
EOF
		pass "q8-base: the frozen weights are the Q8_0 file's, dequantized as ggml does" ||
		fail "q8-base: the frozen weights are not the Q8_0 file's"
fi

# --sft --pack on LoRA: conversations rendered with the model's template, the adapters
# trained on the assistant's tokens
if [ "$SHAPES" = 1 ] && "$PY" -c 'import jinja2, regex' 2>/dev/null; then
	"$PY" "$TOP_SRCDIR/tests/cli/convgen.py" "$TMP"
	"$QWENCHAT" train-bpe -q --chat --vocab-size 420 --out "$TMP/chat-tok" "$TMP/corpus.txt" &&
		"$QWENCHAT" train --out "$TMP/chat" --tokenizer "$TMP/chat-tok" --layers 2 \
			--hidden-size 64 --heads 4 --data "$TMP/corpus.txt" --steps 0 2>"$TMP/err" &&
		"$QWENCHAT" train --out "$TMP/sft" --init "$TMP/chat" --lora 4 --sft --pack \
			--data "$TMP/conv.jsonl" --ctx 160 --batch 2 --steps 3 --threads 2 2>"$TMP/err" &&
		grep -q '"step": 3' "$TMP/sft/train-log.jsonl" &&
		[ -s "$TMP/sft/train-state/adapter_model.safetensors" ] &&
		pass "--sft --pack trains LoRA adapters" ||
		fail "--sft --pack with --lora: $(tail -n 3 "$TMP/err")"
fi
finish
