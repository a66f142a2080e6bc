#!/bin/sh
# truncated.sh — a model file truncated under a running chat: the next message gives
# one line naming the file and exit status 1 (not SIGBUS, 135), and the conversation
# keeps the turns before it. Under quantize: the same line (without the chat's words),
# and its temporary file removed.
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

# quantize reading a model truncated under it (q4_k_m of this shape takes seconds)
B=$TMP/big
"$TOP_BUILDDIR/tests/mkmodel" --out "$B" --vocab-size 300 --hidden-size 1024 --intermediate-size 3072 \
	--layers 8 --heads 8 --kv-heads 4 --head-dim 128 >/dev/null || fail "mkmodel big"
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$B/tokenizer.json"
mkdir "$TMP/q"
"$QWENCHAT" quantize -m "$B" --type q4_k_m --out "$TMP/q/q.gguf" 2>"$TMP/qerr" &
pid=$!
i=0
while ! ls "$TMP"/q/.q.gguf.tmp.* >/dev/null 2>&1 && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
truncate -s 8192 "$B/model.safetensors"
wait $pid
rc=$?
if [ $rc -eq 1 ] && [ -z "$(ls -A "$TMP/q")" ] &&
   [ "$(cat "$TMP/qerr" | tr '\r' '\n' | grep '^qwenchat: ')" = \
     "qwenchat: $B/model.safetensors: the file shrank while in use (truncated or replaced in place); stopping" ]; then
	pass "quantize: the source truncated mid-write: one line, exit 1, no temporary file left"
else
	fail "quantize, source truncated: exit $rc, left $(ls -A "$TMP/q"), $(cat "$TMP/qerr")"
fi
finish
