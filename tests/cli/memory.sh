#!/bin/sh
# memory.sh — the CPU backend's memory grows with the tokens the KV cache holds, not
# with its capacity, and /stats says what is in memory. The model has Qwen3-0.6B's KV
# shape (28 layers, 8 KV heads of 128: 112 KiB a token, 3.5 GiB at 32768) on narrow
# weights, so that the cache dominates and the test stays small.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
M=$TMP/model
chat_model "$M" --vocab-size 151669 --hidden-size 64 --intermediate-size 64 --layers 28 \
	--heads 8 --kv-heads 8 --head-dim 128 --max-position 32768

# A 14-token chat (9 prompt tokens, 5 answered) at a 32768-token context.
printf 'Hello\n/stats\n' |
	"$QWENCHAT" chat -m "$M" --backend cpu --threads 2 --ctx 32768 -n 5 --seed 1 >"$TMP/out" 2>"$TMP/err"
line=$(grep 'memory: weights' "$TMP/out")
echo "$line"
# "context 14/32768 tokens; memory: weights W, KV U/A (K in memory), scratch S, host
# RSS R", each size with its unit (1.53 MiB, 3.50 GiB)
python3 - "$line" <<'PY' && pass "RSS <= weights + 1.1 x KV in use + 100 MiB, and the KV in memory is said" ||
import re, sys
size = r"([\d.]+ (?:B|KiB|MiB|GiB|TiB))"
m = re.search(r"context (\d+)/\d+ tokens; memory: weights %s, KV %s/%s \(%s in memory\), "
              r"scratch %s, host RSS %s" % ((size,) * 6), sys.argv[1])
if not m:
    sys.exit("no figures in: " + sys.argv[1])
def mib(s):
    v, unit = s.split()
    return float(v) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit] / (1 << 20)
ctx, w, used, alloc, kv_mem, scratch, rss = int(m[1]), *map(mib, m.groups()[1:])
print("context %d: weights %.1f, KV used %.1f, in memory %.1f of %.1f, scratch %.1f, RSS %.1f"
      % (ctx, w, used, kv_mem, alloc, scratch, rss))
# the cache's pages come in 2 MiB at a time, a block of 64 positions for every layer and
# head (3.5 MiB here): at most two pages of each of the K and V caches for 14 tokens
ok = ctx == 14 and rss <= w + 1.1 * used + 100 and used <= kv_mem <= 8 and alloc == 3584
sys.exit(0 if ok else 1)
PY
	fail "memory after 14 tokens: $line"
"$QWENCHAT" info -m "$M" --ctx 32768 >"$TMP/info" 2>&1
grep -q 'KV up to 3.50 GiB (in memory as the context fills)' "$TMP/info" &&
	pass "info: the CPU plan says the KV cache fills as it is used" ||
	fail "info: $(grep '  cpu' "$TMP/info")"
finish
