#!/bin/sh
# sft-padding.sh QWENCHAT MKMODEL TOKENIZER_DIR — the share of padding in the rows of
# `qwenchat train --sft` at --ctx 512, 1024 and 2048 on 2,000 generated conversations
# (70% one turn, else 2-4; user messages lognormal around 40 words, answers around 150,
# half with reasoning around 120), one conversation a row and packed (--pack), and
# four timed steps of 2 x 1024 both ways on a tiny model with the tokenizer's
# vocabulary (BENCHMARKS.md). Needs python3.
set -eu
Q=$1 MKMODEL=$2 TOK=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$T/conv.jsonl" <<'PY'
import json, math, random, sys
r = random.Random(42)
w = ("the of and to in is was he that it for his on with as at by had they be this from "
     "are have not or were she but we one which you her all would there their what so up "
     "out if about who get go me when make can like time no just him know take people into "
     "year your good some could them see other than then now look only come its over think "
     "also back after use two how our work first well way even new want because any these "
     "give day most us").split()
say = lambda n: " ".join(r.choice(w) for _ in range(max(1, n)))
with open(sys.argv[1], "w") as f:
    for i in range(2000):
        msgs = [{"role": "system", "content": say(12)}] if r.random() < 0.3 else []
        for t in range(1 if r.random() < 0.7 else r.randint(2, 4)):
            msgs.append({"role": "user", "content": say(int(r.lognormvariate(math.log(40), 0.9)))})
            a = {"role": "assistant", "content": say(int(r.lognormvariate(math.log(150), 0.8)))}
            if r.random() < 0.5:
                a["reasoning_content"] = say(int(r.lognormvariate(math.log(120), 0.8)))
            msgs.append(a)
        f.write(json.dumps({"messages": msgs}) + "\n")
PY
vocab=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(max([max(t["model"]["vocab"].values())] + [a["id"] for a in t["added_tokens"]]) + 1)' "$TOK/tokenizer.json")
"$MKMODEL" --out "$T/m" --tokenizer "$TOK" --vocab-size "$vocab" --hidden-size 64 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 --intermediate-size 128 >/dev/null
for ctx in 512 1024 2048; do
	for pack in "" --pack; do
		"$Q" train --out "$T/r$ctx$pack" --init "$T/m" --sft --data "$T/conv.jsonl" --ctx $ctx \
			--batch 2 --steps 0 --threads 2 $pack 2>&1 | grep -E '^(data|rows)'
	done
done
# the same steps one conversation a row and packed, alternating
for round in 1 2; do
	for pack in "" --pack; do
		rm -rf "$T/steps"
		"$Q" train --out "$T/steps" --init "$T/m" --sft --data "$T/conv.jsonl" --ctx 1024 \
			--batch 2 --steps 4 --threads 2 --sequential $pack >/dev/null 2>&1
		echo "round $round ${pack:-one a row}: $(grep -o '"seconds": [0-9.]*' "$T/steps/train-log.jsonl" | tr '\n' ' ')"
	done
done
