#!/bin/sh
# serve.sh — `qwenchat serve` on 127.0.0.1: usage errors; then servers on tiny
# generated models with the real tokenizer — a random-weight one (PLAIN, 2 s timeout),
# one rigged by tests/cli/rig-model.py to write reasoning and a tool call (RIG, with an
# API key from a file), one that queues nothing (BUSY), one with the exact prefill and
# an fp32 KV cache (TEXT: /v1/completions against tests/cli/serve_text.py's float64
# reference, as lm-evaluation-harness asks for log-likelihoods) — checked by the official
# openai npm client (tests/cli/serve-openai.test.mjs: answers equal `qwenchat run`'s,
# streaming, reasoning, tool calls, logprobs, errors), by tests/cli/serve_client.py
# (hostile requests, slowloris and trickled headers, CORS for browser pages, 50
# concurrent clients with RSS, KV reuse on a follow-up, 503 and hang-up cancels,
# kept-alive GETs, half-closing clients, the peak memory of 16 hostile 4 MiB bodies at
# once), by tests/cli/serve_tokenize.py (/tokenize and /detokenize against jinja2's
# renders), and the logs: one line per request, no key, a cancelled stream's tokens
# counted.
. "$TOP_SRCDIR/tests/lib.sh"

# --- usage errors ----------------------------------------------------------------
expect_exit 2 "serve --port 70000" "$QWENCHAT" serve -m "$TMP" --port 70000
expect_err_has "--port" "serve --port 70000: names the option"
expect_exit 2 "serve --queue -1" "$QWENCHAT" serve -m "$TMP" --queue -1
expect_exit 2 "serve --timeout 0" "$QWENCHAT" serve -m "$TMP" --timeout 0
expect_exit 2 "serve --api-key ''" "$QWENCHAT" serve -m "$TMP" --api-key ''
expect_exit 2 "serve -n 0" "$QWENCHAT" serve -m "$TMP" -n 0
expect_exit 2 "serve --bogus" "$QWENCHAT" serve -m "$TMP" --bogus
expect_exit 2 "serve --repeat-last-n -2" "$QWENCHAT" serve -m "$TMP" --repeat-last-n -2
expect_exit 2 "serve --logprobs-mode raw_logits" "$QWENCHAT" serve -m "$TMP" --logprobs-mode raw_logits
expect_err_has "--logprobs-mode" "serve --logprobs-mode raw_logits: names the option"
for o in https://a.example/path 'https://a b' a.example 'https://user@a.example'; do
	expect_exit 2 "serve --allow-origin '$o'" "$QWENCHAT" serve -m "$TMP" --allow-origin "$o"
	expect_err_has "--allow-origin" "--allow-origin '$o': names the option"
done
expect_exit 2 "serve extra argument" "$QWENCHAT" serve -m "$TMP" extra
expect_exit 1 "serve --api-key-file missing: a runtime error" "$QWENCHAT" serve -m "$TMP" \
	--api-key-file "$TMP/none"
expect_err_has "none" "--api-key-file missing: names the file"
printf 'k2\n' >"$TMP/k2"
expect_exit 2 "serve --api-key and --api-key-file" "$QWENCHAT" serve -m "$TMP" --api-key k1 \
	--api-key-file "$TMP/k2"
expect_err_has "both give the key" "two keys: says which options clash"
expect_exit 0 "serve --help" "$QWENCHAT" serve --help
grep -q -- "--api-key" "$TMP/out" && grep -q "4 MiB" "$TMP/out" && pass "help lists the key and the limits" ||
	fail "serve --help: $(head -c 300 "$TMP/out")"
expect_exit 1 "serve -m missing dir" "$QWENCHAT" serve -m "$TMP/none"

command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
MK="--vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 16 --seed 3"
# shellcheck disable=SC2086
chat_model "$TMP/plain" $MK
# shellcheck disable=SC2086
chat_model "$TMP/rig" $MK --no-tie
# <think> Hello \n\n </think> <tool_call> {"name":"get_time","arguments":{}} </tool_call>,
# then <|im_end|> (ids of the real Qwen3 tokenizer)
python3 "$TOP_SRCDIR/tests/cli/rig-model.py" "$TMP/rig" --end 151645 151667 9707 271 151668 151657 \
	4913 606 3252 455 3009 2198 16370 788 90 3417 151658 || { fail "rig-model.py"; finish; }

# start NAME ARGS... — a server in the background on a free port: sets NAME_PORT, NAME_PID.
start() {
	name=$1; shift
	"$QWENCHAT" serve --backend cpu --threads 1 --port 0 "$@" 2>"$TMP/$name.log" &
	eval "${name}_PID=$!"
	i=0
	while ! grep -q "serving" "$TMP/$name.log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$(eval echo "\$${name}_PID")" 2>/dev/null; then
			fail "server $name did not start: $(head -c 300 "$TMP/$name.log")"
			finish
		fi
		sleep 0.1
	done
	eval "${name}_PORT=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$TMP/$name.log")"
}
# stop NAME — SIGTERM; the server must exit 0.
stop() {
	pid=$(eval echo "\$${1}_PID")
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	[ $rc -eq 0 ] && pass "server $1 stopped cleanly on SIGTERM" ||
		fail "server $1 exit $rc: $(tail -n 3 "$TMP/$1.log")"
}
trap 'kill $PLAIN_PID $RIG_PID $BUSY_PID $STOP_PID $TEXT_PID 2>/dev/null; rm -rf "$TMP"' EXIT
PLAIN_PID= RIG_PID= BUSY_PID= STOP_PID= TEXT_PID=

KEY="k-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$KEY" >"$TMP/key"
start PLAIN -m "$TMP/plain" --timeout 2 --allow-origin https://app.example/
# the rig counts on the repetition penalty of the last 64 tokens (llama.cpp's window)
start RIG -m "$TMP/rig" --api-key-file "$TMP/key" --repeat-last-n 64
start BUSY -m "$TMP/plain" --queue 0 --logprobs-mode processed_logprobs
start STOP -m "$TMP/plain" --queue 2
start TEXT -m "$TMP/plain" --exact --kv-f32 --ctx 256
expect_exit 1 "a second server on a port in use" "$QWENCHAT" serve -m "$TMP/plain" --port "$PLAIN_PORT"
expect_err_has "Address already in use" "port in use: the message says so"

# --- the official openai client ------------------------------------------------------
FILLER=$(yes x | head -n 80 | tr '\n' ' ')
run() { "$QWENCHAT" run -m "$TMP/plain" --backend cpu --threads 1 -p "Hello there" -n 12 "$@"; }
run --seed 5 --temp 1 >"$TMP/think.out" 2>"$TMP/think.err" || fail "qwenchat run (think)"
run --seed 6 --no-think >"$TMP/nothink.out" 2>"$TMP/nothink.err" || fail "qwenchat run (no-think)"
run --seed 5 --temp 1 --raw >"$TMP/raw.out" 2>"$TMP/raw.err" || fail "qwenchat run --raw"
OPENAI_DIR=$(sh "$TOP_SRCDIR/tests/fetch-openai.sh")
case $? in
0)
	if OPENAI_DIR=$OPENAI_DIR PLAIN_URL="http://127.0.0.1:$PLAIN_PORT/v1" \
	   RIG_URL="http://127.0.0.1:$RIG_PORT/v1" RIG_KEY=$KEY RUN_DIR=$TMP FILLER=$FILLER \
	   node --test "$TOP_SRCDIR/tests/cli/serve-openai.test.mjs" >"$TMP/node.out" 2>&1; then
		pass "openai client: $(grep -c '^ok ' "$TMP/node.out") tests ($(grep '^# pass' "$TMP/node.out"))"
		# the json_schema answers, checked by Python's jsonschema
		PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
		if $PY -c 'import json, sys, jsonschema
d = json.load(open(sys.argv[1]))
for a in d["answers"]:
    jsonschema.validate(json.loads(a), d["schema"], format_checker=jsonschema.FormatChecker(["date"]))
print(len(d["answers"]))' "$TMP/schema-answers.json" >"$TMP/n-valid" 2>"$TMP/why"; then
			pass "json_schema: $(cat "$TMP/n-valid") answers that ended, each a value of the schema"
		else
			fail "json_schema: an answer is not a value of the schema: $(tail -n 3 "$TMP/why")"
		fi
	else
		fail "openai client tests:"; cat "$TMP/node.out" >&2
	fi ;;
77) echo "skip: the openai npm package is not available (npm missing)" ;;
*) fail "tests/fetch-openai.sh failed" ;;
esac

# --- hostile requests, load, KV reuse, 503 and hang-ups ------------------------------
CLIENT="python3 $TOP_SRCDIR/tests/cli/serve_client.py"
$CLIENT hostile "$PLAIN_PORT" "$RIG_PORT" "$KEY" 2 || failures=$((failures + 1))
$CLIENT followup "$PLAIN_PORT" || failures=$((failures + 1))
$CLIENT cors "$PLAIN_PORT" "$RIG_PORT" "$KEY" || failures=$((failures + 1))
$CLIENT load "$RIG_PORT" "$RIG_PID" 50 "$KEY" || failures=$((failures + 1))
$CLIENT cancel "$BUSY_PORT" || failures=$((failures + 1))
$CLIENT penalties "$BUSY_PORT" || failures=$((failures + 1))
$CLIENT conns "$PLAIN_PORT" || failures=$((failures + 1))
$CLIENT bounds "$PLAIN_PORT" "$PLAIN_PID" 16 || failures=$((failures + 1))
$CLIENT stopping "$STOP_PORT" "$STOP_PID" || failures=$((failures + 1))
# /v1/completions against the float64 reference (numpy)
numpy_python
if [ -n "$PY" ]; then
	"$PY" "$TOP_SRCDIR/tests/cli/serve_text.py" "$TEXT_PORT" "$TMP/plain" 256 ||
		failures=$((failures + 1))
elif [ -n "${CI:-}" ]; then
	fail "no python3 with numpy (scripts/install-deps)"
else
	echo "skip: /v1/completions against the reference: no python3 with numpy"
fi
python3 "$TOP_SRCDIR/tests/cli/serve_tokenize.py" "$TEXT_PORT" "$QWENCHAT" "$TMP/plain" \
	"$TOP_SRCDIR/tests/golden" 256 "$RIG_PORT" "$KEY" || failures=$((failures + 1))
wait "$STOP_PID" && pass "the server stopped by SIGTERM mid-stream exits 0" ||
	fail "server STOP: exit $?: $(tail -n 3 "$TMP/STOP.log")"
grep -q " 503 .*server-stopping" "$TMP/STOP.log" && ! grep -q " 503 .*client-gone" "$TMP/STOP.log" &&
	pass "the requests the stop refused are logged as the server's doing" ||
	fail "requests refused by the stop: $(grep ' 503 ' "$TMP/STOP.log")"
grep -q " 200 .*server-stopping" "$TMP/STOP.log" &&
	pass "... and so is the stream it cut" ||
	fail "the stream the stop cut: $(grep ' 200 ' "$TMP/STOP.log")"

stop PLAIN
stop RIG
stop BUSY
stop TEXT
grep -q "cached=" "$TMP/PLAIN.log" && pass "requests are logged with their tokens" || fail "no request log"
grep -Fq "$KEY" "$TMP/PLAIN.log" "$TMP/RIG.log" "$TMP/BUSY.log" && fail "the API key is in a log" ||
	pass "the API key appears in no log"
grep -q "client-gone" "$TMP/BUSY.log" && pass "the hang-up is logged" || fail "no client-gone in the log"
grep -q "completion=[1-9][0-9]* client-gone" "$TMP/BUSY.log" &&
	pass "the cancelled stream's tokens are counted" || fail "a cancelled stream logged: $(grep client-gone "$TMP/BUSY.log")"
grep -q "request not complete, or its answer not read, after 2 s" "$TMP/PLAIN.log" &&
	pass "the trickled headers' cut is logged" || fail "no header deadline in the log"
bad=$(grep -v '^qwenchat: ' "$TMP/PLAIN.log" "$TMP/RIG.log" "$TMP/BUSY.log" | head -n 3)
[ -z "$bad" ] && pass "every log line starts with 'qwenchat: '" || fail "stray log lines: $bad"
finish
