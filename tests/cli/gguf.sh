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
	elif [ "$lines" -ne 1 ] || ! grep -q "^qwenchat: $name: " "$TMP/err"; then
		fail "$name: not one line 'qwenchat: $name: ...': $(head -c 300 "$TMP/err")"
	elif ! grep -qF -- "$expect" "$TMP/err"; then
		fail "$name: message lacks '$expect': $(cat "$TMP/err")"
	else
		pass "$name refused: $(cut -c1-110 "$TMP/err")"
	fi
done <"$TMP/cases"
[ "$n" -ge 20 ] && pass "$n malformed files" || fail "only $n malformed files"

finish
