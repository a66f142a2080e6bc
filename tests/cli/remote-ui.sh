#!/bin/sh
# remote-ui.sh — the chat UI on the remote backend, inside tmux, against the fake
# vLLM of tests/cli/remote-server.py: the status bar names the server's model and the
# backend, the reasoning and the answer stream onto the screen and the figures come
# from the usage chunk; the debug pane says attention and memory are the server's;
# Esc stops a slow answer and keeps it; a tool call is shown; a failure is one line.
# Every captured screen is printed (the "screenshots" in tests/cli/remote-ui.sh.log).
. "$TOP_SRCDIR/tests/lib.sh"

command -v tmux >/dev/null || { echo "SKIP: tmux not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h" || { echo "SKIP: --disable-tui"; exit 77; }
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy OPENAI_API_KEY \
	OPENAI_BASE_URL QWENCHAT_MODEL
export NO_PROXY='*' XDG_STATE_HOME="$TMP/state" HOME="$TMP" TERM=xterm-256color \
	LANG=C.UTF-8 LC_ALL=C.UTF-8
STATE=$TMP/srv
mkdir -p "$STATE"
python3 "$TOP_SRCDIR/tests/cli/remote-server.py" --state "$STATE" --lifetime 200 &
SRV_PID=$!
SOCK=qwenchat-remote-ui-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server 2>/dev/null; kill $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
while [ ! -f "$STATE/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$STATE/port" ] || { echo "FAIL: the fake server did not start"; exit 1; }
URL="http://127.0.0.1:$(cat "$STATE/port")/v1"
mode() { printf '%s\n' "$@" >"$STATE/mode"; }
WAIT=20
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && WAIT=60
SHOTS=0

screen() { T capture-pane -p -t ui; }
shot() {
	SHOTS=$((SHOTS + 1))
	echo "---- screen $SHOTS: $1 ----"
	screen
	echo "---- end of screen $SHOTS ----"
}
check_screen() {   # REGEX DESC
	if wait_screen "$1"; then pass "$2"; else fail "$2: screen lacks /$1/"; shot "failure: $2"; fi
}
idle() { check_screen '^Enter send \|' "$1"; }
session() { cat "$(cat "$TMP/state/qwenchat/last-session")"; }

mode vllm
T new-session -d -s ui -x 110 -y 32 "$QWENCHAT" --url "$URL" -m Qwen/Qwen3-32B
T set-option -g escape-time 0 >/dev/null
check_screen 'Type a message' "the UI starts on the remote backend"
check_screen 'remote: Qwen/Qwen3-32B at http://127.0.0.1:[0-9]+/v1, context 40960 tokens' \
	"the notice names the model, the server and its context"
check_screen '^ Qwen/Qwen3-32B \| remote \| think on \| ctx 0/40960 \|' \
	"the status bar: the served model, the remote backend, the server's context"

T send-keys -t ui 'Salut' Enter
check_screen 'Bonjour ! Un café \? 世界' "the answer streams onto the screen"
check_screen 'The user greets me; answer briefly in French \(café\)\.' "the reasoning is shown"
idle "the turn ends"
check_screen '^ Qwen/Qwen3-32B \| remote \| think on \| ctx 3[0-9]/40960 \| prefill [0-9]+ t/s \| decode [0-9.]+ t/s \| TTFT [0-9.]+s' \
	"the status bar: context and speeds from the stream's usage"
shot "an answer"

T send-keys -t ui F2
check_screen 'attention: not available with the remote backend' "F2: no attention remotely"
check_screen 'the model runs on http://127.0.0.1:[0-9]+/v1' "... the pane names the server"
T send-keys -t ui F2
check_screen 'memory: not available with the remote backend' "F2 again: no memory figures remotely"
shot "the debug pane"
T send-keys -t ui F2

mode slow
T send-keys -t ui 'Encore' Enter
check_screen 'Bonjour ! Un café \? 世界 encore' "a slow answer streams"
T send-keys -t ui Escape
check_screen 'stopped: the partial answer is kept' "Esc stops it"
idle "idle after Esc"
if session | python3 -c 'import json,sys
m=json.load(sys.stdin); m=m["messages"] if isinstance(m, dict) else m; a=m[-1]["content"]
sys.exit(0 if m[-1]["role"]=="assistant" and a.startswith("Bonjour") and 0 < a.count("encore") < 100 else 1)'; then
	pass "the partial answer is saved"
else fail "partial answer: $(session | tail -c 300)"; fi

mode tools
T send-keys -t ui 'Météo ?' Enter
check_screen 'tool call: get_weather \{"city": "Paris", "unit": "C"\}' "a tool call is shown"
idle "the tool call turn ends"

mode busy vllm
T send-keys -t ui 'Et maintenant ?' Enter
check_screen 'server busy: waiting' "the status bar says the server is busy while it waits"
check_screen 'the server is busy with the request' "the wait is told in the conversation, as run tells it"
idle "the turn after the wait ends"
screen | awk '/Et maintenant/ { m = 1 } m && /server is busy with the request/ { w = NR }
	m && /Bonjour/ { b = NR } END { exit !(w && b && w < b) }' &&
	pass "... above the answer, as it came first" || fail "the wait's notice is not above the answer"
shot "a wait for a busy server"

mode fail500
T send-keys -t ui 'Encore une fois' Enter
check_screen 'the server failed \(500 Internal Server Error: EngineCore died\)' "a failure is one line"
idle "idle after the failure"
shot "a tool call and a failure"
T send-keys -t ui '/quit' Enter
sleep 0.5
finish
