#!/bin/sh
# truncated.sh — a model file truncated under a running chat: the next message gives
# one line naming the file and exit status 1 (not SIGBUS, 135), and the conversation
# keeps the turns before it.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
M=$TMP/model
chat_model "$M" --vocab-size 151669
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
mkfifo "$TMP/in"
"$QWENCHAT" chat -m "$M" --backend cpu --threads 1 -n 4 <"$TMP/in" >"$TMP/out" 2>"$TMP/err" &
pid=$!
exec 3>"$TMP/in"
printf 'first question\n' >&3
i=0
while ! grep -q . "$TMP/out" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
truncate -s 4096 "$M/model.safetensors"
printf 'second question\n' >&3
exec 3>&-
wait $pid
rc=$?
[ $rc -eq 1 ] && pass "exit 1 after the file shrank" || fail "exit $rc: $(cat "$TMP/err")"
lines=$(grep -c 'qwenchat: ' "$TMP/err")
grep -q "^qwenchat: $M/model.safetensors: the file shrank while in use" "$TMP/err" && [ "$lines" -eq 1 ] &&
	pass "one line naming the file" || fail "stderr: $(cat "$TMP/err")"
f=$(cat "$TMP/state/qwenchat/last-session")
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m=m["messages"] if isinstance(m, dict) else m; sys.exit(0 if m[0]["content"] == "first question" and m[1]["role"] == "assistant" else 1)' "$f" &&
	pass "the first turn is saved" || fail "saved conversation: $(cat "$f")"
finish
