#!/bin/sh
# train-damaged.sh — a checkpoint whose weights or moments hold values no run saves
# (NaN, an infinity, a negative second moment: a damaged file) is refused by --resume
# in one line naming the file and the tensor, and the checkpoint stays as it was: the
# values would otherwise poison the next update, which a finite loss lets be saved.
# So are a config.json edited since the checkpoint, a tokenizer replaced since, and a
# directory planted where a checkpoint file goes.
. "$TOP_SRCDIR/tests/lib.sh"

python3 - "$TMP" <<'PY'
import random, struct, sys
r = random.Random(3)
open(sys.argv[1] + "/d.u32", "wb").write(b"".join(struct.pack("<I", r.randrange(256)) for _ in range(2000)))
PY
RUN="--vocab-size 256 --layers 1 --hidden-size 32 --heads 2 --ctx 16 --batch 2 --threads 1 --no-panel"
expect_exit 0 "a run of 2 steps" "$QWENCHAT" train --out "$TMP/r" $RUN --data "$TMP/d.u32" --steps 2 \
	--cosine-steps 4 --save-every 1

W=model.layers.0.self_attn.q_proj.weight
for c in "model.safetensors $W nan" "model.safetensors $W inf" \
	 "train-state/optimizer.safetensors $W.exp_avg nan" \
	 "train-state/optimizer.safetensors $W.exp_avg_sq -1"; do
	set -- $c
	rm -rf "$TMP/c" && cp -R "$TMP/r" "$TMP/c" && poke "$TMP/c/$1" "$2" "$3" &&
		cp "$TMP/c/model.safetensors" "$TMP/before" ||
		{ fail "setting up $c"; continue; }
	expect_exit 1 "$3 in $1 ($2): --resume refuses it" \
		"$QWENCHAT" train --resume "$TMP/c" --steps 4 --no-panel
	tail -n 1 "$TMP/err" | grep -q "^qwenchat: .*$1: tensor $2: element 0 is" &&
		pass "$3 in $1: the last line names the file and the tensor" ||
		fail "$3 in $1: the last line does not name them: $(tail -n 1 "$TMP/err")"
	cmp -s "$TMP/c/model.safetensors" "$TMP/before" &&
		grep -q '"step": 2,' "$TMP/c/train-state/state.json" &&
		pass "$3 in $1: the checkpoint of step 2 is as it was" ||
		fail "$3 in $1: the checkpoint was replaced"
done

# train-state/ on another file system (a mount over it): found out before the first
# rename, so that the checkpoint stays whole, not half new (where this may mount one)
rm -rf "$TMP/m" && cp -R "$TMP/r" "$TMP/m" && mkdir -p "$TMP/keep" &&
	cp -R "$TMP/m/train-state" "$TMP/keep/"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m tmpfs "$TMP/m/train-state" 2>/dev/null; then
	cp -R "$TMP/keep/train-state/." "$TMP/m/train-state/" && cp "$TMP/m/model.safetensors" "$TMP/before"
	expect_exit 1 "train-state/ on another file system" \
		"$QWENCHAT" train --resume "$TMP/m" --steps 4 --no-panel
	tail -n 1 "$TMP/err" | grep -q "train-state: on another file system" &&
		cmp -s "$TMP/m/model.safetensors" "$TMP/before" && [ ! -e "$TMP/m/.checkpoint.new" ] &&
		pass "... said before any file moved; the checkpoint of step 2 as it was" ||
		fail "train-state/ on another file system: $(tail -n 1 "$TMP/err"); $(ls -a "$TMP/m")"
	umount "$TMP/m/train-state"
else
	echo "# skipped: cannot mount a tmpfs here"
fi

# the cached stream damaged and its data file gone: neither can give the stream, and
# the one line says both
cp "$TMP/d.u32" "$TMP/gone.u32" &&
	"$QWENCHAT" train --out "$TMP/s" $RUN --data "$TMP/gone.u32" --steps 2 --cosine-steps 4 \
		>/dev/null 2>&1 &&
	printf 'xxxx' | dd of="$TMP/s/train-state/data.u32" bs=1 seek=8 conv=notrunc 2>/dev/null &&
	rm "$TMP/gone.u32" || fail "setting up a damaged cache"
expect_exit 1 "a damaged cache whose data file is gone: --resume refuses it" \
	"$QWENCHAT" train --resume "$TMP/s" --steps 4 --no-panel
tail -n 1 "$TMP/err" | grep -q "gone.u32: cannot open.*the stream the run cached cannot stand in for it: .*data.u32: byte offset 8" &&
	pass "... the line names the missing file and what is wrong with the cache" ||
	fail "damaged cache, file gone: $(tail -n 1 "$TMP/err")"

# config.json edited since the checkpoint (a field the run left at its default too):
# the model would no longer be the one trained; refused in one line, nothing written
rm -rf "$TMP/e" && cp -R "$TMP/r" "$TMP/e"
sed -i 's/"rms_norm_eps": [0-9.e+-]*/"rms_norm_eps": 1e-05/' "$TMP/e/config.json"
cp "$TMP/e/model.safetensors" "$TMP/before"
train_usage 1 "config.json edited since the checkpoint: --resume refuses it" \
	"config.json: changed since the checkpoint at step 2 wrote it" --resume "$TMP/e" --steps 4
cmp -s "$TMP/e/model.safetensors" "$TMP/before" && pass "... the checkpoint as it was" ||
	fail "config.json edited: the checkpoint changed"
# a "tokens" count more than its windows hold (it would overflow as the run goes on,
# and the state saved then could not be read back): refused in one line
rm -rf "$TMP/k" && cp -R "$TMP/r" "$TMP/k"
sed -i 's/"tokens": [0-9]*/"tokens": 9223372036854775807/' "$TMP/k/train-state/state.json"
train_usage 1 "state.json's tokens past its windows: --resume refuses it" \
	"state.json: tokens: 9223372036854775807 is more than the 4 windows read hold" \
	--resume "$TMP/k" --steps 4
# a directory where a checkpoint file goes (a rename cannot replace it): refused before
# any file of the new checkpoint is put in place
rm -rf "$TMP/p" && cp -R "$TMP/r" "$TMP/p" && mkdir "$TMP/p/train-state/master.safetensors"
cp "$TMP/p/model.safetensors" "$TMP/before"
train_usage 1 "a directory at train-state/master.safetensors" \
	"master.safetensors: is a directory, where the checkpoint's file goes" \
	--resume "$TMP/p" --steps 4 --save-dtype bf16
cmp -s "$TMP/p/model.safetensors" "$TMP/before" && grep -q '"step": 2' "$TMP/p/train-state/state.json" &&
	pass "... the step-2 checkpoint whole" || fail "planted directory: the checkpoint changed"
# ... found before the first step, not at the first checkpoint (the steps up to it
# lost): a directory at loss.svg (and at generation_config.json, below)
planted_dir() { # planted_dir RUN FILE
	rm -rf "$TMP/p" && cp -R "$1" "$TMP/p" && rm -f "$TMP/p/$2" && mkdir "$TMP/p/$2"
	train_usage 1 "a directory at $2: refused before any step" \
		"$2: is a directory, where the checkpoint's file goes" --resume "$TMP/p" --steps 4
	grep -q 'trained step' "$TMP/out" "$TMP/err" && fail "a directory at $2: steps ran first" ||
		pass "... no step ran"
}
planted_dir "$TMP/r" loss.svg
# a FIFO there (or at the token cache's data.json) is the user's too: refused, left as
# it is
planted_fifo() { # planted_fifo FILE MESSAGE
	rm -rf "$TMP/p" && cp -R "$TMP/r" "$TMP/p" && rm -f "$TMP/p/$1" && mkfifo "$TMP/p/$1"
	train_usage 1 "a FIFO at $1: refused" "$1: $2" --resume "$TMP/p" --steps 4
	[ -p "$TMP/p/$1" ] && pass "... the FIFO left there" || fail "a FIFO at $1: replaced"
}
planted_fifo loss.svg "not a regular file (a FIFO, a device or a socket), where the checkpoint's"
planted_fifo train-state/data.json "not a regular file (refused: only a file can be replaced)"

# a tokenizer replaced since the checkpoint: the cached stream holds the other one's
# ids, and the checkpoint would ship a tokenizer its model never read: refused
python3 - "$TMP" <<'PY'
import random, sys
r = random.Random(5)
for name, words in (("t1", "the cat sat on a mat and ran"), ("t2", "alpha beta gamma delta zeta")):
    w = words.split()
    open(f"{sys.argv[1]}/{name}.txt", "w").write(" ".join(r.choice(w) for _ in range(3000)))
PY
"$QWENCHAT" train-bpe -q --vocab-size 300 --chat --out "$TMP/tA" "$TMP/t1.txt" &&
	"$QWENCHAT" train-bpe -q --vocab-size 300 --chat --out "$TMP/tB" "$TMP/t2.txt" ||
	fail "train-bpe for the tokenizer check"
expect_exit 0 "a run on text" "$QWENCHAT" train --out "$TMP/t" --tokenizer "$TMP/tA" --layers 1 \
	--hidden-size 32 --heads 2 --ctx 16 --batch 2 --threads 1 --no-panel --data "$TMP/t1.txt" --steps 2
expect_exit 0 "... resumed as it was" "$QWENCHAT" train --resume "$TMP/t" --steps 3 --no-panel
planted_dir "$TMP/t" generation_config.json
cp "$TMP"/tB/* "$TMP/t/"
cp "$TMP/t/model.safetensors" "$TMP/before"
train_usage 1 "another tokenizer in the checkpoint: --resume refuses it" \
	"the tokenizer files are not those the run encoded its data with" --resume "$TMP/t" --steps 4
cmp -s "$TMP/t/model.safetensors" "$TMP/before" && pass "... the checkpoint whole" ||
	fail "replaced tokenizer: the checkpoint changed"

finish
