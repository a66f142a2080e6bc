#!/bin/sh
# engine-cli.sh — `qwenchat logits` and `qwenchat bench` on a tiny generated model:
# output size and agreement with the engine's own golden check, exit codes and
# one-line errors for bad input.
. "$TOP_SRCDIR/tests/lib.sh"

M=$TMP/model
"$TOP_BUILDDIR/tests/mkmodel" --out "$M" --vocab-size 300 --hidden-size 64 --layers 2 \
	--max-position 64 --seed 3 || { echo "mkmodel failed" >&2; exit 1; }

echo "1 2 3,4
5" | "$QWENCHAT" logits -m "$M" --out "$TMP/l.bin" --backend cpu --kv-f32 2>"$TMP/err"
if [ "$(wc -c <"$TMP/l.bin")" -eq $((5 * 300 * 4)) ]; then pass "logits: 5 rows of 300 floats"
else fail "logits: wrong size $(wc -c <"$TMP/l.bin"); $(cat "$TMP/err")"; fi
echo "1 2 3 4 5" | "$QWENCHAT" logits -m "$M" --out "$TMP/l2.bin" --backend cpu --kv-f32 --threads 1
if cmp -s "$TMP/l.bin" "$TMP/l2.bin"; then pass "logits: same bytes with 1 thread"
else fail "logits: 1 thread differs from all cores"; fi
# Only --kv-f32 makes the KV cache fp32: with the other options the cache stays bf16,
# whose rounding of K and V changes every row of this model.
echo "1 2 3 4 5" | "$QWENCHAT" logits -m "$M" --out "$TMP/bf16.bin" --backend cpu
echo "1 2 3 4 5" | "$QWENCHAT" logits -m "$M" --out "$TMP/others.bin" --backend cpu --threads 1 \
	--exact --ctx 8
if cmp -s "$TMP/bf16.bin" "$TMP/others.bin" && ! cmp -s "$TMP/bf16.bin" "$TMP/l.bin"; then
	pass "logits: the other options leave the KV cache bf16"
else fail "logits: an option other than --kv-f32 changed the KV cache"; fi

echo 1 2 | expect_exit 2 "logits without --out" "$QWENCHAT" logits -m "$M"
echo "1 300" >"$TMP/ids"
expect_exit 1 "id >= vocab" sh -c '"$1" logits -m "$2" --out "$3" <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_err_has "vocab" "id >= vocab names the vocabulary"
# ... said alone, before the engine's notice on --threads, and where the ids came from
expect_exit 1 "id >= vocab, --threads 999" sh -c '"$1" logits -m "$2" --out "$3" --threads 999 <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
[ "$(wc -l <"$TMP/err")" = 1 ] && grep -q '^qwenchat: stdin: token id 300 at position 1' "$TMP/err" &&
	pass "... one line, naming stdin" || fail "id >= vocab with a notice: $(cat "$TMP/err")"
echo "1 -2" >"$TMP/ids"
expect_exit 1 "negative id" sh -c '"$1" logits -m "$2" --out "$3" <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_err_has "stdin: '-2' at position 1 is not a token id" "bad id names itself and its position"
printf '1 2\0003' >"$TMP/ids"
expect_exit 1 "a NUL byte in an id" sh -c '"$1" logits -m "$2" --out "$3" <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_err_has "stdin: a NUL byte at position 1 is not a token id" "... refused, not read as 2"
seq 1 65 >"$TMP/ids"
expect_exit 1 "more ids than max_position" sh -c '"$1" logits -m "$2" --out "$3" <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_err_has "stdin: 65 ids are more than the model's 64 positions (max_position_embeddings)" \
	"overflow names the count and the model's limit"
seq 1 9 >"$TMP/ids"
expect_exit 1 "more ids than --ctx" sh -c '"$1" logits -m "$2" --out "$3" --ctx 8 <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_err_has "stdin: 9 ids do not fit in --ctx 8" "an overflow of --ctx names it"
: >"$TMP/ids"
expect_exit 1 "no ids" sh -c '"$1" logits -m "$2" --out "$3" <"$4"' _ "$QWENCHAT" "$M" "$TMP/x" "$TMP/ids"
expect_exit 1 "missing model" sh -c 'echo 1 | "$1" logits -m "$2" --out "$3"' _ "$QWENCHAT" "$TMP/none" "$TMP/x"
[ -e "$TMP/x" ] && fail "a failed run left an output file"

expect_exit 0 "bench --json" "$QWENCHAT" bench -m "$M" -p 8 -n 4 -r 1 --backend cpu --json --bw-buffer 64
for key in prefill_tok_s decode_tok_s decode_bytes_per_token decode_gb_s read_bandwidth_gb_s decode_bandwidth_ratio; do
	grep -q "\"$key\": [0-9]" "$TMP/out" && pass "bench reports $key" || fail "bench lacks $key: $(cat "$TMP/out")"
done
expect_exit 0 "bench table" "$QWENCHAT" bench -m "$M" -p 4 -n 2 -r 1 --backend cpu --bw-buffer 64
grep -q '^decode ' "$TMP/out" && pass "bench table has a decode line" || fail "bench table: $(cat "$TMP/out")"
# bf16 activations in prefill by default where the CPU has AVX-512 BF16; --exact never
expect_exit 0 "bench --exact" "$QWENCHAT" bench -m "$M" -p 8 -n 1 -r 1 --backend cpu --json --bw-buffer 64 --exact
grep -q '"bf16_prefill": false, "prefill_inputs": "fp32"' "$TMP/out" && pass "bench --exact: fp32 prefill" ||
	fail "bench --exact: $(cat "$TMP/out")"
expect_exit 0 "bench default prefill" "$QWENCHAT" bench -m "$M" -p 8 -n 1 -r 1 --backend cpu --json --bw-buffer 64
want=false
grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null && want=true
case ${QWENCHAT_CPU_ISA:-} in c | avx2 | avx512) want=false ;; esac # a kernel set without bf16
grep -q "\"bf16_prefill\": $want" "$TMP/out" && pass "bench default: bf16 prefill $want here" ||
	fail "bench default prefill: $(cat "$TMP/out")"
# -d: the cache is filled first; the prefill and decode are timed at that depth
expect_exit 0 "bench --depth" "$QWENCHAT" bench -m "$M" -d 16 -p 4 -n 2 -r 2 --backend cpu --json --bw-buffer 64
grep -q '"depth": 16, "prompt_tokens": 4, "decode_tokens": 2' "$TMP/out" &&
	grep -q '"prefill_ms": [0-9]' "$TMP/out" && pass "bench reports its depth and prefill ms" ||
	fail "bench --depth: $(cat "$TMP/out")"
expect_exit 1 "bench depth beyond max_position" "$QWENCHAT" bench -m "$M" -d 50 -p 10 -n 10
expect_exit 2 "bench -d -1" "$QWENCHAT" bench -m "$M" -d -1
expect_exit 2 "bench -r 0" "$QWENCHAT" bench -m "$M" -r 0
expect_exit 1 "bench beyond max_position" "$QWENCHAT" bench -m "$M" -p 60 -n 10
expect_exit 0 "bench filling max_position exactly" "$QWENCHAT" bench -m "$M" -d 40 -p 16 -n 8 -r 1 \
	--backend cpu --bw-buffer 64
expect_exit 1 "bench one position beyond" "$QWENCHAT" bench -m "$M" -d 40 -p 16 -n 9 -r 1
expect_exit 0 "logits --help" "$QWENCHAT" logits --help
grep -q -- '--exact  *changes nothing here' "$TMP/out" &&
	grep -q -- '--ctx N  *context size in tokens (default: the number of ids)' "$TMP/out" &&
	pass "logits --help: --exact and --ctx as logits takes them" ||
	fail "logits --help: $(grep -A2 -- '--exact\|--ctx' "$TMP/out")"
expect_exit 0 "bench --help" "$QWENCHAT" bench --help

# Ctrl-C while the logits are written (600 MB of them: seconds) stops the write and
# keeps the file that was there: exit 130, no temporary file left. (Held off to the
# end, the signal let the file be replaced, then ended the program as killed.)
V=$TMP/wide
"$TOP_BUILDDIR/tests/mkmodel" --out "$V" --vocab-size 151669 --hidden-size 32 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16 --intermediate-size 32 --max-position 1024 >/dev/null ||
	fail "mkmodel wide"
seq 1 1000 >"$TMP/ids1000"
echo previous >"$TMP/keep.bin"
env --default-signal=INT "$QWENCHAT" logits -m "$V" --out "$TMP/keep.bin" --threads 2 \
	<"$TMP/ids1000" 2>"$TMP/err" &
pid=$!
i=0
while ! ls "$TMP"/.keep.bin.tmp.* >/dev/null 2>&1 && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && [ "$(cat "$TMP/keep.bin")" = previous ] &&
   ! ls "$TMP"/.keep.bin.tmp.* >/dev/null 2>&1 && grep -q 'keep.bin: not written (Interrupt)' "$TMP/err"; then
	pass "logits: Ctrl-C mid-write keeps the previous file, exit 130, no temporary left"
else
	fail "logits: Ctrl-C mid-write: exit $rc, file '$(head -c 9 "$TMP/keep.bin")', $(ls -A "$TMP" | grep tmp) $(cat "$TMP/err")"
fi
# a reader that goes away: one line, exit 1, not a silent death by SIGPIPE
( echo "1 2 3" | "$QWENCHAT" logits -m "$V" --out - 2>"$TMP/err"; echo $? >"$TMP/rc" ) | true
[ "$(cat "$TMP/rc")" = 1 ] && grep -q '^qwenchat: standard output: write failed: Broken pipe' "$TMP/err" &&
	pass "logits --out - into a closed pipe: one line, exit 1" ||
	fail "logits into a closed pipe: exit $(cat "$TMP/rc"), $(cat "$TMP/err")"
finish
