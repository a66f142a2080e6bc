#!/bin/sh
# train-signals.sh — `qwenchat train` stopped by a signal: SIGINT, SIGTERM or SIGHUP
# finishes the step under way (or abandons an evaluation), saves it and exits 128 + the
# signal, and the resumed run repeats an uninterrupted one bit for bit; a second signal,
# or one before the first step, stops at once and names the checkpoint kept; SIGHUP
# ignored under nohup stays ignored; a closed pipe on stderr saves as a hangup does.
. "$TOP_SRCDIR/tests/lib.sh"

# Token ids below 1000 (fixed).
python3 - "$TMP" <<'EOF'
import random, struct, sys
d = sys.argv[1]
r = random.Random(11)
ids = lambda n: b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(n))
open(f"{d}/d.u32", "wb").write(ids(8000))
open(f"{d}/v.u32", "wb").write(ids(1000))
EOF
SHAPE="--layers 2 --hidden-size 64 --heads 4 --kv-heads 2 --intermediate-size 96"
IDS="--vocab-size 1000 $SHAPE --data $TMP/d.u32 --val $TMP/v.u32"

# stop SIG DIR STEPS — starts a run, sends SIG once 3 steps are logged; the exit status.
# SIGHUP as a terminal sends it and SIGINT as Ctrl-C does: not ignored, whatever this
# shell was started with (nohup) or gives a background job (SIGINT); a shell cannot
# reset an ignored signal, so python does before the exec.
stops_default() { # run in the background: the subshell's pid becomes the program's
	exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL); signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
# wait_steps DIR [N] — until the run in DIR has logged N steps, 3 by default (five
# minutes at most: the runs below with steps of a second take 17 s a step under ASan
# on an AVX2 machine)
wait_steps() {
	i=0
	while [ "$(cat "$1/train-log.jsonl" 2>/dev/null | grep -c '"loss"')" -lt "${2:-3}" ] &&
	      [ $i -lt 6000 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
stop() {
	stops_default "$QWENCHAT" train --out "$2" $IDS --ctx 32 --batch 8 --threads 2 \
		--cosine-steps "$3" --steps "$3" --save-every 100000 --eval-every 100000 \
		2>"$TMP/err-$1" &
	pid=$!
	wait_steps "$2"
	kill -"$1" $pid
	wait $pid
}
# sigint_after PATTERN FILE PID [SECONDS] — once FILE holds PATTERN (30 s at most), half
# a second more or SECONDS (into the evaluation that follows), then SIGINT to PID; rc is
# its exit status
sigint_after() {
	i=0
	while ! grep -q "$1" "$2" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep "${4:-0.5}"
	kill -INT "$3"
	wait "$3"
	rc=$?
}
stop INT "$TMP/sig" 150
rc=$?
n=$(grep -c '"loss"' "$TMP/sig/train-log.jsonl")
saved=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' \
	"$TMP/sig/train-state/state.json" 2>/dev/null)
if [ "$rc" -eq 130 ] && [ "$saved" = "$n" ] && [ "$n" -lt 150 ]; then
	pass "SIGINT: the step under way finished and saved (step $n), exit 130"
else
	fail "SIGINT: exit $rc, saved step '$saved', $n steps logged: $(tail -n 2 "$TMP/err-INT")"
fi
"$QWENCHAT" train --resume "$TMP/sig" 2>"$TMP/err" || fail "resume after SIGINT: $(tail -n 2 "$TMP/err")"

# SIGINT during a long evaluation (a million held-out tokens in rows of 16: seconds) stops
# it: the step is saved at once, without a validation record.
python3 -c 'import array, random, sys; r = random.Random(3)
sys.stdout.buffer.write(array.array("I", [r.randrange(1000) for _ in range(10**6)]).tobytes())' \
	>"$TMP/bigv.u32"
env --default-signal=INT "$QWENCHAT" train --out "$TMP/sig-eval" --vocab-size 1000 $SHAPE --data "$TMP/d.u32" \
	--val "$TMP/bigv.u32" --ctx 16 --batch 1 --threads 2 --steps 5 --eval-every 1 \
	2>"$TMP/err-eval" &
sigint_after '"loss"' "$TMP/sig-eval/train-log.jsonl" $!
if [ "$rc" -eq 130 ] && ! grep -q val_loss "$TMP/sig-eval/train-log.jsonl" &&
   grep -q '"step": 1,' "$TMP/sig-eval/train-state/state.json"; then
	pass "SIGINT during an evaluation: abandoned, step 1 saved, exit 130"
else
	fail "SIGINT during an evaluation: exit $rc: $(tail -n 2 "$TMP/err-eval")"
fi
cp -a "$TMP/sig-eval" "$TMP/sig-eval2"
# a resume that adds --val and is stopped in its first evaluation (of the checkpoint's
# step, before any step of its own) saves nothing: the hint gives the --val again. Its
# last line before the evaluation comes before the product-rate measurement (a fraction
# of a second, more under a sanitizer) and the evaluation takes seconds: two seconds
# after that line the run is evaluating.
"$QWENCHAT" train --out "$TMP/sig-addval" --vocab-size 1000 $SHAPE --data "$TMP/d.u32" \
	--ctx 16 --batch 1 --threads 2 --steps 2 2>"$TMP/err" || fail "a run to add --val to"
env --default-signal=INT "$QWENCHAT" train --resume "$TMP/sig-addval" --steps 4 --eval-every 2 --val "$TMP/bigv.u32" \
	2>"$TMP/err-addval" &
sigint_after '^lr ' "$TMP/err-addval" $! 2
if [ "$rc" -eq 130 ] &&
   grep -qF "continue with 'qwenchat train --resume $TMP/sig-addval --val $TMP/bigv.u32'" \
	"$TMP/err-addval"; then
	pass "SIGINT in the first evaluation of a resume that added --val: the hint repeats it"
else
	fail "stopped resume that added --val: exit $rc: $(tail -n 2 "$TMP/err-addval")"
fi
# the evaluation a stop kept from running is the resumed run's first work (here its only
# work: it ends at step 1), so that its log is an uninterrupted run's
"$QWENCHAT" train --resume "$TMP/sig-eval" --steps 1 --eval-tokens 4096 >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^{"step": 1, "val_loss"' "$TMP/sig-eval/train-log.jsonl" &&
   grep -q '^{"step": 1, "val_loss"' "$TMP/sig-eval/train-state/log.jsonl" &&
   "$QWENCHAT" train --resume "$TMP/sig-eval" --steps 1 2>&1 | grep -q 'nothing to do'; then
	pass "resumed after a stop during an evaluation: it runs first, and is saved"
else
	fail "the evaluation a stop skipped: exit $rc: $(tail -n 2 "$TMP/err")"
fi
# resumed with options under which step 1 is not due (--eval-every 4, to step 2): it was
# due when the stop kept it from running, so it still runs first
"$QWENCHAT" train --resume "$TMP/sig-eval2" --steps 2 --eval-every 4 --eval-tokens 4096 \
	>/dev/null 2>"$TMP/err"
rc=$?
evals=$(sed -n 's/^{"step": \([0-9]*\), "val_loss".*/\1/p' "$TMP/sig-eval2/train-log.jsonl" |
	tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$evals" = "1 2 " ]; then
	pass "a stopped evaluation runs on a resume whose options would not have asked for it"
else
	fail "the stopped evaluation, resumed with --eval-every 4: exit $rc, evaluated at '$evals'"
fi
# SIGINT during the evaluation of a --steps 0 run's initial weights (sent once its log
# exists: the evaluation comes next, the run has begun): the weights are saved without
# the record, exit 130; the resumed run (here to step 1) evaluates them first.
env --default-signal=INT "$QWENCHAT" train --out "$TMP/sig-zero" --vocab-size 1000 $SHAPE --data "$TMP/d.u32" \
	--val "$TMP/bigv.u32" --ctx 16 --batch 1 --threads 2 --steps 0 2>"$TMP/err-zero" &
pid=$!
i=0
while [ ! -e "$TMP/sig-zero/train-log.jsonl" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.5
kill -INT $pid
wait $pid
rc=$?
if [ "$rc" -eq 130 ] && [ -f "$TMP/sig-zero/model.safetensors" ] &&
   ! grep -q val_loss "$TMP/sig-zero/train-log.jsonl" &&
   "$QWENCHAT" train --resume "$TMP/sig-zero" --steps 1 --eval-tokens 4096 >/dev/null 2>"$TMP/err" &&
   head -n 1 "$TMP/sig-zero/train-log.jsonl" | grep -q '^{"step": 0, "val_loss"' &&
   grep -q '^{"step": 1, "loss"' "$TMP/sig-zero/train-log.jsonl"; then
	pass "SIGINT during a --steps 0 evaluation: the weights saved, exit 130; resumed, evaluated first"
else
	fail "SIGINT during a --steps 0 evaluation: exit $rc: $(tail -n 2 "$TMP/err-zero" "$TMP/err")"
fi
# a signal during the run's last step: saved, but the final evaluation did not run, so
# exit 130 (not 0) and the resumed run runs it. (Sent once step 2 is logged: it may come
# before that step's own check for a stop, so the run stops at step 2, evaluated or not,
# and the resumed run does the rest; either way exit 130 and the log ends evaluated.)
env --default-signal=INT "$QWENCHAT" train --out "$TMP/sig-last" --vocab-size 1000 --layers 2 --hidden-size 256 --heads 4 \
	--intermediate-size 768 --data "$TMP/d.u32" --val "$TMP/d.u32" --eval-tokens 512 \
	--ctx 256 --batch 16 --threads 2 --steps 3 --eval-every 100 2>"$TMP/err-last" &
pid=$!
wait_steps "$TMP/sig-last" 2
kill -INT $pid
wait $pid
rc=$?
at=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' \
	"$TMP/sig-last/train-state/state.json" 2>/dev/null)
if [ "$rc" -eq 130 ] && { [ "$at" = 2 ] || ! grep -q val_loss "$TMP/sig-last/train-log.jsonl"; } &&
   "$QWENCHAT" train --resume "$TMP/sig-last" >/dev/null 2>"$TMP/err" &&
   grep -q '^{"step": 3, "val_loss"' "$TMP/sig-last/train-log.jsonl"; then
	pass "SIGINT during the last step: saved (step $at), exit 130, the resumed run evaluates"
else
	fail "SIGINT during the last step: exit $rc, step '$at': $(tail -n 2 "$TMP/err-last" "$TMP/err")"
fi
"$QWENCHAT" train --out "$TMP/nosig" $IDS --ctx 32 --batch 8 --threads 2 --cosine-steps 150 \
	--steps 150 --save-every 100000 --eval-every 100000 2>"$TMP/err"
same_run "stopped by SIGINT and resumed == uninterrupted (150 steps)" "$TMP/nosig" "$TMP/sig"
stop HUP "$TMP/sighup" 400
rc=$?
[ "$rc" -eq 129 ] && [ -f "$TMP/sighup/model.safetensors" ] &&
	pass "SIGHUP (a closed terminal): saved, exit 129" ||
	fail "SIGHUP: exit $rc: $(tail -n 2 "$TMP/err-HUP")"
# ignored_goes_on SIG DIR DESC — a run started with SIG ignored is sent SIG once 3
# steps are logged: it stays ignored, the run goes on to its end (exit 0, 60 steps)
ignored_goes_on() {
	(exec python3 -c 'import os, signal, sys
signal.signal(getattr(signal, "SIG" + sys.argv[1]), signal.SIG_IGN)
os.execv(sys.argv[2], sys.argv[2:])' "$1" "$QWENCHAT" train --out "$2" $IDS --ctx 32 \
		--batch 8 --threads 2 --steps 60 --eval-every 100000 2>"$2.err") &
	pid=$!
	wait_steps "$2"
	kill -"$1" $pid
	wait $pid
	rc=$?
	[ "$rc" -eq 0 ] && [ "$(grep -c '"loss"' "$2/train-log.jsonl")" -eq 60 ] &&
		pass "$3: the run goes on to its end" ||
		fail "$3: exit $rc: $(tail -n 2 "$2.err")"
}
ignored_goes_on HUP "$TMP/nohup" "under nohup (SIGHUP ignored)"
# started in the background of a shell without job control (SIGINT ignored, so that a
# Ctrl-C meant for the shell's foreground leaves it alone)
ignored_goes_on INT "$TMP/bg" "SIGINT ignored (a background job)"
# a second signal stops at once, and says which checkpoint DIR holds (steps of a
# second or so, so that it comes before the first one's step is done)
# twice DIR ERR STEPS ARGS... — a run of steps of a second or so into DIR, sent SIGINT
# once STEPS are logged, then again once the first is taken (two sent before the
# process runs are one); its exit status in rc
twice() {
	dir=$1 err=$2 steps=$3
	shift 3
	stops_default "$QWENCHAT" train --out "$dir" --vocab-size 1000 --layers 2 --hidden-size 512 \
		--heads 8 --intermediate-size 1536 --data "$TMP/d.u32" --ctx 256 --batch 8 \
		--threads 2 --steps 50 "$@" 2>"$err" &
	pid=$!
	wait_steps "$dir" "$steps"
	kill -"${SIG:-INT}" $pid
	i=0
	while ! grep -q 'stopping after this step' "$err" && [ $i -lt 1200 ]; do
		sleep 0.01
		i=$((i + 1))
	done
	kill -"${SIG:-INT}" $pid
	wait $pid
	rc=$?
}
# ... but not a second SIGHUP: a closed terminal sends two (the kernel's and the
# shell's), and the step under way is saved
SIG=HUP twice "$TMP/hup2" "$TMP/err-hup2" 1
[ "$rc" -eq 129 ] && [ -f "$TMP/hup2/model.safetensors" ] && ! grep -q 'stopped at once' "$TMP/err-hup2" &&
	pass "two SIGHUPs: the step under way is saved, exit 129" ||
	fail "two SIGHUPs: exit $rc: $(tail -n 2 "$TMP/err-hup2")"
twice "$TMP/twice" "$TMP/err-twice" 3 --save-every 2
# said_at_once RC ERR DESC — exit 130, and the line naming the checkpoint twice holds (step
# 2 unless a loaded machine was slower than the steps)
said_at_once() {
	[ "$1" -eq 130 ] && grep -q "stopped at once: .*twice holds the checkpoint of step [1-9][0-9]* " "$2" &&
		pass "$3" || fail "$3: exit $1: $(tail -n 2 "$2")"
}
said_at_once $rc "$TMP/err-twice" "a second SIGINT stops at once and names the checkpoint kept"
# ... and a new run without a checkpoint yet, stopped at once in a step, leaves nothing
# of its own (its log, its caches, the lock, the directory) behind
twice "$TMP/nosave/run" "$TMP/err-nosave" 1 --save-every 1000
if grep -q "nothing was saved" "$TMP/err-nosave"; then
	[ "$rc" -eq 130 ] && [ ! -e "$TMP/nosave" ] &&
		pass "a new run stopped at once before its first checkpoint leaves nothing" ||
		fail "stopped before its first checkpoint: exit $rc, left $(find "$TMP/nosave" | head -n 5)"
else # the machine was slow to send the second: the step was saved first
	[ "$rc" -eq 130 ] && [ -f "$TMP/nosave/run/model.safetensors" ] &&
		pass "a new run stopped at once after its first save keeps it" ||
		fail "stopped at once: exit $rc: $(tail -n 2 "$TMP/err-nosave")"
fi
# a signal after the run's opening lines but before its first step (the matrix-product
# peak is measured then) stops at once and says so too
env --default-signal=INT "$QWENCHAT" train --resume "$TMP/twice" --steps 50 2>"$TMP/err-early" &
pid=$!
i=0
while ! grep -q '^lr ' "$TMP/err-early" && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
kill -INT $pid
wait $pid
rc=$?
said_at_once $rc "$TMP/err-early" "a SIGINT before the resumed run's first step names the checkpoint kept"
[ ! -e "$TMP/twice/.train.lock" ] && pass "... and leaves no lock file in the model" ||
	fail "a resumed run stopped at once left $TMP/twice/.train.lock"
stop TERM "$TMP/sigterm" 400
rc=$?
[ "$rc" -eq 143 ] && [ -f "$TMP/sigterm/model.safetensors" ] &&
	pass "SIGTERM: saved, exit 143" || fail "SIGTERM: exit $rc: $(tail -n 2 "$TMP/err-TERM")"

# stderr into a pipe that closes (| head): the step under way is saved, exit 141 as for
# SIGPIPE, and the run resumes
rm -rf "$TMP/pipe"
("$QWENCHAT" train --out "$TMP/pipe" $IDS --steps 100000 --save-every 100000 --eval-every 100000 \
	--ctx 16 --batch 2 --threads 1 --no-panel 2>&1; echo $? >"$TMP/pipe-rc") | head -n 2 >/dev/null
i=0
while [ ! -s "$TMP/pipe-rc" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$TMP/pipe-rc")" = 141 ] && [ -f "$TMP/pipe/train-state/state.json" ] &&
	"$QWENCHAT" train --resume "$TMP/pipe" --steps 2 --no-panel >/dev/null 2>&1 &&
	pass "a closed stderr pipe: the step saved, exit 141, the run resumes" ||
	fail "a closed stderr pipe: exit $(cat "$TMP/pipe-rc"), $(ls "$TMP/pipe" 2>&1 | tr '\n' ' ')"

finish
