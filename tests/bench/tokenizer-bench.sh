#!/bin/sh
# tokenizer-bench.sh — single-thread encode throughput of `qwenchat tokenize --bench`
# side by side with Hugging Face tokenizers (npm @anush008/tokenizers, one process,
# RAYON_NUM_THREADS=1) on the same texts, in one run:
#  - English prose: the first 4 MB of the Brown corpus text that tests/bench/train-bpe.sh
#    builds (tests/cache/brown-2x.txt; run that script once first);
#  - mixed scripts: the 1.1 MB mixed text of tests/golden/make-tokenizer-golden.js.
# usage: tests/bench/tokenizer-bench.sh [QWENCHAT] [REPS]   (run from the build dir)
# Needs: tests/fetch-tokenizer.sh's files, node, and
#   npm install --prefix tests/cache --no-save @anush008/tokenizers@0.6.0
set -eu
qwenchat=${1:-./qwenchat}
reps=${2:-5}
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
tokdir=$(TOP_SRCDIR=$src sh "$src/tests/fetch-tokenizer.sh")
[ -f "$cache/brown-2x.txt" ] || { echo "run tests/bench/train-bpe.sh once (fetches the Brown corpus)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tokenizer-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
head -c 4000000 "$cache/brown-2x.txt" >"$tmp/prose.txt"
node "$src/tests/golden/make-tokenizer-golden.js" "$tokdir" --mixed-out "$tmp/mixed.txt"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
for f in prose mixed; do
	echo "== qwenchat $f.txt"
	"$qwenchat" tokenize -m "$tokdir" --bench "$tmp/$f.txt" -r "$reps"
done
echo "== Hugging Face tokenizers"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node "$src/tests/bench/tokenizer-bench.js" "$tokdir" "$reps" \
	"$tmp/prose.txt" "$tmp/mixed.txt"
