#!/bin/sh
# model-paths.sh — a -m that names something on disk that is not a model (an empty
# directory, a weights file, a text file) gets one message from every command, not
# whichever file that command happened to open first; what is a model still opens.
. "$TOP_SRCDIR/tests/lib.sh"

need_tokenizer
export XDG_STATE_HOME="$TMP/state" HOME="$TMP" HF_HUB_OFFLINE=1
M=$TMP/model
chat_model "$M" --vocab-size 151669
mkdir "$TMP/empty"
printf '# notes\n' >"$TMP/README.md"
head -c 4096 /dev/zero >"$TMP/zeros.gguf"
echo '[{"role": "user", "content": "hi"}]' >"$TMP/conv.json"

# each command with what it needs besides -m; stdin is empty or two ids. The commands
# that need only the tokenizer name the file they would do with.
for bad in "$TMP/empty" "$M/model.safetensors" "$TMP/README.md" "$TMP/zeros.gguf"; do
	for cmd in "run -p hi" "chat --plain" "tokenize" "detokenize" "info" "bench -p 4 -n 2 -r 1" \
		"logits --out $TMP/l.f32" "template --messages $TMP/conv.json" "serve --port 1" \
		"quantize --type q8_0 --out $TMP/q.gguf"; do
		name=${cmd%% *}
		case $name in
		tokenize | detokenize | template) alone=" or tokenizer.json" ;;
		*) alone="" ;;
		esac
		want="$bad is not a model directory (no config.json$alone), a .gguf file or a repo id"
		[ -f "$bad" ] && want="$bad is a file, not a .gguf file: name the model's directory, a .gguf file or a repo id"
		[ "$bad" = "$TMP/zeros.gguf" ] && want="$bad: not a GGUF file (no \"GGUF\" magic at its start)"
		# shellcheck disable=SC2086
		echo 1 2 | "$QWENCHAT" $cmd -m "$bad" >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if [ $rc -eq 1 ] && [ "$(cat "$TMP/err")" = "qwenchat: $want" ]; then
			pass "$name -m $(basename "$bad"): one message"
		else
			fail "$name -m $(basename "$bad"): exit $rc, stderr: $(head -c 300 "$TMP/err")"
		fi
	done
done

# what is a model still opens: a tokenizer-only directory for the tokenizer commands,
# and a GGUF known by its magic when its name lacks .gguf (an ollama blob)
mkdir "$TMP/tok"
cp "$M/tokenizer.json" "$TMP/tok/"
printf 'hi' | "$QWENCHAT" tokenize -m "$TMP/tok" >"$TMP/out" 2>"$TMP/err" && [ -s "$TMP/out" ] &&
	pass "tokenize: a directory with only tokenizer.json" || fail "tokenizer-only: $(cat "$TMP/err")"
expect_exit 1 "info: a directory with only tokenizer.json is not a model" "$QWENCHAT" info -m "$TMP/tok"
expect_err_has "$TMP/tok is not a model directory (no config.json)" "... and says so"
"$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/m.gguf" 2>"$TMP/err" &&
	mv "$TMP/m.gguf" "$TMP/sha256-0123" || fail "quantize: $(cat "$TMP/err")"
expect_exit 0 "info: a GGUF without the .gguf name" "$QWENCHAT" info -m "$TMP/sha256-0123"

# an empty name is no model, directory or file (not the default model, not the current
# directory)
for cmd in "info -m" "run -p hi -m" "perplexity -m $M -f $TMP/README.md --kl-base" \
	"train --out $TMP/run --data $TMP/README.md --layers 1 --tokenizer"; do
	flag=$(echo "$cmd" | awk '{print $NF}')
	# shellcheck disable=SC2086
	expect_exit 2 "${cmd%% *} $flag ''" "$QWENCHAT" $cmd ""
	want=$flag
	[ "$flag" = -m ] && want=--model
	expect_err_has "$want: an empty name" "${cmd%% *} $flag '': named"
done
# a path into a directory here that names nothing there reads as a repo id; the error
# says the path's side too
mkdir -p "$TMP/runs"
expect_exit 1 "-m DIR/missing" env HF_HUB_OFFLINE=1 "$QWENCHAT" info -m "$TMP/runs/nope"
expect_err_has "(and $TMP/runs has no file or directory nope)" "-m DIR/missing: names the directory"
# a missing .gguf file is said missing, never asked of the Hub (no directory there either)
expect_exit 1 "-m missing/x.gguf" "$QWENCHAT" info -m nodir/q.gguf
expect_err_has "nodir/q.gguf: no such file" "-m missing/x.gguf: said missing"
# a directory whose first checkpoint is being written (config.json comes last) says so
mkdir -p "$TMP/saving/.checkpoint.new"
expect_exit 1 "-m a first checkpoint being written" "$QWENCHAT" info -m "$TMP/saving"
expect_err_has "no config.json yet: a training run is writing its first checkpoint" \
	"... says so"
touch "$TMP/saving/.checkpoint.new/COMPLETE"
expect_exit 1 "-m a first checkpoint being put in place" "$QWENCHAT" info -m "$TMP/saving"
expect_err_has "(the next 'qwenchat train --resume $TMP/saving' puts it in place first)" \
	"... and how to finish it"
# a model directory that cannot be searched says so, not that config.json is missing
# (as another user: root searches any directory)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	mkdir -p "$TMP/locked" && cp "$M/config.json" "$TMP/locked/" && chmod 700 "$TMP/locked" &&
		chmod 711 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$QWENCHAT" info -m "$TMP/locked" \
		>/dev/null 2>"$TMP/err"
	rc=$?
	chmod 700 "$TMP"
	if [ $rc -lt 126 ]; then # the binary ran as that user (its path may not let it)
		[ $rc = 1 ] && grep -q "locked/config.json: Permission denied" "$TMP/err" &&
			pass "an unsearchable model directory: permission denied, named" ||
			fail "an unsearchable model directory: exit $rc, $(cat "$TMP/err")"
	fi
fi
# a run that has not saved yet holds its lock there: the message says it is running
mkdir -p "$TMP/running" && : >"$TMP/running/train-log.jsonl"
flock "$TMP/running/.train.lock" "$QWENCHAT" info -m "$TMP/running" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc = 1 ] && grep -q "a training run is using it and has not saved its first checkpoint" \
	"$TMP/err" && pass "-m a run before its first checkpoint: says so" ||
	fail "-m a run before its first checkpoint: exit $rc, $(cat "$TMP/err")"
# a FIFO by that name (a model directory is anyone's) is no lock, and no wait
mkdir -p "$TMP/fifo" && mkfifo "$TMP/fifo/.train.lock"
timeout 10 "$QWENCHAT" info -m "$TMP/fifo" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc = 1 ] && grep -q "not a model directory" "$TMP/err" &&
	pass "-m a directory whose .train.lock is a FIFO: not a model, at once" ||
	fail "-m a directory whose .train.lock is a FIFO: exit $rc (124: hung), $(cat "$TMP/err")"
# ... and an empty argument or host names nothing either
expect_exit 2 "pull ''" "$QWENCHAT" pull ""
expect_err_has "argument 1 is an empty name" "pull '': named"
expect_exit 2 "train-bpe with an empty file name" "$QWENCHAT" train-bpe --vocab-size 300 \
	--out "$TMP/tok" "$TMP/README.md" ""
expect_err_has "argument 2 is an empty name" "train-bpe '': named"
expect_exit 2 "serve --host ''" "$QWENCHAT" serve -m "$M" --host ""
expect_err_has "--host: an empty name" "serve --host '': named"
finish
