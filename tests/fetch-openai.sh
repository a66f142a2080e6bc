#!/bin/sh
# fetch-openai.sh — obtains the official OpenAI JavaScript client for the serve tests:
# the npm package openai@6.49.0 (no dependencies), fetched with `npm pack` into the
# git-ignored test cache and checked against the registry's sha512 integrity for that
# version. Prints the package directory (import DIR/index.mjs).
# Exit 0 when available; 77 (automake SKIP) when npm or the registry is missing,
# unless CI=true, where a missing client is a failure (exit 1).
set -u
version=6.49.0
want=sha512-aYCc0C6L864eR6WSYIwQGyXriw/nIyZx0ObvhzOEVuk0zoBDpynjSbrionWI7q65B5H8jJX0DXR9snEzM6bfPg==
src=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cache=${QWENCHAT_TEST_CACHE:-$src/tests/cache}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=${TOP_BUILDDIR:-.}/tests/cache
dir=$cache/openai-$version
mkdir -p "$cache" || exit 1

skip() {
	echo "fetch-openai: $*" >&2
	if [ "${CI:-}" = true ]; then exit 1; fi
	exit 77
}

integrity() {
	node -e 'const c = require("crypto"), f = require("fs");
process.stdout.write("sha512-" + c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$1"
}

if [ -f "$dir/index.mjs" ] && [ "$(cat "$dir/.integrity" 2>/dev/null)" = "$want" ]; then
	echo "$dir"
	exit 0
fi

command -v npm >/dev/null 2>&1 || skip "npm not installed (Debian: npm); the openai client tests need it"
command -v node >/dev/null 2>&1 || skip "node not installed (Debian: nodejs)"
tmp=$(mktemp -d "$cache/fetch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent "openai@$version" >/dev/null 2>npm.err ) ||
	skip "npm pack openai@$version failed: $(tail -n 1 "$tmp/npm.err")"
got=$(integrity "$tmp/openai-$version.tgz")
if [ "$got" != "$want" ]; then
	echo "fetch-openai: openai-$version.tgz integrity $got, expected $want" >&2
	exit 1
fi
tar -xzf "$tmp/openai-$version.tgz" -C "$tmp" || exit 1
echo "$want" >"$tmp/package/.integrity"
rm -rf "$dir"
mv "$tmp/package" "$dir"
echo "$dir"
