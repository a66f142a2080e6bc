#!/bin/sh
# tokenizer.sh — `qwenchat tokenize` / `detokenize` on the real Qwen3 tokenizer files:
# ids as Hugging Face tokenizers gives them, byte-exact round trips, errors.
. "$TOP_SRCDIR/tests/lib.sh"
need_tokenizer

# A directory holding only the tokenizer files is a valid -m.
printf 'Hello world <think>x</think> it'"'"'s  12345\n' >"$TMP/in"
expect_exit 0 "tokenize" "$QWENCHAT" tokenize -m "$TOK_DIR" <"$TMP/in"
want="9707 1879 220 151667 87 151668 432 594 220 220 16 17 18 19 20 198"
if [ "$(cat "$TMP/out")" = "$want" ]; then pass "ids as Hugging Face gives them"
else fail "ids: got '$(cat "$TMP/out")', want '$want'"; fi

cp "$TMP/out" "$TMP/ids0"
expect_exit 0 "detokenize" "$QWENCHAT" detokenize -m "$TOK_DIR" <"$TMP/ids0"
if cmp -s "$TMP/out" "$TMP/in"; then pass "detokenize gives the bytes back"
else fail "detokenize: got '$(head -c 200 "$TMP/out")'"; fi

# Invalid UTF-8 and NUL bytes survive the round trip.
printf 'a\377b\303(\000z\342\202' >"$TMP/bin"
"$QWENCHAT" tokenize -m "$TOK_DIR" <"$TMP/bin" >"$TMP/ids" 2>"$TMP/err" || fail "tokenize binary: $(cat "$TMP/err")"
"$QWENCHAT" detokenize -m "$TOK_DIR" <"$TMP/ids" >"$TMP/back" 2>"$TMP/err" || fail "detokenize binary: $(cat "$TMP/err")"
if cmp -s "$TMP/bin" "$TMP/back"; then pass "invalid UTF-8 round trip"
else fail "invalid UTF-8 round trip differs"; fi

# Empty input: an empty line of ids, and back to nothing.
expect_exit 0 "tokenize empty" "$QWENCHAT" tokenize -m "$TOK_DIR" </dev/null
[ "$(wc -c <"$TMP/out")" -eq 1 ] && pass "empty input gives an empty line" || fail "empty input: '$(cat "$TMP/out")'"

echo "151644 9707 151645" >"$TMP/sp"
expect_exit 0 "detokenize --skip-special" "$QWENCHAT" detokenize -m "$TOK_DIR" --skip-special <"$TMP/sp"
[ "$(cat "$TMP/out")" = "Hello" ] && pass "special tokens skipped" || fail "skip-special: '$(cat "$TMP/out")'"

echo "9707 151669" >"$TMP/bad"
expect_exit 1 "detokenize out-of-range id" "$QWENCHAT" detokenize -m "$TOK_DIR" <"$TMP/bad"
expect_err_has "151669" "out-of-range id named"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && pass "one-line error" || fail "error has $(wc -l <"$TMP/err") lines"
echo "12 x3 4" >"$TMP/bad"
expect_exit 1 "detokenize non-number" "$QWENCHAT" detokenize -m "$TOK_DIR" <"$TMP/bad"
expect_err_has "x3" "bad id named"
echo "-5" >"$TMP/bad"
expect_exit 1 "detokenize negative id" "$QWENCHAT" detokenize -m "$TOK_DIR" <"$TMP/bad"

# A broken tokenizer.json: one line naming the file and the field.
mkdir -p "$TMP/broken"
sed 's/"type": "BPE"/"type": "Unigram"/' "$TOK_DIR/tokenizer.json" >"$TMP/broken/tokenizer.json"
expect_exit 1 "Unigram refused" "$QWENCHAT" tokenize -m "$TMP/broken" </dev/null
expect_err_has "tokenizer.json: model.type: \"Unigram\"" "Unigram message names file and field"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && pass "one-line error" || fail "error has $(wc -l <"$TMP/err") lines"

expect_exit 2 "tokenize bad option" "$QWENCHAT" tokenize --bogus
expect_exit 2 "tokenize -r without --bench" "$QWENCHAT" tokenize -r 3
expect_err_has "-r gives the passes of --bench" "... says -r belongs to --bench"
expect_exit 0 "tokenize --help" "$QWENCHAT" tokenize --help
expect_exit 0 "detokenize --help" "$QWENCHAT" detokenize --help

# --bench prints throughput and the load time.
head -c 20000 "$TOP_SRCDIR/tests/golden/tokenizer-cases.jsonl" >"$TMP/bench.txt"
expect_exit 0 "tokenize --bench" "$QWENCHAT" tokenize -m "$TOK_DIR" --bench "$TMP/bench.txt" -r 2
grep -q "MB/s" "$TMP/out" && grep -q "tokens/s" "$TMP/out" && grep -q "^load" "$TMP/out" &&
	pass "bench output" || fail "bench output: $(cat "$TMP/out")"
finish
