#!/bin/sh
# perplexity.sh — `qwenchat perplexity` against tests/cli/ppl_reference.py, an
# independent float64 numpy Qwen3 with its own sliding-window loop: the tokens
# scored, the mean NLL (1e-4 relative) and, with --kl-base, the KL divergence and
# top-1 agreement, for several --ctx/--stride pairs on a tied model of an odd GQA
# shape and an untied one; a text file gives what the .u32 of `qwenchat tokenize`
# plus <|endoftext|> gives, special-token strings stay text, ill-formed UTF-8 is
# U+FFFD; then the usage and file errors (one line, exit 2 or 1).
. "$TOP_SRCDIR/tests/lib.sh"

need_numpy
REF="$TOP_SRCDIR/tests/cli/ppl_reference.py"
MK="$TOP_BUILDDIR/tests/mkmodel"
PPL="$QWENCHAT perplexity --backend cpu"

# Weights of std 0.3 make the distributions peaked (mean NLL ~10 nats against a
# uniform 6.9), so that a wrong attention or loop moves the NLL far beyond 1e-4.
A=$TMP/tied
B=$TMP/untied
A2=$TMP/tied2
"$MK" --out "$A" --vocab-size 1024 --hidden-size 64 --layers 2 --heads 6 --kv-heads 2 \
	--head-dim 16 --std 0.3 --max-position 256 --seed 5 >/dev/null &&
	"$MK" --out "$A2" --vocab-size 1024 --hidden-size 64 --layers 2 --heads 6 --kv-heads 2 \
		--head-dim 16 --std 0.3 --max-position 256 --seed 9 >/dev/null &&
	"$MK" --out "$B" --vocab-size 1024 --hidden-size 64 --intermediate-size 96 --layers 2 \
		--heads 3 --kv-heads 1 --head-dim 32 --std 0.3 --no-tie --max-position 256 \
		--seed 6 >/dev/null || { echo "mkmodel failed" >&2; exit 1; }

# 301 random ids: not a multiple of any stride below
"$PY" -c 'import numpy as np, sys
np.random.RandomState(7).randint(0, 1024, size=301).astype("<u4").tofile(sys.argv[1])' \
	"$TMP/r.u32"

# close DESC OURS REF [TOL] — the same tokens, nll (and kl) within TOL relative
# (default 1e-4), ppl = exp(nll), the same top1
close() {
	"$PY" - "$2" "$3" "${4:-1e-4}" <<'EOF'
import json, math, sys
o, r, tol = json.loads(sys.argv[1]), json.loads(sys.argv[2]), float(sys.argv[3])
se = {k for k in o if k.endswith("_stderr")}  # checked apart, against --se
for k in ("ctx", "stride", "windows", "loop"):  # the run's, which the reference does not say
    o.pop(k)
base_se = {"kl_stderr", "top1_stderr", "ln_ppl_ratio_stderr", "dp_stderr"}
want = {"nll_stderr", "ppl_stderr"} | (base_se if "kl" in r else set())
bad = [] if o["tokens"] == r["tokens"] and set(o) - se == set(r) and se == want else ["tokens or keys"]
for n, p in (("nll", "ppl"), ("base_nll", "base_ppl"), ("ln_ppl_ratio", "ppl_ratio")):
    if n in o and abs(o[p] - math.exp(o[n])) > 1e-12 * o[p]:
        bad.append("%s is not exp(%s)" % (p, n))
# relative to the value; the log ratio and the mean dp, which may be near 0, to the
# mean NLL and the rms dp
scale = {k: abs(r[k]) for k in r}
scale.update(ln_ppl_ratio=r["nll"], dp=r.get("dp_rms"))
for k in ("nll", "kl", "base_nll", "ln_ppl_ratio", "kl_median", "kl_p90", "kl_p99",
          "kl_p999", "kl_max", "dp", "dp_rms"):
    if k in r and abs(o[k] - r[k]) > tol * scale[k]:
        bad.append("%s %.3g relative" % (k, abs(o[k] - r[k]) / scale[k]))
if "top1" in r and o["top1"] != r["top1"]:
    bad.append("top1")
print(", ".join(bad) or ", ".join("%s %.2g relative" % (k, abs(o[k] - r[k]) / r[k])
                                  for k in ("nll", "kl") if k in r))
sys.exit(1 if bad else 0)
EOF
}

# check DESC MODEL CTX STRIDE [qwenchat options] — ours against the reference
check() {
	desc=$1 m=$2 ctx=$3 stride=$4
	shift 4
	ours=$($PPL -m "$m" -f "$TMP/r.u32" --ctx "$ctx" --stride "$stride" --json "$@" 2>"$TMP/err")
	ref=$("$PY" "$REF" "$m" "$TMP/r.u32" "$ctx" "$stride")
	if msg=$(close "$desc" "$ours" "$ref"); then pass "$desc: $msg"
	else fail "$desc: $msg; ours $ours $(head -c 200 "$TMP/err"), reference $ref"; fi
}

# --- against the float64 reference ---------------------------------------------------
check "tied, ctx 64 stride 64, fp32 KV" "$A" 64 64 --kv-f32
check "tied, ctx 64 stride 16, fp32 KV" "$A" 64 16 --kv-f32
check "tied, ctx 50 stride 7, fp32 KV" "$A" 50 7 --kv-f32
check "tied, ctx 2 stride 1 (a label per window)" "$A" 2 1 --kv-f32
check "tied, ctx 256 stride 256 (a short last window)" "$A" 256 256 --kv-f32
check "untied, ctx 64 stride 64, fp32 KV" "$B" 64 64 --kv-f32
check "untied, ctx 100 stride 30, fp32 KV" "$B" 100 30 --kv-f32
# Whether a file is ids goes by its name, in any case: R.U32 is the same ids, not text.
cp "$TMP/r.u32" "$TMP/R.U32"
a=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --json 2>&1)
b=$($PPL -m "$A" -f "$TMP/R.U32" --ctx 64 --json 2>&1)
if [ "$a" = "$b" ]; then pass "an upper-case .U32 name is ids too"
else fail "an upper-case .U32 name: $b, against $a"; fi

# --llama-chunks: llama-perplexity's loop (whole chunks, the second half scored), against
# the reference's --llama, written from llama.cpp's tools/perplexity; with --kl-base too
for c in 20 21; do
	ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx $c --llama-chunks --kl-base "$A2" --json 2>"$TMP/err")
	ref=$("$PY" "$REF" "$A" "$TMP/r.u32" $c 0 --llama --kl-base "$A2")
	if msg=$(close "" "$ours" "$ref"); then
		pass "--llama-chunks --ctx $c: $(echo "$ours" | grep -o '"tokens": [0-9]*') scored: $msg"
	else
		fail "--llama-chunks --ctx $c: $msg; ours $ours $(head -c 200 "$TMP/err"), reference $ref"
	fi
done
expect_exit 2 "--stride with --llama-chunks" $PPL -m "$A" -f "$TMP/r.u32" --llama-chunks --stride 4
# a chunk of 2 has no token past its first half to score
expect_exit 2 "--llama-chunks --ctx 2" $PPL -m "$A" -f "$TMP/r.u32" --llama-chunks --ctx 2
expect_err_has "--ctx 2 with --llama-chunks" "--llama-chunks --ctx 2 refused by name"
head -c $((4 * 150)) "$TMP/r.u32" >"$TMP/r150.u32"
expect_exit 1 "--llama-chunks on fewer tokens than a chunk" $PPL -m "$A" -f "$TMP/r150.u32" \
	--llama-chunks --ctx 200
expect_err_has "150 tokens, fewer than one chunk of --ctx 200" "fewer tokens than a chunk: said"
check "tied, ctx 64 stride 16, fp32 KV (the default)" "$A" 64 16
# --json says the windows it ran: 301 tokens in windows of 64 every 16 end with the one
# that starts at 240 (16 windows, as the loop of the guide counts them)
case $($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 16 --json) in
*'"ctx": 64, "stride": 16, "windows": 16, "loop": "sliding"}') pass "--json: ctx, stride and windows" ;;
*) fail "--json: ctx, stride, windows: $($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 16 --json)" ;;
esac
# --chunks 3: the first three windows, those of the first (3 - 1) 16 + 64 tokens
"$PY" -c 'import numpy as np, sys
np.fromfile(sys.argv[1], "<u4")[:96].tofile(sys.argv[2])' "$TMP/r.u32" "$TMP/r96.u32"
ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 16 --chunks 3 --json 2>"$TMP/err")
ref=$("$PY" "$REF" "$A" "$TMP/r96.u32" 64 16)
if msg=$(close "--chunks 3" "$ours" "$ref"); then pass "--chunks 3: the first 3 windows: $msg"
else fail "--chunks 3: $msg; ours $ours $(head -c 200 "$TMP/err"), reference $ref"; fi
# 97 tokens in windows of 16: the seventh window, [96, 97), would score nothing (a
# window's first token has no context in it), so it is neither run nor counted, and
# --chunks 6 leaves out nothing
"$PY" -c 'import numpy as np, sys
np.fromfile(sys.argv[1], "<u4")[:97].tofile(sys.argv[2])' "$TMP/r.u32" "$TMP/r97.u32"
case $($PPL -m "$A" -f "$TMP/r97.u32" --ctx 16 --json) in
*'"tokens": 90,'*'"windows": 6,'*) pass "a last window that would score nothing is not counted" ;;
*) fail "97 tokens by 16: $($PPL -m "$A" -f "$TMP/r97.u32" --ctx 16 --json)" ;;
esac
$PPL -m "$A" -f "$TMP/r97.u32" --ctx 16 --chunks 6 >"$TMP/table" 2>"$TMP/err" &&
	! grep -q '^chunks' "$TMP/table" && grep -q '^tokens *90 scored' "$TMP/table" &&
	pass "--chunks 6 of those: the table says nothing was left out" ||
	fail "--chunks 6: $(cat "$TMP/table" "$TMP/err")"
$PPL -m "$A" -f "$TMP/r97.u32" --ctx 16 --chunks 5 >"$TMP/table" 2>"$TMP/err" &&
	grep -q '^chunks *the first 5 windows only: tokens 1 to 80$' "$TMP/table" &&
	pass "--chunks 5: the table says what was left out" ||
	fail "--chunks 5: $(cat "$TMP/table" "$TMP/err")"
# the table's standard errors (llama-perplexity's +/-) against the reference's
$PPL -m "$A" -f "$TMP/r.u32" --ctx 50 --stride 7 --kl-base "$A2" >"$TMP/table" 2>"$TMP/err"
ref=$("$PY" "$REF" "$A" "$TMP/r.u32" 50 7 --kl-base "$A2" --se)
"$PY" - "$TMP/table" "$ref" <<'EOF' && pass "the standard errors of the mean NLL and KL" ||
import json, math, re, sys
t, r = open(sys.argv[1]).read(), json.loads(sys.argv[2])
m = re.search(r"uncertainty \+/- (\S+) nats on the mean NLL, \+/- (\S+) on the perplexity, "
              r"\+/- (\S+) on the KL", t)
ok = m and abs(float(m[1]) - r["nll_se"]) <= 1e-5 * r["nll_se"] + 1e-6 and \
    abs(float(m[2]) - r["ppl"] * r["nll_se"]) <= 1e-3 * r["ppl"] * r["nll_se"] + 1e-4 and \
    abs(float(m[3]) - r["kl_se"]) <= 1e-4 * r["kl_se"] + 1e-6
print(t, r)
sys.exit(0 if ok else 1)
EOF
	fail "standard errors: $(cat "$TMP/table") reference $ref"
# ... and its lines of --kl-base's statistics (printed to 6 decimals)
"$PY" - "$TMP/table" "$ref" <<'EOF' && pass "the table's base, ratio, KL spread and dp" ||
import math, re, sys
t, r = open(sys.argv[1]).read(), __import__("json").loads(sys.argv[2])
m = [re.search(p, t, re.M) for p in (
    r"^base +(\S+) nats per token, perplexity (\S+) \(MODEL2, ",
    r"^ratio +(\S+): perplexity over the base's \(log (\S+) \+/- (\S+)\)$",
    r"^kl spread +median (\S+), 90% (\S+), 99% (\S+), 99\.9% (\S+), max (\S+)$",
    r"^dp +mean (\S+), rms (\S+): p_MODEL - p_MODEL2 of the scored token$",
    r"\+/- (\S+) on dp \(standard errors\)$")]
want = [(r["base_nll"], r["base_ppl"]), (r["ppl_ratio"], r["ln_ppl_ratio"], r["ln_ppl_ratio_se"]),
        tuple(r[k] for k in ("kl_median", "kl_p90", "kl_p99", "kl_p999", "kl_max")),
        (r["dp"], r["dp_rms"]), (r["dp_se"],)]
ok = all(m)
for g, w in zip(m, want):
    ok = ok and all(abs(float(x) - y) <= 1e-4 * abs(y) + 2e-6 for x, y in zip(g.groups(), w))
print(t, r)
sys.exit(0 if ok else 1)
EOF
	fail "--kl-base's lines: $(cat "$TMP/table") reference $ref"
# ... and --json's, beside the mean
$PPL -m "$A" -f "$TMP/r.u32" --ctx 50 --stride 7 --kl-base "$A2" --json >"$TMP/se.json" 2>"$TMP/err"
"$PY" - "$TMP/se.json" "$ref" <<'EOF' && pass "--json: the standard errors of the NLL, perplexity, KL, top1, log ratio, dp" ||
import json, math, sys
o, r = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
n, t = o["tokens"], o["top1"]
ok = abs(o["nll_stderr"] - r["nll_se"]) <= 1e-5 * r["nll_se"] + 1e-6 and \
    abs(o["ppl_stderr"] - r["ppl"] * r["nll_se"]) <= 1e-4 * r["ppl"] * r["nll_se"] and \
    abs(o["kl_stderr"] - r["kl_se"]) <= 1e-4 * r["kl_se"] + 1e-6 and \
    abs(o["top1_stderr"] - math.sqrt(t * (1 - t) / (n - 1))) <= 1e-12 and \
    abs(o["ln_ppl_ratio_stderr"] - r["ln_ppl_ratio_se"]) <= 1e-4 * r["ln_ppl_ratio_se"] and \
    abs(o["dp_stderr"] - r["dp_se"]) <= 1e-4 * r["dp_se"]
print(o, r)
sys.exit(0 if ok else 1)
EOF
	fail "--json standard errors: $(cat "$TMP/se.json") reference $ref"
# one scored token has no spread: no standard error, rather than +/- 0
"$PY" -c 'import numpy as np, sys; np.fromfile(sys.argv[1], "<u4")[:2].tofile(sys.argv[2])' \
	"$TMP/r.u32" "$TMP/r2.u32"
if $PPL -m "$A" -f "$TMP/r2.u32" --ctx 2 >"$TMP/table" 2>"$TMP/err" &&
   grep -q '^tokens *1 scored' "$TMP/table" && grep -q '^uncertainty none' "$TMP/table"; then
	pass "one scored token: no standard error"
else
	fail "one scored token: $(cat "$TMP/table" "$TMP/err")"
fi
check "tied, ctx 64 stride 16, --kv-bf16" "$A" 64 16 --kv-bf16
check "untied, ctx 48 stride 48, --kv-bf16, 1 thread" "$B" 48 48 --kv-bf16 --threads 1
# --fast: bf16 products, the prefill's; near the reference, not on it where bf16 runs
ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 16 --json --fast 2>"$TMP/err")
ref=$("$PY" "$REF" "$A" "$TMP/r.u32" 64 16)
if msg=$(close "--fast" "$ours" "$ref" 1e-2); then pass "--fast, ctx 64 stride 16: $msg"
else fail "--fast: $msg; ours $ours $(head -c 200 "$TMP/err"), reference $ref"; fi

# F32 weights (a training checkpoint's) and F16 ones, of a width no vector divides, on
# every kernel set this CPU runs: a prefill multiplies them in fp32 as they are stored.
for dt in f32 f16; do
	"$MK" --out "$TMP/w-$dt" --vocab-size 1024 --hidden-size 100 --intermediate-size 132 \
		--layers 2 --heads 5 --kv-heads 1 --head-dim 20 --std 0.3 --max-position 256 \
		--dtype "$dt" --seed 8 >/dev/null || fail "mkmodel --dtype $dt"
	ref=$("$PY" "$REF" "$TMP/w-$dt" "$TMP/r.u32" 64 16)
	for isa in "" c avx2 avx512 avx512bf16 amx; do
		QWENCHAT_CPU_ISA=$isa "$QWENCHAT" logits -m "$TMP/w-$dt" --out "$TMP/probe" \
			>/dev/null 2>&1 <<-EOT || continue
		1 2 3
		EOT
		ours=$(QWENCHAT_CPU_ISA=$isa $PPL -m "$TMP/w-$dt" -f "$TMP/r.u32" --ctx 64 \
			--stride 16 --json 2>"$TMP/err")
		if msg=$(close "" "$ours" "$ref"); then pass "$dt weights, hidden 100, ${isa:-native}: $msg"
		else fail "$dt weights, hidden 100, ${isa:-native}: $msg ($ours against $ref)"; fi
	done
done

# YaRN set as Qwen3's model cards say (a factor and original_max_position_embeddings,
# max_position_embeddings left alone): the factor 2 as given, not the ratio 96 / 64 =
# 1.5 (transformers 4.51-4.55 took the ratio; 4.56+, vLLM and llama.cpp the factor),
# and windows of 2 x 64 = 128 positions, beyond max_position_embeddings
"$MK" --out "$TMP/yarn" --vocab-size 1024 --hidden-size 64 --layers 2 --heads 6 --kv-heads 2 \
	--head-dim 16 --std 0.3 --max-position 96 --yarn-factor 2 --yarn-original-max 64 \
	--seed 5 >/dev/null || fail "mkmodel yarn"
check "YaRN, factor 2 over 64 positions but 96 / 64, ctx 64 stride 32" "$TMP/yarn" 64 32 --kv-f32
check "YaRN's 2 x 64 positions, ctx 128 stride 64" "$TMP/yarn" 128 64 --kv-f32
# a window's last token is only a target: 129 tokens run at YaRN's 128 positions
check "YaRN's 2 x 64 positions, ctx 129 stride 64" "$TMP/yarn" 129 64 --kv-f32
expect_exit 1 "a window past YaRN's 128 positions" $PPL -m "$TMP/yarn" -f "$TMP/r.u32" --ctx 130
expect_err_has "--ctx 130 runs 129 positions, more than the 128 of $TMP/yarn (YaRN's factor x original_max_position_embeddings)" \
	"the limit and where it comes from named"

# the default window: max_position_embeddings (256 here), stride = window
ours=$($PPL -m "$A" -f "$TMP/r.u32" --json --kv-f32)
ref=$("$PY" "$REF" "$A" "$TMP/r.u32" 256 256)
msg=$(close "" "$ours" "$ref") && pass "default --ctx and --stride: $msg" ||
	fail "default --ctx and --stride: $msg ($ours against $ref)"

# the table
expect_exit 0 "the table" $PPL -m "$A" -f "$TMP/r.u32" --ctx 64
grep -q '^perplexity  [0-9]' "$TMP/out" && grep -q '^tokens      296 scored' "$TMP/out" &&
	grep -q '5 windows of at most 64, stride 64' "$TMP/out" && pass "the table's lines" ||
	fail "the table: $(cat "$TMP/out")"
[ -s "$TMP/err" ] && fail "stderr not empty off a terminal: $(head -c 200 "$TMP/err")" ||
	pass "no progress off a terminal"

# --- --kl-base -------------------------------------------------------------------------
ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 20 --json --kl-base "$A")
"$PY" - "$ours" <<'EOF' && pass "a model against itself: kl 0, top1 1, ratio 1, dp 0" ||
import json, sys
o = json.loads(sys.argv[1])
zero = ("kl", "kl_stderr", "top1_stderr", "ln_ppl_ratio", "ln_ppl_ratio_stderr", "kl_median",
        "kl_p90", "kl_p99", "kl_p999", "kl_max", "dp", "dp_stderr", "dp_rms")
sys.exit(0 if all(o[k] == 0 for k in zero) and o["top1"] == 1 and o["ppl_ratio"] == 1 and
         o["base_nll"] == o["nll"] and o["base_ppl"] == o["ppl"] else 1)
EOF
	fail "a model against itself: $ours"
ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --stride 20 --json --kv-f32 --kl-base "$A2")
ref=$("$PY" "$REF" "$A" "$TMP/r.u32" 64 20 --kl-base "$A2")
msg=$(close "" "$ours" "$ref") && pass "kl and top1 against another model: $msg" ||
	fail "kl against another model: $msg ($ours against $ref)"
"$PY" -c 'import json, sys; sys.exit(0 if json.loads(sys.argv[1])["kl"] > 0.1 else 1)' "$ours" &&
	pass "kl against another model is positive" || fail "kl not positive: $ours"
ours=$($PPL -m "$A2" -f "$TMP/r.u32" --ctx 64 --stride 64 --json --kv-f32 --kl-base "$A")
ref=$("$PY" "$REF" "$A2" "$TMP/r.u32" 64 64 --kl-base "$A")
msg=$(close "" "$ours" "$ref") && pass "kl in the other direction: $msg" ||
	fail "kl in the other direction: $msg ($ours against $ref)"
# --quant applies to MODEL alone: what quantizing costs
ours=$($PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --json --quant q8_0 --kl-base "$A" 2>"$TMP/err")
"$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if 0 < d["kl"] < 0.05 and d["top1"] > 0.8 else 1)' "$ours" 2>/dev/null &&
	pass "--quant q8_0 against the same model: a small kl ($ours)" ||
	fail "--quant against the same model: $ours $(head -c 200 "$TMP/err")"
# ... where top1 is neither 0 nor 1: its standard error in the table is that of the
# positions' 0/1 agreements (their sample standard deviation over sqrt(N), as the man
# page says of every +/-)
$PPL -m "$A" -f "$TMP/r.u32" --ctx 64 --quant q8_0 --kl-base "$A" >"$TMP/table" 2>"$TMP/err"
"$PY" - "$TMP/table" <<'EOF' && pass "the standard error of top1" ||
import math, re, sys
import numpy as np
t = open(sys.argv[1]).read()
n = int(re.search(r"^tokens +(\d+) scored", t, re.M)[1])
p = float(re.search(r"^top1 +(\S+) of the positions", t, re.M)[1])
se = float(re.search(r"\+/- (\S+) on top1", t)[1])
k = round(p * n)
same = np.array([1.0] * k + [0.0] * (n - k))
want = np.std(same, ddof=1) / math.sqrt(n)
print(t, want)
sys.exit(0 if 0 < k < n and abs(se - want) <= 1e-4 * want + 1e-6 else 1)
EOF
	fail "top1 standard error: $(cat "$TMP/table" "$TMP/err")"

# --- text files --------------------------------------------------------------------------
need_tokenizer
T=$TMP/text-model
T2=$TMP/text-model2
chat_model "$T" --vocab-size 151669 --hidden-size 32 --intermediate-size 64 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16 --std 0.2 --seed 3
chat_model "$T2" --vocab-size 151669 --hidden-size 32 --intermediate-size 64 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16 --std 0.2 --seed 4
printf 'The quick brown fox jumps over the lazy dog.\nÆØÅ naïve café, 日本語 and 🦀.\n' >"$TMP/a.txt"
ids=$("$QWENCHAT" tokenize -m "$T" <"$TMP/a.txt")
eot=$("$PY" -c 'import json, sys
print([t["id"] for t in json.load(open(sys.argv[1]))["added_tokens"] if t["content"] == "<|endoftext|>"][0])' \
	"$TOK_DIR/tokenizer.json")
"$PY" -c 'import sys, numpy as np
np.array([int(x) for x in sys.argv[2].split()] + [int(sys.argv[3])], dtype="<u4").tofile(sys.argv[1])' \
	"$TMP/a.u32" "$ids" "$eot"
t=$($PPL -m "$T" -f "$TMP/a.txt" --ctx 16 --stride 5 --json)
u=$($PPL -m "$T" -f "$TMP/a.u32" --ctx 16 --stride 5 --json)
[ -n "$t" ] && [ "$t" = "$u" ] && pass "text = tokenize's ids + <|endoftext|> ($eot): $t" ||
	fail "text $t, its ids $u"
# --no-eot: the text's own tokens, without the end-of-text token after it
"$PY" -c 'import sys, numpy as np
np.array([int(x) for x in sys.argv[2].split()], dtype="<u4").tofile(sys.argv[1])' \
	"$TMP/a-bare.u32" "$ids"
x=$($PPL -m "$T" -f "$TMP/a.txt" --ctx 16 --stride 5 --json --no-eot)
y=$($PPL -m "$T" -f "$TMP/a-bare.u32" --ctx 16 --stride 5 --json)
x2=$($PPL -m "$T" -f "$TMP/a.txt" --ctx 8 --llama-chunks --json)
y2=$($PPL -m "$T" -f "$TMP/a-bare.u32" --ctx 8 --llama-chunks --json)
[ -n "$x2" ] && [ "$x2" = "$y2" ] && pass "--llama-chunks: a text without end-of-text ($x2)" ||
	fail "--llama-chunks on text: $x2, its ids without end-of-text $y2"
[ -n "$x" ] && [ "$x" = "$y" ] && pass "--no-eot: the text's tokens alone ($x)" ||
	fail "--no-eot: text $x, its ids without end-of-text $y"
ref=$("$PY" "$REF" "$T" "$TMP/a.u32" 16 5)
msg=$(close "" "$u" "$ref") && pass "the real-vocabulary model against the reference: $msg" ||
	fail "real vocabulary: $msg ($u against $ref)"
printf 'The quick brown fox' | $PPL -m "$T" -f - --json >"$TMP/stdin.json" &&
	printf 'The quick brown fox' >"$TMP/fox.txt" &&
	[ "$(cat "$TMP/stdin.json")" = "$($PPL -m "$T" -f "$TMP/fox.txt" --json)" ] &&
	pass "-f - reads the text from stdin" || fail "-f -: $(cat "$TMP/stdin.json")"
# special-token strings are text: "<|im_end|>" is several tokens, not one
printf '<|im_end|>' >"$TMP/special.txt"
out=$($PPL -m "$T" -f "$TMP/special.txt" --json)
case $out in
'{"tokens": 1,'*) fail "<|im_end|> in a text became the special token: $out" ;;
'{"tokens": '[2-9]*) pass "<|im_end|> in a text stays text ($out)" ;;
*) fail "<|im_end|> text: $out" ;;
esac
# ill-formed UTF-8 is U+FFFD, as in the chat
printf 'ab\377cd\342\202' >"$TMP/bad.txt"
printf 'ab\357\277\275cd\357\277\275' >"$TMP/fffd.txt"
a=$($PPL -m "$T" -f "$TMP/bad.txt" --json)
b=$($PPL -m "$T" -f "$TMP/fffd.txt" --json)
[ -n "$a" ] && [ "$a" = "$b" ] && pass "ill-formed UTF-8 scores as U+FFFD" || fail "bad UTF-8 $a, U+FFFD $b"
# JSON Lines (a dataset's to_json()): each record's "text" is a document, as a text
# file is; other members, blank lines, a byte-order mark and CRLF are left alone
"$PY" - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
texts = ["The quick brown fox.\nA second line", "caf\u00e9 \U0001f980 \\ \"q\""]
with open(d + "/r.jsonl", "w", encoding="utf-8", newline="") as f:
    f.write("\ufeff" + json.dumps({"id": 1, "text": texts[0], "meta": {"tags": [1, [2]]}}) + "\r\n")
    f.write("  \n" + json.dumps({"text": texts[1]}, ensure_ascii=True) + "\n")
for i, t in enumerate(texts):
    open("%s/r%d.txt" % (d, i), "w", encoding="utf-8", newline="").write(t)
EOF
ids=$( { "$QWENCHAT" tokenize -m "$T" <"$TMP/r0.txt"; echo "$eot";
	 "$QWENCHAT" tokenize -m "$T" <"$TMP/r1.txt"; echo "$eot"; } | tr '\n' ' ')
"$PY" -c 'import sys, numpy as np
np.array([int(x) for x in sys.argv[2].split()], dtype="<u4").tofile(sys.argv[1])' "$TMP/rj.u32" "$ids"
a=$($PPL -m "$T" -f "$TMP/r.jsonl" --ctx 8 --stride 3 --json)
b=$($PPL -m "$T" -f "$TMP/rj.u32" --ctx 8 --stride 3 --json)
[ -n "$a" ] && [ "$a" = "$b" ] && pass "*.jsonl: each record's text + <|endoftext|> ($a)" ||
	fail "*.jsonl $a, its records' ids $b"
# ... with --kl-base too (each tokenizer reads the records)
[ "$($PPL -m "$T" -f "$TMP/r.jsonl" --ctx 8 --stride 3 --json --kl-base "$T2" | cut -d, -f1-3)" = \
  "$(echo "$b" | cut -d, -f1-3)" ] && pass "*.jsonl with --kl-base: the records' documents" ||
	fail "*.jsonl with --kl-base: $($PPL -m "$T" -f "$TMP/r.jsonl" --ctx 8 --stride 3 --json --kl-base "$T2" 2>&1)"
# the same records named *.json (as Dataset.to_json("x.json") writes them) or *.JSONL
cp "$TMP/r.jsonl" "$TMP/r.json" && cp "$TMP/r.jsonl" "$TMP/r.JSONL"
[ "$($PPL -m "$T" -f "$TMP/r.json" --ctx 8 --stride 3 --json)" = "$b" ] &&
	[ "$($PPL -m "$T" -f "$TMP/r.JSONL" --ctx 8 --stride 3 --json)" = "$b" ] &&
	pass "JSON Lines records named *.json or *.JSONL: the same documents" ||
	fail "JSON Lines named *.json or *.JSONL: not read as records"
# a *.json of conversations is not text to score (nor to pretrain on)
printf '[\n  {"instruction": "a", "input": "", "output": "b"}\n]\n' >"$TMP/alpaca.json"
expect_exit 1 "Alpaca records in a *.json" $PPL -m "$T" -f "$TMP/alpaca.json"
expect_err_has "alpaca.json: conversations" "Alpaca records: refused as conversations, not text"
for bad in '[1]|not a JSON object' '{"txt": "a"}|no "text" member' '{"text": 5}|"text" is not a string' \
	'{"text": "a\u0000b"}|a NUL character' '{"text": "a"|not JSON' \
	'42|not a JSON object' '"a string"|not a JSON object' 'null|not a JSON object' \
	'{"messages": [{"role": "user", "content": "hi"}]}|no "text" member'; do
	printf '{"text": "fine"}\n\n%s\n' "${bad%%|*}" >"$TMP/bad.jsonl"
	expect_exit 1 "*.jsonl: ${bad%%|*}" $PPL -m "$T" -f "$TMP/bad.jsonl"
	expect_err_has "bad.jsonl: line 3: ${bad#*|}" "*.jsonl: ${bad%%|*}: the file, the line and why"
done
grep -qF 'conversations train with train --sft' "$TMP/err" &&
	pass "*.jsonl of conversations: the error points to --sft" ||
	fail "*.jsonl of conversations: $(cat "$TMP/err")"
# metadata is ignored, whatever JSON number it holds (Python's json writes any int)
printf '{"text": "fine", "hash": 18446744073709551615, "n": -123456789012345678901234567890}\n' >"$TMP/big.jsonl"
printf '{"text": "fine"}\n' >"$TMP/small.jsonl"
a=$($PPL -m "$T" -f "$TMP/big.jsonl" --json 2>"$TMP/err-big") &&
	[ "$a" = "$($PPL -m "$T" -f "$TMP/small.jsonl" --json)" ] &&
	pass "*.jsonl: integers beyond int64 in other members are ignored" ||
	fail "*.jsonl: big integers in metadata: $a $(head -c 200 "$TMP/err-big")"
# --kl-base on text: same tokenizer works; another tokenizer's ids are refused
expect_exit 0 "--kl-base on text" $PPL -m "$T" -f "$TMP/a.txt" --ctx 16 --json --kl-base "$T2"
T3=$TMP/other-tokenizer
cp -r "$T2" "$T3"
# the first two tokens of the text swap their ids
"$PY" -c 'import json, sys
t = json.load(open(sys.argv[1])); v = t["model"]["vocab"]
a, b = [int(x) for x in sys.argv[2].split()[:2]]
ka, kb = [k for k in v if v[k] == a][0], [k for k in v if v[k] == b][0]
v[ka], v[kb] = b, a
json.dump(t, open(sys.argv[1], "w"))' "$T3/tokenizer.json" "$ids"
expect_exit 1 "--kl-base with another tokenizer" $PPL -m "$T" -f "$TMP/a.txt" --kl-base "$T3"
expect_err_has "different ids" "another tokenizer: the error says the ids differ"

# --- errors ----------------------------------------------------------------------------------
# int64 ids written to a *.u32 file: every second 4-byte value is 0
"$PY" -c 'import numpy as np, sys; np.arange(1, 101, dtype="<i8").tofile(sys.argv[1])' "$TMP/i64.u32"
expect_exit 1 "int64 ids in a *.u32 file" $PPL -m "$A" -f "$TMP/i64.u32"
expect_err_has "i64.u32: every second id is 0: the ids look like 8-byte integers" \
	"int64 ids: refused, saying why"

expect_exit 0 "--help" $PPL --help
grep -q 'KL(P_MODEL || P_MODEL2)' "$TMP/out" && pass "--help gives the KL direction" ||
	fail "--help lacks the KL direction"
expect_exit 2 "no -f" $PPL -m "$A"
expect_err_has "-f FILE" "no -f: says so"
expect_exit 2 "--stride 0" $PPL -m "$A" -f "$TMP/r.u32" --stride 0
expect_err_has "--stride" "--stride 0: names the option"
expect_exit 2 "--stride > --ctx" $PPL -m "$A" -f "$TMP/r.u32" --ctx 16 --stride 17
expect_err_has "--stride 17 is more than the window" "--stride > --ctx: says so"
expect_exit 2 "--stride > the default window" $PPL -m "$A" -f "$TMP/r.u32" --stride 300
expect_err_has "--ctx 256" "--stride > the default window: names it"
expect_exit 2 "--ctx 1" $PPL -m "$A" -f "$TMP/r.u32" --ctx 1
expect_err_has "out of range [2," "--ctx 1: names the least window"
expect_exit 2 "--ctx 0" $PPL -m "$A" -f "$TMP/r.u32" --ctx 0
expect_err_has "out of range [2," "--ctx 0: names the least window, not 1"
expect_exit 1 "--ctx > max_position_embeddings" $PPL -m "$A" -f "$TMP/r.u32" --ctx 1000
expect_err_has "more than the 256 of $A (max_position_embeddings)" "--ctx too large: names the limit"
expect_exit 1 "a missing file" $PPL -m "$A" -f "$TMP/none.u32"
expect_err_has "none.u32" "a missing file: named"
expect_exit 1 "a device, endless" timeout 20 $PPL -m "$A" -f /dev/zero
expect_err_has "/dev/zero: not a regular file, a pipe or a terminal" "... refused before it is read"
expect_exit 1 "-f - from a device" sh -c "timeout 20 $PPL -m '$A' -f - </dev/zero"
expect_err_has "standard input: not a regular file, a pipe or a terminal" "... refused too"
mkdir "$TMP/dir.u32"
expect_exit 1 "a directory" $PPL -m "$A" -f "$TMP/dir.u32"
expect_err_has "dir.u32" "a directory: named"
: >"$TMP/empty.u32"
expect_exit 1 "an empty .u32" $PPL -m "$A" -f "$TMP/empty.u32"
expect_err_has "empty" "an empty .u32: says so"
: >"$TMP/empty.txt"
expect_exit 1 "an empty text" $PPL -m "$T" -f "$TMP/empty.txt"
expect_err_has "empty.txt" "an empty text: named"
head -c 4 "$TMP/r.u32" >"$TMP/one.u32"
expect_exit 1 "one token" $PPL -m "$A" -f "$TMP/one.u32"
expect_err_has "at least 2" "one token: says 2 are needed"
head -c 10 "$TMP/r.u32" >"$TMP/ten.u32"
expect_exit 1 "10 bytes of .u32" $PPL -m "$A" -f "$TMP/ten.u32"
expect_err_has "ten.u32: 10 bytes are not a whole number of 4-byte token ids (byte offset 8" \
	"10 bytes: names the file and the offset"
"$PY" -c 'import numpy as np, sys
np.array([1, 2, 3, 1024, 5, 99999], dtype="<u4").tofile(sys.argv[1])' "$TMP/big.u32"
expect_exit 1 "an id >= vocab_size" $PPL -m "$A" -f "$TMP/big.u32"
expect_err_has "big.u32: byte offset 12: token id 1024 is not below the model's vocab_size 1024" \
	"an id >= vocab_size: names the file and the first bad offset"
if [ "$(id -u)" -ne 0 ]; then
	cp "$TMP/r.u32" "$TMP/locked.u32" && chmod 000 "$TMP/locked.u32"
	expect_exit 1 "an unreadable file" $PPL -m "$A" -f "$TMP/locked.u32"
	expect_err_has "locked.u32" "an unreadable file: named"
fi
printf 'hello' >"$TMP/hello.txt"
expect_exit 1 "text with a model without tokenizer" $PPL -m "$A" -f "$TMP/hello.txt"
expect_err_has "tokenizer.json" "no tokenizer: names tokenizer.json"
NE=$TMP/no-eot
cp -r "$A" "$NE"
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$NE/tokenizer.json"
expect_exit 1 "a tokenizer without end-of-text" $PPL -m "$NE" -f "$TMP/hello.txt"
expect_err_has "no end-of-text token" "no end-of-text: says so"
# ... which --no-eot and --llama-chunks do not need: the text's own tokens are scored
printf 'hello hello, how are you' >"$TMP/hi.txt"
bare=$("$QWENCHAT" tokenize -m "$NE" <"$TMP/hi.txt")
"$PY" -c 'import sys, numpy as np
np.array([int(x) for x in sys.argv[2].split()], dtype="<u4").tofile(sys.argv[1])' \
	"$TMP/hi.u32" "$bare"
for o in --no-eot --llama-chunks; do
	x=$($PPL -m "$NE" -f "$TMP/hi.txt" --ctx 4 $o --json 2>"$TMP/err")
	y=$($PPL -m "$NE" -f "$TMP/hi.u32" --ctx 4 $([ $o = --llama-chunks ] && echo $o) --json)
	[ -n "$x" ] && [ "$x" = "$y" ] &&
		pass "$o with a tokenizer without end-of-text: the text's tokens ($x)" ||
		fail "$o without end-of-text: text '$x' ($(cat "$TMP/err")), its ids '$y'"
done
# ... and when only --kl-base's tokenizer lacks it, the error says it is that one's
EOT=$TMP/eot
cp -r "$A" "$EOT"
"$PY" - "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$EOT/tokenizer.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"] = [{"id": 300, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True}]
json.dump(t, open(sys.argv[2], "w"))
EOF
expect_exit 1 "--kl-base whose tokenizer lacks end-of-text" $PPL -m "$EOT" -f "$TMP/hello.txt" \
	--kl-base "$NE"
expect_err_has "hello.txt: with --kl-base $NE's tokenizer: the tokenizer has no end-of-text" \
	"--kl-base without end-of-text: names the base"
"$MK" --out "$TMP/v512" --vocab-size 512 >/dev/null
expect_exit 1 "--kl-base of another vocab_size" $PPL -m "$A" -f "$TMP/r.u32" --kl-base "$TMP/v512"
expect_err_has "vocab_size" "another vocab_size: says so"
expect_exit 1 "--kl-base missing" $PPL -m "$A" -f "$TMP/r.u32" --kl-base "$TMP/nothing"
expect_err_has "nothing" "a missing --kl-base: named"
for f in "$TMP/err"; do
	[ "$(wc -l <"$f")" -eq 1 ] && pass "one-line error" || fail "error is not one line: $(cat "$f")"
done

# a checkpoint trained on rows as long as its model's positions: its default windows
# are still the validation's, T + 1 tokens that run at T positions
"$MK" --out "$TMP/p16" --vocab-size 1024 --hidden-size 64 --layers 1 --heads 4 --kv-heads 2 \
	--head-dim 16 --max-position 16 --seed 3 >/dev/null || fail "mkmodel p16"
"$PY" -c 'import numpy as np, sys
ids = np.fromfile(sys.argv[1], "<u4")
ids[:200].tofile(sys.argv[2]); ids[200:200 + 5 * 16 + 1].tofile(sys.argv[3])' \
	"$TMP/r.u32" "$TMP/d16.u32" "$TMP/v16.u32"
if "$QWENCHAT" train --init "$TMP/p16" --out "$TMP/p16run" --data "$TMP/d16.u32" \
	--val "$TMP/v16.u32" --ctx 16 --batch 2 --steps 1 --exact --sequential --threads 2 \
	--no-panel >/dev/null 2>"$TMP/err" &&
   got=$($PPL -m "$TMP/p16run" -f "$TMP/v16.u32" --json 2>"$TMP/err") &&
   grep -q "windows of 17 tokens every 16, as its validation loss" "$TMP/err" &&
   "$PY" -c 'import json, sys
p = json.loads(sys.argv[1])
v = [json.loads(l) for l in open(sys.argv[2]) if "val_loss" in l][-1]
sys.exit(0 if p["tokens"] == 80 and abs(p["nll"] - v["val_loss"]) <= 1e-5 * v["val_loss"] else 1)' \
	"$got" "$TMP/p16run/train-log.jsonl"; then
	pass "a checkpoint at its model's 16 positions: the validation windows, its val_loss"
else
	fail "a checkpoint at its model's 16 positions: '${got:-}' $(head -c 300 "$TMP/err")"
fi

# a --ctx beyond the file: the windows end at the file's end, so the engine holds the
# file's tokens, not --ctx's (here a cache of 2 TiB); and a --chunks that reaches past
# 64 bits of tokens scores them all
"$MK" --out "$TMP/long" --vocab-size 1024 --hidden-size 64 --intermediate-size 64 --layers 4 \
	--heads 16 --kv-heads 16 --head-dim 256 --max-position 16777216 --seed 9 >/dev/null ||
	fail "mkmodel long"
"$PY" -c 'import numpy as np, sys
np.fromfile(sys.argv[1], "<u4")[:40].tofile(sys.argv[2])' "$TMP/r.u32" "$TMP/r40.u32"
# (the same scores; the JSON's "ctx" and "stride" are the ones given)
want=$($PPL -m "$TMP/long" -f "$TMP/r40.u32" --ctx 40 --json 2>"$TMP/err" |
	sed 's/"ctx": 40, "stride": 40/"ctx": 16777216, "stride": 16777216/')
got=$($PPL -m "$TMP/long" -f "$TMP/r40.u32" --ctx 16777216 --json 2>>"$TMP/err")
[ -n "$want" ] && [ "$got" = "$want" ] && pass "--ctx beyond the file: the file's one window" ||
	fail "--ctx 16777216 on 40 tokens: '$got', want '$want': $(head -c 300 "$TMP/err")"
got=$($PPL -m "$TMP/long" -f "$TMP/r40.u32" --ctx 16777216 --chunks 1099511627776 --json \
	2>"$TMP/err")
[ -n "$want" ] && [ "$got" = "$want" ] && pass "--chunks x --ctx past 2^64: every window" ||
	fail "--chunks 2^40 at --ctx 2^24: '$got', want '$want': $(head -c 300 "$TMP/err")"
finish
