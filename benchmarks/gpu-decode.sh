#!/usr/bin/env bash
# gpu-decode.sh RESULTS BUNDLE [NAME=MODULE ...] — the quantized decode checks and
# figures in one command, on a machine with an NVIDIA GPU, for BENCHMARKS.md's decode
# rows.
#
# BUNDLE is a folder made by shared/gpu/bundle.sh (or any gatherer that copies
# build/qwenchat with its qwenchat-cuda.so, build/tests/mkmodel, the shared libraries
# into lib/ and the tokenizer into src/tests/cache/qwen3-tokenizer/). Its module is
# "new"; each NAME=MODULE is the qwenchat-cuda.so of another build (the parent commit,
# or the same code with other kernel settings), swapped in with QWENCHAT_CUDA_MODULE.
#
# In order, each step with a time limit, so that a slow one leaves the others' output:
#   the Qwen3-8B shape ($PRESET, default 8B) made there and quantized to each of
#   $TYPES (default q4_k_m q8_0); each module's one-token logits against the CPU's on each file (max |cuda -
#   cpu| / max |cpu| and both argmaxes); `qwenchat bench -p 512 -n 128 -r 3` on each
#   file, the modules alternating, $ROUNDS rounds (default 2); "new" after 4,096 tokens
#   of context; nsys's time of every kernel of a few decode steps and ncu's view of the
#   matrix-vector kernels, where the profilers are installed. Everything lands in
#   RESULTS, and RESULTS/all.tgz packs it (a sandbox may bring back only a few files).
set -u
usage="usage: gpu-decode.sh RESULTS BUNDLE [NAME=MODULE ...]"
res=${1:?$usage}
bundle=$(cd "${2:?$usage}" && pwd)
shift 2
mkdir -p "$res"
res=$(cd "$res" && pwd)
types=${TYPES:-q4_k_m q8_0}
rounds=${ROUNDS:-2}
preset=${PRESET:-8B}
names="new"
declare -A module=([new]=$bundle/build/qwenchat-cuda.so)
for spec in "$@"; do
	names="$names ${spec%%=*}"
	module[${spec%%=*}]=$(cd "$(dirname "${spec#*=}")" && pwd)/$(basename "${spec#*=}")
done

. "$(dirname "$0")/gpu-libs.sh" "$bundle"
qc=$bundle/build/qwenchat
work=${TMPDIR:-/tmp}/gpu-decode
mkdir -p "$work"
t0=$(date +%s)
stamp() {
	echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$res/stamps.txt"
	tar czf "$work/all.tgz" -C "$res" --exclude all.tgz . && mv "$work/all.tgz" "$res/all.tgz"
}

nvidia-smi >"$res/nvidia-smi.txt" 2>&1
stamp models
timeout 120 "$bundle/build/tests/mkmodel" --out "$work/src" --preset "$preset" \
	--tokenizer "$bundle/src/tests/cache/qwen3-tokenizer" >"$res/models.log" 2>&1
for t in $types; do
	timeout 150 "$qc" quantize -m "$work/src" --type "$t" -o "$work/$t.gguf" >>"$res/models.log" 2>&1 &
done
wait
rm -rf "$work/src"

stamp checks
echo 17 >"$work/id"
for t in $types; do
	timeout 60 "$qc" logits -m "$work/$t.gguf" --backend cpu --kv-f32 --out "$work/$t.cpu" \
		<"$work/id" 2>>"$res/checks.txt"
	for n in $names; do
		QWENCHAT_CUDA_MODULE=${module[$n]} timeout 60 "$qc" logits -m "$work/$t.gguf" \
			--backend cuda --out "$work/$t.$n" <"$work/id" 2>>"$res/checks.txt"
		python3 - "$work/$t.$n" "$work/$t.cpu" "$t $n" >>"$res/checks.txt" 2>&1 <<'PY'
import sys, numpy as np
a = np.fromfile(sys.argv[1], "<f4"); b = np.fromfile(sys.argv[2], "<f4")
print(sys.argv[3], "max|cuda-cpu|/max|cpu| %.3e, argmax %d (cpu %d)"
      % (np.abs(a - b).max() / np.abs(b).max(), a.argmax(), b.argmax()))
PY
	done
done
grep max "$res/checks.txt"

bench() { # bench TYPE NAME FILE-SUFFIX ARGS...
	local t=$1 n=$2 out=$res/bench-$preset-$1-$2$3.jsonl
	shift 3
	QWENCHAT_CUDA_MODULE=${module[$n]} timeout 60 "$qc" bench -m "$work/$t.gguf" --backend cuda \
		"$@" -r 3 --json >>"$out" 2>>"$res/bench.err"
	echo "$t $n $*: $(tail -n 1 "$out" 2>/dev/null | python3 -c 'import sys, json
try:
    d = json.load(sys.stdin)
    print("decode %.2f tok/s, %.1f%% of the copy bandwidth; prefill %.0f tok/s"
          % (d["decode_tok_s"], 100 * d["decode_bandwidth_ratio"], d["prefill_tok_s"]))
except ValueError:
    print("failed: see bench.err")')" | tee -a "$res/summary.txt"
}
for round in $(seq "$rounds"); do
	for t in $types; do
		for n in $names; do bench "$t" "$n" "" -p 512 -n 128; done
	done
	stamp "round $round"
done
for t in $types; do bench "$t" new -d4096 -d 4096 -p 1 -n 64; done

nsys=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null |
	head -n 1)
if [ -n "$nsys" ]; then
	stamp nsys
	t=${types%% *}
	timeout 120 "$nsys" profile -o "$work/decode" --force-overwrite true "$qc" bench \
		-m "$work/$t.gguf" --backend cuda -p 1 -n 32 -r 1 >"$res/nsys.log" 2>&1 &&
		timeout 60 "$nsys" stats --report cuda_gpu_kern_sum --format csv "$work/decode.nsys-rep" \
			>"$res/nsys-kernels-$t.csv" 2>>"$res/nsys.log"
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null |
	head -n 1)
if [ -n "$ncu" ]; then
	stamp ncu
	t=${types%% *}
	QWENCHAT_CUDA_GRAPH=0 timeout 120 "$ncu" --kernel-name regex:qmatvec --launch-skip 40 \
		--launch-count 4 --section SpeedOfLight --section Occupancy --section WarpStateStats \
		--section LaunchStats --section MemoryWorkloadAnalysis "$qc" bench -m "$work/$t.gguf" \
		--backend cuda -p 1 -n 2 -r 1 >"$res/ncu-qmatvec-$t.txt" 2>&1
fi
stamp finished
