#!/bin/sh
# limits.sh — small things hostile or careless input used to get wrong: --threads
# far above the CPUs, a NUL byte in a plain-mode line.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
M=$TMP/model
chat_model "$M" --vocab-size 151669
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
cpus=$(getconf _NPROCESSORS_ONLN)

# --threads 1000: capped to the CPUs, with a notice.
echo 1 2 3 | "$QWENCHAT" logits -m "$M" --threads 1000 --out "$TMP/l" 2>"$TMP/err"
grep -q "^qwenchat: --threads 1000 is more than the $cpus CPUs online; using $cpus$" "$TMP/err" &&
	pass "--threads above the CPUs is capped with a notice" || fail "threads: $(cat "$TMP/err")"
printf 'hi\n/quit\n' | "$QWENCHAT" chat -m "$M" --threads 1000 -n 2 >/dev/null 2>"$TMP/err"
grep -q "more than the $cpus CPUs online" "$TMP/err" && pass "the chat says so too" ||
	fail "chat threads: $(cat "$TMP/err")"

# A NUL in a plain-mode line: refused, visibly, and nothing of it is sent.
printf 'before\0after\nreal message\n' | "$QWENCHAT" chat -m "$M" --threads 1 -n 2 >/dev/null 2>"$TMP/err"
grep -q '^qwenchat: the line holds a NUL byte; not sent$' "$TMP/err" && pass "a NUL line is refused visibly" ||
	fail "NUL: $(cat "$TMP/err")"
python3 -c 'import json,sys; m=json.load(open(open(sys.argv[1]).read().strip())); m=m["messages"] if isinstance(m, dict) else m; u=[t["content"] for t in m if t["role"]=="user"]; sys.exit(0 if u == ["real message"] else 1)' \
	"$TMP/state/qwenchat/last-session" && pass "only the next line was sent" || fail "sent: $(cat "$(cat "$TMP/state/qwenchat/last-session")")"
# A CRLF file piped in: the lines of its LF form (a message without its CR, /quit a command)
printf 'hi there\r\n/quit\r\nnot sent\r\n' | "$QWENCHAT" chat -m "$M" --threads 1 -n 2 >/dev/null \
	2>"$TMP/err"
python3 -c 'import json,sys; m=json.load(open(open(sys.argv[1]).read().strip())); m=m["messages"] if isinstance(m, dict) else m; u=[t["content"] for t in m if t["role"]=="user"]; sys.exit(0 if u == ["hi there"] else 1)' \
	"$TMP/state/qwenchat/last-session" && pass "CRLF input: the message without CR, /quit obeyed" ||
	fail "CRLF: sent $(cat "$(cat "$TMP/state/qwenchat/last-session")"); $(cat "$TMP/err")"
# The engine's knobs come from the environment through the command line, which names
# the variable of a bad value.
echo 1 2 | QWENCHAT_CPU_ISA=sse9 "$QWENCHAT" logits -m "$M" --out "$TMP/l" 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q "^qwenchat: QWENCHAT_CPU_ISA: 'sse9': not one of c, avx2, avx512, avx512bf16, amx$" "$TMP/err" &&
	pass "a bad QWENCHAT_CPU_ISA is named" || fail "QWENCHAT_CPU_ISA: exit $rc, $(cat "$TMP/err")"
echo 1 2 | QWENCHAT_CUDA_GRAPH=maybe "$QWENCHAT" logits -m "$M" --out "$TMP/l" 2>"$TMP/err"
grep -q '^qwenchat: QWENCHAT_CUDA_GRAPH=maybe: not 0 or 1$' "$TMP/err" && pass "a bad switch is named" ||
	fail "QWENCHAT_CUDA_GRAPH: $(cat "$TMP/err")"
echo 1 2 | QWENCHAT_CPU_ISA=c "$QWENCHAT" logits -m "$M" --out "$TMP/l" 2>"$TMP/err" &&
	pass "QWENCHAT_CPU_ISA=c runs" || fail "QWENCHAT_CPU_ISA=c: $(cat "$TMP/err")"
# A tokenizer with ids past the model's vocab_size is refused when the model opens,
# naming both sizes (else the first message fails on the template's <|im_start|>).
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/small-vocab" --vocab-size 1024 --tokenizer "$TOK_DIR" >/dev/null
for cmd in "run -p hi --backend cpu" "info" "chat --plain --backend cpu"; do
	# shellcheck disable=SC2086
	echo hi | XDG_STATE_HOME="$TMP/state-sv" "$QWENCHAT" $cmd -m "$TMP/small-vocab" \
		>/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc -eq 1 ] && grep -q "the tokenizer has 151669 ids but the model's vocab_size is 1024" "$TMP/err" &&
		[ "$(wc -l <"$TMP/err")" -eq 1 ] && pass "$cmd: a tokenizer too big for the model is refused" ||
		fail "$cmd on a vocab mismatch: exit $rc, $(cat "$TMP/err")"
done

# numbers beyond what the type holds are out of range, not "not a number"; an underflow
# is the value it rounds to, as the range judges it
expect_exit 2 "--top-k 2^63" "$QWENCHAT" run -m "$M" -p hi --top-k 9223372036854775808
expect_err_has "--top-k: 9223372036854775808 is out of range [0, " "--top-k 2^63: out of range"
expect_exit 2 "--seed 2^64" "$QWENCHAT" run -m "$M" -p hi --seed 18446744073709551616
expect_err_has "--seed: 18446744073709551616 is out of range" "--seed 2^64: out of range"
expect_exit 2 "--seed 2^63 (beyond /seed's 2^53)" "$QWENCHAT" run -m "$M" -p hi --seed 9223372036854775808
expect_err_has "--seed: 9223372036854775808 is out of range [0, 9007199254740992]" \
	"--seed: the range /seed has"
expect_exit 2 "--temp 1e400" "$QWENCHAT" run -m "$M" -p hi --temp 1e400
expect_err_has "--temp: 1e400 is out of range [0, " "--temp 1e400: out of range"
expect_exit 0 "--temp 1e-400: 0, greedy" "$QWENCHAT" run -m "$M" -p hi --temp 1e-400 -n 2 --threads 1

# a locale whose decimal point is a comma changes neither JSON nor the options' values
# (with LOCPATH set, glibc's locale loading in a library's constructor leaks a buffer
# that LeakSanitizer would count against the program)
NOLEAK="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
if mkdir -p "$TMP/loc" && localedef -i de_DE -f UTF-8 "$TMP/loc/de_DE.UTF-8" >/dev/null 2>&1; then
	echo "a small text to score" >"$TMP/text.txt"
	ASAN_OPTIONS=$NOLEAK LOCPATH=$TMP/loc LC_ALL=de_DE.UTF-8 "$QWENCHAT" perplexity -m "$M" -f "$TMP/text.txt" \
		--json --threads 1 >"$TMP/out" 2>"$TMP/err"
	grep -Eq '"nll": [0-9]+\.[0-9]+, "ppl": [0-9]+\.[0-9]+' "$TMP/out" &&
		pass "perplexity --json under a comma locale: '.' decimals" ||
		fail "perplexity --json under de_DE: $(cat "$TMP/out" "$TMP/err")"
	ASAN_OPTIONS=$NOLEAK LOCPATH=$TMP/loc LC_ALL=de_DE.UTF-8 "$QWENCHAT" run -m "$M" -p hi --temp 0.5 -n 2 \
		--threads 1 >"$TMP/out" 2>"$TMP/err" && pass "--temp 0.5 under a comma locale" ||
		fail "--temp 0.5 under de_DE: $(cat "$TMP/err")"
else
	echo "# SKIP: localedef cannot make de_DE.UTF-8 here"
fi
finish
