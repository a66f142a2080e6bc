#!/bin/sh
# ui-text.sh — how text lines up in the chat UI (driven in tmux, as ui.sh does): the
# token probabilities view pads tokens by display width (CJK, Cyrillic), a carriage
# return from the model is not drawn as '?' (a bidi override is), and the memory
# pane's figures fit the side pane. Every captured screen is printed into the log.
. "$TOP_SRCDIR/tests/lib.sh"

command -v tmux >/dev/null || { echo "SKIP: tmux not installed"; exit 77; }
grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h" || { echo "SKIP: --disable-tui"; exit 77; }
need_tokenizer

SOCK=qwenchat-uitext-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
export XDG_STATE_HOME="$TMP/state" HOME="$TMP" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
WAIT=30
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && WAIT=90

screen() { T capture-pane -p -t ui; }
shot() { echo "---- screen: $1 ----"; screen; echo "---- end of screen ----"; }
# load_answer FILE QUESTION ANSWER — /load of a conversation of one turn, written into
# $TMP/FILE; ANSWER goes in as a JSON string's text (its escapes, \n, \u202e, stay so)
load_answer() {
	printf '[{"role": "user", "content": "%s"},\n {"role": "assistant", "content": "%s"}]\n' \
		"$2" "$3" >"$TMP/$1"
	T send-keys -t ui "/load $TMP/$1" Enter
}
check_screen() {   # REGEX DESC
	if wait_screen "$1"; then pass "$2"; else fail "$2: screen lacks /$1/"; shot "failure: $2"; fi
}
# wait_lines REGEX N — until N lines of the screen match REGEX, or $WAIT seconds
wait_lines() {
	i=0
	while [ $i -lt $((WAIT * 10)) ]; do
		[ "$(screen | grep -cE -- "$1")" -ge "$2" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# input_is WANT DESC — the input line is WANT, once the keys sent have arrived (5 s at
# most); else it is shown byte by byte
input_is() {
	i=0
	while [ "$(screen | grep '^> ')" != "$1" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(screen | grep '^> ')" = "$1" ] && pass "$2" ||
		fail "$2: the input line is $(screen | grep '^> ' | od -c | head -3)"
}
# screen_has REGEX DESC SHOW — a line of the screen as it is now matches REGEX; else the
# lines matching SHOW go into the failure
screen_has() {
	if screen | grep -q "$1"; then pass "$2"; else fail "$2: $(screen | grep -E "$3" | tr '\n' '|')"; fi
}

# A model rigged to answer 世界 你好 " мир" " hello" 中国, then <|im_end|>.
R=$TMP/rig
chat_model "$R" --vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --no-tie --seed 3
python3 "$TOP_SRCDIR/tests/cli/rig-model.py" "$R" --end 151645 99489 108386 137144 23811 58695 ||
	{ fail "rig-model.py"; finish; }

T new-session -d -s ui -x 100 -y 30 "$QWENCHAT -m '$R' --backend cpu --threads 1 --greedy \
--repeat-penalty 10 --no-think -n 10; echo EXITED \$?; sleep 600"
T set-option -g escape-time 0 >/dev/null
check_screen 'Type a message' "the chat starts"

# 1. The probabilities view: each token's probability starts in the same column.
T send-keys -t ui '/debug probs' Enter
check_screen 'probabilities: drawn from' "/debug probs opens the view"
T send-keys -t ui 'hi' Enter
check_screen '中国' "the rigged answer is written"
check_screen '^Enter send \|' "the answer ends"
shot "probabilities of CJK and Cyrillic tokens"
screen >"$TMP/probs"
python3 - "$TMP/probs" <<'PY' && pass "probabilities line up whatever the token's script" ||
import sys, unicodedata as u
w = lambda s: sum(2 if u.east_asian_width(c) in "WF" else 1 for c in s)
cols = {}
for line in open(sys.argv[1], encoding="utf-8"):
    for tok in ("世界", "你好", " мир", " hello", "中国"):
        tok = "'" + tok + "'"  # quoted, so that spaces show
        if line.startswith(tok + " ") and " | " in line:
            cols[tok] = w(line[:line.index(" 1 (")])
print(cols)
sys.exit(0 if len(cols) == 5 and len(set(cols.values())) == 1 else 1)
PY
	fail "probabilities misaligned: $(grep -E "^'(世界|你好| мир| hello|中国)' " "$TMP/probs")"
T send-keys -t ui '/debug off' Enter

# 2. A carriage return (CRLF line ends) takes no column and is not drawn as '?'.
load_answer crlf.json 'Windows text' 'first line\r\nsecond line\r\n'
check_screen '^  second line *$' "a CRLF text is loaded"
shot "CRLF line ends"
screen_has '^  first line *$' "a carriage return is not drawn" 'first line'
# A bidi override (U+202E) would reorder what follows it on a terminal that orders text
# both ways: drawn as '?', as a control character is
load_answer rlo.json 'look' 'safe \u202etxt.exe'
check_screen '^  safe \?txt\.exe *$' "a bidi override is drawn as '?'"
# /load of a FIFO is refused at once: reading it would hold the chat until a writer came
mkfifo "$TMP/conv.fifo"
T send-keys -t ui "/load $TMP/conv.fifo" Enter
check_screen 'conv.fifo: not a regular file' "/load of a FIFO: refused, the chat free"
T send-keys -t ui C-a C-k # a failed command stays in the line, to be fixed

# 2b. Markdown's markers are not drawn, so they take no room in the wrap: at 40 columns
# (38 for the text) eight bold words fill a line as drawn, not as typed.
T resize-window -t ui -x 40 -y 30
load_answer md-wrap.json 'Markup' '**aaaa** **bbbb** **cccc** **dddd** **eeee** **ffff** **gggg** **hhhh**\n`one` `two` `three` `four` `five` `six` `seven`\n## Head *of* a **long** heading that wraps here now'
check_screen '^  one two' "bold words are loaded"
shot "Markdown wrapped at 40 columns"
screen_has '^  aaaa bbbb cccc dddd eeee ffff gggg *$' \
	"bold words wrap at the width they are drawn in" 'aaaa|hhhh'
screen_has '^  one two three four five six seven *$' \
	"inline code wraps at the width it is drawn in" 'one|seven'
screen_has '^  Head of a long heading that wraps here *$' "a heading's marker takes no room" \
	'Head|here'
# ... and nothing is lost to widths: a '*' that ends a row opens its italic as the
# layout read it, a run of no width (a zero-width space) does not end the row, and
# characters take the columns the terminal gives them (Devanagari vowel signs take
# one; utf8proc's tables said none, and the rows' ends went off the screen)
T resize-window -t ui -x 30 -y 30
load_answer md-widths.json 'Widths' '((((((((((((((((((((((((((((*abc* def\n`\u200b` tail words\nभारत एक विशाल देश है जिसकी संस्कृति बहुत पुरानी'
check_screen '^  abc def *$' "a '*' at a row's end opens its italic, and is not drawn"
check_screen 'tail words *$' "a zero-width run does not end the row"
screen | tr -d ' \n' | grep -q 'भारतएकविशालदेशहैजिसकीसंस्कृतिबहुतपुरानी' &&
	pass "Devanagari wraps with nothing lost" ||
	fail "Devanagari: $(screen | grep -E 'भारत|पुरानी' | tr '\n' '|')"
T resize-window -t ui -x 40 -y 30
# ... and a list item's wrapped lines go on under its text, not under its bullet
load_answer md-list.json 'List' '- first item whose words run on past the width\n  - nested item that also runs on past it'
check_screen '^  . first item whose words run on past' "a list is loaded"
screen | grep -q '^    the width *$' && screen | grep -q '^      it *$' &&
	pass "list items wrap with a hanging indent" ||
	fail "list wrap: $(screen | grep -E 'item|width|past' | tr '\n' '|')"
# ... and code spans as CommonMark reads them: ``a ` b`` holds a backtick, a lone
# one is text (both were dropped), and a span cut by the wrap stays one
load_answer md-ticks.json 'Ticks' '``a ` b`` and `c` then a lone ` tick\nwrapped `code span x y z that runs on` past'
check_screen '^  a ` b and c then a lone ` tick *$' "backticks inside a code span and a lone one are drawn"
screen | grep -q '^  wrapped code span x y z that runs on *$' && screen | grep -q '^  past *$' &&
	pass "a code span cut by the wrap is measured as drawn" ||
	fail "code span wrap: $(screen | grep -E 'wrapped|past' | tr '\n' '|')"
# ... and a mark of no width after a wide character that ends the row stays with it
# (drawn apart, it came after the cursor had left the row and was lost)
load_answer md-edge.json 'Edge' "$(printf '%036d' 0 | tr 0 a)\u4e2d\u0301X"
check_screen '^  X *$' "a wide character at the row's end is loaded"
screen | grep -q "^  $(printf '%036d' 0 | tr 0 a)$(printf '\344\270\255\314\201')" &&
	pass "a mark after a wide character at the row's end is drawn with it" ||
	fail "mark at the edge: $(screen | grep 'aaaa' | od -c | tail -n 3 | head -n 2)"
# ... and a break in a run of spaces starts no empty row
load_answer md-spaces.json 'Spaces' "$(printf '%038d' 0 | tr 0 a)   $(printf '%050d' 0 | tr 0 b)"
check_screen '^  bbbbbbbbbbbb *$' "a long run of b's is loaded"
screen | grep -A1 '^  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa *$' | tail -n 1 | grep -q '^  bbbb' &&
	pass "a break in a run of spaces starts no empty row" ||
	fail "spaces at a break: $(screen | grep -A2 'aaaa' | tr '\n' '|')"
# 2c. A tab reaches the next multiple of 8 columns, as on a terminal, in the wrap as
# on screen: in an answer, a code block and the input line.
load_answer tabs.json 'Tabs' 'abc\tdef\tghi\tjkl\tmno\tpqr\n```\n\tx = 1;\nab\tcd\n```'
check_screen '^  abc' "tabs are loaded"
shot "tabs at 40 columns"
screen | grep -q '^  abc     def     ghi     jkl     mno *$' && screen | grep -q '^  pqr *$' &&
	pass "tabs in an answer reach the next stop, and the line wraps there" ||
	fail "tabs in an answer: $(screen | grep -E 'abc|pqr' | tr '\n' '|')"
screen | grep -q "^$(printf '\342\224\202')         x = 1;" &&
	screen | grep -q "^$(printf '\342\224\202') ab      cd *$" &&
	pass "tabs in a code block reach the next stop" ||
	fail "tabs in code: $(screen | grep -E 'x = 1|cd' | tr '\n' '|')"
T send-keys -t ui -l "$(printf '\033[200~p\tq\033[201~')"
check_screen '^> p' "a pasted tab is in the input line"
screen_has '^> p       q *$' "a tab in the input line reaches the next stop" '^> '
T send-keys -t ui C-u
# 2d. The key hint leaves out whole items, the least useful first, and keeps /help.
for cols in 40 80 100; do
	T resize-window -t ui -x $cols -y 30
	sleep 0.5
	screen | tail -n 1 | python3 -c '
import sys
items = {"Enter send", "Alt-Enter newline", "Tab fold thinking", "PgUp/PgDn", "F2 debug",
         "/help", "Ctrl-D quit"}
line = sys.stdin.read().rstrip()
got = line.split(" | ")
print(got)
sys.exit(0 if len(line) <= int(sys.argv[1]) and set(got) <= items and "/help" in got else 1)' $cols &&
		pass "at $cols columns the key hint has whole items and /help" ||
		fail "key hint at $cols columns: '$(screen | tail -n 1)'"
done

# 2e. /help's rows wrap with a hanging indent: a description goes on in its own
# column (or a few columns in, where that column would leave too little), never at
# the row's start.
for cols in 80 60; do
	T resize-window -t ui -x $cols -y 80
	T send-keys -t ui '/help' Enter
	check_screen '^    //TEXT ' "/help at $cols columns"
	sleep 0.3
	[ $cols = 60 ] && shot "/help at 60 columns"
	screen | python3 -c '
import re, sys
lines = [l.rstrip("\n") for l in sys.stdin]
start = max(i for i, l in enumerate(lines) if "commands (a unique prefix" in l)
bad = []
for l in lines[start + 1:]:
    if not l.strip() or l.startswith(" rig |"):
        break  # the end of the notice, or of the conversation
    if re.match(r"    [/A-Z]|  keys:", l):
        continue  # a row of its own
    if len(l) - len(l.lstrip(" ")) < 8:
        bad.append(l)
print(bad)
sys.exit(1 if bad else 0)' && pass "at $cols columns /help wraps with a hanging indent" ||
		fail "/help at $cols columns: lines at the rows' start"
done
T resize-window -t ui -x 100 -y 30

# 3. The memory pane beside the chat (120 columns: 48 for the pane) shows every figure
# whole, the per-layer KV ones included, and how much of the RSS they account for.
T resize-window -t ui -x 120 -y 40
T send-keys -t ui '/debug memory' Enter
check_screen 'KV cache [0-9.]+ used, [0-9.]+ in memory *$' "the KV cache's figures fit the pane"
check_screen 'of [0-9.]+; per layer [0-9]+\.[0-9]{2} / [0-9]+\.[0-9]{2} *$' \
	"the per-layer figures are whole at the pane's edge"
check_screen 'host RSS [0-9.]+; the above [0-9.]+ \([0-9]+%\) *$' "the RSS is set against the figures"
shot "memory pane at 120x40"

T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"

# 3b. Tokens that are not whole characters (byte-level BPE pieces) show as U+FFFD in the
# probabilities and attention panes, as in the chat; a tab as \t; a token longer than
# the pane's text ends in "…", so that it never reads as another token. The model has
# Qwen3-0.6B's 16 heads, whose figures the attention pane wraps.
R2=$TMP/rig2
chat_model "$R2" --vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 2 \
	--heads 16 --kv-heads 4 --head-dim 8 --no-tie --seed 4
# b'\x82\xac', b'\x88' + 다, b'\xea\x93', a tab, b'\xf0\xac\x80', "//" and 48 dashes,
# U+0080 (a C1 control, which a terminal draws as nothing)
python3 "$TOP_SRCDIR/tests/cli/rig-model.py" "$R2" --end 151645 7492 19946 150824 197 103901 \
	30889 41416 || { fail "rig-model.py"; finish; }
T respawn-pane -k -t ui "$QWENCHAT -m '$R2' --backend cpu --threads 1 --greedy \
--repeat-penalty 10 --no-think -n 10; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "the chat starts on the byte-piece model"
T send-keys -t ui '/debug probs' Enter
T send-keys -t ui 'hi' Enter
# the idle key hint shows before the message is taken too: wait for the answer first
check_screen '^  [^│]*//-----' "the byte-piece answer is written"
check_screen '^Enter send \|' "the byte-piece answer ends"
shot "probabilities of byte pieces"
screen >"$TMP/pieces"
T send-keys -t ui '/debug attention' Enter
T send-keys -t ui 'again' Enter
check_screen '^  again' "the second message is taken"
wait_lines '^assistant' 2 || fail "the second answer does not start"
check_screen '^Enter send \|' "the second answer ends"
check_screen '[0-9]+ keys' "the attention pane shows the second answer"
shot "attention over byte pieces"
screen >"$TMP/attn"
python3 - "$TMP/pieces" "$TMP/attn" <<'PY' && pass "byte pieces show as U+FFFD, a tab as \\t, U+0080 as \\u0080, a cut token ends in …" ||
import sys
probs = open(sys.argv[1], "rb").read().decode("utf-8")
attn = open(sys.argv[2], "rb").read().decode("utf-8")
want = ["'\ufffd\ufffd' ", "'\ufffd\ub2e4' ", "'\\t' ", "'//----", "'\\u0080' "]
rows = [l.split("\u2502")[-1] for l in probs.splitlines()]  # the pane right of the bar
rows = [r for r in rows if r.startswith("'")]
print(rows)
ok = all(any(r.startswith(w) for r in rows) for w in want)
ok &= sum(r.startswith("'\ufffd' ") for r in rows) == 2  # two cut characters
ok &= any(r.startswith("'//") and "\u2026'" in r for r in rows)
# curses draws a byte it cannot show as ~X or M-X: none may reach either pane
ok &= not any(s in t for t in (probs, attn) for s in ("M-", "~@", "~S", "~B", "~H"))
sys.exit(0 if ok else 1)
PY
	fail "byte pieces: $(grep "│'" "$TMP/pieces" | tr '\n' '|')"
# 16 heads' figures wrap in the pane, each whole (a cut "3.41" reads as another number)
python3 - "$TMP/attn" <<'PY' && pass "the attention pane shows every head's figures whole" ||
import re, sys
pane = [l.split("\u2502")[-1].rstrip() for l in open(sys.argv[1], encoding="utf-8")]
start = next(i for i, l in enumerate(pane) if l.startswith("entropy (bits):"))
end = next(i for i, l in enumerate(pane) if l.startswith("top attended"))
text = " ".join(pane[start:end])
ent, share = text.split("first-token share:")
figs = [f.split() for f in (ent.split(":", 1)[1], share)]
print(figs)
sys.exit(0 if all(len(f) == 16 and all(re.fullmatch(r"\d+\.\d\d", x) for x in f)
                  for f in figs) else 1)
PY
	fail "the attention pane's head figures: $(grep -A4 entropy "$TMP/attn" | tr '\n' '|')"
# /undo takes the answer away: the panes show nothing of it, not an answer no longer there
T send-keys -t ui '/undo' Enter
check_screen 'attention: nothing captured yet' "after /undo the attention pane shows nothing"
T send-keys -t ui '/debug probs' Enter
check_screen 'probabilities: drawn from' "the probabilities pane again"
screen | grep -q "│'" && fail "after /undo the probabilities pane still shows the answer" ||
	pass "after /undo the probabilities pane shows nothing"
# a short window (100x10) still shows the pane, below the chat
T resize-window -t ui -x 100 -y 10
T send-keys -t ui '/debug memory' Enter
check_screen '^memory \(MiB\)' "a 10-row window shows the debug pane"
T resize-window -t ui -x 120 -y 40
T send-keys -t ui C-d
check_screen 'EXITED 0' "quits"

# 4. NO_COLOR (no-color.org), set and not empty: no colours, attributes only (the
# status bar in reverse video); empty, it asks for nothing.
# colour SGR parameters: 30-38, 40-48, 90-97, 100-107 (39 and 49, the default
# colours, are how tmux resets them)
has_colour() { python3 -c 'import re, sys
sgr = re.findall(r"\x1b\[([0-9;:]*)m", sys.stdin.read())
p = [int(x) for s in sgr for x in re.split("[;:]", s) if x]
sys.exit(0 if any(30 <= x <= 48 and x != 39 or 90 <= x <= 107 for x in p) else 1)'; }
restart() { T respawn-pane -k -t ui "printf '\\033[H\\033[2J'; $1"; T clear-history -t ui; }
for nc in 1 ''; do
	restart "NO_COLOR='$nc' $QWENCHAT -m '$R' --backend cpu --threads 1 -n 4; echo EXITED \$?; sleep 600"
	check_screen 'Type a message' "the chat starts with NO_COLOR='$nc'"
	T send-keys -t ui "/load $TMP/md-wrap.json" Enter
	check_screen '^  one two' "NO_COLOR='$nc': a conversation is shown"
	T send-keys -t ui '/frobnicate' Enter
	check_screen 'unknown command' "NO_COLOR='$nc': an error is shown"
	T capture-pane -e -p -t ui >"$TMP/attrs"
	if [ -n "$nc" ]; then
		has_colour <"$TMP/attrs" && fail "NO_COLOR=1: colours drawn" || pass "NO_COLOR=1: no colours"
		grep " rig | cpu" "$TMP/attrs" | grep -q "^$(printf '\033')\[[0-9;]*7m" &&
			pass "NO_COLOR=1: the status bar in reverse video" ||
			fail "NO_COLOR=1: the status bar: $(grep " rig | " "$TMP/attrs" | cat -v)"
		grep -q "$(printf '\033')\[1m[^ ]*aaaa" "$TMP/attrs" && pass "NO_COLOR=1: bold stays" ||
			fail "NO_COLOR=1: no bold"
	else
		has_colour <"$TMP/attrs" && pass "NO_COLOR='': colours" || fail "NO_COLOR='': no colours"
	fi
	T send-keys -t ui C-u C-d
	check_screen 'EXITED 0' "quits"
done

# 4b. An autosave failure (here the last-session pointer cannot be written: a
# directory in its place, which holds for root too) is told whole in the conversation,
# once, and marked short in the status bar.
restart "$QWENCHAT -m '$R' --backend cpu --threads 1 --greedy --no-think -n 4; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "the chat starts for the autosave failure"
L=$TMP/state/qwenchat/last-session
mv "$L" "$TMP/last-session.saved" && mkdir "$L"
T send-keys -t ui 'save me' Enter
check_screen ' autosave failed *$' "the status bar marks the failure"
# the first answer ends before the next message is sent (a slow build, the
# sanitizers', takes seconds; a message sent meanwhile stays in the input line, and
# ^D would then not quit): the idle key hint is back once it has
wait_screen '^Enter send \|' || true
T send-keys -t ui 'save me again' Enter
wait_screen '^  save me again' || true
# the answer must end before ^D quits (a slow build, the sanitizers', takes seconds):
# the idle key hint shows once the second answer has begun and ended
wait_lines '^assistant' 2 || true
wait_screen '^Enter send \|' || true
sleep 1
shot "autosave failure"
screen >"$TMP/scr"
python3 - "$TMP/scr" "$L" <<'PY' && pass "the failure is told whole in the conversation, once" ||
import re, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8")]
text = " ".join(l.strip() for l in lines[:-3])
n = len(re.findall(r"autosave failed: ", text))
whole = re.sub(r"\s", "", sys.argv[2]) in re.sub(r"\s", "", text)
print(n, whole)
sys.exit(0 if n == 1 and whole else 1)
PY
	fail "the autosave failure in the conversation: $(grep -n 'autosave' "$TMP/scr")"
T send-keys -t ui C-d
check_screen 'EXITED 1' "quits, saying the conversation is not saved"
rmdir "$L" && mv "$TMP/last-session.saved" "$L"

# 4c. A message too long for the context is refused and comes back into the input
# line (as /edit brings one back), out of the conversation, to be trimmed.
restart "$QWENCHAT -m '$R' --backend cpu --threads 1 --greedy --no-think --ctx 64 -n 4; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "the chat starts with a small context"
T send-keys -t ui '/ctx' Enter
check_screen 'context: 0 of 64 tokens used' "a notice before"
long=$(python3 -c 'print(" ".join(["word"] * 80))')
T send-keys -t ui -l "$long"
T send-keys -t ui Enter
check_screen 'the prompt is [0-9]+ tokens .*context holds 64|the context holds 64' \
	"a message too long for the context is refused"
check_screen '^> word word word' "the refused message is back in the input line"
check_screen 'the message is back in the input line' "... and a notice says so"
check_screen 'context: 0 of 64 tokens used' "... and the notices before it stay"
shot "refused message"
grep -q 'word word' "$(cat "$TMP/state/qwenchat/last-session")" &&
	fail "the refused message stays in the saved conversation" ||
	pass "the refused message is out of the saved conversation"
T send-keys -t ui C-u C-d
check_screen 'EXITED 0' "quits"
printf '%s\n%s\n' "$long" '/quit' | XDG_STATE_HOME="$TMP/state" "$QWENCHAT" -m "$R" --backend cpu \
	--threads 1 --ctx 64 -n 4 --plain >"$TMP/out" 2>"$TMP/err"
grep -q 'back in the input line' "$TMP/err" && grep -q '^(your last message was: word word' "$TMP/out" &&
	pass "the line mode gives a refused message back too" ||
	fail "line mode, refused message: $(cat "$TMP/err" "$TMP/out")"

# 4d. Editing a line recalled from the history and moving away leaves the history as
# it was sent.
restart "$QWENCHAT -m '$R' --backend cpu --threads 1 --greedy --no-think -n 4; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "the chat starts for the history"
T send-keys -t ui 'first line' Enter
check_screen '^  first line' "a first message"
check_screen '^Enter send \|' "... answered"
T send-keys -t ui Up
check_screen '^> first line *$' "Up recalls it"
T send-keys -t ui -l ' changed'
check_screen '^> first line changed *$' "the recalled line is edited"
T send-keys -t ui Down
check_screen '^> *$' "Down moves away from it"
T send-keys -t ui 'second line' Enter
check_screen '^  second line' "a second message"
check_screen '^Enter send \|' "... answered"
T send-keys -t ui Up Up
sleep 0.5
screen_has '^> first line *$' "the history keeps the line as sent" '^> '
T send-keys -t ui C-u C-d
check_screen 'EXITED 0' "quits"

# 5. A terminal that cannot address the cursor (TERM=dumb: Emacs's M-x shell) or has
# no terminfo entry gets the line mode, with a line on stderr saying why.
for term in dumb no-such-terminal; do
	restart "TERM=$term $QWENCHAT -m '$R' --backend cpu --threads 1 -n 4; echo EXITED \$?; sleep 600"
	check_screen "^qwenchat: TERM=$term (cannot move the cursor|has no terminfo entry): the line mode instead" \
		"TERM=$term: says it goes on in the line mode"
	T send-keys -t ui '/sampling' Enter
	check_screen '^temp [0-9.]+, top-k' "TERM=$term: the line mode takes commands"
	T send-keys -t ui C-d
	check_screen 'EXITED 0' "TERM=$term: quits"
done
shot "TERM=no-such-terminal"

# 6. An answer cut by -n says so (it would otherwise look finished).
restart "$QWENCHAT -m '$R' --backend cpu --threads 1 --greedy --repeat-penalty 10 --no-think -n 2; echo EXITED \$?; sleep 600"
check_screen 'Type a message' "the chat starts with -n 2"
T send-keys -t ui 'hi' Enter
check_screen 'the answer stops at 2 tokens, the -n limit' "an answer cut by -n says so"
# 6b. A tool's result is headed as one (it was shown as a "system prompt")
cat >"$TMP/tool.json" <<'EOF'
{"messages": [{"role": "user", "content": "weather?"},
 {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
  "function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
 {"role": "tool", "content": "ToolSays 20C"},
 {"role": "assistant", "content": "It is 20C."}]}
EOF
T send-keys -t ui "/load $TMP/tool.json" Enter
check_screen 'loaded 4 messages' "a conversation with a tool result loads"
screen | grep -B1 '^  ToolSays 20C' | head -n 1 | grep -q '^tool result' &&
	pass "a tool's result is headed 'tool result'" ||
	{ fail "tool result heading"; shot "failure: tool result"; }

# 7. Left, Right and Backspace move by what a reader calls a character: a flag (two
# regional indicators) and an emoji with its skin tone are never split.
T send-keys -t ui -l "$(printf 'x\360\237\207\253\360\237\207\267y')"
T send-keys -t ui Left Left BSpace
T send-keys -t ui -l "$(printf 'a\360\237\221\215\360\237\217\275b')"
T send-keys -t ui Left Left BSpace Right Right
T send-keys -t ui -l 'Z'
input_is "$(printf '> \360\237\221\215\360\237\217\275bZ\360\237\207\253\360\237\207\267y')" \
	"editing steps over flags and skin tones whole"
# Backspace takes a whole cluster too: a flag, then a family joined by zero-width
# joiners (readline bound the terminal's erase key to its own rubout over ours)
T send-keys -t ui C-e C-u
T send-keys -t ui -l "$(printf 'x\360\237\221\250\342\200\215\360\237\221\251\342\200\215\360\237\221\247\360\237\207\253\360\237\207\267Z')"
T send-keys -t ui Left BSpace BSpace
T send-keys -t ui -l 'Q'
input_is '> xQZ' "Backspace deletes a flag and a joined family whole"
# Keys readline has no command for type nothing (F5 typed its "~"), nor does a mouse
# report in the X10 form (\e[M and three bytes)
# (Home, End and Delete still work: Delete takes a flag whole, whatever the inputrc
# binds it to)
T send-keys -t ui C-e C-u
T send-keys -t ui -l "$(printf 'ab \360\237\207\253\360\237\207\267cd')"
T send-keys -t ui F5 F7 Home
T send-keys -t ui -l 'X'
T send-keys -t ui F9 F11 BTab End Left Left Left DC
printf '\033[M`!!' >"$TMP/x10"
T load-buffer -b x10 "$TMP/x10"
T paste-buffer -b x10 -t ui
T send-keys -t ui -l 'Y'
input_is '> Xab Ycd' "function keys and an X10 mouse report type nothing"
T send-keys -t ui C-e C-u C-d
check_screen 'EXITED 0' "quits"
finish
