#!/bin/sh
# signals.sh — SIGTERM and SIGHUP in the middle of an answer end the chat as Ctrl-C
# ends an answer: the message and the partial answer are in the saved conversation,
# the terminal is restored, the exit status is 128 + the signal (143, 129). Plain
# mode, the full-screen UI (in tmux; there a SIGINT from outside too, 130) and `run`.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
M=$TMP/model
# The tokenizer's 151669 ids: a random model never samples an id it lacks, and each
# token costs a full-vocabulary product, so an answer of thousands takes seconds.
chat_model "$M" --vocab-size 151669 --max-position 16384
export HOME="$TMP"

# wait_for FILE PATTERN SECONDS — until FILE matches PATTERN; 1 on timeout.
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $(($3 * 10)) ] && return 1
		sleep 0.1
	done
}

# saved_partial STATE DESC — the last session holds the message and a non-empty answer.
saved_partial() {
	f=$(cat "$1/qwenchat/last-session" 2>/dev/null)
	if python3 - "$f" <<'PY'; then pass "$2"; else fail "$2 ($f)"; fi
import json, sys
m = json.load(open(sys.argv[1]))
t = m["messages"] if isinstance(m, dict) else m
ok = len(t) == 2 and t[0]["content"] == "Tell me a long story" and t[1]["role"] == "assistant" \
    and (t[1].get("content") or t[1].get("reasoning_content"))
sys.exit(0 if ok else 1)
PY
}

# --- plain mode ------------------------------------------------------------------------
for sig in TERM HUP; do
	want=$([ $sig = TERM ] && echo 143 || echo 129)
	st=$TMP/state-$sig
	mkfifo "$TMP/in-$sig"
	(printf 'Tell me a long story\n'; exec sleep 60) >"$TMP/in-$sig" &
	feeder=$!
	# (env: the signals' default actions, whatever this script was started with, such
	# as SIGHUP ignored under nohup: the chat keeps a signal ignored)
	XDG_STATE_HOME=$st env --default-signal "$QWENCHAT" chat -m "$M" --backend cpu --threads 1 \
		--ctx 16384 <"$TMP/in-$sig" >"$TMP/out-$sig" 2>"$TMP/err-$sig" &
	pid=$!
	if wait_for "$TMP/out-$sig" . 60; then
		sleep 0.3
		kill -$sig $pid
		wait $pid
		rc=$?
		[ $rc -eq "$want" ] && pass "plain SIG$sig mid-answer exits $want" ||
			fail "plain SIG$sig: exit $rc, stderr $(head -c 300 "$TMP/err-$sig")"
		saved_partial "$st" "plain SIG$sig: the message and the partial answer are saved"
	else
		fail "plain SIG$sig: no answer started"
		kill $pid
	fi
	kill $feeder 2>/dev/null
done

# SIGINT between turns (Ctrl-C at the prompt) ends the chat too: 130, the conversation
# saved and its lock let go (the default action left the lock file behind)
st=$TMP/state-INT
mkfifo "$TMP/in-INT"
(printf 'Hello\n'; exec sleep 60) >"$TMP/in-INT" &
feeder=$!
# (a job a script puts in the background starts with SIGINT ignored, which the chat
# keeps: env gives it the default action, as a terminal's foreground job has)
XDG_STATE_HOME=$st env --default-signal "$QWENCHAT" chat -m "$M" --backend cpu --threads 1 -n 3 \
	<"$TMP/in-INT" >"$TMP/out-INT" 2>"$TMP/err-INT" &
pid=$!
if wait_for "$st/qwenchat/last-session" . 60 &&
   wait_for "$(cat "$st/qwenchat/last-session")" assistant 60; then
	sleep 0.3
	kill -INT $pid
	wait $pid
	rc=$?
	[ $rc -eq 130 ] && [ -z "$(find "$st" -name '*.lock')" ] &&
		pass "plain SIGINT at the prompt exits 130, no lock left" ||
		fail "plain SIGINT at the prompt: exit $rc, $(find "$st" -name '*.lock')"
else
	fail "plain SIGINT: no answer saved"
	kill $pid
fi
kill $feeder 2>/dev/null

# ... and a SIGINT the chat started with ignored (nohup, a script's background job)
# stays ignored: the answer goes on, the chat ends at the end of its input
printf 'Tell me a long story\n' | XDG_STATE_HOME=$TMP/state-IGN env --ignore-signal=INT "$QWENCHAT" chat \
	-m "$M" --backend cpu --threads 1 -n 300 >"$TMP/out-IGN" 2>"$TMP/err-IGN" &
pid=$!
wait_for "$TMP/out-IGN" . 60
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
[ $rc -eq 0 ] && ! grep -q 'stopped' "$TMP/err-IGN" &&
	pass "plain: a SIGINT ignored at the start stays ignored" ||
	fail "plain: an ignored SIGINT: exit $rc, $(cat "$TMP/err-IGN")"

# --- the full-screen UI ---------------------------------------------------------------------
# (SIGINT too: sent from outside, as on the UI's screen Ctrl-C is a key). Each signal has
# its own tmux server: a new session on a socket whose server is still shutting down is
# lost with it. The pane stays after the chat ends (remain-on-exit), and the chat's pid
# is the pane shell's child, not a pattern another process could match.
if command -v tmux >/dev/null; then
	trap 'for s in TERM INT; do tmux -L qwenchat-signals-$$-$s kill-server 2>/dev/null; done
	      rm -rf "$TMP"' EXIT
	for sig in TERM INT; do
		want=$([ $sig = TERM ] && echo 143 || echo 130)
		S=qwenchat-signals-$$-$sig
		T() { tmux -L "$S" -f /dev/null "$@"; }
		st=$TMP/state-tui-$sig
		T new-session -d -x 100 -y 30 \
			"XDG_STATE_HOME=$st '$QWENCHAT' chat -m '$M' --backend cpu --threads 1 --ctx 16384; echo EXIT=\$?; exec sleep 300" ||
			{ fail "UI SIG$sig: tmux new-session failed"; continue; }
		T set-option -g remain-on-exit on >/dev/null
		shell=$(T display-message -p '#{pane_pid}')
		i=0
		until T capture-pane -p | grep -q 'Type a message'; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
		done
		T send-keys 'Tell me a long story' Enter
		i=0
		until T capture-pane -p | grep -q 'decode [1-9]'; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
		done
		pid=$(pgrep -P "$shell" -f "chat -m" | head -n 1)
		if [ -n "$pid" ]; then
			kill -$sig "$pid"
		else
			fail "UI SIG$sig: no chat process under the pane's shell $shell"
		fi
		i=0
		until T capture-pane -p | grep -q 'EXIT='; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
		done
		screen=$(T capture-pane -p)
		echo "$screen" | grep -q "EXIT=$want" && pass "UI SIG$sig mid-answer exits $want" ||
			fail "UI SIG$sig: $(echo "$screen" | tail -n 5)"
		echo "$screen" | grep -q 'conversation saved in' && pass "UI SIG$sig restores the terminal" ||
			fail "UI SIG$sig: no closing line"
		saved_partial "$st" "UI SIG$sig: the message and the partial answer are saved"
		T kill-server 2>/dev/null
	done
fi

# --- run ---------------------------------------------------------------------------------------
# stop_run SIG — a long answer of run, sent SIG once it streams; its exit status in rc,
# stderr in $TMP/run-SIG.err, the threads' masks in $blocked. The random model may
# sample an end-of-turn token within the first second (about 1 run in 100); then it has
# ended before the signal, and the run is tried again. (env: a background job of a
# script starts with SIGINT ignored, which run keeps.)
stop_run() {
	rc=none
	out=$TMP/run-$1.out
	err=$TMP/run-$1.err
	for attempt in 1 2 3; do
		: >"$out" # emptied here: wait_for must not see an earlier attempt's text
		env --default-signal "$QWENCHAT" run -m "$M" --backend cpu --threads 2 --ctx 16384 \
			-p 'Tell me a long story' >"$out" 2>"$err" &
		pid=$!
		wait_for "$out" . 60 || wait_for "$err" . 1
		sleep 0.3
		# SIGHUP, SIGINT and SIGTERM (mask bits 0, 1 and 14) blocked in every thread
		# but the main one, so that the kernel hands a signal to the thread that acts
		blocked=$(for t in /proc/$pid/task/*; do
			m=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$t/status" 2>/dev/null) || continue
			[ -n "$m" ] || continue
			echo "$([ "${t##*/}" = $pid ] && echo main || echo worker) $(((0x$m & 0x4003) == 0x4003))"
		done | sort | uniq -c | tr -s ' \n' '  ')
		if kill -"$1" $pid 2>/dev/null; then
			wait $pid
			rc=$?
			return
		fi
		wait $pid
		echo "run ended before SIG$1 (exit $?), attempt $attempt" >&2
	done
}
stop_run TERM
[ "$rc" = 143 ] && pass "run SIGTERM exits 143" || fail "run SIGTERM: exit $rc"
case "$blocked" in
*main\ 0*worker\ 1*) case "$blocked" in *main\ 1* | *worker\ 0*) ok=no ;; *) ok=yes ;; esac ;;
*) ok=no ;;
esac
[ $ok = yes ] && pass "run: stop signals are blocked in the worker threads only" ||
	fail "run: the threads' signal masks (count, thread, blocked): $blocked"
grep -q '^qwenchat: interrupted' "$TMP/run-TERM.err" && pass "run SIGTERM says so" ||
	fail "run SIGTERM: $(tail -c 200 "$TMP/run-TERM.err")"
# SIGINT (Ctrl-C) stops it as well: 130, as the chat and train exit
stop_run INT
[ "$rc" = 130 ] && grep -q '^qwenchat: interrupted' "$TMP/run-INT.err" &&
	pass "run SIGINT: 'interrupted', exit 130" || fail "run SIGINT: exit $rc, $(tail -c 200 "$TMP/run-INT.err")"
finish
