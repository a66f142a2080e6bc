#!/bin/sh
# resume-lock.sh — two chats that --resume the same conversation keep both: the
# second finds it open in the first and goes on in a copy, so neither overwrites the
# other's turns; once the first has left, --resume reopens the file itself.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
M=$TMP/model
chat_model "$M" --vocab-size 151669
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
Q() { "$QWENCHAT" chat -m "$M" --backend cpu --threads 1 -n 8 --seed 1 "$@"; }
turns() { python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m=m["messages"] if isinstance(m, dict) else m; print(" | ".join(t["content"] for t in m if t["role"] == "user"))' "$1"; }

printf 'first question\n' | Q >/dev/null 2>&1 || fail "the first chat failed"
orig=$(cat "$TMP/state/qwenchat/last-session")

# A resumes and waits for input on a FIFO; B resumes the same conversation meanwhile.
mkfifo "$TMP/a-in"
Q --resume <"$TMP/a-in" >"$TMP/a-out" 2>"$TMP/a-err" &
a=$!
exec 3>"$TMP/a-in"
i=0
while [ ! -e "$orig.lock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
printf 'second from B\n' | Q --resume >"$TMP/b-out" 2>"$TMP/b-err"
grep -q "is open in another qwenchat; resumed its 2 messages into a copy" "$TMP/b-err" &&
	pass "the second resume says the conversation is open and starts a copy" ||
	fail "second resume: $(cat "$TMP/b-err")"
copy=$(sed -n 's/.*into a copy, //p' "$TMP/b-err")
printf 'second from A\n' >&3
exec 3>&-
wait $a || fail "the first chat failed: $(cat "$TMP/a-err")"
[ "$(turns "$orig")" = "first question | second from A" ] && pass "the original holds A's turns" ||
	fail "original: $(turns "$orig")"
[ -n "$copy" ] && [ "$(turns "$copy")" = "first question | second from B" ] &&
	pass "the copy holds B's turns" || fail "copy '$copy': $(turns "$copy" 2>&1)"
[ ! -e "$orig.lock" ] && pass "the lock is gone with the chat that held it" || fail "stale lock"

# Nobody holds it now: --resume reopens the last written one (A's) itself.
printf '/quit\n' | Q --resume >/dev/null 2>"$TMP/c-err"
grep -q "resumed 4 messages from $orig" "$TMP/c-err" && pass "a later resume reopens the file" ||
	fail "later resume: $(cat "$TMP/c-err")"
finish
