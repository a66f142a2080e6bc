#!/usr/bin/env bash
# gpu-train.sh RESULTS NEW [OLD] — the CUDA trainer's checks and figures in one command,
# on a machine with an NVIDIA GPU, for BENCHMARKS.md's training rows.
#
# NEW and OLD are folders made on the build machine from builds configured
# --with-cuda: a bundle of qwenchat (a GPU bundler such as one that copies the binary,
# its shared libraries into lib/, the shell tests into src/tests/ and the build's
# *.so into build/), with the build's tests/unit/test_train_cuda and
# tests/bench/train_bench copied to NEW/build/tests/unit/ and NEW/build/tests/bench/
# (OLD needs only build/qwenchat-cuda.so and build/tests/bench/train_bench: the build
# it is compared with). Copy benchmarks/train-torch.py to NEW/ too for PyTorch's row.
#
# In order, each step with a time limit, so that a slow one leaves the others' output:
#   test_train_cuda (every gradient and 3 steps against the CPU), train_bench on the
#   Qwen3-0.6B shape at 4 x 1,024 tokens alternating NEW and OLD, materialised and tiled
#   attention, tests/cuda.sh, PyTorch (SDPA, fused AdamW) on the same shape, and ncu's
#   time of every kernel of one NEW step. Everything lands in RESULTS.
set -u
res=${1:?usage: gpu-train.sh RESULTS NEW [OLD]}
new=$(cd "${2:?usage: gpu-train.sh RESULTS NEW [OLD]}" && pwd)
old=${3:+$(cd "$3" && pwd)}
mkdir -p "$res"
res=$(cd "$res" && pwd)

. "$(dirname "$0")/gpu-libs.sh" "$new"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$res/stamps.txt"; }

nvidia-smi >"$res/nvidia-smi.txt" 2>&1
stamp test_train_cuda
timeout 90 "$new/build/tests/unit/test_train_cuda" "$new/build/qwenchat-cuda.so" \
	>"$res/test_train_cuda.txt" 2>&1
echo "exit $?" >>"$res/test_train_cuda.txt"
tail -n 3 "$res/test_train_cuda.txt"

shape="--preset 0.6b --backend cuda --steps 5 --batch 4 --ctx 1024"
bench() { # bench NAME DIR [--tiled-attention]
	stamp "train_bench $1 $3"
	# shellcheck disable=SC2086
	timeout 60 "$2/build/tests/bench/train_bench" $shape --module "$2/build/qwenchat-cuda.so" \
		$3 >>"$res/train-bench-$1${3:+-tiled}.txt" 2>&1
	tail -n 1 "$res/train-bench-$1${3:+-tiled}.txt"
}
for _ in 1 2; do
	for att in "" --tiled-attention; do
		bench new "$new" "$att"
		[ -n "$old" ] && bench old "$old" "$att"
	done
done

stamp tests/cuda.sh
QWENCHAT=$new/build/qwenchat TOP_SRCDIR=$new/src TOP_BUILDDIR=$new/build \
	QWENCHAT_TEST_CACHE=$new/src/tests/cache timeout 400 sh "$new/src/tests/cuda.sh" \
	>"$res/cuda-tests.txt" 2>&1
echo "cuda.sh exit $?" >>"$res/cuda-tests.txt"
echo "$(grep -c '^ok' "$res/cuda-tests.txt") ok"
grep -E '^(not ok|FAIL)|exit' "$res/cuda-tests.txt"

if [ -f "$new/train-torch.py" ]; then
	stamp PyTorch
	PYTHONUNBUFFERED=1 timeout 90 python3 "$new/train-torch.py" --device cuda --dtype bf16 --sdpa \
		--layers 28 --hidden 1024 --heads 16 --kv-heads 8 --head-dim 128 --inter 3072 \
		--vocab 151936 --batch 4 --ctx 1024 --steps 6 >"$res/train-torch-sdpa.txt" 2>&1
	tail -n 1 "$res/train-torch-sdpa.txt"
fi

ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -n "$ncu" ]; then
	stamp ncu
	timeout 90 "$ncu" --clock-control none --metrics gpu__time_duration.sum \
		--print-summary per-kernel --csv "$new/build/tests/bench/train_bench" $shape \
		--steps 1 --module "$new/build/qwenchat-cuda.so" >"$res/ncu-train.csv" 2>&1
fi
stamp finished
