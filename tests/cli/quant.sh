#!/bin/sh
# quant.sh — quantized models compute what their weights mean: a tests/mkmodel model
# quantized by `qwenchat quantize` to each of llama.cpp's mixes gives logits close to
# a float64 forward pass on the same weights dequantized by gguf-py
# (tests/golden/logits-quant-*.txt), through the exact prefill (12 tokens: rows
# dequantized to fp32; within 1e-5 with an fp32 KV cache), the fast prefill of chat
# and run (QWENCHAT_CPU_BF16_PREFILL=1: int8 activations with AVX2, bf16 with AVX-512
# BF16) and the decode kernels (fewer than 8 tokens there: int8 dot products); the
# exact path stays exact for a few tokens too (logits of 7, perplexity of a 7-token
# window against the NLL of the reference's logits); --quant on the float model gives
# the file's logits bit for bit.
. "$TOP_SRCDIR/tests/lib.sh"
M="$TMP/m"
"$TOP_BUILDDIR/tests/mkmodel" --out "$M" $(sed -n 's/^mkmodel //p' \
	"$TOP_SRCDIR/tests/golden/logits-quant-q8_0.txt") >/dev/null || { fail "mkmodel"; finish; }
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$M/tokenizer.json"
ids=$(sed -n 's/^tokens //p' "$TOP_SRCDIR/tests/golden/logits-quant-q8_0.txt")

# compare OURS.bin GOLDEN FIRST_N LIMIT — max |diff| / max |logit| over the first
# FIRST_N positions below LIMIT, and the same argmax at each (or, at a near tie, one
# whose reference logit is within LIMIT * max |logit| of the top)
compare() {
	python3 - "$@" <<'PYEOF'
import struct, sys
path, golden, n, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
rows = [l.split() for l in open(golden) if l[:1] in "-0123456789"]
ref = [[float(v) for v in r] for r in rows[:n]]
V = len(ref[0])
raw = open(path, "rb").read()
ours = [struct.unpack_from("<%df" % V, raw, 4 * V * i) for i in range(n)]
worst, bad = 0.0, []
for i in range(n):
    m = max(abs(v) for v in ref[i])
    worst = max(worst, max(abs(a - b) for a, b in zip(ours[i], ref[i])) / m)
    top = max(range(V), key=lambda j: ours[i][j])
    if ref[i][top] < max(ref[i]) - limit * m:
        bad.append(i)
print("max |diff| / max |logit| %.2e%s" % (worst, ", argmax differs at %s" % bad if bad else ""))
sys.exit(0 if worst <= limit and not bad else 1)
PYEOF
}

# ppl_check GGUF GOLDEN — `perplexity --ctx 7` of the golden's first 7 tokens (one
# window: tokens 2..7 scored) against the mean NLL of the golden's first 6 rows
ppl_check() {
	python3 - "$2" "$TMP/seven.u32" <<'PYEOF' || return 1
import math, struct, sys
lines = open(sys.argv[1]).read().splitlines()
ids = [int(v) for v in next(l for l in lines if l.startswith("tokens ")).split()[1:8]]
open(sys.argv[2], "wb").write(struct.pack("<7I", *ids))
PYEOF
	"$QWENCHAT" perplexity -m "$1" -f "$TMP/seven.u32" --ctx 7 --json 2>&1 |
		python3 -c '
import json, math, sys
golden, out = sys.argv[1], sys.stdin.read()
lines = open(golden).read().splitlines()
ids = [int(v) for v in next(l for l in lines if l.startswith("tokens ")).split()[1:8]]
rows = [[float(v) for v in l.split()] for l in lines if l[:1] in "-0123456789"][:6]
nll = 0.0
for i, r in enumerate(rows):
    m = max(r)
    nll += m + math.log(sum(math.exp(v - m) for v in r)) - r[ids[i + 1]]
nll /= 6
try:
    o = json.loads(out)
except ValueError:
    print(out.strip()[:300]); sys.exit(1)
err = abs(o["nll"] - nll) / nll
print("nll %.6f against %.6f, %.1e relative" % (o["nll"], nll, err))
sys.exit(0 if o["tokens"] == 6 and err <= 1e-4 else 1)' "$2"
}

for t in q8_0 q6_k q5_k_m q4_k_m q4_0 q5_0 q4_1 q5_1 q3_k_m q2_k; do
	g="$TOP_SRCDIR/tests/golden/logits-quant-$t.txt"
	expect_exit 0 "quantize --type $t" "$QWENCHAT" quantize -m "$M" --type "$t" --out "$TMP/$t.gguf"
	echo "$ids" | "$QWENCHAT" logits -m "$TMP/$t.gguf" --out "$TMP/p.bin" 2>"$TMP/err" ||
		fail "$t logits: $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/p.bin" "$g" 12 1e-2); then pass "$t prefill: $r"; else fail "$t prefill: $r"; fi
	# with an fp32 KV cache nothing is rounded but fp32 sums: the dequantized weights
	# are multiplied as they are, on every kernel set
	echo "$ids" | "$QWENCHAT" logits -m "$TMP/$t.gguf" --kv-f32 --out "$TMP/p32.bin" \
		2>"$TMP/err" || fail "$t logits --kv-f32: $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/p32.bin" "$g" 12 1e-5); then pass "$t prefill, fp32 KV: $r"
	else fail "$t prefill, fp32 KV: $r"; fi
	echo "$ids" | QWENCHAT_CPU_BF16_PREFILL=1 "$QWENCHAT" logits -m "$TMP/$t.gguf" \
		--out "$TMP/f.bin" 2>"$TMP/err" || fail "$t fast logits: $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/f.bin" "$g" 12 3e-2); then pass "$t fast prefill: $r"
	else fail "$t fast prefill: $r"; fi
	echo "$ids" | cut -d' ' -f1-7 | "$QWENCHAT" logits -m "$TMP/$t.gguf" --kv-f32 \
		--out "$TMP/e.bin" 2>"$TMP/err" || fail "$t logits (7): $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/e.bin" "$g" 7 1e-5); then pass "$t exact, 7 tokens: $r"
	else fail "$t exact, 7 tokens: $r"; fi
	if r=$(ppl_check "$TMP/$t.gguf" "$g"); then pass "$t perplexity of 7 tokens: $r"
	else fail "$t perplexity of 7 tokens: $r"; fi
	echo "$ids" | cut -d' ' -f1-7 | QWENCHAT_CPU_BF16_PREFILL=1 "$QWENCHAT" logits \
		-m "$TMP/$t.gguf" --out "$TMP/d.bin" 2>"$TMP/err" ||
		fail "$t fast logits (7): $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/d.bin" "$g" 7 2e-2); then pass "$t decode kernels: $r"; else fail "$t decode kernels: $r"; fi
	echo "$ids" | "$QWENCHAT" logits -m "$M" --quant "$t" --out "$TMP/q.bin" 2>"$TMP/err" ||
		fail "$t --quant: $(head -c 300 "$TMP/err")"
	if cmp -s "$TMP/q.bin" "$TMP/p.bin"; then pass "$t --quant = the file"
	else fail "$t: --quant gives other logits than the quantized file"; fi
done

# a file llama.cpp's llama-quantize wrote in its IQ4_XS mix (IQ4_XS, IQ4_NL for rows of
# 288, a Q6_K embedding), which qwenchat reads but does not write: the same checks
g="$TOP_SRCDIR/tests/golden/logits-iq4_xs.txt"
f="$TOP_SRCDIR/tests/golden/tiny-iq4_xs.gguf"
iq_ids=$(sed -n 's/^tokens //p' "$g")
for isa in c avx2 native; do
	e=$([ $isa = native ] && echo "" || echo "QWENCHAT_CPU_ISA=$isa")
	echo "$iq_ids" | env $e "$QWENCHAT" logits -m "$f" --kv-f32 --out "$TMP/x.bin" \
		2>"$TMP/err" || { grep -q "this CPU cannot run it" "$TMP/err" ||
		fail "iq4_xs logits on $isa: $(head -c 300 "$TMP/err")"; continue; }
	if r=$(compare "$TMP/x.bin" "$g" 12 1e-5); then pass "iq4_xs on $isa, fp32 KV: $r"
	else fail "iq4_xs on $isa, fp32 KV: $r"; fi
	echo "$iq_ids" | env $e QWENCHAT_CPU_BF16_PREFILL=1 "$QWENCHAT" logits -m "$f" \
		--out "$TMP/x.bin" 2>"$TMP/err" || fail "iq4_xs fast logits: $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/x.bin" "$g" 12 3e-2); then pass "iq4_xs fast prefill on $isa: $r"
	else fail "iq4_xs fast prefill on $isa: $r"; fi
	echo "$iq_ids" | cut -d' ' -f1-7 | env $e "$QWENCHAT" logits -m "$f" --kv-f32 \
		--out "$TMP/x.bin" 2>"$TMP/err" || fail "iq4_xs logits (7): $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/x.bin" "$g" 7 1e-5); then pass "iq4_xs exact, 7 tokens, on $isa: $r"
	else fail "iq4_xs exact, 7 tokens, on $isa: $r"; fi
	echo "$iq_ids" | cut -d' ' -f1-7 | env $e QWENCHAT_CPU_BF16_PREFILL=1 "$QWENCHAT" logits \
		-m "$f" --out "$TMP/x.bin" 2>"$TMP/err" ||
		fail "iq4_xs fast logits (7): $(head -c 300 "$TMP/err")"
	if r=$(compare "$TMP/x.bin" "$g" 7 2e-2); then pass "iq4_xs decode kernels on $isa: $r"
	else fail "iq4_xs decode kernels on $isa: $r"; fi
done

# every kernel set this CPU runs gives the same answer within float rounding
for isa in c avx2; do
	QWENCHAT_CPU_ISA=$isa "$QWENCHAT" logits -m "$TMP/q4_k_m.gguf" --out "$TMP/i.bin" \
		>/dev/null 2>&1 <<EOT || continue
$ids
EOT
	if r=$(compare "$TMP/i.bin" "$TOP_SRCDIR/tests/golden/logits-quant-q4_k_m.txt" 12 1e-2); then
		pass "q4_k_m on $isa: $r"
	else fail "q4_k_m on $isa: $r"; fi
done

# bench says which prefill ran: int8 activations where the CPU has AVX2 but not
# AVX-512, bf16 ones with AVX-512 BF16, fp32 (the exact path) otherwise
inputs=fp32
grep -qw avx2 /proc/cpuinfo && inputs=int8
grep -qw avx512f /proc/cpuinfo && inputs=fp32
grep -qw avx512_bf16 /proc/cpuinfo && inputs=bf16
# (the CPU's own choice: not a kernel set forced from outside)
expect_exit 0 "bench a quantized file" env -u QWENCHAT_CPU_ISA "$QWENCHAT" bench \
	-m "$TMP/q4_k_m.gguf" -p 16 -n 2 -r 1 --json --bw-buffer 64
grep -q "\"prefill_inputs\": \"$inputs\"" "$TMP/out" && pass "bench: $inputs prefill here" ||
	fail "bench prefill_inputs, want $inputs: $(cat "$TMP/out")"

expect_exit 2 "--quant q3_k" "$QWENCHAT" logits -m "$M" --quant q3_k --out "$TMP/x.bin"
expect_err_has "is not one of q8_0" "--quant q3_k: names the choices"
echo 1 2 3 >"$TMP/ids"
expect_exit 1 "--quant on a quantized file" sh -c \
	"\"$QWENCHAT\" logits -m \"$TMP/q8_0.gguf\" --quant q4_0 --out \"$TMP/x.bin\" <\"$TMP/ids\""
expect_err_has "already Q8_0" "--quant on a quantized file: clear error"
# rows of 100 weights: llama.cpp's mixes have no type for the embedding there
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/w100" --hidden-size 100 --heads 5 --kv-heads 1 \
	--head-dim 20 >/dev/null || fail "mkmodel --hidden-size 100"
expect_exit 1 "--quant q8_0 on rows of 100" sh -c \
	"\"$QWENCHAT\" logits -m \"$TMP/w100\" --quant q8_0 --out \"$TMP/x.bin\" <\"$TMP/ids\""
expect_err_has "--quant q8_0: tensor token_embd.weight: rows of 100 weights are not whole Q8_0 blocks" \
	"--quant q8_0 on rows of 100: names the tensor"
# rows of 272 (ffn_down): a K-quant falls back to F16 there, a 32-weight type has no
# fallback and is refused, as llama-quantize refuses it
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/i272" --intermediate-size 272 >/dev/null &&
	cp "$M/tokenizer.json" "$TMP/i272/" || fail "mkmodel --intermediate-size 272"
expect_exit 1 "quantize --type q8_0 on rows of 272" "$QWENCHAT" quantize -m "$TMP/i272" \
	--type q8_0 --out "$TMP/i272.gguf"
expect_err_has "tensor blk.0.ffn_down.weight: rows of 272 weights are not whole Q8_0 blocks" \
	"... names the tensor"
[ ! -e "$TMP/i272.gguf" ] && pass "... and writes no file" || fail "a file was left"
expect_exit 0 "quantize --type q4_k_m on rows of 272" "$QWENCHAT" quantize -m "$TMP/i272" \
	--type q4_k_m --out "$TMP/i272.gguf"
"$QWENCHAT" info -m "$TMP/i272.gguf" 2>&1 | grep -q "F16: 2 tensors" &&
	pass "... its two ffn_down in F16, as llama-quantize's fallback" ||
	fail "q4_k_m on rows of 272: $("$QWENCHAT" info -m "$TMP/i272.gguf" 2>&1 | grep tensors)"
finish
