#!/bin/sh
# tojson.sh — src/chat/tojson.c against Python's own json.dumps(x, ensure_ascii=False) (what
# the chat templates' tojson filter calls): random nested values with escapes,
# non-ASCII text, 64-bit integers and doubles from random bits, plus the edges of
# float repr (1e-05 / 0.0001, 1e+16 / 9999999999999998.0, -0.0, subnormals), and every
# power of two a double holds, where the shortest digits are not always the correctly
# rounded ones (2^-24: 5.960464477539063e-08, not 5.9604644775390625e-08).
. "$TOP_SRCDIR/tests/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed"; exit 77; }

python3 - "$TMP" <<'PYEOF'
import json, os, random, struct, sys
tmp = sys.argv[1]
random.seed(2026)
EDGES = [0.1, 0.5, 1e-4, 1e-5, 9.999e-5, 1e15, 1e16, 9999999999999998.0, 1e16 + 2, 2e16 + 8,
         1.5, -0.0, 0.0, 123.456, 1e22, 5e-324, 2.2250738585072014e-308,
         1.7976931348623157e308, 100.0, 3.0, -1e-7, 0.3333333333333333]
CHARS = ['a', 'b', ' ', '"', '\\', '\n', '\t', '\r', '\b', '\f', '\x01', '\x1f', '\x7f',
         'é', '中', '😀', '\u2028', '/', '<', '>', "'"]

def real():
    c = random.random()
    if c < 0.3:   # any finite double, from random bits
        x = struct.unpack('<d', struct.pack('<Q', random.getrandbits(64)))[0]
        return x if x == x and abs(x) != float('inf') else 1.0
    if c < 0.6:
        return random.choice(EDGES)
    return random.uniform(-1e6, 1e6) * 10 ** random.randint(-30, 30)

def text():
    return ''.join(random.choice(CHARS) for _ in range(random.randint(0, 8)))

def value(depth=0):
    c = random.randint(0, 6 if depth < 3 else 4)
    if c == 0:
        return random.choice([None, True, False])
    if c == 1:
        return random.randint(-2**63, 2**63 - 1) if random.random() < .3 else random.randint(-999, 999)
    if c == 2:
        return real()
    if c in (3, 4):
        return text()
    if c == 5:
        return [value(depth + 1) for _ in range(random.randint(0, 4))]
    return {text(): value(depth + 1) for _ in range(random.randint(0, 4))}

POW2 = [s * 2.0 ** e for e in range(-1074, 1024) for s in (1, -1)]
vals = [value() for _ in range(4000)] + EDGES + POW2 + [{}, [], "", {"a": {"b": [[], {}]}}]
with open(os.path.join(tmp, "in"), "w", encoding="utf-8") as f:
    for v in vals:
        f.write(json.dumps(v) + "\n")
with open(os.path.join(tmp, "want"), "w", encoding="utf-8") as f:
    for v in vals:
        f.write(json.dumps(json.loads(json.dumps(v)), ensure_ascii=False) + "\n")
PYEOF

"$TOP_BUILDDIR/tests/cli/tojson_filter" <"$TMP/in" >"$TMP/got" || fail "tojson_filter failed"
n=$(wc -l <"$TMP/want")
if cmp -s "$TMP/want" "$TMP/got"; then
	pass "$n values written as Python's json.dumps writes them"
else
	fail "tojson differs from json.dumps on $(diff "$TMP/want" "$TMP/got" | grep -c '^<') of $n values:"
	diff "$TMP/want" "$TMP/got" | head -n 6
fi
finish
