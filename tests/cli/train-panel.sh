#!/bin/sh
# train-panel.sh — `qwenchat train` on a terminal (a tmux pane): the live panel (a
# progress bar, the loss and learning-rate curves in block characters, tok/s, ETA)
# within the pane's width, also once the pane is narrowed; Ctrl-C saves the step under
# way and exits 130, leaving the panel's last state on screen with the lines that say
# so below it and the cursor visible; the checkpoint loads and resumes. With stderr a
# file, or TERM=dumb, the progress is plain lines, without escape sequences in the file;
# an evaluation shows while it runs (that of --steps 0 too), and no stale line stays.
# Every captured screen is printed (tests/cli/train-panel.log).
. "$TOP_SRCDIR/tests/lib.sh"

command -v tmux >/dev/null || { echo "SKIP: tmux not installed"; exit 77; }
grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h" || { echo "SKIP: --disable-tui"; exit 77; }

# The data: the project's own text (shipped with it); a BPE tokenizer made from it.
DATA=$TOP_SRCDIR/README.md
VAL=$TOP_SRCDIR/tests/README.md
"$QWENCHAT" train-bpe -q --vocab-size 400 --special '<|endoftext|>' --special '<|im_start|>' \
	--special '<|im_end|>' --out "$TMP/tok" "$DATA" || { echo "train-bpe failed" >&2; exit 1; }

SOCK=qwenchat-train-panel-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
export LANG=C.UTF-8 LC_ALL=C.UTF-8
WAIT=30
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && WAIT=90
R=$TMP/run
# Steps enough to outlast the test: Ctrl-C ends the run.
ARGS="--tokenizer $TMP/tok --layers 2 --hidden-size 64 --heads 4 --kv-heads 2"
ARGS="$ARGS --intermediate-size 96 --data $DATA --val $VAL --ctx 16 --batch 4 --threads 2"

# capture FILE — the screen, wrapped lines joined (a line wider than the pane shows as
# one long line), printed into the log.
capture() {
	T capture-pane -p -J -t tr >"$1"
	echo "---- screen ($(T display -p -t tr '#{window_width}x#{window_height}')) ----"
	cat "$1"
	echo "---- end of screen ----"
}
screen() { T capture-pane -p -t tr; }
# check_panel FILE WIDTH DESC — the panel is the last lines of the screen from its
# progress bar down: 4 to 8 lines, none wider than WIDTH, with every element, and
# no stale copy of it above.
check_panel() {
	if panel_ok "$1" "$2"; then pass "$3"; else fail "$3"; fi
}
panel_ok() {
	python3 - "$1" "$2" <<'EOF'
import re, sys, unicodedata
rows = [l.rstrip() for l in open(sys.argv[1], encoding="utf-8").read().split("\n")]
width = int(sys.argv[2])
while rows and not rows[-1]:
    rows.pop()
bar = re.compile(r"^step \d+/1000000 \[[█▉▊▋▌▍▎▏ ]+\] +\d+\.\d%$")
tops = [i for i, r in enumerate(rows) if r.startswith("step ") and "/1000000 " in r]
ok = True
def need(cond, what):
    global ok
    if not cond:
        print("panel: " + what, file=sys.stderr)
        ok = False
need(len(tops) == 1, f"{len(tops)} progress lines on screen, 1 wanted")
panel = rows[tops[-1]:] if tops else []
text = "\n".join(panel)
cols = lambda s: sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
need(4 <= len(panel) <= 8, f"{len(panel)} lines")
need(panel and bar.match(panel[0]), "no progress bar 'step N/1000000 [...] P%'")
need(re.search(r"^loss \d+\.\d{4}  val \d+\.\d{4} +[▁▂▃▄▅▆▇█]{3,}$", text, re.M),
     "no loss line with a sparkline")
need(re.search(r"^lr \d\.\d\de-\d\d +[▁▂▃▄▅▆▇█]{3,}$", text, re.M), "no lr line with a sparkline")
need(re.search(r"\b\d+ tok/s\b", text), "no tok/s")
need(re.search(r"\bETA (\d+s|\d+m\d\ds|\d+h\d\dm)\b", text), "no ETA")
need(re.search(r"\belapsed \d", text), "no elapsed time")
need(re.search(r"grad norm \d", text), "no grad norm")
need(re.search(r"^checkpoint: ", text, re.M), "no checkpoint/eval line")
wide = [r for r in panel if cols(r) > width]
need(not wide, f"lines wider than {width}: {wide}")
sys.exit(0 if ok else 1)
EOF
}

# ---- the panel ------------------------------------------------------------------------
T new-session -d -s tr -x 80 -y 24 "TERM=screen '$QWENCHAT' train --out '$R' $ARGS \
	--steps 1000000 --eval-every 200 --save-every 1000000; echo \$? >'$TMP/rc0'; \
	stty -a >'$TMP/stty'; mv '$TMP/rc0' '$TMP/rc'; sleep 600"
if wait_screen '^loss [0-9.]+  val [0-9.]+ '; then # the first evaluation is in
	sleep 1                                     # a few redraws and evaluations more
	capture "$TMP/scr"
	check_panel "$TMP/scr" 80 "the panel in an 80-column pane"
	# keys typed meanwhile are not echoed into it (an echoed Enter moved the cursor
	# off the panel's first line: the next draw left a copy above)
	T send-keys -t tr 'typedkeys' Enter Enter
	sleep 1
	capture "$TMP/scr"
	if ! grep -q typedkeys "$TMP/scr" && panel_ok "$TMP/scr" 80; then
		pass "keys typed during the run are not echoed into the panel"
	else
		fail "keys typed during the run show in the panel or break it"
	fi
else
	fail "no panel within $WAIT s"
	capture "$TMP/scr"
fi
T resize-window -t tr -x 52 -y 24
# the panel is redrawn at the next step or evaluation after the resize: on a loaded
# machine that may take a while
i=0
while [ $i -lt $((WAIT * 2)) ]; do
	sleep 0.5
	T capture-pane -p -J -t tr >"$TMP/scr"
	panel_ok "$TMP/scr" 52 2>/dev/null && break
	i=$((i + 1))
done
capture "$TMP/scr"
check_panel "$TMP/scr" 52 "the panel once the pane is narrowed to 52 columns"
shown=$(sed -n 's|^step \([0-9]*\)/1000000 .*|\1|p' "$TMP/scr" | tail -n 1)
sleep 0.5
T capture-pane -p -t tr >"$TMP/scr2"
later=$(sed -n 's|^step \([0-9]*\)/1000000 .*|\1|p' "$TMP/scr2" | tail -n 1)
[ -n "$shown" ] && [ "${later:-0}" -gt "$shown" ] && pass "the panel is redrawn as steps go ($shown, $later)" ||
	fail "the panel does not advance: '$shown' then '$later'"
# a pane shorter than the panel: it keeps above the last row (it put a copy of itself
# into the history at every redraw), the history growing only by the evaluations'
# lines, as in a tall pane; then it comes back whole
h0=$(T display -p -t tr '#{history_size}')
sleep 2
h1=$(T display -p -t tr '#{history_size}')
T resize-window -t tr -x 52 -y 3
sleep 1
h2=$(T display -p -t tr '#{history_size}')
sleep 2
h3=$(T display -p -t tr '#{history_size}')
[ "$((h3 - h2))" -le "$((h1 - h0 + 8))" ] &&
	pass "a 3-row pane: the panel does not scroll (the history grew by $((h1 - h0)), then $((h3 - h2)) rows)" ||
	fail "a 3-row pane: the history grew by $((h3 - h2)) rows in 2 s, $((h1 - h0)) in a tall pane"
T resize-window -t tr -x 52 -y 24

# ---- Ctrl-C -------------------------------------------------------------------------------
T send-keys -t tr C-c
i=0
while [ ! -s "$TMP/rc" ] && [ $i -lt $((WAIT * 10)) ]; do sleep 0.1; i=$((i + 1)); done
capture "$TMP/scr"
rc=$(cat "$TMP/rc" 2>/dev/null)
[ "$rc" = 130 ] && pass "Ctrl-C: exit 130" || fail "Ctrl-C: exit '$rc', 130 wanted"
n=$(sed -n 's|^stopped at step \([0-9]*\): continue with .*|\1|p' "$TMP/scr")
last=$(sed -n 's|^step \([0-9]*\)/1000000 .*|\1|p' "$TMP/scr" | tail -n 1)
after=$(sed -n '/^step [0-9]*\/1000000 /,$p' "$TMP/scr" | grep -v '^$' | tail -n 3)
if [ -n "$n" ] && [ "$n" = "$last" ] &&
   printf '%s\n' "$after" | head -n 1 | grep -qF "saved $R at step $n (" &&
   printf '%s\n' "$after" | sed -n 2p | grep -qE "trained (steps 1-$n|step $n) in " &&
   printf '%s\n' "$after" | tail -n 1 | grep -qF "stopped at step $n: continue with"; then
	pass "the panel's last state (step $n) stays, the saved, trained and stopped lines below it"
else
	fail "after Ctrl-C: panel at step '$last', stopped at '$n', last lines: $after"
fi
[ "$(T display -p -t tr '#{cursor_flag}')" = 1 ] && pass "the cursor is visible again" ||
	fail "the cursor is left hidden"
grep -qE '(^| )echo( |$)' "$TMP/stty" && pass "the terminal's echo is on again" ||
	fail "the terminal's echo is left off: $(cat "$TMP/stty")"
n=${n:-0}
saved=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' \
	"$R/train-state/state.json" 2>/dev/null)
logged=$(grep -c '"loss"' "$R/train-log.jsonl" 2>/dev/null)
[ "$saved" = "$n" ] && [ "$logged" = "$n" ] && pass "train-state and the log are at step $n" ||
	fail "train-state at step '$saved', $logged steps logged, $n wanted"
expect_exit 0 "the checkpoint loads (info)" "$QWENCHAT" info -m "$R"
expect_exit 0 "the checkpoint answers (run)" "$QWENCHAT" run -m "$R" -p hello -n 4 --threads 2

# ---- plain lines ------------------------------------------------------------------------
# stderr a file: a line a step, no escape sequence
to=$((n + 20))
expect_exit 0 "--resume continues to step $to" "$QWENCHAT" train --resume "$R" --steps $to
cp "$TMP/err" "$TMP/plain"
saved=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' \
	"$R/train-state/state.json" 2>/dev/null)
[ "$saved" = "$to" ] && pass "train-state at step $to after --resume" ||
	fail "train-state at step '$saved' after --resume, $to wanted"
lines=$(grep -cE "^step [0-9]+/$to  loss [0-9.]+  val [0-9.]+  lr .* tok/s .* ETA " "$TMP/plain")
if [ "$lines" = 20 ] && ! grep -q "$(printf '\033')" "$TMP/plain" &&
   ! grep -q "$(printf '\r')" "$TMP/plain"; then
	pass "stderr a file: 20 plain step lines, no escape sequence"
else
	fail "stderr a file: $lines step lines, or escapes: $(od -c "$TMP/plain" | grep -m 1 '033')"
fi
# TERM=dumb on a terminal: plain lines too, no panel (the pane wide enough for them)
T resize-window -t tr -x 160 -y 40
T respawn-pane -k -t tr "printf '\\033[H\\033[2J'; TERM=dumb '$QWENCHAT' train --resume '$R' --steps $((to + 10)); \
	echo EXITED \$?; sleep 600"
T clear-history -t tr
wait_screen '^EXITED' || fail "TERM=dumb: the run did not end"
capture "$TMP/scr"
if [ "$(grep -cE "^step [0-9]+/$((to + 10))  loss " "$TMP/scr")" = 10 ] &&
   grep -q '^EXITED 0' "$TMP/scr" && ! grep -q '[▁▂▃▄▅▆▇█]' "$TMP/scr"; then
	pass "TERM=dumb: plain step lines, no panel"
else
	fail "TERM=dumb: not 10 plain step lines"
fi
# --no-panel: one line rewritten in place, within the pane's width (the fields that do
# not fit left out): a wider one wrapped and left a row behind at every step
T resize-window -t tr -x 60 -y 20
T respawn-pane -k -t tr "printf '\\033[H\\033[2J'; '$QWENCHAT' train --resume '$R' --steps $((to + 40)) \
	--no-panel; echo EXITED \$?; sleep 600"
T clear-history -t tr
wait_screen '^EXITED' || fail "--no-panel: the run did not end"
T capture-pane -p -S - -t tr >"$TMP/hist"
rows=$(grep -cE '^step [0-9]+/[0-9]+  loss|matmul peak|  ETA ' "$TMP/hist")
if [ "$rows" -le 1 ] && grep -q '^EXITED 0' "$TMP/hist"; then
	pass "--no-panel at 60 columns: the line is rewritten in place, no rows left behind"
else
	fail "--no-panel at 60 columns: $rows rows of progress in the history"
	cat "$TMP/hist"
fi
T resize-window -t tr -x 160 -y 40

# ---- --steps 0: the evaluation shows while it runs ------------------------------------------
# (100,000 held-out ids in rows of 16, a fifth of them under the sanitizers: seconds);
# the screen left at the end shows its result and the checkpoint, no stale "starting"
n=100000
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && n=20000
python3 -c 'import array, random, sys; r = random.Random(5)
sys.stdout.buffer.write(array.array("I", [r.randrange(256) for _ in range(int(sys.argv[1]))]).tobytes())' \
	$n >"$TMP/bigv.u32"
T respawn-pane -k -t tr "printf '\\033[H\\033[2J'; TERM=screen '$QWENCHAT' train --out '$TMP/zero' \
	--tokenizer '$TMP/tok' --layers 2 --hidden-size 64 --heads 4 --kv-heads 2 --data '$DATA' \
	--val '$TMP/bigv.u32' --ctx 16 --batch 1 --threads 2 --steps 0; echo EXITED \$?; sleep 600"
T clear-history -t tr
wait_screen '^checkpoint: none yet +evaluating step 0 on --val' &&
	pass "--steps 0: the panel says the evaluation is running" ||
	{ capture "$TMP/scr"; fail "--steps 0: no 'evaluating step 0' while it runs"; }
WAIT=$((WAIT * 4)) wait_screen '^EXITED' || fail "--steps 0: the run did not end"
capture "$TMP/scr"
if grep -q '^EXITED 0' "$TMP/scr" && ! grep -q '^starting' "$TMP/scr" &&
   grep -q '^checkpoint: step 0 ([0-9.]* s) *eval: step 0, val_loss ' "$TMP/scr"; then
	pass "--steps 0: the screen left shows the checkpoint and the evaluation"
else
	fail "--steps 0: the screen left: $(grep -v '^$' "$TMP/scr" | tail -n 4)"
fi
finish
