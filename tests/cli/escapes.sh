#!/bin/sh
# escapes.sh — escape sequences in untrusted text never reach a terminal: a loaded
# conversation in plain mode, the model's own output on a terminal (run and the plain
# chat, under a pseudo-terminal from script(1)), and names in `qwenchat list`; while
# `run` into a pipe stays byte-exact for scripts.
. "$TOP_SRCDIR/tests/lib.sh"

command -v script >/dev/null || { echo "SKIP: script(1) missing (Debian: bsdutils)"; exit 77; }
need_tokenizer
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
ESC=$(printf '\033')

# has_raw_escape FILE — FILE holds an ESC or BEL byte other than the ones script(1)
# and the chat's own dim/reset codes write (those are ESC[2m and ESC[0m).
has_raw_escape() {
	sed "s/${ESC}\[[02]m//g" "$1" | grep -q "${ESC}\|$(printf '\007')"
}

# --- a conversation file that tries to retitle, clear and write the clipboard -------
M=$TMP/model
chat_model "$M" --vocab-size 151669
mkdir -p "$TMP/state/qwenchat"
printf '[{"role":"user","content":"hi \\u001b]0;PWNED\\u0007 \\u001b[2J"},
  {"role":"assistant","content":"ok \\u001b]52;c;aGk=\\u0007 \\u009b2J"}]' >"$TMP/evil.json"
echo "$TMP/evil.json" >"$TMP/state/qwenchat/last-session"
printf '/quit\n' | "$QWENCHAT" chat -m "$M" --backend cpu --threads 1 --resume >"$TMP/out" 2>"$TMP/err"
grep -q 'hi ^\[\]0;PWNED^G ^\[\[2J' "$TMP/out" && pass "a resumed turn shows its escapes as ^[" ||
	fail "resumed turn: $(head -c 300 "$TMP/out" | od -c | head -5)"
has_raw_escape "$TMP/out" && fail "an escape byte reached stdout on --resume" ||
	pass "no escape byte reaches stdout on --resume"
grep -q "$(printf 'ok ^\\[\\]52;c;aGk=^G \357\277\275')2J" "$TMP/out" && pass "the C1 CSI becomes U+FFFD" ||
	fail "C1 control"

# --- a model rigged to write ESC]0;PWNED BEL ESC[2J ---------------------------------
R=$TMP/rig
chat_model "$R" --vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --no-tie --seed 3
ids=$(printf '\033]0;PWNED\007\033[2J' | "$QWENCHAT" tokenize -m "$R")
# The tokenizer gives two ESC tokens; the rig needs each id once: the payload is cut
# at the second ESC, which the title sequence alone shows.
first=$(echo "$ids" | awk '{for (i = 1; i <= NF; i++) if (!seen[$i]++) printf "%s ", $i}')
# shellcheck disable=SC2086
python3 "$TOP_SRCDIR/tests/cli/rig-model.py" "$R" --end 151645 $first || { fail "rig-model.py"; finish; }
RUN="$QWENCHAT run -m $R --backend cpu --threads 1 --greedy --repeat-penalty 10 --no-think -n 20 -p hi"
$RUN >"$TMP/piped" 2>/dev/null
grep -q "${ESC}]0;PWNED" "$TMP/piped" && pass "run into a pipe keeps the bytes as they are" ||
	fail "run into a pipe changed the bytes: $(od -c "$TMP/piped" | head -3)"
script -qec "$RUN" /dev/null >"$TMP/tty" 2>&1
grep -q '\^\[\]0;PWNED\^G' "$TMP/tty" && pass "run on a terminal shows the sequence as text" ||
	fail "run on a terminal: $(od -c "$TMP/tty" | head -5)"
has_raw_escape "$TMP/tty" && fail "run let an escape byte through to the terminal" ||
	pass "run on a terminal writes no escape byte"
script -qec "printf 'hi\n/quit\n' | $QWENCHAT chat --plain -m $R --backend cpu --threads 1 --greedy --repeat-penalty 10 --no-think -n 20" \
	/dev/null >"$TMP/plaintty" 2>&1
grep -q '\^\[\]0;PWNED\^G' "$TMP/plaintty" && pass "plain chat shows the model's escapes as text" ||
	fail "plain chat: $(od -c "$TMP/plaintty" | head -5)"

# --- cache folder names in `qwenchat list` --------------------------------------------
C=$TMP/hub
snap="$C/models--Evil--Name${ESC}]0;PWNED$(printf '\007')/snapshots/0123456789012345678901234567890123456789"
mkdir -p "$snap"
cp "$M/config.json" "$M/tokenizer.json" "$snap/"
HF_HUB_CACHE=$C "$QWENCHAT" list >"$TMP/list" 2>&1
grep -q 'Evil/Name^\[\]0;PWNED^G' "$TMP/list" && pass "list shows a name's escapes as text" ||
	fail "list: $(od -c "$TMP/list" | head -5)"
has_raw_escape "$TMP/list" && fail "list printed an escape byte" || pass "list prints no escape byte"

# --- an error quoting a value with a newline stays one line ---------------------------
printf '[{"role":"x\\ny\\r","content":"a"}]' >"$TMP/role.json"
expect_exit 1 "a role with a newline" "$QWENCHAT" template -m "$M" --messages "$TMP/role.json"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q 'unknown role "x^Jy^M"' "$TMP/err" &&
	pass "the error is one line, the newline shown as ^J" || fail "error: $(od -c "$TMP/err" | head -5)"
# a usage error quotes the argument: a newline or a terminal sequence in it is text too
expect_exit 2 "an argument with a newline" "$QWENCHAT" run -m "$M" -p hi "$(printf 'ju\nnk')"
[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "'ju^Jnk'" "$TMP/err" &&
	pass "a usage error is one line, the newline shown as ^J" ||
	fail "usage error: $(od -c "$TMP/err" | head -5)"
expect_exit 2 "an option that retitles the terminal" "$QWENCHAT" run "--x${ESC}]0;PWNED$(printf '\007')"
has_raw_escape "$TMP/err" && fail "a usage error printed an escape byte" ||
	pass "a usage error prints no escape byte"
grep -q "x^\[\]0;PWNED^G'" "$TMP/err" && pass "... and shows the sequence as text" ||
	fail "usage error: $(od -c "$TMP/err" | head -5)"
finish
