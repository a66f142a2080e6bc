#!/bin/sh
# remote-serve.sh — the two halves together: `qwenchat --url` (the remote backend)
# against `qwenchat serve` on tiny generated models gives what the local engine gives
# on the same model: the same answer and reasoning from `run` with the same seed (with
# and without thinking), and the same two-turn conversation from the plain chat
# (greedy: a local chat's sampler goes on drawing across turns, while each request
# reseeds the server's). A model rigged by tests/cli/rig-model.py to write reasoning
# and a <tool_call> checks the reasoning path and, with tools in the conversation,
# that the call serve parses comes back as the conversation's tool_calls; that server
# wants an API key, given through OPENAI_API_KEY. 127.0.0.1 only.
. "$TOP_SRCDIR/tests/lib.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy OPENAI_API_KEY \
	OPENAI_BASE_URL QWENCHAT_MODEL
export NO_PROXY='*' HOME="$TMP"
MK="--hidden-size 32 --intermediate-size 64 --layers 2 --heads 4 --kv-heads 2 --head-dim 16"
# A tiny model with the real tokenizer's vocabulary: its random answers use any token.
M=$TMP/model
# shellcheck disable=SC2086
chat_model "$M" --vocab-size 151669 $MK --seed 11
# <think> Hello \n\n </think> <tool_call> {"name":"get_time","arguments":{}} </tool_call>,
# then <|im_end|> (ids of the real Qwen3 tokenizer), greedy with --repeat-penalty 10.
RIG=$TMP/rig
# shellcheck disable=SC2086
chat_model "$RIG" --vocab-size 151936 $MK --seed 3 --no-tie
python3 "$TOP_SRCDIR/tests/cli/rig-model.py" "$RIG" --end 151645 151667 9707 271 151668 151657 \
	4913 606 3252 455 3009 2198 16370 788 90 3417 151658 || { fail "rig-model.py"; finish; }
KEY="k-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$KEY" >"$TMP/key"

# start NAME ARGS... — qwenchat serve on a free port: sets NAME_URL and NAME_PID.
start() {
	name=$1; shift
	"$QWENCHAT" serve --backend cpu --threads 1 --port 0 "$@" 2>"$TMP/$name.log" &
	eval "${name}_PID=$!"
	i=0
	while ! grep -q "serving" "$TMP/$name.log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$(eval echo "\$${name}_PID")" 2>/dev/null; then
			echo "FAIL: qwenchat serve did not start: $(head -c 300 "$TMP/$name.log")"
			exit 1
		fi
		sleep 0.1
	done
	port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$TMP/$name.log")
	eval "${name}_URL=http://127.0.0.1:$port/v1"
}
PLAIN_PID= RIG_PID=
trap 'kill $PLAIN_PID $RIG_PID 2>/dev/null; rm -rf "$TMP"' EXIT
# the local chat's repetition penalty looks at the last 64 tokens (llama.cpp's window),
# serve's at the whole context unless told (vLLM's): told here, to compare them; the
# rig counts on it too
start PLAIN -m "$M" --repeat-last-n 64
start RIG -m "$RIG" --api-key-file "$TMP/key" --repeat-last-n 64
URL=$PLAIN_URL

# same DESC ARGS... — `run` on the local engine ($M) and through the server ($URL):
# the same answer (stdout) and reasoning (stderr). A random model can write bytes
# that are not UTF-8: the local run prints them as they are, while JSON cannot carry
# them and serve sends each as the text \xHH, so they are compared in that form.
same() {
	desc=$1; shift
	"$QWENCHAT" run -m "$M" --backend cpu --threads 1 "$@" >"$TMP/local.out" 2>"$TMP/local.err"
	l=$?
	OPENAI_API_KEY=$KEY "$QWENCHAT" run --url "$URL" "$@" >"$TMP/remote.out" 2>"$TMP/remote.err"
	r=$?
	if [ $l -eq 0 ] && [ $r -eq 0 ] && python3 - "$TMP" <<'PY'
import sys
d = sys.argv[1]
for f in ("out", "err"):
    local = open(d + "/local." + f, "rb").read().decode("utf-8", "backslashreplace")
    remote = open(d + "/remote." + f, "rb").read().decode("utf-8")
    assert local == remote, (f, local, remote)
PY
	then
		pass "$desc: the same answer ($(wc -c <"$TMP/local.out") bytes) and reasoning ($(wc -c <"$TMP/local.err") bytes)"
	else
		fail "$desc: exit $l/$r; local '$(head -c 200 "$TMP/local.out")' / '$(head -c 200 "$TMP/local.err")'; remote '$(head -c 200 "$TMP/remote.out")' / '$(head -c 200 "$TMP/remote.err")'"
	fi
}
same "thinking, seed 5" -p "Hello there" -n 40 --seed 5
same "no thinking, seed 6" -p "Hello there" -n 40 --seed 6 --no-think
same "a system prompt, temperature 1.2, top-k 50, seed 7" -p "Tell me a story" --system "Be brief." \
	-n 40 --seed 7 --temp 1.2 --top-k 50
same "top-p 0.5, min-p 0.05, presence 1.5" -p "¿Qué tal? 你好" -n 40 --seed 8 --top-p 0.5 \
	--min-p 0.05 --presence-penalty 1.5

# The plain chat, two turns, greedy: the same saved conversation either way (bytes
# that are not UTF-8: U+FFFD each in the local chat's file, \xHH from serve).
chat() {
	name=$1; shift
	printf 'Hello there\nAnd then?\n' |
		XDG_STATE_HOME="$TMP/$name" "$QWENCHAT" chat "$@" -n 24 --greedy --repeat-penalty 1.3 \
			>/dev/null 2>"$TMP/$name.err"
}
chat local -m "$M" --backend cpu --threads 1 || fail "local chat: $(cat "$TMP/local.err")"
chat remote --url "$URL" || fail "remote chat: $(cat "$TMP/remote.err")"
if python3 - "$(cat "$TMP/local/qwenchat/last-session")" "$(cat "$TMP/remote/qwenchat/last-session")" <<'PY'
import json, re, sys
a, b = (json.load(open(p))["messages"] for p in sys.argv[1:])
assert [m["role"] for m in a] == ["user", "assistant", "user", "assistant"], a
assert all(m["content"] for m in a), a
for m in b:
    for k in ("content", "reasoning_content"):
        if m.get(k):
            m[k] = re.sub(r"\\x[0-9a-f]{2}", "\ufffd", m[k])
assert a == b, (a, b)
PY
then pass "a two-turn greedy chat saves the same conversation"
else fail "two-turn chat: the conversations differ"; fi

# The rigged model: reasoning, then a <tool_call> in the answer.
M=$RIG URL=$RIG_URL
same "a rigged model's reasoning and <tool_call> text" -p "What time is it?" --greedy \
	--repeat-penalty 10
grep -qx 'Hello' "$TMP/remote.err" && grep -q '<tool_call>' "$TMP/remote.out" &&
	pass "... which are the rigged reasoning and call" || fail "rig output: $(cat "$TMP/remote.err")"
# With tools in the conversation, serve parses the call: it is saved as tool_calls.
# (The question ends in 80 words of filler: the rig needs the last 64 prompt tokens
# free of its script, which the tool instructions in the system turn are full of.)
FILLER=$(yes x | head -n 80 | tr '\n' ' ')
cat >"$TMP/tools.json" <<EOF
{"messages": [{"role": "user", "content": "What time is it? $FILLER"}],
 "tools": [{"type": "function", "function": {"name": "get_time", "description": "the time",
            "parameters": {"type": "object", "properties": {}}}}]}
EOF
printf '/load %s\n/retry\n' "$TMP/tools.json" | OPENAI_API_KEY=$KEY XDG_STATE_HOME="$TMP/tools" \
	"$QWENCHAT" chat --url "$URL" --greedy --repeat-penalty 10 >"$TMP/tools.out" 2>"$TMP/tools.err"
if python3 - "$(cat "$TMP/tools/qwenchat/last-session")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = d["messages"][-1]
assert a["role"] == "assistant" and a["reasoning_content"] == "Hello", a
assert [c["function"]["name"] for c in a["tool_calls"]] == ["get_time"], a
assert json.loads(a["tool_calls"][0]["function"]["arguments"]) == {}, a
PY
then pass "serve's parsed tool call is saved as the turn's tool_calls, with the reasoning"
else fail "tool call through serve: $(cat "$TMP/tools.err") $(cat "$TMP/tools.out")"; fi
grep -q 'tool call: get_time {}' "$TMP/tools.out" && pass "... and shown" || fail "tool call not shown"
expect_exit 1 "serve without the key" "$QWENCHAT" run --url "$URL" -p x
expect_err_has "401 Unauthorized" "serve's 401 is one line"
if grep -Fq "$KEY" "$TMP/RIG.log" "$TMP/PLAIN.log" "$TMP"/*.err "$TMP"/*.out; then
	fail "the key appears in a log or an output"
else pass "the key appears in no log or output"; fi
kill $PLAIN_PID $RIG_PID
wait
# A server whose context ends the answer ("length" without -n): the chat says so.
SMALL_PID=
trap 'kill $SMALL_PID 2>/dev/null; rm -rf "$TMP"' EXIT
start SMALL -m "$TMP/model" --ctx 64
printf 'Hello there\n' | XDG_STATE_HOME="$TMP/small" "$QWENCHAT" chat --url "$SMALL_URL" --greedy \
	>/dev/null 2>"$TMP/small.err"
grep -q '^qwenchat: the server ended the answer at a length limit ([0-9]* tokens\{0,1\})$' \
	"$TMP/small.err" && pass "the chat says when the server's length limit ended the answer" ||
	fail "no length notice: $(cat "$TMP/small.err")"
kill $SMALL_PID
wait
finish
