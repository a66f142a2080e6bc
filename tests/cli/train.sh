#!/bin/sh
# train.sh — `qwenchat train` as a user drives it: bad flags and bad data refused with
# one line and the right exit status; a run's directory (a model `run`, `info` and
# `logits` load; its log, curves and modes); a run stopped by --steps and resumed
# repeats an uninterrupted one bit for bit (by a signal: train-signals.sh); a full disk or a
# non-finite loss leaves the last checkpoint whole; links planted in the directory
# are replaced or refused, never written through; QWENCHAT_CPU_ISA picks its kernels.
. "$TOP_SRCDIR/tests/lib.sh"

# Corpora and token ids (fixed), a small BPE tokenizer with the chat's special tokens.
python3 - "$TMP" <<'EOF'
import random, struct, sys
d = sys.argv[1]
r = random.Random(11)
w = ("the of and to in is was he that it for his on with as at by had they be this "
     "from are have not or were she but we one which you her lower newer wider").split()
open(f"{d}/a.txt", "w").write(" ".join(r.choice(w) for _ in range(6000)))
open(f"{d}/b.txt", "w").write(" ".join(r.choice(w) for _ in range(1000)))
open(f"{d}/v.txt", "w").write(" ".join(r.choice(w) for _ in range(800)))
ids = lambda n: b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(n))
open(f"{d}/d.u32", "wb").write(ids(8000))
open(f"{d}/v.u32", "wb").write(ids(1000))
open(f"{d}/bad-id.u32", "wb").write(ids(10) + struct.pack("<I", 5000))
open(f"{d}/short.u32", "wb").write(ids(16))
open(f"{d}/latin1.txt", "wb").write("caf\u00e9 ".encode("latin-1") * 10)
open(f"{d}/utf16.txt", "wb").write("hello world, some text\n".encode("utf-16") * 20)
# UTF-8 text with one stray byte: trained on, the byte read as U+FFFD as the chat does
open(f"{d}/stray.txt", "wb").write(("the quick brown fox " * 200).encode() + b"\xff" + b" jumps" * 100)
EOF
: >"$TMP/empty.txt"
"$QWENCHAT" train-bpe -q --vocab-size 400 --special '<|endoftext|>' --special '<|im_start|>' \
	--special '<|im_end|>' --out "$TMP/tok" "$TMP/a.txt" || { echo "train-bpe failed" >&2; exit 1; }

SHAPE="--layers 2 --hidden-size 64 --heads 4 --kv-heads 2 --intermediate-size 96"
TEXT="--tokenizer $TMP/tok $SHAPE --data $TMP/a.txt $TMP/b.txt --val $TMP/v.txt"
IDS="--vocab-size 1000 $SHAPE --data $TMP/d.u32 --val $TMP/v.u32"
SMALL="--ctx 16 --batch 4 --threads 2"


# ---- flags --------------------------------------------------------------------------
O="$TMP/o"
train_usage 2 "no --out" "--out DIR is required" $TEXT
train_usage 2 "no --data" "--data FILE... is required" --out "$O" --tokenizer "$TMP/tok" $SHAPE
train_usage 2 "a shape without --heads" "needs --layers, --hidden-size and --heads" \
	--out "$O" --tokenizer "$TMP/tok" --layers 2 --hidden-size 64 --data "$TMP/a.txt"
train_usage 2 "no tokenizer and no --vocab-size" "needs --tokenizer DIR" --out "$O" $SHAPE \
	--data "$TMP/d.u32"
train_usage 2 "--init with a shape flag" "--layers is for a model from scratch" --out "$O" \
	--init "$TMP/tok" --layers 3 --data "$TMP/a.txt"
train_usage 2 "--tie and --no-tie" "--tie and --no-tie: give one" --out "$O" $TEXT --tie --no-tie
train_usage 2 "--lr not a number" "--lr: 'x' is not a finite decimal number" --out "$O" $TEXT --lr x
train_usage 2 "--lr in hexadecimal" "--lr: '0x1p-10' is not a finite decimal number" --out "$O" $TEXT --lr 0x1p-10
train_usage 2 "--ctx 0" "--ctx: 0 is out of range" --out "$O" $TEXT --ctx 0
train_usage 2 "--save-dtype f16" "--save-dtype: 'f16' is not one of f32 bf16" --out "$O" $TEXT \
	--save-dtype f16
train_usage 2 "--warmup past --cosine-steps" "--warmup 10 is past --cosine-steps 5" --out "$O" \
	$TEXT --warmup 10 --cosine-steps 5 --steps 20
train_usage 2 "--hidden-size not a multiple of --heads" "not a multiple of --heads 3" --out "$O" \
	--tokenizer "$TMP/tok" --layers 2 --hidden-size 64 --heads 3 --data "$TMP/a.txt"
train_usage 2 "an unknown option" "unknown option '--nope'" --out "$O" $TEXT --nope
train_usage 2 "an ambiguous abbreviation" "option '--re' is ambiguous: --resume, --recompute" \
	--out "$O" $TEXT --re
train_usage 2 "an empty --out" "--out: an empty name" --out "" $TEXT
train_usage 2 "--lr with a leading blank" "--lr: ' 0.001' is not a finite decimal number" \
	--out "$O" $TEXT --lr ' 0.001'
train_usage 2 "--layers past config.json's limit" "--layers: 2000 is out of range [1, 1024]" \
	--out "$O" $TEXT --layers 2000
train_usage 2 "--vocab-size with --tokenizer" "--vocab-size comes from --tokenizer" --out "$O" \
	$TEXT --vocab-size 500

# ---- data ---------------------------------------------------------------------------------
train_usage 1 "an empty file" "empty.txt: the file is empty" --out "$O" --tokenizer "$TMP/tok" \
	$SHAPE --data "$TMP/empty.txt"
train_usage 1 "data shorter than one window" "--data: 16 tokens, fewer than one window needs: --ctx 16 takes 17" \
	--out "$O" $SHAPE --vocab-size 1000 --data "$TMP/short.u32" $SMALL
train_usage 1 "validation data shorter than one window" "--val: 16 tokens" --out "$O" $SHAPE \
	--vocab-size 1000 --data "$TMP/d.u32" --val "$TMP/short.u32" $SMALL
train_usage 1 "text that is not UTF-8" "latin1.txt: not UTF-8 text: 10 ill-formed bytes, the first at byte 3" \
	--out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/latin1.txt"
train_usage 1 "a file with a NUL byte" "utf16.txt: not UTF-8 text: a NUL byte" \
	--out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/utf16.txt"
if "$QWENCHAT" train --out "$TMP/stray" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/stray.txt" \
	--steps 0 $SMALL >/dev/null 2>"$TMP/err"; then
	pass "UTF-8 text with a stray byte trains (the byte as U+FFFD)"
else
	fail "UTF-8 text with a stray byte: $(tail -n 1 "$TMP/err")"
fi
# JSON Lines of {"text"} records: the stream of the same texts as files of their own
python3 -c 'import json, sys
with open(sys.argv[1], "w") as f:
    for t in sys.argv[2:]:
        f.write(json.dumps({"text": open(t).read(), "source": t}) + "\n")' \
	"$TMP/ab.jsonl" "$TMP/a.txt" "$TMP/b.txt"
if "$QWENCHAT" train --out "$TMP/jl" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/ab.jsonl" \
	--steps 0 $SMALL >/dev/null 2>"$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/jt" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" \
	"$TMP/b.txt" --steps 0 $SMALL >/dev/null 2>"$TMP/err" &&
   cmp -s "$TMP/jl/train-state/data.u32" "$TMP/jt/train-state/data.u32"; then
	pass "--data *.jsonl: each record a document, as the same texts in files"
else
	fail "--data *.jsonl: $(tail -n 1 "$TMP/err")"
fi
printf '{"text": "a b"}\n{"messages": []}\n' >"$TMP/conv.jsonl"
train_usage 1 "--data *.jsonl of conversations" "conv.jsonl: line 2: no \"text\" member" \
	--out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/conv.jsonl"
printf '[{"conversations": [{"from": "human", "value": "hi"}]}]' >"$TMP/sharegpt.json"
train_usage 1 "--data *.json of ShareGPT records" "not text: train them with train --sft" \
	--out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/sharegpt.json"
train_usage 1 "--sft on {\"text\"} records" "is text to pretrain on, not a conversation (train it without --sft)" \
	--out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/ab.jsonl" --sft
train_usage 1 "a missing file" "missing.txt" --out "$O" --tokenizer "$TMP/tok" $SHAPE \
	--data "$TMP/missing.txt"
train_usage 1 "a directory as data" "$TMP" --out "$O" --tokenizer "$TMP/tok" $SHAPE --data "$TMP"
train_usage 1 "an id past the vocabulary" "bad-id.u32" --out "$O" $SHAPE --vocab-size 1000 \
	--data "$TMP/bad-id.u32"
python3 -c 'import array, sys
sys.stdout.buffer.write(array.array("q", range(1, 101)).tobytes())' >"$TMP/i64.u32"
train_usage 1 "int64 ids in a *.u32 file" "i64.u32: every second id is 0" --out "$O" $SHAPE \
	--vocab-size 1000 --data "$TMP/i64.u32"
train_usage 1 "text without a tokenizer" "the model has no tokenizer" --out "$O" $SHAPE \
	--vocab-size 1000 --data "$TMP/a.txt"
train_usage 1 "a model that does not fit in memory" "the memory plan needs" --out "$O" \
	--vocab-size 1000 --layers 64 --hidden-size 8192 --heads 64 --data "$TMP/d.u32" $SMALL
# 64 layers of 64 heads at 5,792 tokens: their attention probabilities alone would take
# 550 GB; made again in the backward instead, the plan needs under 2 GB
if "$QWENCHAT" train --out "$TMP/probs" --vocab-size 1000 --layers 64 --hidden-size 64 \
	--heads 64 --head-dim 2 --kv-heads 8 --intermediate-size 64 --ctx 5792 --batch 1 \
	--threads 2 --steps 0 --data "$TMP/d.u32" 2>"$TMP/err" &&
   grep -q 'tokens, attention probabilities recomputed)' "$TMP/err"; then
	pass "a plan too large for the attention probabilities makes them again in the backward"
else
	fail "long-context plan: $(grep -m1 'memory plan' "$TMP/err" || tail -n 2 "$TMP/err")"
fi
mkdir -p "$TMP/full" && : >"$TMP/full/notes.txt"
train_usage 1 "--out a directory of other files" "not empty (it holds notes.txt)" \
	--out "$TMP/full" $TEXT
[ "$(ls -A "$TMP/full")" = notes.txt ] && pass "the refused directory is left as it was" ||
	fail "a refused --out got: $(ls -A "$TMP/full")"
mkfifo "$TMP/fifo.u32"
train_usage 1 "a FIFO as data is refused, not waited on" "fifo.u32: not a regular file" \
	--out "$O" $SHAPE --vocab-size 1000 --data "$TMP/fifo.u32" $SMALL
# a run that fails on its data leaves nothing behind (no lock, no empty train-state/)
train_usage 1 "a run that fails" "bad-id.u32" --out "$TMP/failed/a/run" $SHAPE --vocab-size 1000 \
	--data "$TMP/bad-id.u32" $SMALL
[ ! -e "$TMP/failed" ] &&
	pass "a new run that failed before its first save leaves no directory, parents too" ||
	fail "a failed run left: $(find "$TMP/failed")"
# Ctrl-C while the model downloads (a hub that never answers): a new run's directory goes
python3 - "$TMP/hub" <<'EOF' &
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1] + ".port", "w").write(str(s.getsockname()[1]))
c, _ = s.accept(); open(sys.argv[1] + ".asked", "w").close(); time.sleep(30)
EOF
hub=$!
i=0
while [ ! -s "$TMP/hub.port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
HF_HOME="$TMP/hf-home" HF_ENDPOINT="http://127.0.0.1:$(cat "$TMP/hub.port")" HF_HUB_OFFLINE= \
	env --default-signal=INT "$QWENCHAT" train --out "$TMP/sig-new/a/run" --init test/slow --data "$TMP/d.u32" $SMALL \
	--steps 1 2>"$TMP/err" &
pid=$!
i=0
while [ ! -e "$TMP/hub.asked" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $pid
wait $pid
rc=$?
kill $hub 2>/dev/null
wait $hub 2>/dev/null
[ -e "$TMP/hub.asked" ] && [ "$rc" -eq 130 ] && [ ! -e "$TMP/sig-new" ] &&
	pass "Ctrl-C before the first step of a new run: exit 130, its directories gone" ||
	fail "Ctrl-C before the first step: exit $rc, left: $(find "$TMP/sig-new" 2>&1)"
# Ctrl-C after the data's cache is written, while the held-out text is still encoded:
# the cache goes with the directory (nothing was saved)
python3 -c 'import sys; open(sys.argv[1], "w").write(open(sys.argv[2]).read() * 1500)' \
	"$TMP/big-val.txt" "$TMP/a.txt"
env --default-signal=INT "$QWENCHAT" train --out "$TMP/sig-cache" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" \
	--val "$TMP/big-val.txt" $SMALL --steps 1 >/dev/null 2>"$TMP/err" &
pid=$!
i=0
while [ ! -e "$TMP/sig-cache/train-state/data.u32" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
kill -INT $pid
wait $pid
rc=$?
[ $i -lt 1000 ] && [ "$rc" -eq 130 ] && [ ! -e "$TMP/sig-cache" ] &&
	pass "Ctrl-C after the data's cache, before the first step: the directory gone" ||
	fail "Ctrl-C after the cache (waited $i): exit $rc, left: $(ls -A "$TMP/sig-cache" "$TMP/sig-cache/train-state" 2>&1 | tr '\n' ' ')"
rm -f "$TMP/big-val.txt"
# a new run killed outright (SIGKILL, the OOM killer) while it wrote its log, before
# its first checkpoint, left its data's cache, the log and a temporary file: --out
# takes the directory
sh -c 'exit 0' &
dead=$!
wait $dead
"$QWENCHAT" train --out "$TMP/k0" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" $SMALL \
	--steps 0 >/dev/null 2>&1 || fail "train --steps 0"
mkdir -p "$TMP/killed/train-state"
cp "$TMP/k0/train-state/data.u32" "$TMP/k0/train-state/data.json" "$TMP/killed/train-state/"
echo '{"step": 1' >"$TMP/killed/train-log.jsonl"
echo half >"$TMP/killed/.loss.svg.tmp.$dead.0123456789abcdef"
# ... but a log or a curve without that cache, or a file in train-state/ that is not a
# cache, are someone else's: refused, and kept
for f in train-log.jsonl loss.svg train-state/notes.txt; do
	rm -rf "$TMP/mine" && mkdir -p "$TMP/mine/train-state" && echo mine >"$TMP/mine/$f"
	train_usage 1 "--out holding $f of someone else's" "mine: not empty (it holds $f)" \
		--out "$TMP/mine" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" $SMALL --steps 1
	[ "$(cat "$TMP/mine/$f")" = mine ] && [ ! -e "$TMP/mine/.train.lock" ] &&
		pass "... $f kept, no lock file left" || fail "$f: $(ls -A "$TMP/mine")"
done
expect_exit 0 "--out a run killed before its first checkpoint" "$QWENCHAT" train \
	--out "$TMP/killed" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" $SMALL --steps 1
[ -f "$TMP/killed/model.safetensors" ] && ! ls -A "$TMP/killed" | grep -q '\.tmp\.' &&
	pass "... trained, the killed writer's temporary file gone" ||
	fail "after a killed run: $(ls -A "$TMP/killed")"
# a new run that cannot write its first checkpoint (a file-size limit) removes what
# it wrote before: the directory it created is gone, caches and log included
( trap '' XFSZ; ulimit -f 40; exec "$QWENCHAT" train --out "$TMP/lim/run" --vocab-size 1000 $SHAPE \
	--data "$TMP/d.u32" $SMALL --steps 2 ) >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$TMP/lim/run" ] && pass "a run whose first checkpoint fails leaves nothing" ||
	fail "first checkpoint failed: exit $rc, left: $(ls -A "$TMP/lim/run" "$TMP/lim/run/train-state" 2>&1 | tr '\n' ' ')"
# stderr closed (2>&-): its messages must not land in the first file opened
"$QWENCHAT" train --out "$TMP/nostderr" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/a.txt" \
	$SMALL --steps 2 2>&- <&- >/dev/null
python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' \
	"$TMP/nostderr/train-log.jsonl" 2>/dev/null && [ ! -s "$TMP/nostderr/.train.lock" ] &&
	pass "stderr and stdin closed: the log is JSON Lines, nothing in the lock file" ||
	fail "stderr closed: $(head -c 200 "$TMP/nostderr/train-log.jsonl")"
# a link named *.u32 is ids whatever its target is called (content-addressed stores)
cp "$TMP/d.u32" "$TMP/blob" && ln -s "$TMP/blob" "$TMP/link.u32"
"$QWENCHAT" train --out "$TMP/linked" $SHAPE --vocab-size 1000 --data "$TMP/link.u32" $SMALL \
	--steps 1 >/dev/null 2>"$TMP/err" && pass "a link named *.u32 is read as ids" ||
	fail "a link named *.u32: $(tail -n 1 "$TMP/err")"

# ---- the kernel set: QWENCHAT_CPU_ISA reaches the trainer --------------------------------
QWENCHAT_CPU_ISA=sse9 "$QWENCHAT" train --out "$TMP/isa-bad" $IDS $SMALL --steps 1 \
	>/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q "QWENCHAT_CPU_ISA: 'sse9': not one of" "$TMP/err" &&
	pass "a kernel set that is not one is refused (exit 2)" ||
	fail "QWENCHAT_CPU_ISA=sse9: exit $rc, $(tail -n 1 "$TMP/err")"
# the portable kernels multiply in fp32 (no bf16 products): the step of --exact
QWENCHAT_CPU_ISA=c "$QWENCHAT" train --out "$TMP/isa-c" $IDS $SMALL --steps 1 \
	>/dev/null 2>"$TMP/err" &&
	"$QWENCHAT" train --out "$TMP/isa-x" $IDS $SMALL --steps 1 --exact >/dev/null 2>>"$TMP/err" &&
	python3 - "$TMP/isa-c/train-log.jsonl" "$TMP/isa-x/train-log.jsonl" <<'EOF' &&
import json, sys
c, x = (json.loads(open(p).readline()) for p in sys.argv[1:])
# bf16 products move the first step's gradient norm by ~1e-3 relative, fp32 sums in
# another order by ~1e-8
sys.exit(0 if all(abs(c[k] - x[k]) <= 1e-5 * abs(x[k]) for k in ("loss", "grad_norm")) else 1)
EOF
	pass "QWENCHAT_CPU_ISA=c trains with fp32 products, as --exact does" ||
	fail "QWENCHAT_CPU_ISA=c: $(tail -n 1 "$TMP/err")"
# state.json keeps the kernel set; a resume with another one (another CPU) says so
grep -q '"kernels": "c"' "$TMP/isa-c/train-state/state.json" &&
	pass "state.json names the kernel set the steps ran with" ||
	fail "no kernels in $(cat "$TMP/isa-c/train-state/state.json")"
"$QWENCHAT" train --resume "$TMP/isa-c" --steps 2 >/dev/null 2>"$TMP/err" ||
	fail "resume on the best kernel set: $(tail -n 1 "$TMP/err")"
if grep -q '"kernels": "c"' "$TMP/isa-c/train-state/state.json"; then
	echo "skip: this CPU's best kernel set is the portable one"
else
	grep -q "ran with the c kernels and go on with" "$TMP/err" &&
		pass "a resume on another kernel set: not bit for bit, said so" ||
		fail "a resume on another kernel set, unsaid: $(cat "$TMP/err")"
fi

# ---- a run ----------------------------------------------------------------------------------
R="$TMP/run"
if "$QWENCHAT" train --out "$R" $TEXT $SMALL --steps 6 --eval-every 3 --save-every 4 \
	--warmup 2 --lr 3e-3 2>"$TMP/err"; then
	pass "a run from scratch with a tokenizer from train-bpe"
	# the closing line: 6 steps of 4 rows of 16 tokens, the last evaluation's loss
	val=$(python3 -c 'import json,sys
print("%.4f" % [json.loads(l) for l in open(sys.argv[1])][-1]["val_loss"])' "$R/train-log.jsonl")
	tail -n 1 "$TMP/err" | grep -q "^trained steps 1-6 in [0-9.]* m\{0,1\}s: 384 tokens at [0-9]* tok/s; loss [0-9.]*, val_loss $val\$" &&
		pass "the closing line: steps, tokens, rate, last losses" ||
		fail "the closing line: $(tail -n 1 "$TMP/err"), val_loss $val"
else
	fail "a run from scratch: $(tail -n 3 "$TMP/err")"
fi
for f in config.json generation_config.json model.safetensors tokenizer.json \
	tokenizer_config.json train-log.jsonl loss.svg train-state/state.json \
	train-state/optimizer.safetensors train-state/log.jsonl train-state/data.u32 \
	train-state/val.u32; do
	[ -f "$R/$f" ] || fail "$R/$f is missing"
done
bad=$(find "$R" -type f ! -perm 0600)
[ -z "$bad" ] && pass "every file is 0600" || fail "files not 0600: $bad"
[ -e "$R/.checkpoint.new" ] && fail "the checkpoint's temporary directory is left"
grep -q 'memory plan (host): weights' "$TMP/err" && pass "the memory plan is printed" ||
	fail "no memory plan: $(head -n 5 "$TMP/err")"
python3 - "$R" <<'EOF' && pass "train-log.jsonl: 6 steps and 2 evaluations with their fields" || fail "train-log.jsonl"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/train-log.jsonl")]
steps = [r for r in recs if "loss" in r]
evals = [r for r in recs if "val_loss" in r]
assert [r["step"] for r in steps] == [1, 2, 3, 4, 5, 6], steps
assert [r["step"] for r in evals] == [3, 6], evals
for r in steps:
    assert set(r) == {"step", "loss", "grad_norm", "lr", "tokens", "seconds"}, r
    assert r["tokens"] == r["step"] * 16 * 4 and r["seconds"] > 0 and r["loss"] > 0
assert steps[0]["lr"] == 0 and steps[1]["lr"] == 1.5e-3 and steps[2]["lr"] == 3e-3
for r in evals:
    assert abs(r["val_ppl"] - math.exp(r["val_loss"])) < 1e-9 * r["val_ppl"]
EOF
python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert len(d.getElementsByTagName("polyline")) == 2' \
	"$R/loss.svg" && pass "loss.svg is an SVG with both curves" || fail "loss.svg"
grep -q '"chat_template"' "$R/tokenizer_config.json" && pass "the tokenizer got the Qwen3 chat template" ||
	fail "no chat template in $R/tokenizer_config.json"
# As transformers reads them: config.json's ids those of the tokenizer's tokens (eos
# <|im_end|>, as tokenizer_config.json says), unk/eos/pad given, the slow tokenizer's files.
python3 - "$R" "$TMP/tok" <<'EOF' && pass "config.json's bos/eos are the tokenizer's; unk null; vocab.json and merges.txt kept" ||
import json, sys
d, tok = sys.argv[1:]
c = json.load(open(d + "/config.json"))
t = {a["content"]: a["id"] for a in json.load(open(d + "/tokenizer.json"))["added_tokens"]}
tc = json.load(open(d + "/tokenizer_config.json"))
assert c["bos_token_id"] == t["<|endoftext|>"] and c["eos_token_id"] == t["<|im_end|>"], c
assert tc["eos_token"] == "<|im_end|>" and tc["pad_token"] == "<|endoftext|>", tc
assert "unk_token" in tc and tc["unk_token"] is None, tc
for f in ("vocab.json", "merges.txt"):
    assert open(d + "/" + f, "rb").read() == open(tok + "/" + f, "rb").read(), f
EOF
	fail "config.json or tokenizer files: $(cat "$R/config.json")"
if "$QWENCHAT" run -m "$R" -p "the" -n 4 --no-think --seed 1 >"$TMP/out" 2>"$TMP/err" &&
   "$QWENCHAT" info -m "$R" >"$TMP/out" 2>"$TMP/err" && grep -q 'weights F32' "$TMP/out"; then
	pass "qwenchat run and info load the checkpoint"
else
	fail "the checkpoint does not load: $(tail -n 2 "$TMP/err")"
fi
[ ! -e "$R/.train.lock" ] && pass "a finished run leaves no lock file in its model" ||
	fail "$R/.train.lock is left behind"
train_usage 1 "--out a directory holding a run" "holds a training run (at step 6)" --out "$R" $TEXT
rm -rf "$TMP/damaged" && cp -a "$R" "$TMP/damaged" && echo '{"step":' >"$TMP/damaged/train-state/state.json"
train_usage 1 "--out a directory holding a damaged run" "state cannot be read (choose another --out): $TMP/damaged/train-state/state.json: invalid JSON" --out "$TMP/damaged" $TEXT
train_usage 2 "--resume with another --ctx" "--ctx 32 conflicts with the run's 16" --resume "$R" --ctx 32
# shape flags a run from scratch left to their defaults: the model's values are its own
"$QWENCHAT" train --resume "$R" --steps 6 --head-dim 16 --tie --rope-theta 1000000 \
	>/dev/null 2>"$TMP/err" && grep -q 'at step 6 already' "$TMP/err" &&
	pass "--resume with the defaults a run took, given: they agree" ||
	fail "--resume with the run's own default shape: $(tail -n 1 "$TMP/err")"
# the default --min-lr, lr / 10 = 0.00030000000000000003, given as the banner shows it
"$QWENCHAT" train --resume "$R" --steps 6 --min-lr 3e-4 >/dev/null 2>"$TMP/err" &&
	grep -q 'at step 6 already' "$TMP/err" &&
	pass "--resume with the default --min-lr as printed (0.0003): the run's own" ||
	fail "--resume --min-lr 3e-4: $(tail -n 1 "$TMP/err")"
train_usage 2 "--resume with a head size its model lacks" \
	"--resume: --head-dim 32 conflicts with the run's model ($R/config.json: head_dim 16)" \
	--resume "$R" --head-dim 32
train_usage 2 "--resume with --no-tie of a tied model" \
	"--resume: --no-tie conflicts with the run's model ($R/config.json: tie_word_embeddings true)" \
	--resume "$R" --no-tie
train_usage 2 "--resume with other data" "--data" --resume "$R" --data "$TMP/b.txt"
# a checkpoint whose tokenizer was taken away: refused (its next checkpoint would not
# load); a generation_config.json taken away is written again, as at the start
rm -rf "$TMP/notok" && cp -a "$R" "$TMP/notok" && rm "$TMP/notok/tokenizer.json"
train_usage 1 "--resume of a text run without its tokenizer.json" \
	"notok/tokenizer.json: missing, but the run's data were encoded by a tokenizer" \
	--resume "$TMP/notok" --steps 7
rm -rf "$TMP/nogen" && cp -a "$R" "$TMP/nogen" && rm "$TMP/nogen/generation_config.json"
"$QWENCHAT" train --resume "$TMP/nogen" --steps 7 >/dev/null 2>"$TMP/err" &&
	cmp -s "$TMP/nogen/generation_config.json" "$R/generation_config.json" &&
	pass "--resume without generation_config.json: written again, as the run's first" ||
	fail "--resume without generation_config.json: $(tail -n 1 "$TMP/err")"
# a tokenizer without an end of text (train-bpe without --special): generation_config.json
# holds the sampling defaults alone, and a resume has nothing to write again
"$QWENCHAT" train-bpe -q --vocab-size 300 --out "$TMP/tok-bare" "$TMP/a.txt" &&
	"$QWENCHAT" tokenize -m "$TMP/tok-bare" <"$TMP/a.txt" | python3 -c 'import struct, sys
ids = [int(x) for x in sys.stdin.read().split()]
sys.stdout.buffer.write(struct.pack("<%dI" % len(ids), *ids))' >"$TMP/bare.u32" &&
	"$QWENCHAT" train --out "$TMP/bare" --tokenizer "$TMP/tok-bare" $SHAPE --data "$TMP/bare.u32" \
		$SMALL --steps 1 >/dev/null 2>"$TMP/err" &&
	python3 -c 'import json, sys
g = json.load(open(sys.argv[1]))
assert "eos_token_id" not in g and g["bos_token_id"] is None and g["temperature"] == 0.6, g' \
		"$TMP/bare/generation_config.json" &&
	"$QWENCHAT" train --resume "$TMP/bare" --steps 2 >/dev/null 2>"$TMP/err" &&
	! grep -q "generation_config" "$TMP/err" &&
	pass "a tokenizer without an end of text: generation_config.json with the sampling defaults" ||
	fail "a tokenizer without an end of text: $(tail -n 2 "$TMP/err"; ls "$TMP/bare")"
# a --rope-theta that config.json writes as a shorter decimal of the same float
# (1000000.125 as 1000000.1) is still the run's
if "$QWENCHAT" train --out "$TMP/rope" $IDS $SMALL --steps 1 --rope-theta 1000000.125 \
	>/dev/null 2>&1 &&
   "$QWENCHAT" train --resume "$TMP/rope" --steps 2 --rope-theta 1000000.125 \
	>/dev/null 2>"$TMP/err"; then
	pass "--resume of a run whose --rope-theta config.json rounds to a shorter decimal"
else
	fail "--resume with --rope-theta 1000000.125: $(tail -n 1 "$TMP/err")"
fi
train_usage 1 "--resume of a directory without a run" "no training run to resume" --resume "$TMP/tok"
[ ! -e "$TMP/tok/.train.lock" ] && pass "... and leaves no lock file in it" ||
	fail "a --resume of a directory without a run left $TMP/tok/.train.lock"
"$QWENCHAT" train --resume "$R" --steps 6 >/dev/null 2>"$TMP/err" &&
	grep -q 'at step 6 already' "$TMP/err" && pass "--resume at the last step: nothing to do" ||
	fail "--resume at the last step: $(tail -n 2 "$TMP/err")"
train_usage 2 "--resume with --steps below the run's step" "--steps 4 is below the run's step 6" \
	--resume "$R" --steps 4
# a FIFO planted in place of one of the run's own files is refused, never waited on
for f in model.safetensors train-state/optimizer.safetensors train-state/state.json \
	train-state/log.jsonl train-state/data.u32; do
	rm -rf "$TMP/fifo-run" && cp -a "$R" "$TMP/fifo-run" && rm "$TMP/fifo-run/$f" &&
		mkfifo "$TMP/fifo-run/$f"
	timeout 60 "$QWENCHAT" train --resume "$TMP/fifo-run" --steps 7 >/dev/null 2>"$TMP/err"
	got=$?
	if [ "$got" -eq 1 ] && tail -n 1 "$TMP/err" | grep -q "$f: not a regular file"; then
		pass "--resume with a FIFO at $f: refused"
	else
		fail "--resume with a FIFO at $f: exit $got: $(tail -n 1 "$TMP/err")"
	fi
done

# ---- resuming repeats an uninterrupted run ---------------------------------------------------
for mode in random sequential; do
	extra=""
	[ $mode = sequential ] && extra="--sequential"
	args="$IDS $SMALL --accum 2 --cosine-steps 4 --warmup 1 --eval-every 1 --save-every 1 $extra"
	"$QWENCHAT" train --out "$TMP/all-$mode" $args --steps 4 2>"$TMP/err" &&
	"$QWENCHAT" train --out "$TMP/part-$mode" $args --steps 2 2>"$TMP/err" &&
	"$QWENCHAT" train --resume "$TMP/part-$mode" --steps 4 2>"$TMP/err" ||
		fail "$mode: $(tail -n 2 "$TMP/err")"
	same_run "$mode windows: 2 steps resumed to 4 == 4 steps" "$TMP/all-$mode" "$TMP/part-$mode"
done

# perplexity of a checkpoint defaults to the run's validation windows (--ctx T + 1
# every T): on a held-out stream of whole windows it gives the last val_loss. --exact,
# so that the evaluation's products are fp32 as perplexity's are: with bf16 products
# the two differ by ~1e-5 of the loss, which would hide a window off by one token.
head -c $((4 * (5 * 16 + 1))) "$TMP/v.u32" >"$TMP/v5.u32"
if "$QWENCHAT" train --out "$TMP/pv" --vocab-size 1000 $SHAPE --data "$TMP/d.u32" \
	--val "$TMP/v5.u32" $SMALL --steps 3 --exact 2>"$TMP/err" &&
   "$QWENCHAT" perplexity -m "$TMP/pv" -f "$TMP/v5.u32" --json >"$TMP/pv.json" 2>"$TMP/err" &&
   grep -q "trained on rows of 16 tokens" "$TMP/err"; then
	python3 - "$TMP/pv.json" "$TMP/pv/train-log.jsonl" <<'EOF' &&
import json, sys
p = json.load(open(sys.argv[1]))
v = [json.loads(l) for l in open(sys.argv[2]) if "val_loss" in l][-1]
sys.exit(0 if p["tokens"] == 80 and abs(p["nll"] - v["val_loss"]) <= 1e-7 * v["val_loss"] else 1)
EOF
	pass "perplexity of a checkpoint: the run's windows, its last val_loss" ||
	fail "perplexity of a checkpoint: $(cat "$TMP/pv.json") against $(tail -n 1 "$TMP/pv/train-log.jsonl")"
else
	fail "perplexity of a checkpoint: $(tail -n 1 "$TMP/err")"
fi
grep -q "windows of 17 tokens every 16, as its validation loss" "$TMP/err" &&
	"$QWENCHAT" perplexity -m "$TMP/pv" -f "$TMP/v5.u32" --stride 8 >/dev/null 2>"$TMP/err" &&
	grep -q "windows of 17 tokens every 8 (--ctx" "$TMP/err" &&
	pass "the line says 'as its validation loss' only for the validation's windows" ||
	fail "the checkpoint's windows line: $(cat "$TMP/err")"
"$QWENCHAT" perplexity -m "$TMP/pv" -f "$TMP/v5.u32" --stride 20 >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "stride 20" "$TMP/err" &&
	pass "perplexity of a checkpoint, --stride past its window: one line, exit 2" ||
	fail "--stride 20 on a checkpoint: $(cat "$TMP/err")"
# a damaged state.json: the model's own window, and a notice saying so
cp -r "$TMP/pv" "$TMP/pvd" && printf '{"step": ' >"$TMP/pvd/train-state/state.json"
"$QWENCHAT" perplexity -m "$TMP/pvd" -f "$TMP/v5.u32" --json >/dev/null 2>"$TMP/err" &&
	grep -q "pvd/train-state/state.json: .*; the windows are not the run's" "$TMP/err" &&
	pass "perplexity of a checkpoint with a damaged state.json says so" ||
	fail "damaged state.json: $(cat "$TMP/err")"

# a data file changed since the run read it: the resume says so and trains on its cache
cp "$TMP/d.u32" "$TMP/grown.u32"
"$QWENCHAT" train --out "$TMP/grown" --vocab-size 1000 $SHAPE --data "$TMP/grown.u32" $SMALL \
	--steps 1 2>"$TMP/err" && cat "$TMP/d.u32" >>"$TMP/grown.u32" &&
"$QWENCHAT" train --resume "$TMP/grown" --steps 2 2>"$TMP/err" &&
	grep -q "grown.u32 changed since the run read it: it goes on with the stream" "$TMP/err" &&
	cmp -s "$TMP/d.u32" "$TMP/grown/train-state/data.u32" &&
	pass "a data file changed before a resume: said, the run's stream kept" ||
	fail "a data file changed before a resume: $(tail -n 3 "$TMP/err")"
mv "$TMP/grown.u32" "$TMP/moved.u32"
"$QWENCHAT" train --resume "$TMP/grown" --steps 3 2>"$TMP/err" &&
	grep -q "grown.u32 is gone since the run read it: it goes on with the stream" "$TMP/err" &&
	pass "a data file gone before a resume: said so, not 'changed'" ||
	fail "a data file gone before a resume: $(tail -n 3 "$TMP/err")"
mv "$TMP/moved.u32" "$TMP/grown.u32"
touch "$TMP/grown.u32"
train_usage 1 "that notice, then an error: the error alone" "none.u32: cannot open" \
	--resume "$TMP/grown" --steps 4 --val "$TMP/none.u32"

# --val may join a resumed run that had none: the same steps as without it, and the
# evaluations from the checkpoint's step on; another --val than the run's conflicts
args="--vocab-size 1000 $SHAPE --data $TMP/d.u32 $SMALL --warmup 1 --eval-every 2"
"$QWENCHAT" train --out "$TMP/nv-a" $args --steps 2 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/nv-a" --steps 4 2>"$TMP/err" &&
"$QWENCHAT" train --out "$TMP/nv-b" $args --steps 2 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/nv-b" --steps 4 --val "$TMP/v.u32" 2>"$TMP/err" ||
	fail "--val added on resume: $(tail -n 2 "$TMP/err")"
if cmp -s "$TMP/nv-a/model.safetensors" "$TMP/nv-b/model.safetensors" &&
   [ "$(grep -v val_loss "$TMP/nv-b/train-log.jsonl" | sed 's/"seconds".*//')" = \
     "$(sed 's/"seconds".*//' "$TMP/nv-a/train-log.jsonl")" ] &&
   [ "$(grep -o '^{"step": [0-9]*, "val_loss"' "$TMP/nv-b/train-log.jsonl" | tr -dc '0-9\n' | tr '\n' ' ')" = "2 4 " ]; then
	pass "--val added on resume: the same steps, evaluated at steps 2 and 4"
else
	fail "--val added on resume: $(grep val_loss "$TMP/nv-b/train-log.jsonl")"
fi
train_usage 2 "--resume with another --val" "conflicts with the run's $TMP/v.u32" \
	--resume "$TMP/nv-b" --steps 5 --val "$TMP/d.u32"
# a resume that adds --val and stops before its checkpoint (here a --val too short)
# leaves its stream's cache; the next, with another --val, evaluates that one's files
printf '\001\000\000\000' >"$TMP/short.u32"
"$QWENCHAT" train --out "$TMP/nv-c" $args --steps 2 2>"$TMP/err" ||
	fail "--val after a refused one: $(tail -n 2 "$TMP/err")"
"$QWENCHAT" train --resume "$TMP/nv-c" --steps 4 --val "$TMP/short.u32" 2>"$TMP/err" &&
	fail "--val of one token accepted"
if "$QWENCHAT" train --resume "$TMP/nv-c" --steps 4 --val "$TMP/v.u32" 2>"$TMP/err" &&
   [ "$(grep val_loss "$TMP/nv-c/train-log.jsonl")" = "$(grep val_loss "$TMP/nv-b/train-log.jsonl")" ]; then
	pass "--val after a refused one: its own files evaluated, not the refused one's cache"
else
	fail "--val after a refused one: $(tail -n 2 "$TMP/err"; grep val_loss "$TMP/nv-c/train-log.jsonl")"
fi

# --cosine-steps left to its default (--steps): a resume to another --steps takes the
# cosine of a run started with it while the steps taken were all in the warm-up (a run
# of 2 steps and --warmup 2, or --steps 0); past the warm-up the saved cosine stays
args="$IDS $SMALL --accum 2 --warmup 2 --eval-every 1"
"$QWENCHAT" train --out "$TMP/cd-all" $args --steps 4 2>"$TMP/err" &&
"$QWENCHAT" train --out "$TMP/cd-part" $args --steps 2 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/cd-part" --steps 4 2>"$TMP/err" ||
	fail "default cosine: $(tail -n 2 "$TMP/err")"
same_run "default cosine, in the warm-up: 2 steps resumed to 4 == 4 steps" "$TMP/cd-all" "$TMP/cd-part"
"$QWENCHAT" train --out "$TMP/cd-zero" $args --warmup 0 --steps 0 2>"$TMP/err" &&
"$QWENCHAT" train --out "$TMP/cd-three" $args --warmup 0 --steps 3 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/cd-zero" --steps 3 2>"$TMP/err" ||
	fail "default cosine from --steps 0: $(tail -n 2 "$TMP/err")"
# (the log of --steps 0 starts with the initial weights' evaluation, which a run of 3
# steps does not have: the rest is the same)
head -n 1 "$TMP/cd-zero/train-log.jsonl" | grep -q '^{"step": 0, "val_loss": ' &&
	sed -i 1d "$TMP/cd-zero/train-log.jsonl" ||
	fail "--steps 0 with --val: no evaluation of step 0 in its log"
same_run "default cosine: --steps 0 resumed to 3 == 3 steps" "$TMP/cd-three" "$TMP/cd-zero"
# ... unless --cosine-steps is given again on the resume: then it stays where it was
"$QWENCHAT" train --out "$TMP/cd-keep" $args --lr 1e-2 --steps 2 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/cd-keep" --steps 4 --cosine-steps 2 2>"$TMP/err" &&
	[ "$(grep -c '"lr": 0.001,' "$TMP/cd-keep/train-log.jsonl")" -eq 1 ] &&
	pass "default cosine, --cosine-steps given again on resume: kept" ||
	fail "--cosine-steps given on resume: $(grep -o '"lr": [^,]*' "$TMP/cd-keep/train-log.jsonl" | tr '\n' ' ')"
"$QWENCHAT" train --out "$TMP/cd-past" $args --warmup 0 --lr 1e-2 --steps 2 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/cd-past" --steps 4 2>"$TMP/err" ||
	fail "default cosine past the warm-up: $(tail -n 2 "$TMP/err")"
grep -q "steps after 2, where the run's cosine ends, run at min_lr 0.001" "$TMP/err" &&
	[ "$(grep -c '"lr": 0.001,' "$TMP/cd-past/train-log.jsonl")" -eq 2 ] &&
	pass "default cosine past the warm-up: the saved cosine stays (min_lr after), said so" ||
	fail "default cosine past the warm-up: $(grep -o '"lr": [^,]*' "$TMP/cd-past/train-log.jsonl" | tr '\n' ' ') $(tail -n 2 "$TMP/err")"

# An MLP of width 1: down_proj is still a matrix ([hidden, 1], drawn from N(0, 0.02) like
# every matrix, not set to 1 like a norm), and the checkpoint loads.
if "$QWENCHAT" train --out "$TMP/w1" --vocab-size 1000 $SHAPE --intermediate-size 1 \
	--data "$TMP/d.u32" $SMALL --steps 0 2>"$TMP/err" &&
   python3 - "$TMP/w1/model.safetensors" <<'EOF' &&
import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
t = json.loads(f.read(n))["model.layers.0.mlp.down_proj.weight"]
assert t["shape"] == [64, 1] and t["dtype"] == "F32", t
f.seek(8 + n + t["data_offsets"][0])
w = struct.unpack("<64f", f.read(256))
assert 0.01 < (sum(x * x for x in w) / 64) ** 0.5 < 0.03, w
EOF
   echo 1 2 3 | "$QWENCHAT" logits -m "$TMP/w1" --out "$TMP/w1.f32" 2>"$TMP/err"; then
	pass "--intermediate-size 1: down_proj [64, 1] is a matrix of N(0, 0.02), the model loads"
else
	fail "--intermediate-size 1: $(tail -n 2 "$TMP/err")"
fi

# --eval-tokens N: the first ceil(N / ctx) windows of --val, the same losses as a --val
# holding only them (3 windows of 16 here); another cap may be set when resuming.
head -c $((4 * (3 * 16 + 1))) "$TMP/v.u32" >"$TMP/v3.u32"
E="--vocab-size 1000 $SHAPE --data $TMP/d.u32 $SMALL --steps 2 --eval-every 1"
if "$QWENCHAT" train --out "$TMP/ev-cap" $E --val "$TMP/v.u32" --eval-tokens 40 2>"$TMP/err" &&
   grep -q "evaluation: the first 3 of 62 rows of 16 tokens (--eval-tokens 40)" "$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/ev-over" $E --val "$TMP/v3.u32" --eval-tokens 99999999 \
	--steps 1 2>"$TMP/err" &&
   grep -q "evaluation: all 3 rows (--eval-tokens 99999999 covers them)" "$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/ev-cut" $E --val "$TMP/v3.u32" 2>"$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/ev-all" $E --val "$TMP/v.u32" 2>"$TMP/err" &&
   "$QWENCHAT" train --resume "$TMP/ev-cap" --steps 3 --eval-tokens 0 2>"$TMP/err"; then
	cap=$(grep val_loss "$TMP/ev-cap/train-log.jsonl" | head -n 2)
	if [ "$cap" = "$(grep val_loss "$TMP/ev-cut/train-log.jsonl")" ] &&
	   [ "$cap" != "$(grep val_loss "$TMP/ev-all/train-log.jsonl")" ] &&
	   [ "$(grep val_loss "$TMP/ev-cap/train-log.jsonl" | tail -n 1 | cut -d, -f2)" != \
	     "$(echo "$cap" | tail -n 1 | cut -d, -f2)" ]; then
		pass "--eval-tokens 40: the validation loss of the first 3 windows; resumed with 0: all"
	else
		fail "--eval-tokens: $(grep val_loss "$TMP/ev-cap/train-log.jsonl" "$TMP/ev-cut/train-log.jsonl")"
	fi
else
	fail "--eval-tokens: $(tail -n 2 "$TMP/err")"
fi

# --steps 0 then --resume: the same as one run; bf16 checkpoints resume from the f32 copy
B="--tokenizer $TMP/tok $SHAPE --data $TMP/a.txt $SMALL --cosine-steps 3"
"$QWENCHAT" train --out "$TMP/bf-all" $B --steps 3 2>"$TMP/err" &&
"$QWENCHAT" train --out "$TMP/bf-part" $B --steps 0 --save-dtype bf16 2>"$TMP/err" &&
"$QWENCHAT" train --resume "$TMP/bf-part" --steps 3 --save-dtype f32 2>"$TMP/err" ||
	fail "bf16: $(tail -n 2 "$TMP/err")"
same_run "--steps 0 (bf16) resumed to 3 (f32) == 3 steps" "$TMP/bf-all" "$TMP/bf-part"
[ -e "$TMP/bf-part/train-state/master.safetensors" ] &&
	fail "the bf16 run's f32 copy outlived the f32 save"
"$QWENCHAT" train --resume "$TMP/bf-all" --steps 4 --save-dtype bf16 2>"$TMP/err" &&
	"$QWENCHAT" info -m "$TMP/bf-all" >"$TMP/out" 2>&1 && grep -q 'weights BF16' "$TMP/out" &&
	[ -f "$TMP/bf-all/train-state/master.safetensors" ] &&
	pass "--save-dtype bf16: a BF16 model.safetensors that loads, the f32 weights kept" ||
	fail "--save-dtype bf16: $(tail -n 2 "$TMP/err")"

# ---- a full disk, a non-finite loss: the last checkpoint stays whole ------------------------
F="$TMP/fd"
"$QWENCHAT" train --out "$F" $IDS $SMALL --steps 2 --cosine-steps 4 --save-every 1 2>"$TMP/err" ||
	fail "full disk setup: $(tail -n 2 "$TMP/err")"
cp -r "$F" "$TMP/fd-copy"
(ulimit -f 200; exec "$QWENCHAT" train --resume "$F" --steps 4) >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 1 ] && tail -n 1 "$TMP/err" | grep -q '^qwenchat: .*write failed' &&
   cmp -s "$F/model.safetensors" "$TMP/fd-copy/model.safetensors" &&
   cmp -s "$F/train-state/state.json" "$TMP/fd-copy/train-state/state.json" &&
   cmp -s "$F/train-state/optimizer.safetensors" "$TMP/fd-copy/train-state/optimizer.safetensors" &&
   [ ! -e "$F/.checkpoint.new" ]; then
	pass "a full disk at checkpoint time: one line, exit 1, the step-2 checkpoint whole"
else
	fail "full disk: exit $rc: $(tail -n 2 "$TMP/err")"
fi
"$QWENCHAT" train --resume "$F" --steps 4 2>"$TMP/err" && pass "the run goes on once there is room" ||
	fail "resume after a full disk: $(tail -n 2 "$TMP/err")"
# the disk full as a step's record is appended: the log keeps whole lines (it ended in a
# piece of one)
cp -r "$F" "$TMP/fd-log"
( trap '' XFSZ; ulimit -f 8; exec "$QWENCHAT" train --resume "$TMP/fd-log" --steps 400 \
	--save-every 1000 --eval-every 1000 ) >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q 'train-log.jsonl: write failed' "$TMP/err" &&
   [ "$(tail -c 1 "$TMP/fd-log/train-log.jsonl" | od -An -c | tr -d ' ')" = '\n' ] &&
   python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$TMP/fd-log/train-log.jsonl"; then
	pass "a full disk under the log: exit 1, every line of train-log.jsonl whole"
else
	fail "log on a full disk: exit $rc: $(tail -n 1 "$TMP/err"); ends '$(tail -c 20 "$TMP/fd-log/train-log.jsonl")'"
fi

# A NaN planted in the weights of a checkpoint: --resume refuses it (no run saves one),
# the checkpoint left as it was; a model of NaN weights given to --init: its first step
# stops the run, unsaved.
poke "$TMP/fd-copy/model.safetensors" model.norm.weight nan
cp -r "$TMP/fd-copy" "$TMP/nan-before"
train_usage 1 "a NaN in a checkpoint's weights: --resume refuses it" \
	"model.safetensors: tensor model.norm.weight: element 0 is nan" --resume "$TMP/fd-copy" --steps 4
if cmp -s "$TMP/fd-copy/model.safetensors" "$TMP/nan-before/model.safetensors" &&
   cmp -s "$TMP/fd-copy/train-state/state.json" "$TMP/nan-before/train-state/state.json"; then
	pass "the damaged checkpoint was left as it was"
else
	fail "the checkpoint changed after a refused resume"
fi
train_usage 1 "a NaN loss stops the run" "the loss is" --out "$TMP/nan-init" --init "$TMP/nan-before" \
	--data "$TMP/d.u32" $SMALL --steps 2 --save-every 1
[ ! -e "$TMP/nan-init" ] && pass "the non-finite step was not saved" ||
	fail "a run stopped by a non-finite loss at its first step left $TMP/nan-init"
train_usage 1 "--steps 0 --val of NaN weights: a non-finite validation loss stops the run" \
	"stopped (no checkpoint was saved yet)" --out "$TMP/nan-zero" --init "$TMP/nan-before" \
	--data "$TMP/d.u32" --val "$TMP/v.u32" $SMALL --steps 0

# ---- links planted in the directory ---------------------------------------------------------
echo keep >"$TMP/victim"
L="$TMP/links"
"$QWENCHAT" train --out "$L" $SHAPE --vocab-size 1000 --data "$TMP/d.u32" $SMALL --steps 1 \
	--cosine-steps 3 2>"$TMP/err" || fail "links setup: $(tail -n 2 "$TMP/err")"
rm -f "$L/loss.svg" && ln -s "$TMP/victim" "$L/loss.svg"
"$QWENCHAT" train --resume "$L" --steps 2 2>"$TMP/err"
[ "$(cat "$TMP/victim")" = keep ] && [ -f "$L/loss.svg" ] && [ ! -L "$L/loss.svg" ] &&
	pass "a link at loss.svg is replaced by the checkpoint, its target untouched" ||
	fail "a link at loss.svg: $(tail -n 2 "$TMP/err")"
"$QWENCHAT" train --out "$L-val" $IDS $SMALL --steps 1 --cosine-steps 3 2>"$TMP/err" &&
	rm -f "$L-val/loss.svg" && ln -s "$TMP/victim" "$L-val/loss.svg" &&
	"$QWENCHAT" train --resume "$L-val" --steps 3 --eval-every 1 --save-every 3 2>"$TMP/err" &&
	[ "$(cat "$TMP/victim")" = keep ] && [ ! -L "$L-val/loss.svg" ] &&
	pass "a link at loss.svg is replaced by the next evaluation, the run goes on" ||
	fail "a link at loss.svg, evaluating: $(tail -n 2 "$TMP/err")"
rm -f "$L/train-log.jsonl" && ln -s "$TMP/victim" "$L/train-log.jsonl"
train_usage 1 "a link at train-log.jsonl is refused" "train-log.jsonl: is a symbolic link" --resume "$L" --steps 3
[ "$(cat "$TMP/victim")" = keep ] || fail "the log was written through a link"
rm -f "$L/train-log.jsonl"

# ---- one run at a time in a directory ---------------------------------------------------
flock -o "$L/.train.lock" sleep 30 & # -o: the lock is flock's alone, gone with it
held=$!
sleep 0.5
train_usage 1 "--resume of a directory another run holds" "another 'qwenchat train' is using it" \
	--resume "$L" --steps 3
pkill -P $held sleep 2>/dev/null
kill $held 2>/dev/null
wait $held 2>/dev/null
"$QWENCHAT" train --resume "$L" --steps 3 2>"$TMP/err" &&
	pass "once the other run is gone, --resume goes on" ||
	fail "--resume after the lock: $(tail -n 2 "$TMP/err")"

# ---- links at directories: DIR itself and DIR/train-state ------------------------------------
mkdir "$TMP/victim-dir" && echo keep >"$TMP/victim-dir/keep"
cp -r "$L" "$TMP/ts-link" && rm -r "$TMP/ts-link/train-state" &&
	ln -s "$TMP/victim-dir" "$TMP/ts-link/train-state"
train_usage 1 "a link at train-state/ is refused" "train-state: is a symbolic link" \
	--resume "$TMP/ts-link" --steps 4
mkdir "$TMP/ts-new" && ln -s "$TMP/victim-dir" "$TMP/ts-new/train-state"
train_usage 1 "a link at a new run's train-state/ is refused" "train-state: is a symbolic link" \
	--out "$TMP/ts-new" $SHAPE --vocab-size 1000 --data "$TMP/d.u32" $SMALL --steps 1
ln -s "$TMP/victim-dir" "$TMP/out-link"
train_usage 1 "--out naming a link is refused, trailing slash or not" "out-link: is a symbolic link" \
	--out "$TMP/out-link/" $SHAPE --vocab-size 1000 --data "$TMP/d.u32" $SMALL --steps 1
[ "$(ls -A "$TMP/victim-dir")" = keep ] || fail "a run wrote through a link to a directory"

# ---- a damaged checkpoint is refused, naming what ---------------------------------------------
cp -r "$L" "$TMP/dmg-log" && : >"$TMP/dmg-log/train-state/log.jsonl"
train_usage 1 "a checkpoint whose log lost its steps" "log.jsonl: damaged: 0 step records" \
	--resume "$TMP/dmg-log" --steps 4
cp -r "$L" "$TMP/dmg-st" && printf 'x' >>"$TMP/dmg-st/model.safetensors"
train_usage 1 "a checkpoint with bytes after its tensors" "1 byte after the last tensor belongs to no tensor" \
	--resume "$TMP/dmg-st" --steps 4
cp -r "$L" "$TMP/dmg-cfg" && sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' \
	"$TMP/dmg-cfg/config.json"
train_usage 1 "a config.json that is not the run's shape" "num_hidden_layers 3, but the run was started with --layers 2" \
	--resume "$TMP/dmg-cfg" --steps 4
cp -r "$L" "$TMP/edit-data"
# a flipped id in the cached stream: the data files are encoded again, not trained on
cp -r "$L" "$TMP/dmg-cache" && printf '\001' |
	dd of="$TMP/dmg-cache/train-state/data.u32" bs=1 seek=0 conv=notrunc 2>/dev/null
if "$QWENCHAT" train --resume "$TMP/dmg-cache" --steps 4 >/dev/null 2>"$TMP/err" &&
   "$QWENCHAT" train --resume "$L" --steps 4 >/dev/null 2>>"$TMP/err" &&
   cmp -s "$TMP/dmg-cache/model.safetensors" "$L/model.safetensors"; then
	pass "a damaged stream cache is rebuilt from the data: the same weights"
else
	fail "a damaged stream cache: $(tail -n 2 "$TMP/err")"
fi
# the cache gone and the data edited since: refused, the cache left as it was; with the file
# as it was, the run goes on to the same weights
rm "$TMP/edit-data/train-state/data.u32" && cp -p "$TMP/d.u32" "$TMP/d.u32.orig" &&
	head -c 4 "$TMP/d.u32.orig" >>"$TMP/d.u32"
train_usage 1 "a resume whose data changed and whose cache is gone" \
	"d.u32 now makes 8001 tokens, the run trained on 8000" --resume "$TMP/edit-data" --steps 4
mv "$TMP/d.u32.orig" "$TMP/d.u32"
if "$QWENCHAT" train --resume "$TMP/edit-data" --steps 4 >/dev/null 2>"$TMP/err" &&
   cmp -s "$TMP/edit-data/model.safetensors" "$L/model.safetensors"; then
	pass "the data restored, the refused resume goes on: the same weights"
else
	fail "a resume after a refused one: $(tail -n 2 "$TMP/err")"
fi

finish
