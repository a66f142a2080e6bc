#!/bin/sh
# gguf.sh — GGUF files on the command line: a model written as llama.cpp's
# convert_hf_to_gguf.py writes one (tests/mkgguf.py) gives the same config, token ids,
# template and logits as its Hugging Face directory; split files are joined; and every
# malformed file of tests/cli/gguf_bad.py is refused with one line naming the file.
. "$TOP_SRCDIR/tests/lib.sh"
MK="$TOP_BUILDDIR/tests/mkmodel"
PY=python3

# ---- malformed files, from a tiny model with a small byte-level BPE tokenizer ----
M="$TMP/tiny"
"$MK" --out "$M" --vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --bos-id 1 --eos-id 2 --seed 5 >/dev/null ||
	{ fail "mkmodel tiny"; finish; }
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$M/tokenizer.json"
mkdir "$TMP/bad"
$PY "$TOP_SRCDIR/tests/cli/gguf_bad.py" "$M" "$TMP/bad" >"$TMP/cases" ||
	{ fail "gguf_bad.py"; finish; }
expect_exit 0 "the unmodified file loads" "$QWENCHAT" info -m "$TMP/bad/good.gguf"
expect_exit 0 "its tokenizer loads" sh -c "echo hello | '$QWENCHAT' tokenize -m '$TMP/bad/good.gguf'"
n=0
tab=$(printf '\t')
while IFS="$tab" read -r cmd file expect; do
	n=$((n + 1))
	name=$(basename "$file")
	echo hello | "$QWENCHAT" "$cmd" -m "$file" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	lines=$(wc -l <"$TMP/err")
	if [ "$rc" -ne 1 ]; then
		fail "$name: $cmd exit $rc, expected 1: $(head -c 300 "$TMP/err")"
	elif [ "$lines" -ne 1 ] || ! grep -qF "qwenchat: $file: " "$TMP/err" ||
	     [ "$(head -c $((${#file} + 12)) "$TMP/err")" != "qwenchat: $file: " ]; then
		fail "$name: not one line 'qwenchat: $file: ...' (the path as given): $(head -c 300 "$TMP/err")"
	elif ! grep -qF -- "$expect" "$TMP/err"; then
		fail "$name: message lacks '$expect': $(cat "$TMP/err")"
	else
		pass "$name refused: $(cut -c1-110 "$TMP/err")"
	fi
done <"$TMP/cases"
[ "$n" -ge 20 ] && pass "$n malformed files" || fail "only $n malformed files"
# info on a file whose weights are whole but whose tokenizer is not: the figures,
# and a notice that the text commands refuse it
expect_exit 0 "info: the weights of a file with a broken tokenizer" "$QWENCHAT" info -m "$TMP/bad/merge-form.gguf"
grep -q "merge-form.gguf: tokenizer.ggml.merges: entry 0 .*; the weights are checked, but chat, run and tokenize refuse this model" "$TMP/err" &&
	pass "... and a notice naming what is wrong with the tokenizer" ||
	fail "info, broken tokenizer: $(cat "$TMP/err")"

# ---- info on a GGUF: tensor types, bits per weight, file size ----
G="$TMP/bad/good.gguf"
"$QWENCHAT" info -m "$G" >"$TMP/info" 2>&1 || fail "info on a GGUF"
# 15 BF16 matrices (tied: no output.weight), 9 F32 norms as convert_hf_to_gguf.py writes
grep -q "GGUF loaded and checked" "$TMP/info" && grep -q "BF16: 15 tensors" "$TMP/info" &&
	grep -q "F32: 9 tensors" "$TMP/info" && grep -q "16.08 bits per weight" "$TMP/info" &&
	grep -q "($(wc -c <"$G") bytes)" "$TMP/info" && pass "info shows the GGUF's types and size" ||
	fail "info on a GGUF: $(cat "$TMP/info")"
"$QWENCHAT" info -m "$G" --json >"$TMP/info.json" || fail "info --json on a GGUF"
$PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "gguf" and d["file_bytes"] == int(sys.argv[2]), d
t = d["tensor_types"]
assert t["BF16"]["tensors"] == 15 and t["F32"]["tensors"] == 9, t
assert d["weight_bytes"] == t["BF16"]["bytes"] + t["F32"]["bytes"]
w = t["BF16"]["weights"] + t["F32"]["weights"]
assert w == d["params"]["total"] and t["F32"]["weights"] == 2 * 2 * 64 + 2 * 2 * 16 + 64, t
assert abs(d["bits_per_weight"] - 8 * d["weight_bytes"] / w) < 1e-9
assert d["config"]["vocab_size"] == 300 and d["config"]["num_hidden_layers"] == 2
' "$TMP/info.json" "$(wc -c <"$G")" && pass "info --json on a GGUF" || fail "info --json on a GGUF"

# ---- YaRN: DeepSeek's two mscales written by quantize; no original length ----
Y="$TMP/yarn"
"$MK" --out "$Y" --vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --max-position 256 --yarn-factor 4 \
	--yarn-original-max 64 --yarn-mscale 0.707 --yarn-mscale-all-dim 1 --seed 6 >/dev/null ||
	fail "mkmodel yarn"
cp "$M/tokenizer.json" "$Y/"
seq 1 200 >"$TMP/yarn-ids"
same_logits() { # same_logits A B WHAT: the same float32 logits for the ids above
	for m in "$1" "$2"; do
		"$QWENCHAT" logits -m "$m" --out "$m.f32" --exact --kv-f32 --threads 1 \
			<"$TMP/yarn-ids" 2>>"$TMP/err"
	done
	cmp -s "$1.f32" "$2.f32" && pass "$3" || fail "$3: $(cat "$TMP/err")"
}
"$QWENCHAT" quantize -m "$Y" --type bf16 --out "$TMP/yarn.gguf" >/dev/null 2>"$TMP/err" ||
	fail "quantize yarn: $(cat "$TMP/err")"
same_logits "$Y" "$TMP/yarn.gguf" "YaRN with two mscales: the GGUF computes the directory's logits"
$PY -c '
import json, sys
p = sys.argv[1] + "/config.json"
c = json.load(open(p))
del c["rope_scaling"]["original_max_position_embeddings"]
del c["rope_scaling"]["mscale"], c["rope_scaling"]["mscale_all_dim"]
json.dump(c, open(p, "w"))
' "$Y" && $PY "$TOP_SRCDIR/tests/mkgguf.py" "$Y" "$TMP/yarn-noorig.gguf" >/dev/null ||
	fail "mkgguf yarn without original_context_length"
same_logits "$Y" "$TMP/yarn-noorig.gguf" "YaRN without original_context_length loads, same logits"

# ---- linear RoPE scaling as llama.cpp reads other writers' keys ----
LIN="$TMP/linear"
"$MK" --out "$LIN" --vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --max-position 256 --linear-factor 4 --seed 6 \
	>/dev/null && cp "$M/tokenizer.json" "$LIN/" || fail "mkmodel linear"
cp -r "$LIN" "$TMP/unscaled"
$PY -c '
import json, sys
p = sys.argv[1] + "/config.json"
c = json.load(open(p))
c["rope_scaling"] = None
json.dump(c, open(p, "w"))
' "$TMP/unscaled" || fail "unscaled config"
for q in rope-no-type rope-scale-linear rope-none; do
	$PY "$TOP_SRCDIR/tests/mkgguf.py" "$LIN" "$TMP/$q.gguf" --quirks $q >/dev/null ||
		fail "mkgguf --quirks $q"
done
same_logits "$LIN" "$TMP/rope-no-type.gguf" "a RoPE factor without a type is linear, as in llama.cpp"
same_logits "$LIN" "$TMP/rope-scale-linear.gguf" "rope.scale_linear: the older key of the factor"
same_logits "$TMP/unscaled" "$TMP/rope-none.gguf" "rope.scaling.type none keeps positions unscaled"
cmp -s "$LIN.f32" "$TMP/unscaled.f32" && fail "the linear factor changed no logit" ||
	pass "the linear factor changes the logits"

# ---- GGUF v2, another alignment, F32 weights, split in three: the same model ----
$PY "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/v2.gguf" --version 2 --alignment 64 --outtype f32 &&
	$PY "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/sp.gguf" --split 3 || fail "mkgguf variants"
for f in v2.gguf sp-00001-of-00003.gguf; do
	"$QWENCHAT" info -m "$TMP/$f" --json >"$TMP/j" 2>"$TMP/err" || fail "$f: $(cat "$TMP/err")"
	$PY -c '
import json, sys
a = json.load(open(sys.argv[1]))["config"]; b = json.load(open(sys.argv[2]))["config"]
a.pop("dtype"); b.pop("dtype")
assert a == b, (a, b)
' "$TMP/j" "$TMP/info.json" && pass "$f: the same config" || fail "$f: config differs"
	a=$(printf 'hello world' | "$QWENCHAT" tokenize -m "$TMP/$f")
	[ -n "$a" ] && [ "$a" = "$(printf 'hello world' | "$QWENCHAT" tokenize -m "$M")" ] &&
		pass "$f: the same ids" || fail "$f: ids '$a'"
done
# a file merged by llama-gguf-split --merge says split.count 0: one file, as llama.cpp
# loads it
$PY "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/merged.gguf" --merged || fail "mkgguf --merged"
a=$(printf 'hello world' | "$QWENCHAT" tokenize -m "$TMP/merged.gguf")
"$QWENCHAT" info -m "$TMP/merged.gguf" >/dev/null 2>"$TMP/err" && [ -n "$a" ] &&
	pass "a merged file (split.count 0) loads" || fail "merged file: $(cat "$TMP/err")"
mv "$TMP/sp-00002-of-00003.gguf" "$TMP/sp-part2.gguf"
expect_exit 1 "a split model with a part missing" "$QWENCHAT" info -m "$TMP/sp-00001-of-00003.gguf"
expect_err_has "sp-00001-of-00003.gguf: split.count is 3 but part 2, $TMP/sp-00002-of-00003.gguf, is missing" "missing part: named with its path"
expect_exit 1 "opening a later part" "$QWENCHAT" info -m "$TMP/sp-00003-of-00003.gguf"
expect_err_has "part 3 of a split model; open its first part" "later part: says which to open"
# a part of another model's set (untied: one tensor more than the tied set's): refused
# by split.tensors.count, and a tensor in two parts by its name
"$MK" --out "$TMP/untied" --vocab-size 300 --hidden-size 64 --intermediate-size 96 \
	--layers 2 --heads 4 --kv-heads 2 --head-dim 16 --bos-id 1 --eos-id 2 --no-tie \
	--seed 6 >/dev/null && cp "$M/tokenizer.json" "$TMP/untied/" &&
	$PY "$TOP_SRCDIR/tests/mkgguf.py" "$TMP/untied" "$TMP/un.gguf" --split 3 ||
	fail "mkgguf untied split"
cp "$TMP/sp-00003-of-00003.gguf" "$TMP/un-00003-of-00003.gguf"
expect_exit 1 "a split set with a part of another model" "$QWENCHAT" info -m "$TMP/un-00001-of-00003.gguf"
expect_err_has "split.tensors.count 24, but un-00001-of-00003.gguf says 25: the parts are of different models" "another model's part: refused by the count"
cp "$TMP/un-00001-of-00003.gguf" "$TMP/dup-00001-of-00002.gguf"
$PY - "$TMP/un-00001-of-00003.gguf" "$TMP/dup-00002-of-00002.gguf" <<'PY' || fail "dup part"
import sys
# the first part again as the second: every tensor twice (split.no and split.count
# patched in place: both are uint16 values right after their keys)
b = bytearray(open(sys.argv[1], "rb").read())
for key, val in ((b"split.no", 1), (b"split.count", 2)):
    i = b.index(key) + len(key) + 4
    b[i:i + 2] = val.to_bytes(2, "little")
open(sys.argv[2], "wb").write(b)
PY
$PY - "$TMP/dup-00001-of-00002.gguf" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
i = b.index(b"split.count") + len(b"split.count") + 4
b[i:i + 2] = (2).to_bytes(2, "little")
open(sys.argv[1], "wb").write(b)
PY
expect_exit 1 "a split set with a tensor in two parts" "$QWENCHAT" info -m "$TMP/dup-00001-of-00002.gguf"
expect_err_has "is in dup-00001-of-00002.gguf too" "a tensor in two parts: named"

# ---- quantize: a GGUF llama.cpp and qwenchat load, written whole or not at all ----
expect_exit 0 "quantize --type bf16" "$QWENCHAT" quantize -m "$M" --type bf16 --out "$TMP/qz.gguf"
# a tokenizer without a normalizer (train-bpe's) stays without one in the GGUF: the same
# ids for decomposed text, and a model trained from the GGUF writes none either
a=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$M")
b=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$TMP/qz.gguf")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "quantize keeps 'no normalizer': the same ids ($b)" ||
	fail "no normalizer through quantize: '$a' vs '$b'"
# and a GGUF quantized again keeps it, with every key of its source (as llama-quantize)
expect_exit 0 "quantize a GGUF again" "$QWENCHAT" quantize -m "$TMP/qz.gguf" --type q8_0 \
	--out "$TMP/qz8.gguf"
c=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$TMP/qz8.gguf")
[ -n "$a" ] && [ "$a" = "$c" ] && pass "quantized again, still no normalizer: the same ids ($c)" ||
	fail "no normalizer through two quantizes: '$a' vs '$c'"
# tokenizer.json's other spellings of the two: an empty Sequence, a Sequence of NFC
for norm in '{"type": "Sequence", "normalizers": []}' \
	'{"type": "Sequence", "normalizers": [{"type": "NFC"}]}'; do
	rm -rf "$TMP/seq" && cp -r "$M" "$TMP/seq"
	$PY -c 'import json, sys
p = sys.argv[1] + "/tokenizer.json"
t = json.load(open(p)); t["normalizer"] = json.loads(sys.argv[2]); json.dump(t, open(p, "w"))' \
		"$TMP/seq" "$norm" &&
		"$QWENCHAT" quantize -m "$TMP/seq" --type bf16 --out "$TMP/seq.gguf" >/dev/null ||
		fail "quantize with normalizer $norm"
	a=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$TMP/seq")
	b=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$TMP/seq.gguf")
	[ -n "$a" ] && [ "$a" = "$b" ] && pass "normalizer $norm: the GGUF gives the same ids ($b)" ||
		fail "normalizer $norm: '$a' vs '$b'"
done
printf 'cafe\314\201 au lait, encore et encore.\n%.0s' $(seq 40) >"$TMP/nfd.txt"
"$QWENCHAT" train --init "$TMP/qz.gguf" --out "$TMP/from-gguf" --data "$TMP/nfd.txt" --ctx 8 \
	--batch 1 --steps 1 --threads 1 >/dev/null 2>"$TMP/err" &&
	grep -q '"normalizer": null' "$TMP/from-gguf/tokenizer.json" &&
	pass "train --init from that GGUF writes no normalizer" ||
	fail "train --init from the GGUF: $(cat "$TMP/err"; grep -o '"normalizer": [^,]*' "$TMP/from-gguf/tokenizer.json")"
[ "$(stat -c %a "$TMP/qz.gguf")" = 600 ] && pass "the file is private (0600)" || fail "mode $(stat -c %a "$TMP/qz.gguf")"
"$QWENCHAT" info -m "$TMP/qz.gguf" >"$TMP/info" 2>&1 && grep -q "BF16: 15 tensors" "$TMP/info" &&
	grep -q "F32: 9 tensors" "$TMP/info" && pass "info loads it: BF16 matrices, F32 norms" ||
	fail "info on the quantized file: $(head -c 300 "$TMP/info")"
a=$(printf 'hello world 123' | "$QWENCHAT" tokenize -m "$M")
b=$(printf 'hello world 123' | "$QWENCHAT" tokenize -m "$TMP/qz.gguf")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "its tokenizer gives the directory's ids" || fail "ids '$a' vs '$b'"
$PY -c '
import json, subprocess, sys
q, m, d = sys.argv[1:4]
a = json.loads(subprocess.check_output([q, "info", "-m", d, "--json"]))["config"]
b = json.loads(subprocess.check_output([q, "info", "-m", m, "--json"]))["config"]
a.pop("dtype"); b.pop("dtype")
assert abs(a.pop("rms_norm_eps") - b.pop("rms_norm_eps")) < 1e-12, "eps"
assert a == b, (a, b)
' "$QWENCHAT" "$TMP/qz.gguf" "$M" && pass "the same config as the directory" || fail "config differs"
# --type f16 (llama-quantize's F16: the matrices in IEEE half, rounded to nearest even,
# the norms F32): the same weights as tests/mkgguf.py's --outtype f16 file, whose
# rounding is Python's own
expect_exit 0 "quantize --type f16" "$QWENCHAT" quantize -m "$M" --type f16 --out "$TMP/qh.gguf"
python3 "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/qh-ref.gguf" --outtype f16 || fail "mkgguf.py"
"$QWENCHAT" info -m "$TMP/qh.gguf" >"$TMP/info" 2>&1 && grep -q "F16: 15 tensors" "$TMP/info" &&
	grep -q "F32: 9 tensors" "$TMP/info" && pass "info loads the f16 file: F16 matrices, F32 norms" ||
	fail "info on the f16 file: $(head -c 300 "$TMP/info")"
for f in qh qh-ref; do
	"$QWENCHAT" train --init "$TMP/$f.gguf" --out "$TMP/from-$f" --data "$TMP/nfd.txt" --ctx 8 \
		--steps 0 --threads 1 >/dev/null 2>"$TMP/err" || fail "train --init $f.gguf: $(cat "$TMP/err")"
done
cmp -s "$TMP/from-qh/model.safetensors" "$TMP/from-qh-ref/model.safetensors" &&
	pass "--type f16: every weight as Python rounds it to half" ||
	fail "--type f16: the weights differ from the reference file's"
expect_exit 0 "quantize --type q4_k_m" "$QWENCHAT" quantize -m "$M" --type q4_k_m --out "$TMP/q4.gguf"
# rows of 64 and 96 are not whole Q4_K blocks: Q5_0 as llama-quantize falls back, the
# lm_head in Q8_0 (tensor bytes: tests/unit/test_quantize_golden against ggml)
"$QWENCHAT" info -m "$TMP/q4.gguf" >"$TMP/info" 2>&1 && grep -q "Q5_0: 12 tensors" "$TMP/info" &&
	grep -q "Q8_0: 3 tensors" "$TMP/info" && pass "info loads the q4_k_m file: Q5_0, Q8_0" ||
	fail "info on the q4_k_m file: $(head -c 300 "$TMP/info")"
# Q5_K's fallback is Q5_1, Q2_K's and Q3_K's Q4_0
expect_exit 0 "quantize --type q5_k_m" "$QWENCHAT" quantize -m "$M" --type q5_k_m --out "$TMP/q5.gguf"
"$QWENCHAT" info -m "$TMP/q5.gguf" >"$TMP/info" 2>&1 && grep -q "Q5_1: 12 tensors" "$TMP/info" &&
	pass "info loads the q5_k_m file: Q5_1" || fail "info on the q5_k_m file: $(head -c 300 "$TMP/info")"
expect_exit 0 "quantize --type q3_k_m" "$QWENCHAT" quantize -m "$M" --type q3_k_m --out "$TMP/q3.gguf"
"$QWENCHAT" info -m "$TMP/q3.gguf" >"$TMP/info" 2>&1 && grep -q "Q4_0: 8 tensors" "$TMP/info" &&
	grep -q "Q5_1: 2 tensors" "$TMP/info" && pass "info loads the q3_k_m file: Q4_0, Q5_1" ||
	fail "info on the q3_k_m file: $(head -c 300 "$TMP/info")"
# rows of 100: not whole blocks of any 32-weight type, and llama-quantize has no other
"$MK" --out "$TMP/w100" --vocab-size 300 --hidden-size 100 --intermediate-size 96 --layers 1 \
	--heads 5 --kv-heads 1 --head-dim 20 --bos-id 1 --eos-id 2 >/dev/null || fail "mkmodel w100"
cp "$M/tokenizer.json" "$TMP/w100/"
expect_exit 1 "quantize to q8_0, rows of 100" \
	"$QWENCHAT" quantize -m "$TMP/w100" --type q8_0 --out "$TMP/q8.gguf"
expect_err_has "q8.gguf: tensor token_embd.weight: rows of 100 weights are not whole Q8_0 blocks, and the q8_0 mix" \
	"q8_0 on rows of 100: says why"
[ ! -e "$TMP/q8.gguf" ] && [ -z "$(ls "$TMP" | grep 'q8.gguf.tmp')" ] &&
	pass "no file and no temporary left" || fail "a partial file was left: $(ls "$TMP")"
echo precious >"$TMP/victim"
ln -s "$TMP/victim" "$TMP/link.gguf"
expect_exit 0 "quantize over a planted link" "$QWENCHAT" quantize -m "$M" --type bf16 --out "$TMP/link.gguf"
[ "$(cat "$TMP/victim")" = precious ] && [ -f "$TMP/link.gguf" ] && [ ! -L "$TMP/link.gguf" ] &&
	pass "the link is replaced, its target untouched" || fail "wrote through the link"
expect_exit 2 "quantize --type q3_k" "$QWENCHAT" quantize -m "$M" --type q3_k --out "$TMP/x.gguf"
expect_exit 2 "quantize without --out" "$QWENCHAT" quantize -m "$M" --type bf16
expect_exit 0 "quantize a bf16 GGUF" "$QWENCHAT" quantize -m "$TMP/qz.gguf" --type q8_0 --out "$TMP/y.gguf"
expect_exit 1 "quantize a quantized GGUF" "$QWENCHAT" quantize -m "$TMP/y.gguf" --type q4_0 \
	--out "$TMP/z.gguf"
expect_err_has "y.gguf: holds Q8_0 weights" "quantize a quantized GGUF: clear error"
# a mix is named by what most of its weights are (Q4_K), not its first tensor's (Q6_K)
"$MK" --out "$TMP/w256" --vocab-size 300 --hidden-size 256 --intermediate-size 256 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 128 >/dev/null && cp "$M/tokenizer.json" "$TMP/w256/" &&
	"$QWENCHAT" quantize -m "$TMP/w256" --type q4_k_m --out "$TMP/w256.gguf" >/dev/null ||
	fail "quantize w256"
echo hello >"$TMP/hello.txt"
expect_exit 1 "--quant on a Q4_K_M file" "$QWENCHAT" perplexity -m "$TMP/w256.gguf" --quant q8_0 \
	-f "$TMP/hello.txt"
expect_err_has "the model's weights are already Q4_K;" "--quant on a Q4_K_M file names Q4_K"
expect_exit 1 "quantize into a missing directory" "$QWENCHAT" quantize -m "$M" --type bf16 \
	--out "$TMP/no/such/dir/x.gguf"
expect_err_has "cannot create a file beside it" "missing directory: clear error"

# ---- with the real Qwen3 tokenizer: the same ids, template and text as the directory ----
TOK_DIR=$(sh "$TOP_SRCDIR/tests/fetch-tokenizer.sh")
case $? in
0) ;;
77) echo "SKIP: the rest needs the Qwen3 tokenizer files"; finish ;;
*) fail "fetch-tokenizer.sh"; finish ;;
esac
Q="$TMP/q"
"$MK" --out "$Q" --tokenizer "$TOK_DIR" --vocab-size 151936 --hidden-size 64 \
	--intermediate-size 96 --layers 2 --heads 4 --kv-heads 2 --head-dim 16 --seed 3 \
	>/dev/null || { fail "mkmodel q"; finish; }
$PY "$TOP_SRCDIR/tests/mkgguf.py" "$Q" "$TMP/q.gguf" --norm-type bf16 || fail "mkgguf q"
text='Hello <think>wörld</think> <|im_start|>user 日本語 😀 123'
a=$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$Q")
b=$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$TMP/q.gguf")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "tokenize: the same ids ($b)" || fail "tokenize: '$a' vs '$b'"
# a typed <|fim_prefix|> (non-special in Qwen's tokenizer.json, CONTROL in the GGUF as
# llama.cpp's converter writes it) stays a token from both, and is shown when decoded
nd=$("$QWENCHAT" run -m "$Q" -n 1 --stats -p 'x<|fim_prefix|>y' 2>&1 >/dev/null | grep prefilled)
ng=$("$QWENCHAT" run -m "$TMP/q.gguf" -n 1 --stats -p 'x<|fim_prefix|>y' 2>&1 >/dev/null |
	grep prefilled)
[ -n "$nd" ] && [ "${nd%% in *}" = "${ng%% in *}" ] &&
	pass "a typed <|fim_prefix|>: the same prompt from the GGUF (${ng%% in *})" ||
	fail "a typed <|fim_prefix|>: '$nd' vs '$ng'"
[ "$(echo 151659 | "$QWENCHAT" detokenize -m "$TMP/q.gguf" --skip-special)" = '<|fim_prefix|>' ] &&
	pass "<|fim_prefix|> is shown by --skip-special, as tokenizer.json has it" ||
	fail "<|fim_prefix|> skipped as special from the GGUF"
# a GGUF without qwenchat.tokenizer.normalizer (as llama.cpp's converter writes Qwen3):
# NFC, as Qwen's tokenizer.json has it
nd=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$Q")
ng=$(printf 'cafe\314\201' | "$QWENCHAT" tokenize -m "$TMP/q.gguf")
[ -n "$nd" ] && [ "$nd" = "$ng" ] && pass "a GGUF without the normalizer key: NFC, as the directory" ||
	fail "NFC by default: '$nd' vs '$ng'"
a=$(echo "$b" | "$QWENCHAT" detokenize -m "$TMP/q.gguf")
[ "$a" = "$text" ] && pass "detokenize gives the text back" || fail "detokenize: '$a'"
printf '[{"role": "user", "content": "Hi"}]' >"$TMP/conv.json"
"$QWENCHAT" template -m "$Q" --messages "$TMP/conv.json" --add-generation-prompt >"$TMP/t1" &&
	"$QWENCHAT" template -m "$TMP/q.gguf" --messages "$TMP/conv.json" \
		--add-generation-prompt >"$TMP/t2" 2>"$TMP/err" && cmp -s "$TMP/t1" "$TMP/t2" &&
	! [ -s "$TMP/err" ] && pass "template: the GGUF's chat template, recognised" ||
	fail "template differs: $(cat "$TMP/err")"
a=$("$QWENCHAT" run -m "$Q" --backend cpu --raw --greedy -n 12 -p "The capital of" 2>/dev/null)
b=$("$QWENCHAT" run -m "$TMP/q.gguf" --backend cpu --raw --greedy -n 12 -p "The capital of" 2>/dev/null)
[ -n "$b" ] && [ "$a" = "$b" ] && pass "run: the same greedy text" || fail "run: '$a' vs '$b'"
"$QWENCHAT" logits -m "$TMP/q.gguf" --backend cpu --out "$TMP/l2" <<EOF2 || fail "logits on a GGUF"
151644 872 198 9707
EOF2
"$QWENCHAT" logits -m "$Q" --backend cpu --out "$TMP/l1" <<EOF2 || fail "logits on the directory"
151644 872 198 9707
EOF2
cmp -s "$TMP/l1" "$TMP/l2" && pass "logits: the same bytes" || fail "logits differ"
# what other writers do and llama.cpp loads: per-layer sizes as arrays, shapes with a
# last dimension of 1, Q, K and V fused in one tensor, no pre-tokenizer name, no token
# types, a padding id past the tokens. The same ids and logits, each default said once
# on stderr; and a pre-tokenizer name llama.cpp takes for Qwen2's.
$PY "$TOP_SRCDIR/tests/mkgguf.py" "$Q" "$TMP/odd.gguf" --norm-type bf16 \
	--quirks layer-arrays,trailing-ones,fused-qkv,no-pre,no-token-type,bad-padding ||
	fail "mkgguf quirks"
$PY "$TOP_SRCDIR/tests/mkgguf.py" "$Q" "$TMP/alias.gguf" --norm-type bf16 --quirks pre-alias ||
	fail "mkgguf pre-alias"
b=$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$TMP/alias.gguf" 2>"$TMP/err")
[ -n "$b" ] && [ "$b" = "$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$Q")" ] && ! [ -s "$TMP/err" ] &&
	pass "tokenizer.ggml.pre \"deepseek-r1-qwen\": Qwen2's, as llama.cpp reads it" ||
	fail "pre alias: '$b' $(cat "$TMP/err")"
b=$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$TMP/odd.gguf" 2>"$TMP/err")
[ -n "$a" ] && [ "$(echo "$b" | "$QWENCHAT" detokenize -m "$Q")" = "$text" ] &&
	[ "$b" = "$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$Q")" ] &&
	pass "tokenize without token types or pre-tokenizer: the same ids" ||
	fail "tokenize, quirks: '$b'"
grep -q "odd.gguf: key tokenizer.ggml.pre is missing: Qwen2's" "$TMP/err" &&
	grep -q "odd.gguf: key tokenizer.ggml.token_type is missing" "$TMP/err" &&
	grep -q "odd.gguf: key tokenizer.ggml.padding_token_id = 151941 is not a token id" "$TMP/err" &&
	[ "$(wc -l <"$TMP/err")" = 3 ] && pass "... each default said once" ||
	fail "quirks' warnings: $(cat "$TMP/err")"
[ "$(echo 151659 | "$QWENCHAT" detokenize -m "$TMP/odd.gguf" --skip-special 2>/dev/null)" = '<|fim_prefix|>' ] &&
	[ -z "$(echo 151645 | "$QWENCHAT" detokenize -m "$TMP/odd.gguf" --skip-special 2>/dev/null)" ] &&
	pass "without token types: <|im_end|> special, <|fim_prefix|> not, as Qwen's" ||
	fail "kinds without token types"
"$QWENCHAT" logits -m "$TMP/odd.gguf" --backend cpu --out "$TMP/l3" 2>/dev/null <<EOF2 || fail "logits on the quirky GGUF"
151644 872 198 9707
EOF2
cmp -s "$TMP/l1" "$TMP/l3" && pass "per-layer arrays, trailing 1s, fused QKV: the same logits" ||
	fail "quirky GGUF: logits differ"

finish
