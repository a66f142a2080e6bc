#!/bin/sh
# cuda.sh — the CUDA backend against the CPU reference. Needs a GPU:
# SKIP (77) when this build has no CUDA backend or no device is present.
# Checks: logits agree within bf16 tolerance (metric: max |cuda - cpu| / max |cpu|
# per model, and the same argmax on nearly every position), GGUF models of every
# quantization mix in prefill and decode against the CPU (2e-2), the decode graph and the
# plain launches give identical logits, greedy continuations of 64 tokens match the
# CPU's, the device sampler picks the ids the host sampler picks from the same
# logits (seeded, with penalties), bench reports the device's own limits, training on
# the device equals training on the CPU (gradients, and three AdamW steps of `qwenchat
# train --exact --sequential`: losses and gradient norms within 1e-5, every tensor
# within 2e-3 of its update), and compute-sanitizer memcheck (when installed) finds
# nothing.
. "$TOP_SRCDIR/tests/lib.sh"
MK=$TOP_BUILDDIR/tests/mkmodel

"$MK" --out "$TMP/tiny" >/dev/null || exit 1
echo 1 2 3 >"$TMP/ids"
"$QWENCHAT" logits -m "$TMP/tiny" --backend cuda --out "$TMP/probe" <"$TMP/ids" 2>"$TMP/probe.err"
if grep -q 'no NVIDIA driver\|the CUDA module\|no usable CUDA device' "$TMP/probe.err"; then
	echo "SKIP: $(cat "$TMP/probe.err")"
	exit 77
fi

run64() { "$QWENCHAT" run -m "$3" --raw --greedy -n 64 -p "$2" --backend "$1"; }

# compare A B VOCAB TOL — prints the metric; fails when above TOL or argmax differs on
# more than 1 position in 16. A position whose two argmaxes are a near tie in the CPU's
# logits (within TOL of max |cpu|, the error both backends are allowed) agrees: random
# test weights make such ties, and either pick is right there.
compare() {
	python3 - "$1" "$2" "$3" "$4" <<'PY'
import sys, numpy as np
a = np.fromfile(sys.argv[1], dtype='<f4'); b = np.fromfile(sys.argv[2], dtype='<f4')
v = int(sys.argv[3]); tol = float(sys.argv[4])
if a.size != b.size or a.size % v:
    sys.exit("sizes differ: %d vs %d" % (a.size, b.size))
a = a.reshape(-1, v); b = b.reshape(-1, v)
scale = np.abs(b).max()
rel = np.abs(a - b).max() / scale
rows = np.arange(len(b))
equal = a.argmax(1) == b.argmax(1)
tie = ~equal & (b.max(1) - b[rows, a.argmax(1)] <= tol * scale)
same = (equal | tie).mean()
print("max|cuda-cpu|/max|cpu| = %.2e, argmax agreement %.3f over %d positions (%d near ties)"
      % (rel, same, len(a), tie.sum()))
sys.exit(0 if rel <= tol and same >= 15 / 16 else 1)
PY
}

check_model() {   # check_model NAME MODELDIR VOCAB IDS
	"$QWENCHAT" logits -m "$2" --backend cpu --kv-f32 --out "$TMP/$1.cpu" <"$4" || { fail "$1: cpu logits"; return; }
	"$QWENCHAT" logits -m "$2" --backend cuda --out "$TMP/$1.cuda" <"$4" || { fail "$1: cuda logits"; return; }
	if compare "$TMP/$1.cuda" "$TMP/$1.cpu" "$3" 0.03; then pass "$1: cuda logits match cpu"
	else fail "$1: cuda logits differ from cpu beyond bf16 tolerance"; fi
}

python3 -c 'import random; random.seed(5); print(" ".join(str(random.randrange(1000)) for _ in range(600)))' >"$TMP/ids600"
check_model tiny "$TMP/tiny" 1024 "$TMP/ids600"
"$MK" --out "$TMP/odd" --no-tie --heads 8 --kv-heads 2 --head-dim 16 --hidden-size 96 \
	--intermediate-size 200 --rope-theta 10000 --layers 3 --seed 7 >/dev/null || exit 1
check_model odd "$TMP/odd" 1024 "$TMP/ids600"
"$MK" --out "$TMP/q06" --preset 0.6B >/dev/null || exit 1
check_model q06 "$TMP/q06" 151936 "$TMP/ids600"
# head_dim 128 (the tensor-core prefill kernel) with 4 query heads per kv head; the
# 600 logits rows come in two chunks, so the second starts at position 512.
need_tokenizer
"$MK" --out "$TMP/h128" --vocab-size 151936 --hidden-size 256 --intermediate-size 512 \
	--heads 8 --kv-heads 2 --head-dim 128 --layers 2 --seed 3 --tokenizer "$TOK_DIR" \
	>/dev/null || exit 1
check_model h128 "$TMP/h128" 151936 "$TMP/ids600"

# GGUF models from `qwenchat quantize`: every mix of llama.cpp's (q4_k_m and q5_k_m
# give attn_v and ffn_down of layer 0 Q6_K, so q/k/v are apart there; the tied
# embedding is Q6_K), and F32 and BF16 files (their norms are F32, their matrices
# converted or kept at upload). Prefill (dequantized tiles through cuBLAS) and the
# decode kernels (one token: the graph of quantized matrix-vector products) against
# the CPU backend: max |diff| within 2e-2 of max |logit| for the quantized types,
# bf16's 3e-2 for the float files, and the same argmax.
check_gguf() {   # check_gguf NAME SOURCE TYPE
	case $3 in f32 | bf16) tol=0.03 ;; *) tol=0.02 ;; esac
	g=$TMP/$1.gguf
	if ! "$QWENCHAT" quantize -m "$2" --type "$3" --out "$g" >/dev/null 2>"$TMP/q.err"; then
		fail "$1: quantize --type $3: $(head -c 300 "$TMP/q.err")"
		return
	fi
	check_model "$1" "$g" 151936 "$TMP/ids-q"
	rm -f "$TMP/$1.cpu" "$TMP/$1.cuda"
	for id in 17 401 998; do
		echo "$id" >"$TMP/id1"
		if ! "$QWENCHAT" logits -m "$g" --backend cpu --kv-f32 --out "$TMP/d.cpu" <"$TMP/id1" ||
		   ! "$QWENCHAT" logits -m "$g" --backend cuda --out "$TMP/d.cuda" <"$TMP/id1"; then
			fail "$1: one-token logits (id $id)"
		elif compare "$TMP/d.cuda" "$TMP/d.cpu" 151936 "$tol"; then
			pass "$1: decode kernels match cpu (id $id)"
		else
			fail "$1: decode kernels differ from cpu (id $id)"
		fi
	done
	run64 cuda "Once upon a time" "$g" >"$TMP/g.cuda" || fail "$1: greedy cuda run"
	QWENCHAT_CUDA_GRAPH=0 run64 cuda "Once upon a time" "$g" >"$TMP/g.nograph" ||
		fail "$1: greedy cuda run without graph"
	cmp -s "$TMP/g.cuda" "$TMP/g.nograph" && pass "$1: graph == no graph" ||
		fail "$1: graph and plain launches differ"
	rm -f "$g"
}
qsrc() {   # qsrc NAME SEED [mkmodel options]: a 151936-vocabulary model of width 256
	name=$1 seed=$2
	shift 2
	"$MK" --out "$TMP/$name" --vocab-size 151936 --hidden-size 256 --heads 4 --kv-heads 2 \
		--head-dim 64 --layers 2 --seed "$seed" --tokenizer "$TOK_DIR" "$@" >/dev/null || exit 1
}
head -c 800 "$TMP/ids600" >"$TMP/ids-q"
qsrc qsrc 21 --intermediate-size 512
for t in f32 bf16 q8_0 q6_k q5_k_m q4_k_m q4_0; do
	check_gguf "gguf-$t" "$TMP/qsrc" "$t"
done
# Rows that 256 does not divide fall back as llama-quantize does: ffn_down (352 wide)
# Q5_0 and Q8_0 here, with an untied Q4_K embedding and a Q6_K lm_head; at 360 wide
# (not whole 32-blocks either) Q4_K falls back to Q5_0 and that to F16, which the
# device converts to bf16 at upload. (q4_0 has no fallback there and is refused.)
qsrc qodd 22 --intermediate-size 352 --no-tie
check_gguf gguf-q4_k_m-odd "$TMP/qodd" q4_k_m
qsrc qf16 23 --intermediate-size 360
check_gguf gguf-q4_k_m-f16 "$TMP/qf16" q4_k_m
# Q2_K, Q3_K, Q4_1 and Q5_1 have no CUDA kernels yet: --backend cuda says so, and
# without it the model runs on the CPU, with a notice
if "$QWENCHAT" quantize -m "$TMP/qsrc" --type q2_k --out "$TMP/q2.gguf" >/dev/null 2>&1; then
	expect_exit 1 "q2_k file, --backend cuda" sh -c \
		"echo 17 | \"$QWENCHAT\" logits -m \"$TMP/q2.gguf\" --backend cuda --out \"$TMP/x.bin\""
	expect_err_has "no kernel for Q" "q2_k file, --backend cuda: says why"
	expect_exit 0 "q2_k file, default backend" sh -c \
		"echo 17 | \"$QWENCHAT\" logits -m \"$TMP/q2.gguf\" --out \"$TMP/x.bin\""
	expect_err_has "using the CPU backend" "q2_k file: runs on the CPU, with a notice"
else
	fail "quantize --type q2_k"
fi

# Graph replay and plain launches compute the same thing.
"$MK" --out "$TMP/chat" --vocab-size 151936 --hidden-size 128 --intermediate-size 256 \
	--layers 2 --tokenizer "$TOK_DIR" >/dev/null || exit 1
for case in "chat:The capital of France is" "chat:def fib(n):" "chat:日本語のテキスト" \
	    "h128:Once upon a time"; do
	model=$TMP/${case%%:*} prompt=${case#*:}
	run64 cpu "$prompt" "$model" >"$TMP/g.cpu" || fail "greedy cpu run"
	run64 cuda "$prompt" "$model" >"$TMP/g.cuda" || fail "greedy cuda run"
	QWENCHAT_CUDA_GRAPH=0 run64 cuda "$prompt" "$model" >"$TMP/g.nograph" ||
		fail "greedy cuda run without graph"
	cmp -s "$TMP/g.cpu" "$TMP/g.cuda" && pass "greedy 64 tokens match cpu: $case" ||
		fail "greedy 64 tokens differ from cpu: $case"
	cmp -s "$TMP/g.cuda" "$TMP/g.nograph" && pass "graph == no graph: $case" ||
		fail "graph and plain launches differ: $case"
done

# Sampling on the device against the host sampler on the same GPU's logits
# (QWENCHAT_CUDA_SAMPLE=0 copies the logits back): the same seed gives the same text.
for opts in "--seed 7" "--seed 11 --temp 1.2 --top-k 40 --top-p 0.9 --min-p 0.02" \
	    "--seed 3 --repeat-penalty 1.3 --presence-penalty 0.5 --top-k 64"; do
	# shellcheck disable=SC2086
	"$QWENCHAT" run -m "$TMP/chat" --raw -n 64 -p "Once upon a time" --backend cuda $opts \
		>"$TMP/s.dev" || fail "device-sampled run ($opts)"
	# shellcheck disable=SC2086
	QWENCHAT_CUDA_SAMPLE=0 "$QWENCHAT" run -m "$TMP/chat" --raw -n 64 -p "Once upon a time" \
		--backend cuda $opts >"$TMP/s.host" || fail "host-sampled run ($opts)"
	cmp -s "$TMP/s.dev" "$TMP/s.host" && pass "device sampler == host sampler ($opts)" ||
		fail "device and host samplers differ ($opts)"
done

# bench measures the GPU's own copy bandwidth and GEMM rate, and decodes with ids
# picked on the device.
if "$QWENCHAT" bench -m "$TMP/q06" --backend cuda -p 128 -n 32 -r 1 --json >"$TMP/bench.json"; then
	python3 - "$TMP/bench.json" <<'PY' && pass "bench --backend cuda reports device figures" || fail "bench --backend cuda figures"
import json, sys
r = json.load(open(sys.argv[1]))
print({k: r[k] for k in ("prefill_tok_s", "decode_tok_s", "device_copy_gb_s", "gemm_tflop_s",
                         "decode_bandwidth_ratio", "prefill_gemm_ratio", "graph_bytes")})
ok = (r["device"] and r["decode_sampled_on_device"] and r["device_copy_gb_s"] > 10
      and r["gemm_tflop_s"] > 0.1 and 0 < r["decode_bandwidth_ratio"] < 1.5
      and 0 < r["prefill_gemm_ratio"] < 1.5)
sys.exit(0 if ok else 1)
PY
else
	fail "bench --backend cuda"
fi

# Training. tests/unit/test_train_cuda (where this build has it; a GPU bundle may not
# carry it) compares every gradient; `qwenchat train` on both backends, three steps
# with two micro-batches, warm-up, clipping and decay active, compares the logs and
# the saved weights.
if [ -x "$TOP_BUILDDIR/tests/unit/test_train_cuda" ]; then
	if "$TOP_BUILDDIR/tests/unit/test_train_cuda" "$TOP_BUILDDIR/qwenchat-cuda.so" >"$TMP/tc.log" 2>&1; then
		pass "training: cuda gradients and steps == cpu (test_train_cuda)"
	else
		tail -n 20 "$TMP/tc.log"; fail "training: test_train_cuda"
	fi
fi
python3 - "$TMP/train.u32" <<'PY'
import random, struct, sys
random.seed(9)
open(sys.argv[1], "wb").write(struct.pack("<3000I", *[random.randrange(1000) for _ in range(3000)]))
PY
for be in cpu cuda; do
	"$QWENCHAT" train --backend $be --out "$TMP/tr-$be" --init "$TMP/odd" --data "$TMP/train.u32" \
		--exact --sequential --ctx 64 --batch 4 --accum 2 --steps 3 --warmup 2 --lr 1e-2 \
		--clip 0.5 --weight-decay 0.1 >"$TMP/tr-$be.log" 2>&1 ||
		{ tail -n 5 "$TMP/tr-$be.log"; fail "training on $be"; }
done
if python3 - "$TMP/tr-cpu" "$TMP/tr-cuda" "$TMP/odd" <<'PY'
import json, struct, sys
import numpy as np
def log(d):
    return [json.loads(l) for l in open(d + "/train-log.jsonl") if '"loss"' in l]
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        buf = raw[8 + n + a:8 + n + b]
        dt = {"F32": "<f4", "BF16": "<u2"}[v["dtype"]]
        x = np.frombuffer(buf, dtype=dt)
        if v["dtype"] == "BF16":
            x = (x.astype(np.uint32) << 16).view(np.float32)
        out[k] = x.astype(np.float64)
    return out
a, b = log(sys.argv[1]), log(sys.argv[2])
ok = len(a) == len(b) == 3
for x, y in zip(a, b):
    for key in ("loss", "grad_norm"):
        ok &= abs(x[key] - y[key]) <= 1e-5 * abs(x[key])
    print("step %d: loss cpu %.9g cuda %.9g, norm cpu %.9g cuda %.9g" % (x["step"], x["loss"], y["loss"], x["grad_norm"], y["grad_norm"]))
wc, wg, w0 = (tensors(d + "/model.safetensors") for d in sys.argv[1:4])
worst = 0
for k in wc:
    upd = np.linalg.norm(wc[k] - w0[k])
    r = np.linalg.norm(wg[k] - wc[k]) / (upd if upd > 0 else 1)
    worst = max(worst, r)
print("worst |cuda - cpu| / |update| over the tensors: %.2e" % worst)
sys.exit(0 if ok and worst <= 2e-3 else 1)
PY
then
	pass "training: 3 steps of qwenchat train on cuda == cpu"
else
	fail "training: qwenchat train on cuda differs from cpu"
fi
# the tiled attention gives other bits than the materialised: the run says which runs,
# a resume with the other one says so, and state.json names the one it goes on with
"$MK" --out "$TMP/hd64" --heads 2 --kv-heads 1 --head-dim 64 --hidden-size 64 --layers 1 \
	--vocab-size 1024 --seed 3 >/dev/null
if QWENCHAT_CUDA_TRAIN_ATTN=materialised "$QWENCHAT" train --backend cuda --out "$TMP/tr-att" \
	--init "$TMP/hd64" --data "$TMP/train.u32" --ctx 64 --batch 2 --steps 2 >"$TMP/att.log" 2>&1 &&
	QWENCHAT_CUDA_TRAIN_ATTN=tiled "$QWENCHAT" train --resume "$TMP/tr-att" --steps 3 \
		>>"$TMP/att.log" 2>&1 &&
	[ "$(grep -c 'on cuda (bf16 products, materialised attention)' "$TMP/att.log")" = 2 ]; then
	pass "training: this device runs no tiled attention (head_dim 64), and the run says so"
elif grep -q 'on cuda (bf16 products, materialised attention)' "$TMP/att.log" &&
	grep -q 'on cuda (bf16 products, tiled attention)' "$TMP/att.log" &&
	grep -q 'ran with the materialised kernels and go on with tiled: not bit for bit' "$TMP/att.log" &&
	grep -q '"kernels": *"tiled"' "$TMP/tr-att/train-state/state.json"; then
	pass "training: a resume with the other attention says it is not bit for bit"
else
	tail -n 5 "$TMP/att.log"; fail "training: a resume with the other attention"
fi

# compute-sanitizer: memcheck on both prefill kernels (head_dim 16 and 128), memcheck
# and racecheck (shared memory) on a run that prefills, decodes and samples.
if command -v compute-sanitizer >/dev/null 2>&1; then
	head -c 200 "$TMP/ids600" >"$TMP/ids-short"
	for model in odd h128; do
		if compute-sanitizer --tool memcheck --error-exitcode 9 "$QWENCHAT" logits \
		     -m "$TMP/$model" --backend cuda --out "$TMP/ms" <"$TMP/ids-short" \
		     >"$TMP/ms.log" 2>&1; then
			pass "compute-sanitizer memcheck clean: logits $model"
		else
			tail -n 30 "$TMP/ms.log"; fail "compute-sanitizer memcheck: logits $model"
		fi
	done
	for tool in memcheck racecheck; do
		if compute-sanitizer --tool $tool --error-exitcode 9 "$QWENCHAT" run -m "$TMP/h128" \
		     --raw -n 8 --seed 1 -p "The capital of France is" --backend cuda \
		     >"$TMP/ms.log" 2>&1; then
			pass "compute-sanitizer $tool clean: prefill, decode and sampling"
		else
			tail -n 30 "$TMP/ms.log"; fail "compute-sanitizer $tool: run"
		fi
	done
	# the training step with attention in tiles: bounds of the partial tiles, and the
	# warps' shared score tiles
	if [ -x "$TOP_BUILDDIR/tests/unit/test_train_cuda" ]; then
		for tool in memcheck racecheck; do
			if compute-sanitizer --tool $tool --error-exitcode 9 \
			     "$TOP_BUILDDIR/tests/unit/test_train_cuda" "$TOP_BUILDDIR/qwenchat-cuda.so" \
			     >"$TMP/ms.log" 2>&1; then
				pass "compute-sanitizer $tool clean: training steps (tiled attention too)"
			else
				tail -n 30 "$TMP/ms.log"; fail "compute-sanitizer $tool: test_train_cuda"
			fi
		done
	fi
else
	fail "compute-sanitizer is not installed: the memory checks did not run"
fi
finish
