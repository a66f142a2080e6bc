#!/bin/sh
# ui.sh — drives the real chat UI inside tmux against a generated test model:
# streaming with live figures, /think off in the prompt, Esc/Ctrl-C keeping the
# partial answer, bracketed paste as one message, resizing while streaming, wide
# characters, a bad command, /save + /load, kill -9 then --resume, quitting.
# Every captured screen is printed (the "screenshots" in tests/cli/ui.sh.log).
. "$TOP_SRCDIR/tests/lib.sh"

command -v tmux >/dev/null || { echo "SKIP: tmux not installed"; exit 77; }
"$QWENCHAT" chat --help | grep -q -- --plain || { echo "SKIP: built without the TUI"; exit 77; }
grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h" || { echo "SKIP: --disable-tui"; exit 77; }
need_tokenizer
MODEL=$TMP/model
# Vocabulary = the tokenizer's 151669 ids: a random model never samples an id it lacks.
chat_model "$MODEL" --vocab-size 151669

SOCK=qwenchat-ui-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
export XDG_STATE_HOME="$TMP/state" HOME="$TMP" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
WAIT=30
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && WAIT=90
SHOTS=0

screen() { T capture-pane -p -t ui; }
# restart COMMAND — runs COMMAND in the same pane on a cleared screen. (Killing the
# only session and opening a new one races with the server's exit, and the new
# session can fail to start.)
restart() { T respawn-pane -k -t ui "printf '\\033[H\\033[2J'; $1"; T clear-history -t ui; }
# shot NAME — prints the screen into the log.
shot() {
	SHOTS=$((SHOTS + 1))
	echo "---- screen $SHOTS: $1 ($(T display -p -t ui '#{window_width}x#{window_height}')) ----"
	screen
	echo "---- end of screen $SHOTS ----"
}
# stop_answer DESC — Esc, then idle (the answer may also have ended by itself).
# The last answer's "decode N t/s" stays in the status bar, so a check for it can pass
# before a new answer begins, and an Esc sent then is lost: first wait (a few seconds)
# for the hint line of an answer under way.
stop_answer() {
	W=$WAIT WAIT=$((WAIT / 6))
	wait_screen '^Esc or Ctrl-C: stop the answer'
	WAIT=$W
	T send-keys -t ui Escape
	check_screen '^Enter send \|' "$1"
}
check_screen() {   # REGEX DESC
	if wait_screen "$1"; then pass "$2"; else fail "$2: screen lacks /$1/"; shot "failure: $2"; fi
}
status_line() { screen | grep -E '^ model \| cpu \|' | head -n 1; }
# The layout: the status bar is the third line from the bottom at every size, and no
# line is wider than the pane, in the columns the C library's wcwidth gives (those of
# ncurses and tmux: a Hangul final jamo joins the syllable before it, width 0).
check_layout() {   # ROWS COLS DESC
	screen >"$TMP/scr"
	n=$(wc -l <"$TMP/scr")
	row=$(grep -nE '^ model \| cpu \|' "$TMP/scr" | head -n 1 | cut -d: -f1)
	wide=$(python3 -c 'import ctypes, locale, sys
locale.setlocale(locale.LC_CTYPE, "C.UTF-8")
wcwidth = ctypes.CDLL(None).wcwidth
w = lambda s: sum(max(wcwidth(ord(c)), 0) for c in s)
print(max(w(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$TMP/scr")
	if [ "$n" -eq "$1" ] && [ "$row" = "$(($1 - 2))" ] && [ "$wide" -le "$2" ]; then
		pass "$3: status bar on row $row of $n, widest line $wide <= $2 columns"
	else
		fail "$3: $n rows (want $1), status bar row '$row' (want $(($1 - 2))), widest $wide (max $2)"
		shot "failure: $3"
	fi
}

# The model is a directory named "model": that is the name the status bar shows.
# an input history from before multi-line entries: a line per entry
mkdir -p "$TMP/state/qwenchat" && chmod 700 "$TMP/state" "$TMP/state/qwenchat"
printf 'old one\nold two\n' >"$TMP/state/qwenchat/history"
T new-session -d -s ui -x 100 -y 30 \
	"$QWENCHAT -m '$MODEL' --backend cpu --threads 2 --ctx 16384 -n 100000 --seed 7; echo EXITED \$?; sleep 600"
T set-option -g escape-time 0 >/dev/null
T set-option -g set-clipboard on >/dev/null # /copy's OSC 52 lands in a tmux buffer

check_screen 'Type a message' "the UI starts"
shot "start"
first=$(status_line)
echo "$first" | grep -q 'ctx 0/16384' && pass "context starts empty" || fail "status at start: $first"
echo "$first" | grep -q '| cpu | BF16 |' && pass "the status bar shows the weight type" ||
	fail "weight type in the status bar: $first"

# 1. A streamed answer; the status bar's speed and context figures change.
T send-keys -t ui 'Hello 你好 world' Enter
check_screen 'decode [1-9][0-9.]* t/s' "the answer streams with a live decode speed"
sleep 1
s1=$(status_line)
sleep 1
s2=$(status_line)
shot "streaming"
[ "$s1" != "$s2" ] && pass "status bar figures change while streaming" || fail "status did not change: $s2"
echo "$s2" | grep -qE 'ctx [1-9][0-9]*/16384' && pass "context used grows" || fail "context: $s2"
# 2. Ctrl-C mid-answer keeps the partial text. (The 16K context outlasts the ~2 s
# above: run alone, the tiny model fills 4096 tokens in under 4 s.)
T send-keys -t ui C-c
check_screen 'stopped: the partial answer is kept' "Ctrl-C stops the answer"
# (the last non-blank line above the notice: the answer may end with blank lines)
screen | awk '/stopped: the partial answer is kept/ { print last; exit } /[^ ]/ { last = $0 }' |
	grep -q '^  .*[^ ]' && pass "the partial answer stays on screen" ||
	fail "no partial answer after Ctrl-C"
python3 -c 'import json,sys
m=json.load(open(open(sys.argv[1]).read().strip()))
m=m["messages"] if isinstance(m, dict) else m
sys.exit(0 if m[-1]["role"]=="assistant" and m[-1]["content"].strip() else 1)' \
	"$TMP/state/qwenchat/last-session" && pass "the partial answer is saved in the conversation" ||
	fail "the partial answer is not in the session file"
shot "after Ctrl-C"
# 3. Wide characters: a long CJK line wraps at 98 columns, 49 ideographs per line.
cjk=$(python3 -c 'print("中文字符測試" * 12)')
T send-keys -t ui -l "$cjk"
# the input takes rows by display width: 72 ideographs are 144 columns, two rows
wait_screen '^> 中' || true
screen | python3 -c '
import sys
L = [l.rstrip("\n") for l in sys.stdin]
i = [k for k, l in enumerate(L) if l.startswith(" model | cpu |")][0]
sys.exit(0 if L[i + 1].startswith("> 中") and L[i + 2].startswith("  中") else 1)' &&
	pass "a CJK input line takes rows by its display width, its start in sight" ||
	{ fail "CJK input rows"; shot "CJK input"; }
T send-keys -t ui Enter
check_screen 'decode [1-9]' "a second message streams"
T send-keys -t ui Escape
check_screen 'stopped: the partial answer is kept' "Esc stops the answer"
shot "wide characters"
screen | python3 -c '
import sys
# the message rows only: an answer may contain these characters among others
rows = [l.rstrip("\n") for l in sys.stdin if l.strip() and set(l.strip()) <= set("中文字符測試")]
ok = len(rows) >= 2 and all(r.startswith("  ") for r in rows) and len(rows[0].strip()) == 49
sys.exit(0 if ok else 1)' && pass "CJK text wraps at full width, aligned" || fail "CJK wrapping"
check_layout 30 100 "layout with wide characters"

# 4. /think off changes the rendered prompt (/stats shows its end).
T send-keys -t ui '/stats' Enter
check_screen 'next prompt ends:.*assistant\\n"' "with thinking on the prompt ends at the assistant header"
T send-keys -t ui '/think off' Enter
check_screen 'thinking off from the next answer' "/think off"
T send-keys -t ui '/stats' Enter
check_screen 'next prompt ends:.*<think>\\n\\n</think>\\n\\n"' "/think off adds the empty think block to the prompt"
check_screen 'think off \|' "the status bar shows think off"
shot "think off"

# 5. A bad command is an inline error and the typed line comes back.
T send-keys -t ui '/frobnicate 3' Enter
check_screen 'unknown command /frobnicate \(try /help\)' "a bad command shows an error"
check_screen '^> /frobnicate 3' "the bad command stays in the input line"
T send-keys -t ui C-u
T send-keys -t ui '/top-p 7' Enter
check_screen '/top-p: 7 is out of range \[0, 1\]' "a bad value shows an error"
T send-keys -t ui C-u

# 6. A bracketed paste of several lines is one message.
users=$(screen | grep -c '^you$')
T send-keys -t ui -l "$(printf '\033[200~paste line one\npaste line two\npaste line three\033[201~')"
T send-keys -t ui Enter
check_screen 'decode [1-9]' "the pasted message is answered"
sleep 0.5
stop_answer "pasted answer stopped"
shot "paste"
# A long answer may have scrolled them off: PageUp until they show (then back down).
found=no
ups=0
while [ $ups -lt 80 ]; do
	if screen | tr '\n' '|' | grep -q '  paste line one|  paste line two|  paste line three|'; then
		found=yes
		break
	fi
	T send-keys -t ui PPage
	ups=$((ups + 1))
	sleep 0.1
done
[ $found = yes ] && pass "the pasted lines form one message" ||
	fail "the pasted lines are not one message"
while [ $ups -gt 0 ]; do T send-keys -t ui NPage; ups=$((ups - 1)); done
# A paste whose end marker never comes (a terminal or a link lost it) ends after a
# second without input: its text waits in the input line, and keys work again.
T send-keys -t ui -l "$(printf '\033[200~lost end marker')"
check_screen '^> lost end marker' "a paste without its end: its text in the input line"
check_screen 'a paste that never ended' "... said in the hint line"
T send-keys -t ui -l ' and more'
check_screen '^> lost end marker and more' "... and the keys typed after it go on the line"
T send-keys -t ui C-u
# A paste that stalls past that second (a slow link), then brings its rest and its end
# marker: the rest is pasted too, its line break not an Enter that sends the first part.
T send-keys -t ui -l "$(printf '\033[200~stalled paste')"
check_screen 'a paste that never ended' "a stalled paste: ended after a second"
T send-keys -t ui -l "$(printf '\rits rest\033[201~')"
check_screen '^  its rest' "... its rest comes after it in the input line, the line break kept"
[ "$(screen | grep -c 'stalled paste')" = 1 ] && pass "... nothing was sent" ||
	{ fail "... the first part was sent"; shot "stalled paste"; }
T send-keys -t ui C-u C-h C-u
# The rest of a stalled paste in pieces, the end marker itself cut in two (a slow link
# cuts anywhere): all of it pasted, nothing sent, nothing of the marker typed.
T send-keys -t ui -l "$(printf '\033[200~slow paste')"
check_screen 'a paste that never ended' "a paste stalled again"
T send-keys -t ui -l "$(printf '\rsecond piece')"
sleep 0.3
T send-keys -t ui -l "$(printf '\rthird piece\033[20')"
sleep 0.3
T send-keys -t ui -l '1~'
check_screen '^  third piece$' "... its rest in pieces, the end marker cut: pasted in the line"
if [ "$(screen | grep -c 'slow paste')" = 1 ] && screen | grep -q '^  second piece$' &&
   ! screen | grep -q 'never ended'; then
	pass "... nothing was sent, and the hint is gone"
else
	fail "... the pieces were not one paste"
	shot "paste in pieces"
fi
T send-keys -t ui C-u C-h C-u C-h C-u
# A paste that stalls inside its end marker: the rest of the marker ends it.
T send-keys -t ui -l "$(printf '\033[200~marker cut\033[20')"
check_screen 'a paste that never ended' "a paste stalled inside its end marker"
T send-keys -t ui -l '1~'
sleep 0.5
if screen | grep -q '^> marker cut$' && ! screen | grep -q 'never ended'; then
	pass "... the marker's rest ends it, nothing of it typed"
else
	fail "... the marker's rest was typed or the paste did not end"
	shot "marker cut"
fi
T send-keys -t ui C-u
# Ctrl-X inside a Ctrl-R search, then Esc (readline's callback search crashed on it)
for key in C-r C-x Escape; do
	T send-keys -t ui $key
	sleep 0.7 # past tmux's escape-time, so that Esc goes alone
done
# (C-g drops the sequence Ctrl-X Esc begun; C-e C-u clears the line)
for key in C-g C-e C-u; do T send-keys -t ui $key; done
T send-keys -t ui -l 'still here'
check_screen '^> still here' "Ctrl-R, Ctrl-X, Esc: the chat goes on"
# Esc leaves Alt-P's history search (a ':' prompt) as it leaves Ctrl-R's
T send-keys -t ui M-p
sleep 0.3
T send-keys -t ui Escape
sleep 0.7 # tmux's escape-time: an Esc with a key after it would be Alt-key
T send-keys -t ui -l ' too'
check_screen '^> still here too' "Alt-P, Esc: the search left, the line back"
T send-keys -t ui C-u
# The session file holds them as one user turn.
sess=$(cat "$TMP/state/qwenchat/last-session")
python3 -c 'import json,sys
m=json.load(open(sys.argv[1])); m=m["messages"] if isinstance(m, dict) else m; u=[x["content"] for x in m if x["role"]=="user"]
sys.exit(0 if "paste line one\npaste line two\npaste line three" in u else 1)' "$sess" &&
	pass "the paste is one user turn in the session file" || fail "paste not one turn in $sess"

# 7. The attention pane (F2) fills while an answer streams; resizing while streaming
# keeps the layout.
T resize-window -t ui -x 120 -y 40
T send-keys -t ui F2
check_screen 'attention: nothing captured yet' "F2 opens the attention pane"
T send-keys -t ui 'Tell me a long story' Enter
check_screen 'decode [1-9]' "streaming with the attention pane open"
check_screen 'attention +layer [0-9]+ of 2|layer [0-9]+ of 2 head' "the pane shows the captured attention"
check_screen 'entropy \(bits\)' "the pane shows per-head entropy"
check_screen 'first-token share' "the pane shows the first-token share"
check_screen "top attended tokens" "the pane lists the top attended tokens"
shot "debug pane (attention) at 120x40 while streaming"
T resize-window -t ui -x 80 -y 24
sleep 1
shot "resized to 80x24 while streaming"
check_layout 24 80 "layout at 80x24 while streaming"
s80=$(status_line)
echo "$s80" | grep -qE 'ctx [0-9]+/16384 \| decode [0-9.]+ t/s' && [ "${#s80}" -le 80 ] &&
	pass "at 80 columns the status bar keeps the context and the decode speed" ||
	fail "status bar at 80 columns: '$s80'"
check_screen 'layer [0-9]+ of 2 head [0-9]+ of [0-9]+, [0-9]+ keys|attention  layer [0-9]+ of 2 .* keys' \
	"at 80 columns the attention pane's header is whole"
T resize-window -t ui -x 120 -y 40
sleep 1
check_layout 40 120 "layout at 120x40 while streaming"
# The prefill speed is among the first fields left out when the bar is full: at 100
# columns a fast machine's wider figures (decode above 1000 t/s) crowd it out.
s120=$(status_line)
echo "$s120" | grep -qE 'prefill [1-9][0-9]* t/s' && pass "prefill speed shown at 120 columns" ||
	fail "prefill at 120 columns: $s120"
stop_answer "stopped after resize"
T send-keys -t ui Right Down
sleep 0.5
check_screen 'layer 2 of 2 .*head 2 of' "arrows pick layer and head (counted from 1)"
T send-keys -t ui F2
check_screen 'KV cache [0-9.]+ used' "F2 again shows memory"
shot "debug pane (memory)"
T send-keys -t ui F2
check_screen 'probabilities: drawn from' "F2 a third time shows the token probabilities"
screen | grep -q 'KV cache [0-9.]* used' && fail "the memory view is left under the probabilities" ||
	pass "the probabilities replace the memory view"
T send-keys -t ui F2
T resize-window -t ui -x 100 -y 30
sleep 0.5
check_layout 30 100 "layout back at 100x30"

# 8. /save, /clear, /load restore the same conversation.
T send-keys -t ui "/save $TMP/conv.json" Enter
check_screen 'saved [0-9]+ messages to' "/save"
T send-keys -t ui '/clear' Enter
check_screen 'conversation cleared' "/clear"
screen | grep -q 'paste line one' && fail "/clear left the old turns" || pass "/clear empties the view"
T send-keys -t ui "/load $TMP/conv.json" Enter
check_screen 'loaded [0-9]+ messages from' "/load"
# the conversation before /clear is still whole in its own file: its messages as /save
# wrote them before the /clear
python3 -c 'import json, sys
m = lambda p: (lambda d: d["messages"] if isinstance(d, dict) else d)(json.load(open(p)))
sys.exit(0 if m(sys.argv[1]) == m(sys.argv[2]) else 1)' "$sess" "$TMP/conv.json" &&
	[ "$(cat "$TMP/state/qwenchat/last-session")" != "$sess" ] &&
	pass "/clear and /load leave the saved conversation in its file" ||
	fail "/clear or /load changed $sess"
# The loaded turns may be above the screen (the random model's answers run to
# thousands of tokens, hundreds of lines): PageUp until they show.
found=no
for i in $(seq 80); do
	screen | grep -q '^  paste line three' && { found=yes; break; }
	T send-keys -t ui PPage
	sleep 0.2
done
[ $found = yes ] && pass "the loaded conversation is shown" || fail "loaded turns not found by scrolling"
T send-keys -t ui NPage NPage NPage NPage NPage NPage NPage NPage NPage NPage NPage NPage
T send-keys -t ui "/save $TMP/conv2.json" Enter
check_screen 'saved [0-9]+ messages to .*conv2' "second /save"
cmp -s "$TMP/conv.json" "$TMP/conv2.json" && pass "/load restores the same conversation" ||
	fail "conv.json and conv2.json differ"
# /save to the chat's own terminal: the JSON it wrote over the screen is drawn over
T send-keys -t ui "/save /dev/stdout" Enter
check_screen 'saved [0-9]+ messages to /dev/stdout' "/save /dev/stdout"
sleep 0.5
screen | grep -q '"role": "user"' && { fail "/save /dev/stdout: the JSON stays on the screen"; shot "failure: /save /dev/stdout"; } ||
	check_layout "$(T display -p -t ui '#{window_height}')" "$(T display -p -t ui '#{window_width}')" \
		"the screen is drawn again after /save /dev/stdout"
# another program writing on the terminal: Ctrl-L draws the whole screen again
printf '\033[5;1HSTRAY TEXT FROM ELSEWHERE' >"$(T display -p -t ui '#{pane_tty}')"
wait_screen 'STRAY TEXT' || true
T send-keys -t ui C-l
sleep 0.5
screen | grep -q 'STRAY TEXT' && { fail "Ctrl-L left another program's text"; shot "failure: Ctrl-L"; } ||
	pass "Ctrl-L draws the whole screen again"
shot "after /load"
# Tab completes a file name with a space inside double quotes, and goes on inside them
mkdir -p "$TMP/with space" && cp "$TMP/conv.json" "$TMP/with space/saved.json"
T send-keys -t ui "/load $TMP/with" Tab
check_screen '^> /load "/.*/with space/$' "Tab quotes a directory name with a space"
T send-keys -t ui 'sav' Tab
check_screen '^> /load "/.*/with space/saved\.json"' "... and the next Tab completes inside the quotes"
T send-keys -t ui Enter
check_screen 'loaded [0-9]+ messages from .*with space/saved' "the completed name loads"

# 8b. Reasoning (dimmed, foldable with Tab and /think hide), code blocks, /undo,
# /edit, /retry, Tab completion; from a conversation file with reasoning_content.
printf '%s\n' '[{"role": "system", "content": "Be brief."},' \
	' {"role": "user", "content": "Show code"},' \
	' {"role": "assistant", "reasoning_content": "The user wants code.\nI will write it.",' \
	'  "content": "Here:\n```c\nint x = 1;\n```\nDone."}]' >"$TMP/think.json"
# an answer that holds its <think> block in its content is shown, and copied, without it
printf '%s\n' '[{"role": "user", "content": "Hi"},' \
	' {"role": "assistant", "content": "<think>\nsome reasoning\n</think>\n\nThe answer."}]' \
	>"$TMP/inline.json"
T send-keys -t ui "/load $TMP/inline.json" Enter
check_screen 'loaded 2 messages' "/load an answer with its <think> block inline"
T send-keys -t ui '/copy' Enter
check_screen 'copied 11 bytes \(the last answer\)' "/copy of an inline-think answer: the answer alone"
[ "$(T show-buffer)" = "The answer." ] && pass "... and the clipboard holds the answer without the reasoning" ||
	fail "/copy inline think: the tmux buffer holds '$(T show-buffer 2>&1)'"
T send-keys -t ui "/load $TMP/think.json" Enter
check_screen 'loaded 2 messages' "/load a conversation with reasoning"
check_screen '^system prompt$' "the system prompt is shown"
check_screen '^  The user wants code\.' "the reasoning is shown"
check_screen '^│ int x = 1;' "a fenced code block is set off"
shot "reasoning and code"
T send-keys -t ui '/copy 1' Enter
check_screen 'copied 11 bytes \(a code block\)' "/copy 1 says what it copied"
[ "$(T show-buffer)" = "int x = 1;" ] && pass "/copy 1: the code block reached the clipboard (OSC 52)" ||
	fail "/copy 1: the tmux buffer holds '$(T show-buffer 2>&1)'"
T send-keys -t ui '/copy' Enter
check_screen 'copied [0-9]+ bytes \(the last answer\)' "/copy copies the answer"
T show-buffer | grep -q '^Done\.$' && pass "/copy: the answer reached the clipboard" ||
	fail "/copy: the tmux buffer holds '$(T show-buffer 2>&1)'"
T send-keys -t ui Tab
check_screen 'thinking \(folded; Tab shows it\)' "Tab on an empty line folds the reasoning"
screen | grep -q 'The user wants code' && fail "folded reasoning still shown" || pass "folded reasoning hidden"
T send-keys -t ui Tab
check_screen '^  The user wants code\.' "Tab again shows it"
T send-keys -t ui '/think hide' Enter
check_screen 'thinking \(folded' "/think hide folds the reasoning"
T send-keys -t ui Tab
check_screen '^  I will write it\.' "Tab after /think hide shows it again"
T send-keys -t ui '/think' Enter
check_screen 'reasoning shown' "... and /think says it shows"
T send-keys -t ui Tab
check_screen 'thinking \(folded' "Tab folds it again"
T send-keys -t ui '/think show' Enter
check_screen '^  I will write it\.' "/think show after Tab unfolds it"
# reasoning inside the content (no reasoning_content) is shown as reasoning, as the
# template takes it
printf '%s\n' '[{"role": "user", "content": "3+3?"},' \
	' {"role": "assistant", "content": "<think>\nThree and three.\n</think>\n\nSix."}]' \
	>"$TMP/think2.json"
T send-keys -t ui "/load $TMP/think2.json" Enter
check_screen '^  Three and three\.' "<think> in a loaded answer's content: shown as reasoning"
screen | grep -q '<think>\|</think>' && fail "the <think> tags are shown" || pass "... without its tags"
T send-keys -t ui "/load $TMP/think.json" Enter
check_screen 'loaded 2 messages' "/load the conversation with reasoning again"
T send-keys -t ui '/undo' Enter
check_screen 'removed the last message and its answer' "/undo"
screen | grep -q 'Show code' && fail "/undo left the message" || pass "/undo removes the message"
T send-keys -t ui 'edit me please' Enter
check_screen 'decode [1-9]' "a message to edit is answered"
stop_answer "stopped before /edit"
T send-keys -t ui '/edit' Enter
check_screen '^> edit me please' "/edit puts the last message back in the input line"
screen | grep -q '^  edit me please' && fail "/edit left the message in the view" ||
	pass "/edit removes it from the conversation"
T send-keys -t ui C-u
T send-keys -t ui 'retry me' Enter
check_screen 'decode [1-9]' "a message to retry"
stop_answer "stopped before /retry"
T send-keys -t ui '/retry' Enter
check_screen 'decode [1-9]' "/retry generates again"
stop_answer "stopped the retried answer"
[ "$(screen | grep -c '^  retry me$')" = 1 ] && pass "/retry keeps one copy of the message" ||
	fail "/retry duplicated the message"
T send-keys -t ui '/thi' Tab
check_screen '^> /think *$' "Tab completes a command"
T send-keys -t ui 'hi' Tab
check_screen '^> /think hide *$' "Tab completes its argument (after the space completion added)"
T send-keys -t ui C-u
T send-keys -t ui '/t' Tab Tab
check_screen '/temp +/think +/top-k' "Tab twice lists the candidates"
T send-keys -t ui 'h'
sleep 0.3
screen | grep -qE '/temp +/think +/top-k' && fail "the candidates stay after typing on" ||
	pass "typing on clears the candidates"
T send-keys -t ui C-u
T send-keys -t ui '/' Tab Tab
check_screen '^/clear .*…$' "candidates past the width end in an ellipsis"
T send-keys -t ui C-u
# Ctrl-R says what it searches for (the input line shows only the match)
T send-keys -t ui C-r
T send-keys -t ui -l 'zzqq'
check_screen "^\(failed reverse-i-search\).zzqq': *$" "Ctrl-R shows its search, and when it fails"
T send-keys -t ui C-g
sleep 0.3
T send-keys -t ui C-u
# an arrow key ends the search and moves, as in readline (its escape sequence not typed)
T send-keys -t ui C-r
T send-keys -t ui -l 'old t'
T send-keys -t ui Right
# the match shows while the search runs too: then the key hint comes back
wait_screen '^> old two *$' && wait_screen '^Enter send \|' && screen | grep -q '^> old two *$' &&
	pass "an arrow key ends a Ctrl-R search with the match in the line" ||
	fail "an arrow after Ctrl-R: $(screen | tail -n 3)"
T send-keys -t ui C-e C-u
# Esc ends it too, at once, with the match in the line (as in bash); this search
# goes on from "old two", where the last one stopped
T send-keys -t ui C-r
T send-keys -t ui -l 'old o'
check_screen "^\(reverse-i-search\).old o': *$" "Ctrl-R's search line while it searches"
T send-keys -t ui Escape
wait_screen '^Enter send \|' && screen | grep -q '^> old one *$' &&
	pass "Esc ends a Ctrl-R search at once, the match in the line" ||
	fail "Esc after Ctrl-R: $(screen | tail -n 3)"
T send-keys -t ui C-e C-u
T send-keys -t ui '/help' Enter
check_screen 'a line starting with // sends a message' "/help lists the keys"
T send-keys -t ui PPage
check_screen 'more lines' "PageUp scrolls back"
shot "scrolled back"
T send-keys -t ui NPage NPage NPage
sleep 0.3
screen | grep -q 'more lines' && fail "PageDown should return to the end" || pass "PageDown returns"

# 9. kill -9 mid-answer, then --resume restores every finished turn and the message
# whose answer was under way (it is saved before the answer starts).
# The messages after the system prompt (what "resumed N messages" counts) are read
# from the file after the kill.
sess=$(cat "$TMP/state/qwenchat/last-session")
T send-keys -t ui 'unfinished question' Enter
# The footer while an answer streams ("decode N" alone may be the last answer's figure).
check_screen 'Esc or Ctrl-C: stop the answer' "an answer under way before kill -9"
check_screen 'decode [1-9]' "streaming before kill -9"
pid=$(pgrep -f -n "^$QWENCHAT -m $MODEL" || true)
if [ -n "$pid" ]; then
	kill -9 "$pid"
	check_screen 'EXITED 137' "kill -9"
else
	fail "kill -9: no process matches ^$QWENCHAT -m $MODEL"
	ps -eo pid,args | grep -F "$QWENCHAT" | grep -v grep
fi
# What the file holds after the kill: the random model may have ended its answer
# before the kill came, and then no answer is missing.
counts=$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); m = [m for m in (d["messages"] if isinstance(d, dict) else d) if m["role"] != "system"]; print(len(m), int(m[-1]["role"] == "user"))' "$sess")
finished=${counts% *} open=${counts#* }
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 100000 --resume; echo EXITED \$?; sleep 600"
check_screen "resumed $finished messages from" "--resume reopens the last session ($finished turns)"
# (the notice wraps where the session's path ends: read the screen as one line)
if [ "$open" = 1 ]; then
	screen | tr -s ' \n' '  ' | grep -q "the last message has no answer: /retry answers it" &&
		pass "... and says the killed answer is missing" || fail "no notice of the missing answer"
else
	echo "the answer ended before kill -9: no answer is missing to be told" >&2
fi
shot "resumed"

# 10. Ctrl-C on a line being typed clears it, Ctrl-Y brings it back; on an empty
# line Ctrl-C asks; Ctrl-D quits.
T send-keys -t ui 'a draft to keep'
check_screen '^> a draft to keep' "the draft is typed"
T send-keys -t ui C-c
sleep 0.3
screen | grep -q '^> a draft' && fail "Ctrl-C should clear the line" || pass "Ctrl-C clears the line"
screen | grep -q 'Quit?' && fail "Ctrl-C on a line with text asked to quit" || pass "and asks nothing"
T send-keys -t ui C-y
check_screen '^> a draft to keep' "Ctrl-Y brings the cleared line back"
T send-keys -t ui C-a C-k
sleep 0.3
T send-keys -t ui C-c
check_screen 'Quit\? Press Ctrl-C again' "Ctrl-C on an empty line asks first"
T send-keys -t ui x
sleep 0.3
screen | grep -q 'Quit?' && fail "another key should dismiss the question" || pass "another key dismisses it"
screen | grep -q '^> x' && fail "the key that dismissed the question was typed" ||
	pass "the key that dismisses the question is not typed"
# another chat saves meanwhile: --resume would open that one, and leaving says so
cp "$TMP/state/qwenchat/last-session" "$TMP/last-ours"
echo "$TMP/state/qwenchat/other.json" >"$TMP/state/qwenchat/last-session"
T send-keys -t ui C-d
check_screen 'EXITED 0' "Ctrl-D on an empty line quits"
check_screen 'conversation saved in' "leaving says where the conversation is"
screen | tr -d '\n' | grep -q 'another chat saved since, so --resume opens that one' &&
	pass "... and that --resume would open another chat's" || fail "leaving: $(screen)"
cp "$TMP/last-ours" "$TMP/state/qwenchat/last-session"
[ -s "$TMP/history" ] || [ -s "$TMP/state/qwenchat/history" ] && pass "input history saved" ||
	fail "no history file"

# 11. --plain on a terminal: readline with completion, /edit puts the message back.
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 8 --plain; echo EXITED \$?; sleep 600"
check_screen '^> *$' "--plain shows a prompt"
# the three-line paste of part 4 is one history entry, also after a restart
T send-keys -t ui C-r
T send-keys -t ui -l 'line two'
check_screen 'reverse-i-search.*line two.*paste line one' "a multi-line message is one history entry after a restart"
T send-keys -t ui C-g
sleep 0.3
T send-keys -t ui C-r
T send-keys -t ui -l 'old t'
check_screen "reverse-i-search..old t': old two *$" "an older history file keeps a line per entry"
T send-keys -t ui C-g
sleep 0.3
T send-keys -t ui '#1700000000' Enter
sleep 1
T send-keys -t ui 'plain hello' Enter
check_screen 'plain hello' "--plain takes a message"
T send-keys -t ui '/thi' Tab
sleep 0.3
T send-keys -t ui 'of' Tab Enter
check_screen 'thinking off from the next answer' "--plain completes commands and arguments"
T send-keys -t ui '/edit' Enter
# The message's own line at the top also reads "> plain hello": wait for the prompt
# under /edit's reply, or Ctrl-U below can come before readline has the line.
edit_back() { screen | grep -A1 'editing the last message' | grep -q '^> plain hello'; }
i=0
while [ $i -lt $((WAIT * 10)) ] && ! edit_back; do sleep 0.1; i=$((i + 1)); done
if edit_back; then pass "--plain /edit puts the message back in the line"
else fail "--plain /edit puts the message back in the line"; shot "failure: /edit"; fi
T send-keys -t ui C-u C-d
check_screen 'EXITED 0' "--plain quits on Ctrl-D"
shot "plain mode on a terminal"
# ... and it comes back from the history file as sent, not taken for a stamp
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 8 --plain; echo EXITED \$?; sleep 600"
check_screen '^> *$' "--plain again"
T send-keys -t ui C-r
T send-keys -t ui -l '#170'
check_screen "reverse-i-search..#170': #1700000000 *$" "a message that looks like a history stamp comes back"
T send-keys -t ui C-g
sleep 0.3
T send-keys -t ui C-u C-d
check_screen 'EXITED 0' "--plain quits"
# 11b. Light Markdown in answers: markers drawn, not shown (attributes via capture -e).
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 8; echo EXITED \$?; sleep 600"
printf '%s\n' '[{"role": "user", "content": "Format"},' \
	' {"role": "assistant", "content": "## Plan\nSome **bold words** and *slanted* with `x = 1` here.\nNow ***both at once*** and **bold *then both***.\n- first item\n- second item\n```\n**not bold** in code\n```"}]' \
	>"$TMP/md.json"
T send-keys -t ui "/load $TMP/md.json" Enter
check_screen '^  Some bold words and slanted with x = 1 here\.' "Markdown markers are not shown"
check_screen '^  Now both at once and bold then both\.' "***both***: no asterisk shown"
E=$(printf '\033')
T capture-pane -e -p -t ui | grep -q -e "$E\[1m$E\[3mboth at once" \
	-e "$E\[[0-9;]*\(1;3\|3;1\)m[^ ]*both at once" &&
	pass "***both at once*** is drawn bold and italic" ||
	fail "***both***: $(T capture-pane -e -p -t ui | grep -a 'Now' | cat -v)"
check_screen '^  Plan *$' "a heading without its hashes"
check_screen "^  $(printf '\342\200\242') first item" "list items get bullets"
check_screen '\*\*not bold\*\* in code' "code blocks keep their asterisks"
T capture-pane -e -p -t ui | grep -q "$(printf '\033')\[1m[^ ]*bold words" &&
	pass "bold is drawn bold" || fail "no bold attribute on the bold words"
shot "Markdown"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"

# 11c. The token probabilities view: the first token's raw probability is the
# softmax of the logits `qwenchat logits` gives for the same prompt.
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 3 --greedy; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "restarted for the probabilities"
T send-keys -t ui '/debug probs' Enter
check_screen 'probabilities: drawn from' "/debug probs opens the view"
T send-keys -t ui 'Hello' Enter
check_screen '3 tokens' "the view lists the answer's tokens"
printf '[{"role": "user", "content": "Hello"}]' >"$TMP/hello.json"
"$QWENCHAT" template -m "$MODEL" --messages "$TMP/hello.json" --add-generation-prompt \
	--enable-thinking true | "$QWENCHAT" tokenize -m "$MODEL" >"$TMP/hello.ids"
"$QWENCHAT" logits -m "$MODEL" --backend cpu --out "$TMP/hello.f32" <"$TMP/hello.ids"
[ -s "$TMP/hello.f32" ] || fail "logits of the prompt: $(cat "$TMP/hello.ids")"
want=$(python3 -c 'import array, math, sys
v = int(sys.argv[2]); l = array.array("f"); l.frombytes(open(sys.argv[1], "rb").read())
row = l[-v:]; m = max(row); z = math.fsum(math.exp(x - m) for x in row)
print("1 (%.3g) | rest 0" % (1 / z))' "$TMP/hello.f32" 151669)
[ -n "$want" ] && screen | grep -qF "$want" && pass "the first token: drawn at 1 (greedy), raw p = softmax of its logits ($want)" ||
	{ fail "probabilities: the screen lacks '$want'"; shot "failure: probabilities"; }
shot "probabilities"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"

# 11d. Turns that leave the model's context: said before the answer, marked on screen.
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 --ctx 256 -n 40 --no-think; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "restarted with a small context"
for m in one two three four five six seven; do
	T send-keys -t ui "message $m" Enter
	sleep 0.3
	wait_screen '^Enter send \|' || true
	screen | grep -qE 'no longer fits? the context' && break
done
check_screen 'oldest turns? no longer fits? the context' "the chat says when turns leave the context"
wait_screen '^Enter send \|' || true
screen | python3 -c 'import re, sys
L = [l.rstrip() for l in sys.stdin]
at = [i for i, l in enumerate(L) if re.search(r"no longer fits? the context", l)]
after = [l for l in L[at[-1] + 1:] if l.strip()] if at else []
sys.exit(0 if after and after[0].startswith("assistant") and
         [L[i] for i in at].count(L[at[-1]]) == 1 else 1)' &&
	pass "... once, before the answer" || { fail "the notice is not once before the answer"; shot "failure: dropped notice"; }
T send-keys -t ui PPage PPage PPage PPage PPage PPage
check_screen "^you \(no longer in the model's context\)" "those turns are marked on screen"
shot "turns out of the context"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"

# 11e. A message sent while a stopped prefill is still winding down: its notice follows
# the stopped turn's empty block, which goes from before it; the next message then
# replaces the stopped one. (Once the block went as if it were last: a double free.)
python3 -c "print(' '.join('word%d' % i for i in range(5500)), end='')" >"$TMP/long.txt"
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 --ctx 32768 -n 4; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "restarted with a 32K context"
T load-buffer -b long "$TMP/long.txt"
T paste-buffer -p -b long -t ui
wait_screen '^> word0 word1' || true
T send-keys -t ui Enter
if wait_screen '\| prefilling\.\.\. \|'; then
	T send-keys -t ui C-c x Enter # in one read: Enter before the stop is over
	check_screen 'stopped before the answer began' "Ctrl-C while prefilling, then Enter at once"
	wait_screen '^Enter send \|' || true
	T send-keys -t ui -l 'y'
	T send-keys -t ui Enter
	check_screen '^  xy' "the next message is taken"
	check_screen 'the answer stops at 4 tokens' "... and answered"
	shot "a message sent as a prefill stopped"
	T send-keys -t ui C-d
	check_screen 'EXITED 0' "quits"
	python3 -c 'import json, sys
m = json.load(open(open(sys.argv[1]).read().strip()))
m = m["messages"] if isinstance(m, dict) else m
sys.exit(0 if [t["role"] for t in m] == ["user", "assistant"] and m[0]["content"] == "xy" else 1)' \
		"$TMP/state/qwenchat/last-session" &&
		pass "the stopped message is replaced by the next one in the conversation" ||
		fail "after a stopped prefill: $(head -c 300 "$(cat "$TMP/state/qwenchat/last-session")")"
else
	fail "a 26K-token prompt: no prefill seen"
	shot "failure: long prefill"
	T send-keys -t ui C-d
fi

# 12. A locale without UTF-8: a warning, and ASCII marks instead of box drawing.
restart "LANG=C LC_ALL=C $QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 8; echo EXITED \$?; sleep 600"
check_screen 'the locale is not UTF-8' "a non-UTF-8 locale is said"
T send-keys -t ui "/load $TMP/think.json" Enter
check_screen '^\| int x = 1;' "code is set off with an ASCII bar"
screen | grep -q "$(printf '\342\224\202')" && fail "box drawing under LANG=C" ||
	pass "no box drawing under LANG=C"
shot "LANG=C"
# UTF-8 typed there is text still (readline took its bytes for Meta keys)
T send-keys -t ui -l "$(printf 'h\303\251llo \346\227\245\346\234\254')"
T send-keys -t ui Enter
check_screen '^  h.+llo ' "a message typed under LANG=C is taken"
check_screen '^Enter send \|' "... and answered"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"
python3 -c 'import json, sys
m = json.load(open(open(sys.argv[1]).read().strip()))
m = m["messages"] if isinstance(m, dict) else m
u = [t["content"] for t in m if t["role"] == "user"]
sys.exit(0 if u and u[-1] == "h\u00e9llo \u65e5\u672c" else 1)' "$TMP/state/qwenchat/last-session" &&
	pass "UTF-8 typed under LANG=C is sent as typed" ||
	fail "UTF-8 typed under LANG=C: $(tail -c 300 "$(cat "$TMP/state/qwenchat/last-session")")"

# 13. The history file: a link planted there is replaced, never written through; a FIFO
# there is not opened (it would block the start).
H="$TMP/state/qwenchat/history"
echo keep >"$TMP/victim"
rm -f "$H" && ln -s "$TMP/victim" "$H"
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 4; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "starts with a link at the history file"
T send-keys -t ui 'linked history' Enter
check_screen '^  linked history' "the message is taken"
check_screen '^Enter send \|' "answers"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"
[ "$(cat "$TMP/victim")" = keep ] && [ -f "$H" ] && [ ! -L "$H" ] && grep -q 'linked history' "$H" &&
	[ "$(stat -c %a "$H")" = 600 ] && pass "the link is replaced by a private history file" ||
	fail "history at a link: victim '$(cat "$TMP/victim")', $(ls -l "$H")"
# entries are appended as they are sent (another chat's stay) and the file is cut to
# its last 1,000 at exit
rm -f "$H" && for i in $(seq 1 1005); do printf '#%d\nold %d\n' $((1700000000 + i)) $i; done >"$H"
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 4 --plain; echo EXITED \$?; sleep 600"
check_screen '^> *$' "--plain starts with 1,005 entries in the history file"
T send-keys -t ui 'trim me' Enter
# the keys reach the chat later than send-keys returns: the old prompt line still
# matches until then, so wait for the entry itself before another chat appends
i=0
until grep -q '^trim me$' "$H" 2>/dev/null || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
wait_screen '^> *$' || true
printf '#1800000000\nfrom another chat\n' >>"$H"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"
[ "$(grep -c '^#[0-9]*$' "$H")" = 1000 ] && [ "$(sed -n 2p "$H")" = "old 8" ] &&
	grep -q '^trim me$' "$H" && [ "$(tail -n 1 "$H")" = "from another chat" ] &&
	pass "the last 1,000 entries are kept, another chat's among them" ||
	fail "history after trimming: $(grep -c '^#' "$H") entries, $(sed -n 2p "$H"), last: $(tail -n 1 "$H")"
rm -f "$H" && mkfifo "$H"
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 4 --plain; echo EXITED \$?; sleep 600"
check_screen '^> *$' "--plain starts with a FIFO at the history file"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"
# a hard link there (the history is another name of some file): neither read nor
# appended to, and replaced at exit; a history open to others is made 0600
printf '#1700000000\nvictim entry\n' >"$TMP/victim" && chmod 644 "$TMP/victim"
rm -f "$H" && ln "$TMP/victim" "$H"
# plain_turn MESSAGE DESC: --plain started anew, MESSAGE sent and answered, then Ctrl-D
plain_turn() {
	restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 -n 4 --plain; echo EXITED \$?; sleep 600"
	check_screen '^> *$' "--plain starts $2"
	T send-keys -t ui "$1" Enter
	i=0 # until the prompt is back after the message
	until screen | awk -v m="> $1" '$0 == m { f = 1; next } f && /^> *$/ { ok = 1 }
		END { exit !ok }' || [ $i -ge $((WAIT * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	T send-keys -t ui C-d
	check_screen 'EXITED 0' "quits"
}
plain_turn 'hard linked' "with a hard link at the history file"
[ "$(cat "$TMP/victim")" = "$(printf '#1700000000\nvictim entry')" ] &&
	[ "$(stat -c %h "$TMP/victim")" = 1 ] && grep -q '^hard linked$' "$H" &&
	! grep -q 'victim entry' "$H" && [ "$(stat -c %a "$H")" = 600 ] &&
	pass "a hard link at the history: the other file untouched, a private history instead" ||
	fail "history at a hard link: victim '$(cat "$TMP/victim")', $(ls -l "$H"): $(cat "$H")"
chmod 644 "$H"
plain_turn 'loose mode' "with a history open to others"
grep -q '^hard linked$' "$H" && grep -q '^loose mode$' "$H" && [ "$(stat -c %a "$H")" = 600 ] &&
	pass "a history open to others is kept and made 0600" || fail "history at 0644: $(ls -l "$H")"
rm -f "$H"
# A system prompt is prefilled at start: the status bar counts its tokens before any
# message, as the plain mode's /ctx does.
restart "$QWENCHAT -m '$MODEL' --backend cpu --threads 2 --system 'Be brief.'; echo EXITED \$?; sleep 600"
check_screen 'ctx [1-9][0-9]*/' "--system: the context counts the system prompt at start"
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"
finish
