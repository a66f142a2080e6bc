#!/bin/sh
# train-paths.sh — paths a run saves in train-state/state.json: one that is not UTF-8
# (JSON holds UTF-8 alone) is refused up front in one line, never silently dropped
# from the state (a run that could then never be resumed); a link at the lock's name.
. "$TOP_SRCDIR/tests/lib.sh"

python3 - "$TMP" <<'PY'
import random, struct, sys
r = random.Random(3)
ids = b"".join(struct.pack("<I", r.randrange(256)) for _ in range(2000))
open(sys.argv[1].encode() + b"/d\xff.u32", "wb").write(ids)
open(sys.argv[1].encode() + b"/ok.u32", "wb").write(ids)
PY
BAD=$(printf '%s/d\377.u32' "$TMP")
RUN="--vocab-size 256 --layers 1 --hidden-size 32 --heads 2 --ctx 16 --batch 2 --threads 1 --no-panel --steps 2"

expect_exit 2 "--data with a non-UTF-8 path" "$QWENCHAT" train --out "$TMP/r1" $RUN --data "$BAD"
expect_err_has "not valid UTF-8" "--data with a non-UTF-8 path: said in one line"
[ ! -e "$TMP/r1" ] && pass "--data with a non-UTF-8 path: nothing created" ||
	fail "--data with a non-UTF-8 path: $TMP/r1 was created"

expect_exit 2 "--val with a non-UTF-8 path" "$QWENCHAT" train --out "$TMP/r2" $RUN \
	--data "$TMP/ok.u32" --val "$BAD"
expect_err_has "not valid UTF-8" "--val with a non-UTF-8 path: said in one line"

# --val with its files forgotten: the next option is not taken for a file
expect_exit 2 "--val followed by an option" "$QWENCHAT" train --out "$TMP/r4" \
	--data "$TMP/ok.u32" --val --steps 2 --vocab-size 256 --layers 1
expect_err_has "--val needs a file before the next option" "... said in one line"
[ ! -e "$TMP/r4" ] && pass "... nothing created" || fail "--val --steps: $TMP/r4 was created"

# --threads 0 is no count (the other commands refuse it too)
expect_exit 2 "--threads 0" "$QWENCHAT" train --out "$TMP/r5" --data "$TMP/ok.u32" \
	--vocab-size 256 --layers 1 --threads 0
expect_err_has "--threads: 0 is out of range [1, 1024]" "... said in one line"
expect_exit 2 "--threads -1" "$QWENCHAT" train --out "$TMP/r5" --data "$TMP/ok.u32" \
	--vocab-size 256 --layers 1 --threads -1
expect_err_has "--threads: -1 is out of range [1, 1024]" "... said with the same range"

# a run whose paths JSON holds is saved with them and resumes
expect_exit 0 "a run with UTF-8 paths" "$QWENCHAT" train --out "$TMP/r3" $RUN --data "$TMP/ok.u32"
expect_exit 0 "... resumes" "$QWENCHAT" train --resume "$TMP/r3" --steps 3 --no-panel

# a link planted at the lock's name is refused as every planted link is, its target
# untouched
echo precious >"$TMP/victim"
rm -f "$TMP/r3/.train.lock" && ln -s "$TMP/victim" "$TMP/r3/.train.lock"
expect_exit 1 "a link at .train.lock" "$QWENCHAT" train --resume "$TMP/r3" --steps 4 --no-panel
expect_err_has ".train.lock: is a symbolic link (refused" "a link at .train.lock: said so"
[ "$(cat "$TMP/victim")" = precious ] && pass "... its target untouched" || fail "victim written"

# a refused --out is left as it was: a link at train-state/ or at .checkpoint.new
for l in train-state .checkpoint.new; do
	rm -rf "$TMP/o" && mkdir "$TMP/o" && ln -s "$TMP/elsewhere" "$TMP/o/$l"
	expect_exit 1 "--out holding a link at $l" "$QWENCHAT" train --out "$TMP/o" $RUN \
		--data "$TMP/ok.u32"
	[ "$(ls -A "$TMP/o")" = "$l" ] && pass "... refused, the directory as it was" ||
		fail "--out with a link at $l: left $(ls -A "$TMP/o" | tr '\n' ' ')"
done

# a run starting in --out holds files of its own (a cache being written) before its
# first checkpoint: a second run says the directory is in use, not that they are foreign
rm -rf "$TMP/busy" && mkdir -p "$TMP/busy/train-state" && : >"$TMP/busy/train-state/.data.u32.tmp.1"
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w"); time.sleep(30)' \
	"$TMP/busy/.train.lock" "$TMP/held" &
held=$!
i=0 # until the lock is held
while [ ! -e "$TMP/held" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
expect_exit 1 "--out in use by another run" "$QWENCHAT" train --out "$TMP/busy" $RUN --data "$TMP/ok.u32"
expect_err_has "another 'qwenchat train' is using it" "... said so"
kill $held 2>/dev/null; wait $held 2>/dev/null

# a path too long for the system: the reason is said whole after it
long=$TMP$(python3 -c "print('/' + '/'.join(['x' * 250] * 18))")
expect_exit 1 "an --out path longer than the system takes" "$QWENCHAT" train --out "$long" $RUN \
	--data "$TMP/ok.u32"
tail -n 1 "$TMP/err" | grep -q ": File name too long$" && pass "... the reason ends the line" ||
	fail "long --out: $(tail -c 120 "$TMP/err")"

finish
