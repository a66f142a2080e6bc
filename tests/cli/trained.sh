#!/bin/sh
# trained.sh — the commands on a model trained here (tests/trained-model.sh: a
# train-bpe --chat tokenizer, a 2-layer model pretrained on the Brown corpus, and
# its --sft chat copy), where random weights would tell nothing:
#   - the held-out loss is far below the unigram model's;
#   - perplexity is lower on held-out English than on the same words shuffled;
#   - quantize to bf16, q8_0 and q4_k_m GGUF files: Q8_0's perplexity within 1% of
#     bf16's, Q4_K_M's within 2% (and their KL to bf16 small), by perplexity --kl-base;
#   - run, serve and the chat UI answer with English words and stop at the end of
#     their turn (<|im_end|>), not at a token limit.
# "English words": at least 8 pairs of neighbours (words, numbers, punctuation) within a
# line of the answers, a tenth of them pairs the training text also has. Three answers
# of the trained model score 0.24-0.70 through run and serve, 0.19 once in the UI, whose
# later turns follow earlier ones, unlike the one-turn conversations it was tuned on;
# a random model's score 0.01-0.03. Whole words are a weak sign, as a byte-level BPE's
# tokens often are words (a random model's: 53% words of the text).
. "$TOP_SRCDIR/tests/lib.sh"

D=$(sh "$TOP_SRCDIR/tests/trained-model.sh") || exit $?
CORPUS=$(sh "$TOP_SRCDIR/tests/fetch-corpus.sh") || exit $?
Q="$QWENCHAT"
export HOME="$TMP" XDG_STATE_HOME="$TMP/state" LANG=C.UTF-8 LC_ALL=C.UTF-8

# words FILE DESC — FILE's text is English words, as above
words() {
	if python3 - "$CORPUS/small.txt" "$1" <<'EOF'; then pass "$2"; else fail "$2: $(head -c 300 "$1")"; fi
import re, sys
def pieces(text):
    return re.findall(r"[a-z]+|[0-9]+|[^\sa-z0-9]", text.lower())
corpus = pieces(open(sys.argv[1], encoding="utf-8").read())
known = set(zip(corpus, corpus[1:]))
pairs = [p for line in open(sys.argv[2], encoding="utf-8").read().split("\n")
         for p in zip(pieces(line), pieces(line)[1:])]
share = sum(p in known for p in pairs) / max(len(pairs), 1)
print("%d pairs, %.0f%% of them in the corpus" % (len(pairs), 100 * share))
sys.exit(0 if len(pairs) >= 8 and share >= 0.1 else 1)
EOF
}

# 1. The held-out loss against the unigram model's (both in nats per token).
val=$(python3 -c 'import json,sys
v=[json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l]
print(v[-1]["val_loss"])' "$D/model/train-log.jsonl")
uni=$(cat "$D/unigram")
if python3 -c "import sys; sys.exit(0 if $val < $uni - 0.4 else 1)"; then
	pass "held-out loss $val < unigram $uni - 0.4"
else
	fail "held-out loss $val, unigram $uni: not 0.4 nats below"
fi

# 2. Perplexity: held-out English against its words shuffled.
head -c 30000 "$CORPUS/val.txt" >"$TMP/en.txt"
python3 -c 'import random,sys
w=open(sys.argv[1],encoding="utf-8").read().split()
random.Random(1).shuffle(w)
print(" ".join(w))' "$TMP/en.txt" >"$TMP/shuf.txt"
PPL="$Q perplexity --backend cpu --ctx 128 --json"
$PPL -m "$D/model" -f "$TMP/en.txt" >"$TMP/en.json" &&
	$PPL -m "$D/model" -f "$TMP/shuf.txt" >"$TMP/shuf.json" ||
	fail "perplexity: $(cat "$TMP/en.json" "$TMP/shuf.json" 2>/dev/null)"
python3 - "$TMP/en.json" "$TMP/shuf.json" <<'EOF' && pass "English is likelier than shuffled" ||
import json, sys
en, sh = (json.load(open(p)) for p in sys.argv[1:])
print("ppl English %.1f, shuffled %.1f" % (en["ppl"], sh["ppl"]))
sys.exit(0 if sh["nll"] > en["nll"] + 0.15 else 1)
EOF
	fail "perplexity of shuffled text is not 0.15 nats above English"

# 3. quantize: each copy against bf16 on the same windows.
for t in bf16 q8_0 q4_k_m; do
	"$Q" quantize -m "$D/model" --type $t --out "$TMP/$t.gguf" >/dev/null 2>"$TMP/err" ||
		fail "quantize --type $t: $(head -c 300 "$TMP/err")"
done
for t in q8_0 q4_k_m; do
	$PPL -m "$TMP/$t.gguf" --kl-base "$TMP/bf16.gguf" -f "$TMP/en.txt" >"$TMP/$t.json" ||
		fail "perplexity $t: $(head -c 300 "$TMP/$t.json")"
done
$PPL -m "$TMP/bf16.gguf" -f "$TMP/en.txt" >"$TMP/bf16.json" || fail "perplexity bf16"
for pair in "q8_0 0.01 0.001" "q4_k_m 0.02 0.005"; do
	set -- $pair
	python3 - "$TMP/bf16.json" "$TMP/$1.json" "$2" "$3" <<'EOF' &&
import json, sys
b, q = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rel = q["ppl"] / b["ppl"] - 1
print("ppl %.3f vs bf16 %.3f (%+.3f%%), KL %.2e, top-1 %.3f"
      % (q["ppl"], b["ppl"], 100 * rel, q["kl"], q["top1"]))
sys.exit(0 if abs(rel) <= float(sys.argv[3]) and q["kl"] <= float(sys.argv[4]) else 1)
EOF
		pass "$1: perplexity within $2 of bf16's, KL <= $3" ||
		fail "$1: perplexity or KL against bf16 out of bounds"
done

# 4. run: three prompts, each ends its turn; the answers are words.
: >"$TMP/run.txt"
n=0
for p in "The jury said it would look into the election." \
	"What did the committee decide about the new budget?" \
	"She walked home after the long day at school."; do
	n=$((n + 1))
	"$Q" run -m "$D/chat" --backend cpu -p "$p" -n 200 --seed $n --stats \
		>>"$TMP/run.txt" 2>"$TMP/run.err" || fail "run: $(head -c 300 "$TMP/run.err")"
	grep -q 'stopped: end of turn' "$TMP/run.err" && pass "run answer $n ends its turn" ||
		fail "run answer $n: $(grep stopped "$TMP/run.err")"
	echo >>"$TMP/run.txt"
done
words "$TMP/run.txt" "run answers with words"

# 5. serve: a completion ends with finish_reason "stop" and is words.
"$Q" serve -m "$D/chat" --backend cpu --threads 1 --port 0 2>"$TMP/serve.log" &
SPID=$!
trap 'kill $SPID 2>/dev/null; T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
until grep -q serving "$TMP/serve.log" 2>/dev/null || [ $i -gt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$TMP/serve.log")
: >"$TMP/serve.txt"
for s in 1 2 3; do
	python3 - "$port" $s >>"$TMP/serve.txt" <<'EOF' || fail "serve request $s"
import json, sys, urllib.request
body = {"messages": [{"role": "user", "content": "Tell me about the city council meeting."}],
        "seed": int(sys.argv[2]), "max_tokens": 200}
rq = urllib.request.Request("http://127.0.0.1:%s/v1/chat/completions" % sys.argv[1],
                            json.dumps(body).encode(), {"Content-Type": "application/json"})
c = json.load(urllib.request.urlopen(rq, timeout=120))["choices"][0]
print(c["message"]["content"])
sys.exit(0 if c["finish_reason"] == "stop" else 1)
EOF
done
words "$TMP/serve.txt" "serve answers with words, finish_reason stop"
kill $SPID
wait $SPID

# 6. The chat UI in tmux: the answer on screen is words and ends by itself.
if ! command -v tmux >/dev/null || ! grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h"; then
	echo "(no tmux or no TUI: the UI part is skipped)"
	finish
fi
SOCK=qwenchat-trained-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
WAIT=60
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && WAIT=180
export TERM=xterm-256color
T new-session -d -s ui -x 100 -y 30 \
	"$Q -m '$D/chat' --backend cpu --threads 2 -n 200 --seed 3; echo EXITED \$?; sleep 600"
screen() { T capture-pane -p -t ui; }
wait_screen 'Type a message' || fail "the UI did not start"
for m in "The jury met on Monday." "Tell me about the old house by the river." \
	"What did the mayor say to the press?"; do
	T send-keys -t ui "$m" Enter
	sleep 1
	wait_screen '^Enter send \|' || fail "the answer to '$m' did not end"
done
T capture-pane -p -t ui >"$TMP/screen"
cat "$TMP/screen"
T send-keys -t ui '/quit' Enter
wait_screen 'EXITED 0' && pass "the UI quits with exit 0" || fail "the UI's exit"
python3 - "$TMP/state/qwenchat/last-session" "$TMP/screen" "$TMP/ui" <<'EOF' ||
import json, sys
path = open(sys.argv[1]).read().strip()
conv = json.load(open(path))
msgs = conv["messages"] if isinstance(conv, dict) else conv
said = [m["content"].strip() for m in msgs if m["role"] == "assistant"]
for i, a in enumerate(said):
    open("%s%d.txt" % (sys.argv[3], i), "w", encoding="utf-8").write(a)
open(sys.argv[3] + ".txt", "w", encoding="utf-8").write("\n".join(said))
# the last answer's first words are on the screen (the UI wraps and indents lines)
screen = " ".join(open(sys.argv[2], encoding="utf-8").read().split())
sys.exit(0 if len(said) == 3 and " ".join(said[-1].split()[:3]) in screen else 1)
EOF
	fail "the answers in the saved conversation are not those on screen"
words "$TMP/ui.txt" "the UI answers with words"
# ended by <|im_end|>: each answer is shorter than -n 200 tokens
for a in 0 1 2; do
	n=$("$Q" tokenize -m "$D/chat" <"$TMP/ui$a.txt" | wc -w)
	[ "$n" -lt 200 ] && pass "UI answer $a ends its turn ($n tokens)" ||
		fail "UI answer $a reached the token limit"
done
finish
