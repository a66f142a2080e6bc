#!/bin/sh
# remote.sh — the remote backend (--url) against tests/cli/remote-server.py, a fake
# vLLM/SGLang on 127.0.0.1 replaying their streams: the answer and the reasoning of
# each server's shape in `run` and in the plain chat and its saved conversation; what
# the request holds (only the settings given; thinking; the key in the header only);
# tool calls kept; Ctrl-C keeping the partial answer; one line for each failure
# (refused, connect timeout, stall, TLS, 401, 404 model, 429 then success, 5xx,
# a cut stream, bad JSON, an error event; --stats after one; a gzip stream); usage
# errors. Never contacts another host.
. "$TOP_SRCDIR/tests/lib.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy OPENAI_API_KEY \
	OPENAI_BASE_URL QWENCHAT_MODEL
export NO_PROXY='*' XDG_STATE_HOME="$TMP/state" HOME="$TMP"
STATE=$TMP/srv
mkdir -p "$STATE"

# A self-signed certificate for the TLS listener (the client must refuse it).
TLS=""
if command -v openssl >/dev/null &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=127.0.0.1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null; then
	TLS="--tls $TMP/cert.pem $TMP/key.pem"
fi
# shellcheck disable=SC2086
python3 "$TOP_SRCDIR/tests/cli/remote-server.py" --state "$STATE" --lifetime 240 --blackhole $TLS &
SRV_PID=$!
trap 'kill $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
while [ ! -f "$STATE/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$STATE/port" ] || { echo "FAIL: the fake server did not start"; exit 1; }
URL="http://127.0.0.1:$(cat "$STATE/port")/v1"
mode() { printf '%s\n' "$@" >"$STATE/mode"; }
last_request() { tail -n 1 "$STATE/requests"; }
# req_has PYTHON-EXPR DESC — the last request (r: its body, auth: its header) satisfies it.
req_has() {
	if last_request | python3 -c 'import json,sys
d=json.loads(sys.stdin.read()); r=d["body"]; auth=d["auth"]
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)' "$1"; then pass "$2"; else fail "$2: $(last_request | head -c 400)"; fi
}
R() { "$QWENCHAT" run --url "$URL" "$@"; }

# What the fake server streams (tests/cli/remote-server.py), after the template's
# trimming: the reasoning without its first and last newline, the answer without its
# leading ones.
REASONING='The user greets me; answer briefly in French (café).'
ANSWER='Bonjour ! Un café ? 世界'

# --- the answer and the reasoning, for each server's shape -------------------------------
for m in vllm vllm-new sglang no-parser; do
	mode "$m"
	expect_exit 0 "run against the $m stream" R -p "Salut"
	[ "$(cat "$TMP/out")" = "$ANSWER" ] && pass "$m: the answer on stdout" ||
		fail "$m: stdout '$(cat "$TMP/out")'"
	[ "$(cat "$TMP/err")" = "$(printf '<think>\n%s\n</think>' "$REASONING")" ] &&
		pass "$m: the reasoning on stderr" || fail "$m: stderr '$(cat "$TMP/err")'"
done
req_has 'r["stream"] is True and r["stream_options"] == {"include_usage": True}' \
	"the request streams, with the usage"
# a reader that is gone (| head): the end the local engine has, by SIGPIPE, no message
{ R -p Salut 2>"$TMP/err"; echo $? >"$TMP/rc"; } | :
[ "$(cat "$TMP/rc")" = 141 ] && ! grep -q '^qwenchat:' "$TMP/err" &&
	pass "a closed stdout ends the run by SIGPIPE, without a message" ||
	fail "closed stdout: exit $(cat "$TMP/rc"), $(cat "$TMP/err")"
# a gateway's URL with a query (and a fragment, never sent): the query follows the
# path of every endpoint, and messages show the URL without it
mode query
expect_exit 0 "a URL with a query" "$QWENCHAT" run --url "$URL/chat/completions?api-version=2024-10-21#x" -p Salut
[ "$(cat "$TMP/out")" = "$ANSWER" ] && req_has 'd["path"] == "/v1/chat/completions?api-version=2024-10-21"' \
	"the query after /chat/completions (and after /models: no 404)" ||
	fail "a URL with a query: $(cat "$TMP/out") $(cat "$TMP/err")"
expect_exit 1 "a URL whose query the gateway refuses" "$QWENCHAT" run --url "$URL?api-version=1" -p Salut
expect_err_has "$URL has no model list (GET /models: 404)" "the message shows the URL without the query"
! grep -q "api-version" "$TMP/err" && pass "... and not the query" || fail "query shown: $(cat "$TMP/err")"
mode big-header
expect_exit 1 "a header line of 200 KB" "$QWENCHAT" run --url "$URL" -p Salut
expect_err_has "a header line of it over libcurl's limit of 100 KB" "... named as a possible cause"
# a redirect is not followed; where it leads is shown as the URL is, without a query
# or user:password that may hold a key
mode redirect
expect_exit 1 "a redirect" "$QWENCHAT" run --url "$URL?api-key=QSECRET" -p Salut
expect_err_has "redirects (307 Temporary Redirect: moved) to http://127.0.0.1:1/v1/chat/completions" \
	"a redirect: where to, said"
! grep -q "QSECRET\|api-key\|pw" "$TMP/err" && pass "... without the query or the password" ||
	fail "a redirect showed: $(cat "$TMP/err")"
req_has 'r["model"] == "Qwen/Qwen3-32B" and r["messages"] == [{"role": "user", "content": "Salut"}]' \
	"the model the server serves is picked, the prompt is the one user message"
req_has 'not any(k in r for k in ("temperature", "top_p", "top_k", "min_p", "seed", "max_tokens",
	"presence_penalty", "frequency_penalty", "repetition_penalty", "chat_template_kwargs"))' \
	"nothing the user did not choose is sent (the server's defaults apply)"

mode vllm
expect_exit 0 "run with settings" R -p "Salut" --system "Be brief." --think --temp 0.3 --top-k 0 \
	--seed 42 -n 50 --repeat-penalty 1.1 --frequency-penalty 0.5 --stats
req_has 'r["temperature"] == 0.3 and r["top_k"] == -1 and r["seed"] == 42 and r["max_tokens"] == 50
	and r["repetition_penalty"] == 1.1 and r["frequency_penalty"] == 0.5 and "top_p" not in r
	and "min_p" not in r' \
	"the settings given are sent by vLLM's and SGLang's names (top-k 0 as -1)"
req_has 'r["chat_template_kwargs"] == {"enable_thinking": True} and
	r["messages"][0] == {"role": "system", "content": "Be brief."}' "--think and --system"
grep -q '^stats: 0 tokens reused, [0-9]* prefilled .* time to first token' "$TMP/err" &&
	grep -q '^stats: 21 generated in .*stopped: end of turn' "$TMP/err" &&
	pass "--stats: the token counts from the usage chunk" || fail "--stats: $(cat "$TMP/err")"
expect_exit 0 "run --no-think" R -p "Salut" --no-think --temp 0.5
req_has 'r["chat_template_kwargs"] == {"enable_thinking": False} and r["temperature"] == 0.5 and
	r["top_p"] == 0.8 and r["top_k"] == 20 and r["min_p"] == 0' \
	"--no-think: enable_thinking false and Qwen's non-thinking preset (an explicit value wins)"
[ "$(cat "$TMP/out")" = "$ANSWER" ] && [ ! -s "$TMP/err" ] && pass "--no-think: no reasoning" ||
	fail "--no-think: $(cat "$TMP/err")"
expect_exit 0 "run --greedy" R -p "Salut" --greedy
req_has 'r["temperature"] == 0' "--greedy is sent as temperature 0"
req_has '"response_format" not in r' "no --format: no response_format"
expect_exit 0 "run --format json" R -p "Salut" --format json
req_has 'r["response_format"] == {"type": "json_object"}' "--format json: JSON mode"
printf '{"type": "object", "properties": {"a": {"type": "integer"}}}' >"$TMP/s.json"
expect_exit 0 "run --format FILE" R -p "Salut" --format "$TMP/s.json"
req_has 'r["response_format"] == {"type": "json_schema", "json_schema": {"name": "schema",
	"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}' \
	"--format FILE: json_schema with the file's schema"

# --- the plain chat: screen, saved conversation, tool calls ------------------------------
mode models-busy busy vllm
printf 'Salut\n' | "$QWENCHAT" chat --url "$URL" -m Qwen/Qwen3-32B >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && grep -qF "$ANSWER" "$TMP/out" && pass "plain: a busy server is waited for" ||
	fail "plain chat with waits: exit $rc, $(cat "$TMP/out")"
awk 'NR == 1 && /: the server is busy with the model list .*; trying again in 1 s \(try 2 of 4\)$/ { a = 1 }
	NR == 2 && /remote: Qwen\/Qwen3-32B at / { b = 1 }
	NR == 3 && /: the server is busy with the request \(429 .*\); trying again in 1 s \(try 2 of 4\)$/ { c = 1 }
	END { exit !(a && b && c && NR == 3) }' "$TMP/err" &&
	pass "plain: each wait is said when it starts, in order" || fail "plain waits: stderr '$(cat "$TMP/err")'"
mode vllm
printf 'Salut\n/sampling\n/think off\nEncore\n' |
	"$QWENCHAT" chat --url "$URL" -m Qwen/Qwen3-32B >"$TMP/out" 2>"$TMP/err"
rc=$?
echo "---- plain chat stdout ----"; cat "$TMP/out"; echo "---- stderr ----"; cat "$TMP/err"
[ $rc -eq 0 ] && pass "a piped remote chat exits 0" || fail "plain chat exit $rc"
grep -qF "thinking: $REASONING" "$TMP/out" && pass "plain: the reasoning is shown" ||
	fail "plain: no reasoning"
[ "$(grep -cF "$ANSWER" "$TMP/out")" -eq 2 ] && pass "plain: both answers are shown" ||
	fail "plain: answers"
grep -q 'remote: Qwen/Qwen3-32B at http://127.0.0.1:[0-9]*/v1, context 40960 tokens' "$TMP/err" &&
	pass "plain: the notice names the model, the server and its context" || fail "plain: notice"
grep -q 'the rest: the server.s defaults' "$TMP/out" && pass "/sampling says the server's defaults apply" ||
	fail "/sampling"
req_has '[m["role"] for m in r["messages"]] == ["user", "assistant", "user"] and
	r["messages"][1]["content"] == "Bonjour ! Un café ? 世界" and "reasoning_content" not in r["messages"][1]
	and r["chat_template_kwargs"] == {"enable_thinking": False}' \
	"the second turn sends the conversation (no old reasoning) with thinking off"
sess=$(cat "$TMP/state/qwenchat/last-session")
python3 - "$sess" "$REASONING" "$ANSWER" <<'PY' && pass "the saved conversation holds the reasoning and the answer as streamed" || fail "saved: $(cat "$sess")"
import json, sys
m = json.load(open(sys.argv[1]))
m = m["messages"] if isinstance(m, dict) else m
assert [x["role"] for x in m] == ["user", "assistant", "user", "assistant"], m
assert m[1]["reasoning_content"] == sys.argv[2] and m[1]["content"] == sys.argv[3], m[1]
assert m[3]["content"] == sys.argv[3], m[3]
PY

mode tools
expect_exit 0 "run: an answer of tool calls only" R -p "Weather in Paris?"
[ "$(cat "$TMP/out")" = 'tool call: get_weather {"city": "Paris", "unit": "C"}' ] &&
	pass "run: the call on the first line (no empty answer line before it)" ||
	fail "run tool call: $(od -c "$TMP/out" | head -n 3)"
printf 'Weather in Paris?\n' | "$QWENCHAT" chat --url "$URL" >"$TMP/out" 2>"$TMP/err"
grep -qF 'tool call: get_weather {"city": "Paris", "unit": "C"}' "$TMP/out" &&
	pass "plain: a streamed tool call is shown as a loaded one is" || fail "tool call: $(cat "$TMP/out")"
python3 - "$(cat "$TMP/state/qwenchat/last-session")" <<'PY' && pass "the tool call is saved as assistant tool_calls" || fail "tool call not saved"
import json, sys
m = json.load(open(sys.argv[1]))
m = m["messages"] if isinstance(m, dict) else m
c = m[-1]["tool_calls"]
assert m[-1]["role"] == "assistant" and len(c) == 1, m
assert c[0]["function"]["name"] == "get_weather", c
assert json.loads(c[0]["function"]["arguments"]) == {"city": "Paris", "unit": "C"}, c
PY
mode vllm
printf 'sunny\n' | "$QWENCHAT" chat --url "$URL" --resume >/dev/null 2>&1
req_has 'r["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather" and
	r["messages"][1]["content"] is None' "the call goes back to the server in the next request"
# --resume alone goes back to the server and the model the conversation was held with
printf 'thanks\n' | "$QWENCHAT" chat --resume >"$TMP/out" 2>"$TMP/err"
grep -q "remote: .* at $URL" "$TMP/err" && pass "--resume without --url goes back to the server" ||
	fail "--resume without --url: $(cat "$TMP/err")"
req_has 'r["model"] == "Qwen/Qwen3-32B" and r["messages"][-1]["content"] == "thanks"' \
	"... with the conversation's model"

# Ctrl-C mid-answer: the stream is closed, the partial answer kept and saved.
mode slow
# (env: a job a script puts in the background starts with SIGINT ignored, which the
# chat keeps, as a terminal's foreground job does not)
{ printf 'Long answer please\n'; sleep 3; } |
	env --default-signal "$QWENCHAT" chat --url "$URL" >"$TMP/out" 2>"$TMP/err" &
CPID=$!
i=0
while ! grep -q Bonjour "$TMP/out" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
kill -INT $CPID
wait $CPID
grep -q 'stopped; the partial answer is kept' "$TMP/err" && pass "Ctrl-C stops the remote answer" ||
	fail "Ctrl-C: $(cat "$TMP/err")"
python3 - "$(cat "$TMP/state/qwenchat/last-session")" <<'PY' && pass "the partial answer is in the autosave" || fail "partial answer not saved"
import json, sys
m = json.load(open(sys.argv[1]))
m = m["messages"] if isinstance(m, dict) else m
a = m[-1]["content"]
assert m[-1]["role"] == "assistant" and a.startswith("Bonjour") and a.count("encore") < 100, m[-1]
PY

# --- the API key ----------------------------------------------------------------------
KEY="sk-test-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$KEY" >"$STATE/key"
mode vllm
expect_exit 1 "no key" R -p "Salut"
expect_err_has "401 Unauthorized: Unauthorized (no API key was sent)" "401 without a key: one line"
expect_exit 1 "a wrong key" env OPENAI_API_KEY=wrong "$QWENCHAT" run --url "$URL" -p "Salut"
expect_err_has "(the API key was refused)" "401 with a wrong key: one line"
expect_exit 0 "OPENAI_API_KEY" env OPENAI_API_KEY="$KEY" "$QWENCHAT" run --url "$URL" -p "Salut"
req_has "auth == 'Bearer $KEY'" "the key goes in the Authorization header"
req_has "'$KEY' not in json.dumps(r)" "and nowhere in the body"
printf '%s\n' "$KEY" >"$TMP/keyfile"
expect_exit 0 "--api-key-file" R --api-key-file "$TMP/keyfile" -p "Salut"
req_has "auth == 'Bearer $KEY'" "--api-key-file: its first line is the key"
# the blanks an editor leaves around the key are not part of it; a line of blanks is none
printf ' \t%s  \r\nnext\n' "$KEY" >"$TMP/keyfile"
expect_exit 0 "--api-key-file with blanks around the key" R --api-key-file "$TMP/keyfile" -p "Salut"
req_has "auth == 'Bearer $KEY'" "--api-key-file: the blanks around it dropped"
printf '   \n' >"$TMP/keyfile"
expect_exit 1 "--api-key-file of blanks" R --api-key-file "$TMP/keyfile" -p "Salut"
expect_err_has "the first line is empty" "--api-key-file of blanks: says so"
expect_exit 0 "--api-key on the command line" R --api-key "$KEY" -p "Salut"
grep -q 'other users of this machine can read a key given on the command line' "$TMP/err" &&
	pass "--api-key warns that ps shows it" || fail "--api-key: no warning"
mode stall
"$QWENCHAT" run --url "$URL" --api-key "$KEY" --timeout 3 -p "Salut" >/dev/null 2>&1 &
KPID=$!
sleep 1
if tr '\0' ' ' </proc/$KPID/cmdline | grep -qF "$KEY"; then fail "the key is still in /proc/PID/cmdline"
else pass "the key is wiped from the command line (ps)"; fi
wait $KPID
mode quote-key
expect_exit 1 "an error quoting the key" env OPENAI_API_KEY="$KEY" "$QWENCHAT" run --url "$URL" -p x
expect_err_has "bad request from Bearer [API key]" "a server message quoting the key is redacted"
grep -qF "$KEY" "$TMP/err" && fail "the key is in the message" || pass "the key is in no message"
grep -rqF "$KEY" "$TMP/state" && fail "the key is in a saved file" || pass "the key is in no saved file"
mode quote-key-cut
expect_exit 1 "an error quoting the key where the line is cut" env OPENAI_API_KEY="$KEY" \
	"$QWENCHAT" run --url "$URL" -p x
grep -qF "$(printf '%s' "$KEY" | cut -c1-8)" "$TMP/err" && fail "a part of the key is shown: $(cat "$TMP/err")" ||
	pass "no part of the key is shown when the message is cut"
# ... nor where the server spelled it with JSON escapes, in an answer or an event
for m in quote-key-escaped quote-key-event; do
	mode $m
	expect_exit 1 "$m: an error quoting the key, escaped, cut" env OPENAI_API_KEY="$KEY" \
		"$QWENCHAT" run --url "$URL" -p x
	grep -qF "$(printf '%s' "$KEY" | cut -c1-8)" "$TMP/err" &&
		fail "$m: a part of the key is shown: $(cat "$TMP/err")" ||
		pass "$m: no part of the key is shown"
done
rm -f "$STATE/key"

# --- one line for each failure ------------------------------------------------------------
mode vllm
expect_exit 1 "-m a model not served" R -m Qwen/Qwen3-8B -p x
expect_err_has "does not serve the model 'Qwen/Qwen3-8B'; it serves: Qwen/Qwen3-32B" \
	"a wrong -m lists the served models"
mode no-models
expect_exit 0 "no model list, -m given: taken on trust" R -m Qwen/Qwen3-32B -p x
expect_exit 1 "no model list, -m a model not served" R -m Other/Model -p x
expect_err_has "does not serve the model 'Other/Model' (404 Not Found: The model \`Other/Model\` does not exist.)" \
	"... the server's 404 says so"
expect_exit 1 "no model list, no -m" R -p x
expect_err_has "has no model list (GET /models: 404): name the model with -m" "... asks for -m"
# After a 404 for the model the client asks for the list again: a server that hangs then
# does not hold Ctrl-C off (it was held for the stall timeout, 120 s)
mode models-hang
# (env: a background job of a script starts with SIGINT ignored, which run keeps)
env --default-signal=INT "$QWENCHAT" run --url "$URL" -m Other/Model -p x >/dev/null 2>"$TMP/err" &
RPID=$!
sleep 2
t0=$(date +%s)
kill -INT $RPID
wait $RPID
if [ $(($(date +%s) - t0)) -le 3 ]; then pass "Ctrl-C stops the model list asked after a 404"
else fail "Ctrl-C waited for the hanging model list: $(cat "$TMP/err")"; fi
mode many-models
expect_exit 1 "-m a model not served by a server of 30" R -m Qwen/Qwen3-8B -p x
expect_err_has "it serves: /models/hub/Qwen--Qwen3-30B-A3B-Instruct-2507-FP8-00, /models" \
	"... the first named"
grep -q 'FP8-[0-9][0-9] and [0-9]* more$' "$TMP/err" && [ "$(wc -c <"$TMP/err")" -lt 1000 ] &&
	pass "... whole names, then how many more, in a line" || fail "30 long names: $(cat "$TMP/err")"
# usage counts as large as they may be (2^30 each): their sum stays an int (it overflowed)
mode usage-huge
printf 'hi\n/ctx\n' | "$QWENCHAT" chat --plain --url "$URL" >"$TMP/out" 2>"$TMP/err"
grep -q 'context: 2147483647 of 40960 tokens used .*, 0 free' "$TMP/out" &&
	pass "/ctx after a usage of 2^30 + 2^30 tokens" || fail "/ctx: $(grep context "$TMP/out") $(cat "$TMP/err")"
mode no-models
expect_exit 1 "no model list at a URL without /v1" "$QWENCHAT" run --url "${URL%/v1}" -p x
expect_err_has "is the URL the API base, such as http://HOST:8000/v1?" "... asks whether /v1 is missing"
mode huge-models
expect_exit 1 "a model list of 9 MiB" "$QWENCHAT" list --url "$URL"
expect_err_has "/models: the reply is larger than 8 MiB" "... says it is too large"
mode vllm
expect_exit 0 "list --url" "$QWENCHAT" list --url "$URL"
grep -q '^Qwen/Qwen3-32B  *vllm  *40960$' "$TMP/out" && pass "list --url: the served model" ||
	fail "list --url: $(cat "$TMP/out")"
PORT_FREE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_exit 1 "nothing listening" "$QWENCHAT" run --url "http://127.0.0.1:$PORT_FREE/v1" -p x
expect_err_has "cannot connect to http://127.0.0.1:$PORT_FREE/v1" "a refused connection: one line"
expect_exit 1 "connect timeout" "$QWENCHAT" run --url "http://127.0.0.1:$(cat "$STATE/blackhole-port")/v1" \
	--connect-timeout 1 -p x
expect_err_has "after 1 s (connect timeout)" "a connect timeout: one line"
mode stall
expect_exit 1 "a stalled stream" R --timeout 1 -p x
expect_err_has "no data from $URL for 1 s (stall timeout)" "a stall: one line"
[ "$(cat "$TMP/out")" = "Bonjour" ] && pass "the stalled answer's start was shown" || fail "stall out: $(cat "$TMP/out")"
if [ -n "$TLS" ]; then
	expect_exit 1 "a self-signed certificate" "$QWENCHAT" run \
		--url "https://127.0.0.1:$(cat "$STATE/tls-port")/v1" -p x
	expect_err_has "TLS error with https://127.0.0.1:" "a TLS error: one line"
else
	echo "skip: no openssl for the TLS check"
fi
mode done-open
t0=$(date +%s.%N)
expect_exit 0 "a server that keeps the connection open after [DONE]" R --timeout 5 -p x
t1=$(date +%s.%N)
[ "$(cat "$TMP/out")" = "$ANSWER" ] && python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 3 else 1)" &&
	pass "[DONE] ends the answer at once" || fail "after [DONE]: $(cat "$TMP/err")"
mode error-endless
t0=$(date +%s.%N)
expect_exit 1 "an error body that never ends" R --timeout 5 -p x
t1=$(date +%s.%N)
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 4 else 1)" && expect_err_has "500 Internal Server Error" \
	"... reported once what is kept has come" || fail "an endless error body: $(cat "$TMP/err")"
mode models-busy vllm
expect_exit 0 "GET /models answered 429, then the chat" R -p x
[ "$(cat "$TMP/out")" = "$ANSWER" ] && pass "the model list is asked again after Retry-After" ||
	fail "models 429: $(cat "$TMP/err")"
head -n 1 "$TMP/err" | grep -q "^qwenchat: $URL: the server is busy with the model list (429 Too Many Requests: Rate limit reached); trying again in 1 s (try 2 of 4)$" &&
	pass "... and said why it waited" || fail "models 429: stderr '$(cat "$TMP/err")'"
mode models-busy models-busy models-busy models-busy vllm
expect_exit 1 "a model list busy at every try" R -p x
[ "$(grep -c 'trying again in' "$TMP/err")" = 3 ] && tail -n 1 "$TMP/err" | grep -q "gave up after several tries" &&
	pass "... each wait said (not dropped with the held notices), then the error" ||
	fail "models busy at every try: stderr '$(cat "$TMP/err")'"
mode busy vllm
t0=$(date +%s.%N)
expect_exit 0 "429 then success" R -p x
t1=$(date +%s.%N)
[ "$(cat "$TMP/out")" = "$ANSWER" ] && python3 -c "import sys; sys.exit(0 if $t1 - $t0 >= 0.9 else 1)" &&
	pass "429: waited Retry-After (1 s) and got the answer" || fail "429 retry: $(cat "$TMP/err")"
[ "$(head -n 1 "$TMP/err")" = "qwenchat: $URL: the server is busy with the request (429 Too Many Requests: Rate limit reached, slow down); trying again in 1 s (try 2 of 4)" ] &&
	pass "... and said why it waited (stderr's first line)" || fail "429: stderr '$(cat "$TMP/err")'"
for spec in \
	"busy-long|the server is busy (429 Too Many Requests: Rate limit reached); it asks to retry after 3600 s" \
	"fail500|the server failed (500 Internal Server Error: EngineCore died)" \
	"cut|broke off mid-answer, inside an event" \
	"cut-early|broke off before its first event" \
	"cut-first|broke off inside its first event" \
	"badjson|event 3 is not valid JSON" \
	"error|the server reported an error in event 3: CUDA out of memory" \
	"html|answered with text/html, not a stream of events"; do
	m=${spec%%|*}
	mode "$m"
	expect_exit 1 "$m" R -p x
	expect_err_has "${spec#*|}" "$m: one line saying what happened"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$m: more than one line on stderr"
	case $m in busy-long | fail500 | cut-early | cut-first | html)
		[ ! -s "$TMP/out" ] || fail "$m: stdout holds '$(od -c "$TMP/out" | head -n 2)'" ;;
	esac
done
pass "no answer, nothing on stdout (not even a line break)"
mode cut
expect_exit 1 "a cut stream with --stats" R -p x --stats
grep -q '^stats: .*stopped: error$' "$TMP/err" && ! grep -q 'end of turn' "$TMP/err" &&
	pass "--stats after a failure says the turn ended on an error" || fail "--stats: $(cat "$TMP/err")"
mode no-usage
expect_exit 0 "a server that sends no usage, --stats" R -p x --stats
grep -q '^stats: the server sent no token counts; time to first token' "$TMP/err" &&
	grep -q '^stats: [0-9]* pieces\{0,1\} of text in .*, stopped: end of turn$' "$TMP/err" &&
	! grep -q 'prefilled\|tok/s' "$TMP/err" &&
	pass "--stats without usage says the counts are unknown (no zeros as figures)" ||
	fail "--stats without usage: $(cat "$TMP/err")"
printf 'Salut\n/ctx\n' | "$QWENCHAT" chat --url "$URL" >"$TMP/out" 2>"$TMP/err"
grep -q 'context: not known (the server sends no token counts); 2 messages' "$TMP/out" &&
	pass "/ctx without usage: not known" || fail "/ctx without usage: $(cat "$TMP/out")"
mode gzip
expect_exit 0 "a gzip-compressed stream (a proxy's)" R -p x
[ "$(cat "$TMP/out")" = "$ANSWER" ] && pass "gzip: the stream is decoded" || fail "gzip: $(cat "$TMP/out")"
# A failure after some text keeps it in the conversation.
mode error
printf 'Salut\n' | "$QWENCHAT" chat --url "$URL" >"$TMP/out" 2>"$TMP/err"
grep -q 'CUDA out of memory (the partial answer is kept)' "$TMP/err" &&
	pass "a mid-answer error keeps the partial answer" || fail "partial: $(cat "$TMP/err")"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m=m["messages"] if isinstance(m, dict) else m; sys.exit(0 if m[-1]["content"]=="Bonjour, " else 1)' \
	"$(cat "$TMP/state/qwenchat/last-session")" && pass "... and saves it" || fail "partial not saved"

# --- usage errors -----------------------------------------------------------------------
expect_exit 2 "--backend remote without --url" "$QWENCHAT" run --backend remote -p x
expect_err_has "--backend remote needs --url" "--backend remote without --url: says so"
mode vllm
expect_exit 0 "OPENAI_BASE_URL" env OPENAI_BASE_URL="$URL" "$QWENCHAT" run --backend remote -p x
expect_exit 2 "--url with --backend cpu" R --backend cpu -p x
expect_exit 2 "--threads with --url" R --threads 2 -p x
expect_err_has "--threads does not apply to the remote backend" "--threads: says why"
expect_exit 2 "--api-key without --url" "$QWENCHAT" run -m "$TMP" --api-key k -p x
expect_exit 2 "--raw with --url" R --raw -p x
for o in "--quant q8_0|--quant does not apply" "--exact|--exact does not apply" \
	"--parse-special|--parse-special needs the local engine"; do
	expect_exit 2 "${o%%|*} with --url (run)" R ${o%%|*} -p x
	expect_err_has "${o#*|}" "${o%%|*} with --url (run): says why"
	expect_exit 2 "${o%%|*} with --url (chat)" "$QWENCHAT" chat --url "$URL" ${o%%|*}
	expect_err_has "${o#*|}" "${o%%|*} with --url (chat): says why"
done
for c in info bench logits; do
	expect_exit 2 "$c --url" "$QWENCHAT" "$c" --url "$URL"
	expect_err_has "runs on this machine, not on a server" "$c --url: says why"
done
expect_exit 2 "bench --backend remote" "$QWENCHAT" bench --backend remote
expect_exit 2 "serve --backend remote" "$QWENCHAT" serve --backend remote
expect_exit 2 "--url ftp://" "$QWENCHAT" run --url ftp://127.0.0.1/v1 -p x
expect_err_has "the scheme 'ftp' is not http or https" "--url ftp://: says why"
expect_exit 2 "--timeout 0" R --timeout 0 -p x
expect_exit 2 "--url not a URL" "$QWENCHAT" run --url 'http://[::1' -p x
expect_err_has "is not a URL" "a bad URL: says so"
expect_exit 2 "--url ''" "$QWENCHAT" list --url ''
expect_err_has "--url: an empty URL" "an empty URL: says so, not that --url is missing"
# a warning on the key, then no server: the error alone
for cmd in "run -p x" list; do
	expect_exit 1 "$cmd, --api-key, no server" "$QWENCHAT" $cmd --url http://127.0.0.1:1/v1 --api-key k
	[ "$(wc -l <"$TMP/err")" = 1 ] && grep -q 'cannot connect' "$TMP/err" &&
		pass "... one line, the error" || fail "$cmd, no server: $(cat "$TMP/err")"
done
expect_exit 2 "OPENAI_BASE_URL not a URL" env OPENAI_BASE_URL=notaurl "$QWENCHAT" run --backend remote -p x
expect_err_has "OPENAI_BASE_URL: 'notaurl' is not a URL" "... named as the variable, not as --url"
finish
