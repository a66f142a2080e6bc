#!/bin/sh
# train-sft.sh — `qwenchat train --sft` as a user drives it: conversation files (JSON
# Lines and the chat's own saved conversations) train a model from scratch on a
# `train-bpe --chat` tokenizer, and so do a text file's paragraphs (each one asked,
# the next answered); malformed files are one line naming the file, the line
# and the message; what was cut or left out is counted; the loss covers the answers'
# tokens only; a stopped run resumed repeats an uninterrupted one bit for bit; the
# model chats (its template and markers), and a conversation its chat saved
# fine-tunes it without conversion.
. "$TOP_SRCDIR/tests/lib.sh"

python3 - "$TMP" "$TOP_SRCDIR/tests/cli" <<'EOF'
import json, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from convgen import sayer
say = sayer(3)
open(f"{d}/corpus.txt", "w").write(say(20000))
def conv(i):
    msgs = [{"role": "system", "content": say(3)}] if i % 4 == 0 else []
    for t in range(1 + i % 2):
        msgs.append({"role": "user", "content": say(3 + i % 5)})
        a = {"role": "assistant", "content": say(2 + (i + t) % 4)}
        if t % 2 == 0:
            a["reasoning_content"] = say(2)
        msgs.append(a)
    return {"messages": msgs}
with open(f"{d}/conv.jsonl", "w") as f:
    for i in range(12):
        f.write(json.dumps(conv(i)) + "\n")
    f.write("\n")  # a blank line is no conversation
    f.write(json.dumps({"messages": [{"role": "user", "content": "no answer"}]}) + "\n")
    long = [{"role": "user", "content": say(6)}, {"role": "assistant", "content": say(4)},
            {"role": "user", "content": say(300)}, {"role": "assistant", "content": say(4)}]
    f.write(json.dumps({"messages": long}) + "\n")  # cut after its first answer
    f.write(json.dumps({"messages": long[2:]}) + "\n")  # left out
with open(f"{d}/val.jsonl", "w") as f:
    for i in range(3):
        f.write(json.dumps(conv(100 + i)) + "\n")
bad = [json.dumps(conv(0)), json.dumps(conv(1)),
       json.dumps({"messages": [{"role": "user", "content": "x"}, {"content": "y"}]})]
open(f"{d}/bad.jsonl", "w").write("\n".join(bad) + "\n")
open(f"{d}/broken.jsonl", "w").write(json.dumps(conv(0)) + "\n{\"messages\": [\n")
json.dump([{"role": "robot", "content": "x"}], open(f"{d}/robot.json", "w"))
json.dump({"messages": [{"role": "user", "content": "hi"}]}, open(f"{d}/unanswered.json", "w"))
open(f"{d}/d.u32", "wb").write(bytes(400))
EOF
"$QWENCHAT" train-bpe -q --chat --vocab-size 420 --out "$TMP/tok" "$TMP/corpus.txt" ||
	{ echo "train-bpe failed" >&2; exit 1; }

SHAPE="--layers 2 --hidden-size 64 --heads 4 --kv-heads 2 --intermediate-size 96"
SCRATCH="--tokenizer $TMP/tok $SHAPE --sft"
SMALL="--ctx 128 --batch 4 --threads 2 --cosine-steps 4"


# ---- refused -------------------------------------------------------------------------
O="$TMP/o"
train_usage 2 "--sft without a tokenizer" "--sft renders conversations with a tokenizer" --out "$O" \
	--vocab-size 1000 $SHAPE --sft --data "$TMP/conv.jsonl"
train_usage 1 "a message without a role" "$TMP/bad.jsonl:3: messages[1].role: missing or not a string" \
	--out "$O" $SCRATCH --data "$TMP/conv.jsonl" "$TMP/bad.jsonl" $SMALL
train_usage 1 "a line that is not JSON" "$TMP/broken.jsonl:2: invalid JSON at column" \
	--out "$O" $SCRATCH --data "$TMP/broken.jsonl" $SMALL
train_usage 1 "an unknown role in a saved conversation" "$TMP/robot.json: messages[0].role: unknown role" \
	--out "$O" $SCRATCH --data "$TMP/robot.json" $SMALL
train_usage 2 "token ids with --sft" "d.u32: --sft reads conversations, not token ids" \
	--out "$O" $SCRATCH --data "$TMP/d.u32" $SMALL
train_usage 1 "nothing to train on" "--data: no conversation to train on: 1 without an assistant answer" \
	--out "$O" $SCRATCH --data "$TMP/unanswered.json" $SMALL
printf 'one paragraph, answered by none\n' >"$TMP/one-line.txt"
train_usage 1 "a text of one paragraph" "--data: no conversation in its files (JSON Lines hold one a line; a text file makes one of each line and the next" \
	--out "$O" $SCRATCH --data "$TMP/one-line.txt" $SMALL
train_usage 1 "validation data that is malformed" "bad.jsonl:3" --out "$O" $SCRATCH \
	--data "$TMP/conv.jsonl" --val "$TMP/bad.jsonl" $SMALL
[ -e "$O/model.safetensors" ] && fail "a refused run wrote a model" || pass "a refused run writes no model"

# ---- plain text: each paragraph asked, the next answered ------------------------------
python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
paras = ["the man was in the house", "she had not been there \ufffd at all",
         "it was for his one", "they were from the"]
# blank lines, white space around a paragraph, CRLF and an ill-formed byte (U+FFFD)
raw = ("  " + paras[0] + "  \r\n\n\n" + paras[1].replace("\ufffd", "\udcff") + "\n\t\n"
       + paras[2] + "\r\n" + paras[3])
open(f"{d}/story.txt", "wb").write(raw.encode("utf-8", "surrogateescape"))
with open(f"{d}/story.jsonl", "w") as f:
    for q, a in zip(paras, paras[1:]):
        f.write(json.dumps({"messages": [{"role": "user", "content": q},
                                         {"role": "assistant", "content": a}]}) + "\n")
open(f"{d}/nul.txt", "wb").write(b"the man\nwas \0 in\n")
EOF
for f in story.txt story.jsonl; do
	"$QWENCHAT" train --out "$TMP/p-$f" $SCRATCH --data "$TMP/$f" $SMALL --steps 1 \
		>/dev/null 2>"$TMP/err" || fail "--sft on $f: $(tail -n 1 "$TMP/err")"
done
cmp -s "$TMP/p-story.txt/train-state/data.u32" "$TMP/p-story.jsonl/train-state/data.u32" &&
	cmp -s "$TMP/p-story.txt/train-state/data.sft" "$TMP/p-story.jsonl/train-state/data.sft" &&
	pass "a text file's paragraphs train as the conversations of each one and the next" ||
	fail "story.txt and story.jsonl give different tokens or flags"
train_usage 1 "a text file with a NUL byte" "nul.txt: not UTF-8 text: a NUL byte at byte 12" \
	--out "$O" $SCRATCH --data "$TMP/nul.txt" $SMALL

# OpenAI's "weight": 0 leaves an answer out of the loss (context only); a conversation
# whose every answer has it is left out; a weight other than 0 or 1 is refused.
cat >"$TMP/weights.jsonl" <<'EOF'
{"messages": [{"role": "user", "content": "the man"}, {"role": "assistant", "content": "was in the house", "weight": 0}, {"role": "user", "content": "and"}, {"role": "assistant", "content": "he", "weight": 1}]}
{"messages": [{"role": "user", "content": "the man"}, {"role": "assistant", "content": "was", "weight": 0}]}
EOF
"$QWENCHAT" train --out "$TMP/w" $SCRATCH --data "$TMP/weights.jsonl" $SMALL --steps 0 \
	>/dev/null 2>"$TMP/err" || fail "weights: $(tail -n 1 "$TMP/err")"
# the trained tokens: the second answer alone, as the template renders it
n=$(printf '<think>\n\n</think>\n\nhe<|im_end|>' | "$QWENCHAT" tokenize -m "$TMP/w" | wc -w)
grep -q "^data: 1 conversation, [0-9]* tokens, $n of them the assistant.s; 1 left out (no assistant answer to train on)\$" "$TMP/err" &&
	pass "\"weight\": 0 answers are context; a conversation of only such answers is left out" ||
	fail "weights: $(grep '^data' "$TMP/err")"
sed 's/"weight": 1/"weight": 2/' "$TMP/weights.jsonl" >"$TMP/weight2.jsonl"
train_usage 1 "a weight of 2" "weight2.jsonl:1: messages[3].weight: expected 0 or 1 (0: not trained on)" \
	--out "$O" $SCRATCH --data "$TMP/weight2.jsonl" $SMALL

# ---- a run ---------------------------------------------------------------------------
R="$TMP/run"
if "$QWENCHAT" train --out "$R" $SCRATCH --data "$TMP/conv.jsonl" --val "$TMP/val.jsonl" \
	$SMALL --steps 4 --eval-every 2 --lr 3e-3 2>"$TMP/err"; then
	pass "a run from scratch on conversations"
else
	fail "a run on conversations: $(tail -n 3 "$TMP/err")"
fi
grep -q '^data: 13 conversations, [0-9]* tokens, [0-9]* of them the assistant.s; 1 cut after the last answer within --ctx 128; 1 left out (the first answer ends past --ctx 128: --ctx [0-9]* would keep it); 1 left out (no assistant answer to train on)$' "$TMP/err" &&
	pass "the conversations, those cut and those left out are counted" ||
	fail "counts: $(grep -E '^(data|rows|validation)' "$TMP/err")"
# the --ctx it names keeps the one left out, and one less does not
need=$(sed -n 's/.*--ctx \([0-9]*\) would keep it.*/\1/p' "$TMP/err")
for c in "$need" "$((need - 1))"; do
	"$QWENCHAT" train --out "$TMP/need-$c" $SCRATCH --data "$TMP/conv.jsonl" --ctx "$c" \
		--batch 4 --threads 2 --steps 0 >/dev/null 2>"$TMP/err-$c" ||
		fail "--ctx $c: $(tail -n 1 "$TMP/err-$c")"
done
! grep -q 'left out (the first answer' "$TMP/err-$need" &&
	grep -q "1 left out (the first answer ends past --ctx $((need - 1))" "$TMP/err-$((need - 1))" &&
	pass "--ctx $need, as the count says, keeps the conversation left out" ||
	fail "--ctx $need: $(grep '^data' "$TMP/err-$need"); $(grep '^data' "$TMP/err-$((need - 1))")"
# every conversation left out: the error says the --ctx that keeps them all
"$QWENCHAT" train --out "$TMP/none" $SCRATCH --data "$TMP/conv.jsonl" --ctx 16 --batch 4 \
	--threads 2 --steps 0 >/dev/null 2>"$TMP/err-none" && fail "--ctx 16: every conversation left out, yet it ran"
tail -n 1 "$TMP/err-none" | grep -q "whose first answer ends past --ctx 16 (--ctx [0-9]* would keep them all)$" &&
	pass "no conversation within --ctx: the one that keeps them is said" ||
	fail "no conversation within --ctx: $(tail -n 1 "$TMP/err-none")"
grep -q '^rows: one conversation each, padded to --ctx 128: [0-9.]*% of the positions are padding$' "$TMP/err" &&
	grep -q '^validation: 3 conversations' "$TMP/err" && pass "padding and validation reported" ||
	fail "rows/validation lines: $(grep -E '^(rows|validation)' "$TMP/err")"
python3 - "$R" <<'EOF' && pass "state.json records --sft; the cache holds the tokens and their flags" ||
import json, os, sys
d = sys.argv[1]
s = json.load(open(f"{d}/train-state/state.json"))
assert s["options"]["sft"] is True
meta = json.load(open(f"{d}/train-state/data.json"))
assert meta["sft"] == {"ctx": 128}
n = os.path.getsize(f"{d}/train-state/data.u32") // 4
assert n == meta["tokens"] == os.path.getsize(f"{d}/train-state/data.sft")
flags = open(f"{d}/train-state/data.sft", "rb").read()
assert sum(1 for f in flags if f & 2) == meta["sft_counts"]["conversations"] == 13
g = json.load(open(f"{d}/generation_config.json"))
t = {a["content"]: a["id"] for a in json.load(open(f"{d}/tokenizer.json"))["added_tokens"]}
assert g["eos_token_id"] == [t["<|im_end|>"], t["<|endoftext|>"]], g
EOF
	fail "state.json, cache or generation_config.json"

# The loss covers the answers' tokens only: one step over every conversation once
# scores exactly the cache's answer tokens.
if "$QWENCHAT" train --out "$TMP/once" $SCRATCH --data "$TMP/conv.jsonl" --ctx 128 --batch 13 \
	--threads 2 --sequential --steps 1 2>"$TMP/err" &&
   python3 - "$TMP/once" "$(tail -n 1 "$TMP/err")" <<'EOF'
import json, re, sys
d, closing = sys.argv[1:]
log = [json.loads(l) for l in open(f"{d}/train-log.jsonl")]
meta = json.load(open(f"{d}/train-state/data.json"))
assert log[0]["tokens"] == meta["sft_counts"]["scored"], (log[0], meta)
# the closing line counts the positions computed (the prompts too) and says how many
# of them were the targets the log counts
m = re.search(r": (\d+) tokens \((\d+) of them targets\) at \d+ tok/s;", closing)
assert m and int(m[2]) == log[0]["tokens"] < int(m[1]), closing
EOF
then
	pass "a step over every conversation scores exactly their answer tokens; the closing line says so"
else
	fail "targets scored: $(tail -n 2 "$TMP/err")"
fi

# --pack: the same step over every conversation, several to a row, scores the same
# targets with the same loss; the gradient's norm agrees to float rounding (the sums
# run in another order).
P="$TMP/packed"
if "$QWENCHAT" train --out "$P" $SCRATCH --data "$TMP/conv.jsonl" --ctx 128 --batch 13 --pack \
	--threads 2 --sequential --exact --steps 1 2>"$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/unpacked" $SCRATCH --data "$TMP/conv.jsonl" --ctx 128 \
	--batch 13 --threads 2 --sequential --exact --steps 1 2>/dev/null; then
	rows=$(sed -n 's/^rows: packed, \([0-9]*\) rows of --ctx 128 .*/\1/p' "$TMP/err")
	if [ -z "$rows" ] || [ "$rows" -ge 13 ]; then
		fail "--pack: rows: $(grep '^rows' "$TMP/err")"
	else
		# one step that reads every packed row exactly once
		rm -rf "$P"
		"$QWENCHAT" train --out "$P" $SCRATCH --data "$TMP/conv.jsonl" --ctx 128 \
			--batch "$rows" --pack --threads 2 --sequential --exact --steps 1 2>/dev/null
		python3 - "$P" "$TMP/unpacked" <<'EOF' &&
import json, sys
a, b = ([json.loads(l) for l in open(f"{d}/train-log.jsonl")][0] for d in sys.argv[1:])
assert a["tokens"] == b["tokens"], (a, b)
assert abs(a["loss"] - b["loss"]) <= 1e-9 * b["loss"], (a, b)
assert abs(a["grad_norm"] - b["grad_norm"]) <= 1e-6 * b["grad_norm"], (a, b)
EOF
			pass "--pack: $rows rows train as 13 conversations one a row" ||
			fail "--pack: a step over every conversation differs from the unpacked one"
	fi
else
	fail "--pack: $(tail -n 2 "$TMP/err")"
fi
# a packed run stopped at step 2 and resumed to 4 repeats the uninterrupted one
"$QWENCHAT" train --out "$TMP/pk4" $SCRATCH --data "$TMP/conv.jsonl" $SMALL --pack --steps 4 \
	2>/dev/null && "$QWENCHAT" train --out "$TMP/pk2" $SCRATCH --data "$TMP/conv.jsonl" $SMALL \
	--pack --steps 2 2>/dev/null && "$QWENCHAT" train --resume "$TMP/pk2" --steps 4 2>/dev/null &&
	cmp -s "$TMP/pk4/model.safetensors" "$TMP/pk2/model.safetensors" &&
	cmp -s "$TMP/pk4/train-state/optimizer.safetensors" "$TMP/pk2/train-state/optimizer.safetensors" &&
	pass "a resumed --pack run repeats the uninterrupted one bit for bit" ||
	fail "a resumed --pack run differs from the uninterrupted one"
train_usage 2 "--pack without --sft" "--pack packs conversations: it needs --sft" --out "$O" \
	--tokenizer "$TMP/tok" $SHAPE --data "$TMP/corpus.txt" --pack $SMALL
train_usage 2 "--pack on a resumed run without it" "--resume: --pack on conflicts with the run's off" \
	--resume "$TMP/unpacked" --steps 2 --pack

# Stopped at step 2 and resumed to 4: the same model as the uninterrupted run.
S="$TMP/stopped"
"$QWENCHAT" train --out "$S" $SCRATCH --data "$TMP/conv.jsonl" --val "$TMP/val.jsonl" \
	$SMALL --steps 2 --eval-every 2 --lr 3e-3 2>/dev/null &&
	"$QWENCHAT" train --resume "$S" --steps 4 --threads 2 2>"$TMP/err"
if cmp -s "$S/model.safetensors" "$R/model.safetensors" &&
   cmp -s "$S/train-state/optimizer.safetensors" "$R/train-state/optimizer.safetensors"; then
	pass "a resumed --sft run repeats the uninterrupted one bit for bit"
else
	fail "resumed --sft run differs: $(tail -n 2 "$TMP/err")"
fi
grep -q '^data: 13 conversations (cached)' "$TMP/err" && pass "the resumed run reads its cache" ||
	fail "resume cache: $(grep '^data' "$TMP/err")"
"$QWENCHAT" train --out "$TMP/plain" --tokenizer "$TMP/tok" $SHAPE --data "$TMP/corpus.txt" \
	$SMALL --steps 0 2>/dev/null || fail "a plain run"
train_usage 2 "--sft on a resumed plain run" "--resume: --sft on conflicts with the run's off" \
	--resume "$TMP/plain" --steps 1 --sft

# A model saved by transformers 4.47 or later keeps its template in chat_template.jinja
# (tokenizer_config.json then has none): the conversations render with it, and the
# checkpoint keeps it, so that the fine-tuned model chats as it was trained.
J="$TMP/jinja-model"
rm -rf "$J" && cp -r "$R" "$J" && rm -rf "$J/train-state" "$J/train-log.jsonl" &&
	python3 - "$J" <<'EOF' &&
import json, sys
d = sys.argv[1]
c = json.load(open(f"{d}/tokenizer_config.json"))
open(f"{d}/chat_template.jinja", "w").write(c.pop("chat_template"))
json.dump(c, open(f"{d}/tokenizer_config.json", "w"), indent=2)
EOF
	"$QWENCHAT" train --out "$TMP/jinja-ft" --init "$J" --sft --data "$TMP/conv.jsonl" \
		--ctx 128 --batch 1 --threads 2 --steps 0 >/dev/null 2>"$TMP/err" &&
	cmp -s "$J/chat_template.jinja" "$TMP/jinja-ft/chat_template.jinja" &&
	pass "a model's chat_template.jinja goes into the checkpoint" ||
	fail "chat_template.jinja of --init is not in the checkpoint: $(tail -n 1 "$TMP/err")"
# The encoded conversations a run killed before its first save left (a rerun into the
# same --out takes them, not to encode again) are the template's: once the template
# changes (here to plain ChatML, which renders them otherwise), they are encoded again.
"$QWENCHAT" train --out "$TMP/jinja-re" --init "$J" --sft --data "$TMP/conv.jsonl" \
	--ctx 128 --batch 1 --threads 2 --steps 1000000 --save-every 1000000 \
	>/dev/null 2>"$TMP/err-killed" &
pid=$!
i=0
while ! grep -q '^data: ' "$TMP/err-killed" && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $pid
wait $pid 2>/dev/null
cat >"$J/chat_template.jinja" <<'EOF'
{%- for message in messages %}{{ '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}
EOF
if ls "$TMP/jinja-re/train-state/"*.u32 >/dev/null 2>&1 &&
   "$QWENCHAT" train --out "$TMP/jinja-re" --init "$J" --sft --data "$TMP/conv.jsonl" \
	--ctx 128 --batch 1 --threads 2 --steps 0 >/dev/null 2>"$TMP/err" &&
   grep -q '^data: ' "$TMP/err" && ! grep -q '^data: .*(cached)' "$TMP/err" &&
   [ "$(grep '^data: ' "$TMP/err")" != "$(grep '^data: ' "$TMP/err-killed")" ]; then
	pass "a changed chat_template.jinja encodes the conversations again"
else
	fail "a changed chat_template.jinja: $(grep '^data' "$TMP/err"; tail -n 1 "$TMP/err")"
fi

# ---- the model chats as Qwen3 does -------------------------------------------------------
cat >"$TMP/c.json" <<'EOF'
[{"role": "user", "content": "the of"}, {"role": "assistant", "content": "and", "reasoning_content": "to"}]
EOF
if "$QWENCHAT" template -m "$R" --messages "$TMP/c.json" --add-generation-prompt \
	>"$TMP/text" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
   "$QWENCHAT" tokenize -m "$R" <"$TMP/text" >"$TMP/ids" &&
   python3 - "$R" "$TMP/text" "$TMP/ids" <<'EOF'
import json, sys
t = {a["content"]: a["id"] for a in json.load(open(f"{sys.argv[1]}/tokenizer.json"))["added_tokens"]}
text, ids = open(sys.argv[2]).read(), [int(x) for x in open(sys.argv[3]).read().split()]
for m in ("<|im_start|>", "<|im_end|>", "<think>", "</think>"):
    assert ids.count(t[m]) == text.count(m) > 0, m
EOF
then
	pass "the trained model renders with Qwen3's template; its markers are single tokens"
else
	fail "template/tokenize on the trained model: $(head -c 300 "$TMP/err")"
fi

# The same records as a JSON array (as alpaca_data.json and ShareGPT dumps come), and
# files that start with a UTF-8 byte-order mark (Windows editors write one).
python3 - "$TMP" <<'EOF'
import json, sys
d = sys.argv[1]
recs = [{"instruction": "the of and", "input": "was he", "output": "that it for"},
        {"instruction": "his on with", "input": "", "output": "as at by had"},
        {"conversations": [{"from": "human", "value": "they be this"},
                           {"from": "gpt", "value": "from are have"}]}]
json.dump(recs, open(f"{d}/records.json", "w"), indent=2)
with open(f"{d}/records.jsonl", "w") as f:
    for r in recs:
        f.write(json.dumps(r) + "\n")
open(f"{d}/bom.jsonl", "wb").write(b"\xef\xbb\xbf" + open(f"{d}/records.jsonl", "rb").read())
open(f"{d}/para.txt", "w").write("the of and to\nin is was he\nthat it for\n")
open(f"{d}/bom.txt", "wb").write(b"\xef\xbb\xbf" + open(f"{d}/para.txt", "rb").read())
EOF
# same_stream TAG DESC A B: --sft makes the same tokens and flags of file A as of B
same_stream() {
	for f in "$3" "$4"; do
		# shellcheck disable=SC2086
		"$QWENCHAT" train --sft --out "$TMP/$1-${f##*/}" --tokenizer "$TMP/tok" $SHAPE \
			--data "$f" --ctx 64 --batch 1 --steps 0 --threads 2 2>"$TMP/err" ||
			{ fail "$2: $(tail -n 1 "$TMP/err")"; return; }
	done
	a="$TMP/$1-${3##*/}/train-state" b="$TMP/$1-${4##*/}/train-state"
	cmp -s "$a/data.u32" "$b/data.u32" && cmp -s "$a/data.sft" "$b/data.sft" && pass "$2" ||
		fail "$2: the streams differ"
}
same_stream array "a JSON array of Alpaca and ShareGPT records trains as its JSON Lines" \
	"$TMP/records.json" "$TMP/records.jsonl"
same_stream bomj "a byte-order mark before JSON Lines is skipped" "$TMP/bom.jsonl" \
	"$TMP/records.jsonl"
same_stream bomt "a byte-order mark before text is not in its first message" "$TMP/bom.txt" \
	"$TMP/para.txt"
printf '[{"instruction": "a", "output": "b"} {"instruction": "c", "output": "d"}]' \
	>"$TMP/bad-records.json"
# shellcheck disable=SC2086
"$QWENCHAT" train --sft --out "$TMP/bad-rec" --tokenizer "$TMP/tok" $SHAPE \
	--data "$TMP/bad-records.json" --ctx 64 --steps 0 2>"$TMP/err"
grep -q "bad-records.json: record 1: ',' or the array's end expected at line 1, column 38" \
	"$TMP/err" && pass "a malformed array of records names the record, line and column" ||
	fail "a malformed array of records: $(tail -n 1 "$TMP/err")"
# pretty-printed files: the line and column in the file, not in the record
printf '[\n  {\n    "instruction": "a",\n    "output": "b"\n  },\n  {\n    "output": "d" "e"\n  }\n]\n' \
	>"$TMP/pretty-bad.json"
printf '[\n  {"instruction": "a", "output": "b"},\n  {"instruction": "c", "output": "d"},\n]\n' \
	>"$TMP/comma.json"
printf '{\n  "messages": [\n    {"role": "user", "content": "hi"}\n  ]\n}\n}\n' >"$TMP/junk.json"
printf '[{"instruction": "a", "output": "b"}, 5]' >"$TMP/number.json"
printf '{"conversations": [{"role": "human", "content": "q"}, {"role": "gpt", "content": "a"}]}\n' \
	>"$TMP/sg-roles.jsonl"
printf ' [ ]\n' >"$TMP/empty-array.json"
for c in "pretty-bad.json|record 2: invalid JSON at line 7, column" \
	 "comma.json|record 2: a ',' and then the array's end (line 3, column 38): a trailing comma" \
	 "junk.json|junk.json: invalid JSON at line 6, column 1" \
	 "number.json|record 2: not a conversation: expected \"messages\" (OpenAI), \"conversations\" (ShareGPT) or \"instruction\" and \"output\" (Alpaca), got a number" \
	 "sg-roles.jsonl|sg-roles.jsonl:1: conversations[0].role: unknown role \"human\"" \
	 "empty-array.json|--data: no conversation in its files"; do
	f=${c%%|*} want=${c#*|}
	# shellcheck disable=SC2086
	train_usage 1 "$f: the error says where and what" "$want" --sft --out "$TMP/bad-rec" \
		--tokenizer "$TMP/tok" $SHAPE --data "$TMP/$f" --ctx 64 --steps 0
done

# A conversation the chat saved (/save, and its autosave) fine-tunes the model as it is.
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
printf 'the of and\n/save %s\nwas he\n' "$TMP/saved.json" |
	"$QWENCHAT" chat -m "$R" --backend cpu --threads 2 -n 8 --seed 1 >"$TMP/out" 2>"$TMP/err" ||
	fail "the chat: $(tail -n 2 "$TMP/err")"
auto=$(cat "$TMP/state/qwenchat/last-session" 2>/dev/null)
if [ -f "$TMP/saved.json" ] && [ -n "$auto" ] && [ -f "$auto" ] &&
   "$QWENCHAT" train --out "$TMP/ft" --init "$R" --sft --data "$TMP/saved.json" "$auto" \
	--ctx 64 --batch 2 --threads 2 --steps 2 2>"$TMP/err"; then
	grep -q '^data: 2 conversations' "$TMP/err" &&
		pass "conversations the chat saved fine-tune the model without conversion" ||
		fail "saved conversations: $(grep '^data' "$TMP/err")"
else
	fail "fine-tuning on the chat's saved conversations: $(tail -n 2 "$TMP/err")"
fi
finish
