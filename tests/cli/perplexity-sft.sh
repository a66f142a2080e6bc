#!/bin/sh
# perplexity-sft.sh — `qwenchat perplexity --sft` against tests/cli/ppl_sft_ref.py,
# which renders the conversations with jinja2, tokenizes them with a BPE of its own,
# cuts them as `train --sft` cuts a row and scores their answers with a float64 Qwen3:
# the counts, the tokens scored, the mean NLL (1e-4 relative) and with --kl-base the
# statistics against a base; a checkpoint trained with --sft --exact scores its
# --val conversations as its validation loss did; then the usage and file errors.
. "$TOP_SRCDIR/tests/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import numpy, jinja2, regex, torch' 2>/dev/null; then
	[ -n "${CI:-}" ] && { echo "no python3 with numpy, jinja2, regex, torch" >&2; exit 1; }
	echo "SKIP: python3 with numpy, jinja2, regex and torch is missing" >&2
	exit 77
fi
REF="$PY $TOP_SRCDIR/tests/cli/ppl_sft_ref.py"
PPL="$QWENCHAT perplexity --backend cpu --sft"

# Conversations (tests/cli/convgen.py): system prompts, reasoning, several turns, a
# tool call, one without an answer, one whose first answer ends past a short window and
# one cut after its first answer there
"$PY" "$TOP_SRCDIR/tests/cli/convgen.py" "$TMP" --cut
printf '{"messages": [{"role": "user", "content": "no answer"}]}\n' >"$TMP/none.jsonl"
"$QWENCHAT" train-bpe -q --chat --vocab-size 400 --out "$TMP/tok" "$TMP/corpus.txt" ||
	{ echo "train-bpe failed" >&2; exit 1; }
# weights of std 0.3: peaked distributions, so that a wrong position moves the NLL
MK="$TOP_BUILDDIR/tests/mkmodel"
for s in 5 9; do
	"$MK" --out "$TMP/m$s" --tokenizer "$TMP/tok" --vocab-size 400 --hidden-size 64 \
		--layers 2 --heads 4 --kv-heads 2 --head-dim 16 --std 0.3 --max-position 256 \
		--seed $s >/dev/null || { echo "mkmodel failed" >&2; exit 1; }
done

# close OURS REF — the same counts and tokens, every figure within 1e-4 (relative; the
# log ratio to the NLL, dp to its rms)
close() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
o, r = json.loads(sys.argv[1]), json.loads(sys.argv[2])
bad = [k for k in ("tokens", "conversations", "cut", "left_out", "no_answer") if o[k] != r[k]]
scale = {k: abs(v) for k, v in r.items()}
scale.update(ln_ppl_ratio=r["nll"], dp=r.get("dp_rms"))
for k in r:
    if k not in ("tokens", "conversations", "cut", "left_out", "no_answer", "top1") and \
            abs(o[k] - r[k]) > 1e-4 * scale[k]:
        bad.append("%s %.3g relative" % (k, abs(o[k] - r[k]) / scale[k]))
if "top1" in r and o["top1"] != r["top1"]:
    bad.append("top1")
if o["loop"] != "sft" or o["windows"] != o["conversations"]:
    bad.append("loop or windows")
print(", ".join(bad) or "nll %.2g relative" % (abs(o["nll"] - r["nll"]) / r["nll"]))
sys.exit(1 if bad else 0)
EOF
}

for ctx in 48 256; do
	ours=$($PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" --ctx $ctx --json 2>"$TMP/err")
	ref=$($REF "$TMP/m5" "$TMP/conv.jsonl" $ctx)
	msg=$(close "$ours" "$ref") && pass "--sft --ctx $ctx against the reference: $msg" ||
		fail "--sft --ctx $ctx: $msg ($ours against $ref; $(head -c 300 "$TMP/err"))"
done
"$PY" -c 'import json, sys; o = json.loads(sys.argv[1])
sys.exit(0 if o["cut"] > 0 and o["left_out"] > 0 and o["no_answer"] == 1 else 1)' \
	"$($PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" --ctx 48 --json)" &&
	pass "--ctx 48 cuts one, leaves one out, and one has no answer" ||
	fail "--ctx 48 does not exercise the cut: $($PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" --ctx 48 --json)"
ours=$($PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" --ctx 48 --json --kl-base "$TMP/m9" 2>"$TMP/err")
ref=$($REF "$TMP/m5" "$TMP/conv.jsonl" 48 --kl-base "$TMP/m9")
msg=$(close "$ours" "$ref") && pass "--sft --kl-base against the reference: $msg" ||
	fail "--sft --kl-base: $msg ($ours against $ref; $(head -c 300 "$TMP/err"))"

# a conversation as the chat saves it (its reasoning in <think>)
ours=$($PPL -m "$TMP/m5" -f "$TMP/saved.json" --json 2>"$TMP/err")
ref=$($REF "$TMP/m5" "$TMP/saved.json" 256)
msg=$(close "$ours" "$ref") && pass "--sft of a saved chat against the reference: $msg" ||
	fail "--sft of a saved chat: $msg ($ours against $ref; $(head -c 300 "$TMP/err"))"
ref=$($REF "$TMP/m5" "$TMP/conv.jsonl" 48 --kl-base "$TMP/m9")

# the table says what was cut and left out (the reference's counts)
$PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" --ctx 48 >"$TMP/table" 2>"$TMP/err"
"$PY" - "$TMP/table" "$ref" <<'EOF' && pass "the table's conversations, cut, left out and without an answer" ||
import json, re, sys
t, r = open(sys.argv[1]).read(), json.loads(sys.argv[2])
want = [r"^file .*: %d conversations, each a window of its own of at most 48 tokens, their "
        r"answers scored$" % r["conversations"],
        r"^cut +%d after their last answer within --ctx 48$" % r["cut"],
        r"^left out +%d whose first answer ends past --ctx 48 \(they need --ctx \d+; the "
        r"model takes at most 257\)$" % r["left_out"],
        r"^no answer +%d without an answer to score$" % r["no_answer"],
        r"^tokens +%d scored$" % r["tokens"]]
sys.exit(0 if all(re.search(p, t, re.M) for p in want) else 1)
EOF
	fail "the table: $(cat "$TMP/table" "$TMP/err") reference $ref"

# a checkpoint trained with --sft --exact: its --val conversations score as its
# validation loss (the same windows, by default), and a notice says so
"$QWENCHAT" train --out "$TMP/run" --init "$TMP/m5" --sft --data "$TMP/conv.jsonl" \
	--val "$TMP/conv.jsonl" --ctx 40 --batch 2 --steps 2 --exact --sequential \
	--threads 2 >"$TMP/train.log" 2>&1 || fail "train --sft: $(tail -n 3 "$TMP/train.log")"
ours=$($PPL -m "$TMP/run" -f "$TMP/conv.jsonl" --json 2>"$TMP/err")
"$PY" - "$ours" "$TMP/run/train-log.jsonl" <<'EOF' && pass "a checkpoint's --val conversations score its val_loss" ||
import json, sys
o = json.loads(sys.argv[1])
v = [json.loads(l) for l in open(sys.argv[2]) if "val_loss" in l][-1]
print(o, v)
sys.exit(0 if o["ctx"] == o["stride"] == 41 and abs(o["nll"] - v["val_loss"]) <= 1e-5 * v["val_loss"]
         else 1)
EOF
	fail "a checkpoint's val_loss: $ours, $(grep val_loss "$TMP/run/train-log.jsonl" | tail -n 1)"
grep -q 'conversations cut to 41 tokens, as its validation loss' "$TMP/err" &&
	pass "the notice says the windows are the validation loss's" ||
	fail "no notice of the validation windows: $(cat "$TMP/err")"

# errors: one line, exit 2 for usage, 1 for the file
for f in "--stride 4" "--chunks 2" "--llama-chunks" "--no-eot"; do
	# shellcheck disable=SC2086
	expect_exit 2 "--sft with $f" $PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" $f
	expect_err_has "--sft scores each conversation in a window of its own" "--sft with $f: why"
done
expect_exit 1 "--sft of a file without an answer" $PPL -m "$TMP/m5" -f "$TMP/none.jsonl"
expect_err_has "no conversation to score: 1 without an answer" "--sft without an answer: why"
head -n 4 "$TMP/conv.jsonl" >"$TMP/four.jsonl" # none too long for the model
expect_exit 1 "--sft where no first answer fits --ctx" $PPL -m "$TMP/m5" -f "$TMP/four.jsonl" --ctx 3
grep -Eq 'whose first answer ends past --ctx 3 \(--ctx [0-9]+ keeps them\)$' "$TMP/err" &&
	pass "--sft where none fits: the --ctx that keeps them" || fail "none fits: $(cat "$TMP/err")"
# ... and where no --ctx the model takes would (mkmodel --max-position 256)
printf '{"messages": [{"role": "user", "content": "%s"}, {"role": "assistant", "content": "a"}]}\n' \
	"$(printf 'the %.0s' $(seq 300))" >"$TMP/long.jsonl"
expect_exit 1 "--sft where no --ctx would keep it" $PPL -m "$TMP/m5" -f "$TMP/long.jsonl"
expect_err_has "; the model takes at most 257)" "--sft where no --ctx would keep it: why"
"$PY" -c 'import numpy as np, sys; np.arange(10, dtype="<u4").tofile(sys.argv[1])' "$TMP/ids.u32"
expect_exit 1 "--sft of token ids" $PPL -m "$TMP/m5" -f "$TMP/ids.u32"
expect_err_has "not token ids" "--sft of token ids: why"
printf '{"messages": [{"role": "user"}]}\n' >"$TMP/bad.jsonl"
expect_exit 1 "--sft of a malformed conversation" $PPL -m "$TMP/m5" -f "$TMP/bad.jsonl"
expect_err_has "bad.jsonl:1: " "--sft of a malformed conversation: the file and line"
# a base whose tokenizer gives other tokens (fewer merges: the corpus's words are
# whole tokens at 400)
"$QWENCHAT" train-bpe -q --chat --vocab-size 300 --out "$TMP/tok2" "$TMP/corpus.txt" &&
	"$MK" --out "$TMP/other" --tokenizer "$TMP/tok2" --vocab-size 400 --hidden-size 64 \
		--layers 2 --heads 4 --kv-heads 2 --head-dim 16 --max-position 256 >/dev/null
expect_exit 1 "--sft --kl-base with another tokenizer" $PPL -m "$TMP/m5" -f "$TMP/conv.jsonl" \
	--kl-base "$TMP/other"
expect_err_has "render or tokenize the conversations otherwise" "--kl-base with another tokenizer: why"
# stdin, read once for both models
ours=$($PPL -m "$TMP/m5" -f - --ctx 48 --json --kl-base "$TMP/m9" <"$TMP/conv.jsonl" 2>"$TMP/err")
msg=$(close "$ours" "$ref") && pass "--sft from stdin with --kl-base: $msg" ||
	fail "--sft from stdin: $msg ($ours; $(head -c 300 "$TMP/err"))"
finish
