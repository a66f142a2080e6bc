#!/bin/sh
# embed.sh — `qwenchat embed` against tests/cli/embed_reference.py, a float64 numpy
# Qwen3 (ppl_reference.py's forward) with last-token pooling and L2 normalization, on a
# model laid out as Qwen3-Embedding's checkpoints are (bare Qwen3Model tensor names, a
# TemplateProcessing post-processor that appends <|endoftext|>, which the reference
# reads from tokenizer.json itself): --exact within 1e-5, the default within 2e-2,
# --dimensions, --no-normalize, --instruct, --json, stdin's lines, a GGUF written by
# `qwenchat quantize` (add_eos_token), a chat model (nothing appended); then the errors.
. "$TOP_SRCDIR/tests/lib.sh"

need_numpy
REF="$TOP_SRCDIR/tests/cli/embed_reference.py"
CAUSAL=$TMP/causal
EMB=$TMP/emb
# weights of std 0.3: pooled states far apart, so that a wrong token or norm shows
chat_model "$CAUSAL" --vocab-size 151936 --hidden-size 48 --intermediate-size 96 --layers 2 \
	--heads 6 --kv-heads 2 --head-dim 16 --std 0.3 --dtype f32 --seed 11
"$PY" "$REF" convert "$CAUSAL" "$EMB" || { echo "convert failed" >&2; exit 1; }

T1='hello world'
T2='Der Hund bellt, die Katze nicht. 😀 <|im_end|> stays text?'
T3='x'
TASK='Given a web search query, retrieve relevant passages'

# ids_json OUT TEXT... — the texts' ids as `qwenchat tokenize` gives them (no special
# tokens), a JSON list of lists
ids_json() {
	out=$1; shift
	: >"$TMP/ids.txt"
	for t in "$@"; do
		printf '%s' "$t" | $QWENCHAT tokenize -m "$EMB" >>"$TMP/ids.txt" || return 1
		echo >>"$TMP/ids.txt"
	done
	"$PY" -c 'import json, sys
print(json.dumps([[int(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]))' \
		"$TMP/ids.txt" >"$out"
}

# close DESC OURS REF TOL — the same number of vectors and values, each within TOL
close() {
	if "$PY" - "$2" "$3" "$4" <<'EOF'
import json, sys
ours = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
ref = json.load(open(sys.argv[2]))
tol = float(sys.argv[3])
assert len(ours) == len(ref), (len(ours), len(ref))
worst = 0.0
for a, b in zip(ours, ref):
    assert len(a) == len(b), (len(a), len(b))
    worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
assert worst <= tol, "max |diff| %.3g > %g" % (worst, tol)
print("max |diff| %.3g" % worst)
EOF
	then pass "$1"; else fail "$1"; fi
}

ids_json "$TMP/ids3.json" "$T1" "$T2" "$T3" || fail "tokenize"
"$PY" "$REF" embed "$EMB" "$TMP/ids3.json" >"$TMP/ref3.json" || fail "reference"

$QWENCHAT embed -m "$EMB" --exact --threads 2 "$T1" "$T2" "$T3" >"$TMP/o" 2>"$TMP/err" ||
	fail "embed --exact: $(cat "$TMP/err")"
close "--exact: 3 texts, <|endoftext|> appended, within 1e-5" "$TMP/o" "$TMP/ref3.json" 1e-5
$QWENCHAT embed -m "$EMB" --threads 2 "$T1" "$T2" "$T3" >"$TMP/o" 2>"$TMP/err" ||
	fail "embed: $(cat "$TMP/err")"
close "default (fast) path within 2e-2" "$TMP/o" "$TMP/ref3.json" 2e-2

printf '%s\n%s\n%s\n' "$T1" "$T2" "$T3" | $QWENCHAT embed -m "$EMB" --exact >"$TMP/o" 2>"$TMP/err" ||
	fail "embed from stdin: $(cat "$TMP/err")"
close "stdin: a text a line" "$TMP/o" "$TMP/ref3.json" 1e-5
printf '%s\r\n%s\r\n%s' "$T1" "$T2" "$T3" | $QWENCHAT embed -m "$EMB" --exact >"$TMP/o" 2>"$TMP/err" ||
	fail "embed from stdin (CR LF): $(cat "$TMP/err")"
close "stdin: CR LF endings, no newline after the last" "$TMP/o" "$TMP/ref3.json" 1e-5

"$PY" "$REF" embed "$EMB" "$TMP/ids3.json" --dimensions 16 >"$TMP/ref.json"
$QWENCHAT embed -m "$EMB" --exact --dimensions 16 "$T1" "$T2" "$T3" >"$TMP/o"
close "--dimensions 16: cut, then normalized" "$TMP/o" "$TMP/ref.json" 1e-5
"$PY" "$REF" embed "$EMB" "$TMP/ids3.json" --no-normalize >"$TMP/ref.json"
$QWENCHAT embed -m "$EMB" --exact --no-normalize "$T1" "$T2" "$T3" >"$TMP/o"
close "--no-normalize: the pooled state" "$TMP/o" "$TMP/ref.json" 1e-5

ids_json "$TMP/idsq.json" "Instruct: $TASK
Query:$T1" || fail "tokenize"
"$PY" "$REF" embed "$EMB" "$TMP/idsq.json" >"$TMP/ref.json"
$QWENCHAT embed -m "$EMB" --exact --instruct "$TASK" "$T1" >"$TMP/o"
close "--instruct: Qwen3-Embedding's query form" "$TMP/o" "$TMP/ref.json" 1e-5

# --json: OpenAI's response, the same vectors, usage counting the appended tokens
$QWENCHAT embed -m "$EMB" --exact --json "$T1" "$T3" >"$TMP/j" 2>"$TMP/err" || fail "--json"
n1=$(printf '%s' "$T1" | $QWENCHAT tokenize -m "$EMB" | wc -w)
if "$PY" - "$TMP/j" "$TMP/ref3.json" "$((n1 + 1 + 2))" <<'EOF'
import json, sys
o, ref, tokens = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert o["object"] == "list" and o["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}, o["usage"]
assert [d["index"] for d in o["data"]] == [0, 1] and all(d["object"] == "embedding" for d in o["data"])
for d, r in zip(o["data"], [ref[0], ref[2]]):
    assert max(abs(a - b) for a, b in zip(d["embedding"], r)) <= 1e-5
EOF
then pass "--json: OpenAI's list, usage"; else fail "--json: $(head -c 300 "$TMP/j")"; fi

# the same model as a GGUF file: add_eos_token carries the appended token
$QWENCHAT quantize -m "$EMB" --type f32 --out "$TMP/emb.gguf" >/dev/null 2>&1 || fail "quantize"
$QWENCHAT embed -m "$TMP/emb.gguf" --exact "$T1" "$T2" "$T3" >"$TMP/o" 2>"$TMP/err" ||
	fail "embed a GGUF: $(cat "$TMP/err")"
close "a GGUF written by quantize: the same vectors" "$TMP/o" "$TMP/ref3.json" 1e-5

# a bare checkpoint of an untied model has no lm_head (Qwen3-Embedding-8B's layout):
# it loads, read as tied
chat_model "$TMP/untied" --vocab-size 151936 --hidden-size 48 --intermediate-size 96 \
	--layers 2 --heads 6 --kv-heads 2 --head-dim 16 --std 0.3 --dtype f32 --seed 12 --no-tie
"$PY" "$REF" convert "$TMP/untied" "$TMP/untied-emb" || fail "convert (untied)"
"$PY" "$REF" embed "$TMP/untied-emb" "$TMP/ids3.json" >"$TMP/ref.json"
$QWENCHAT embed -m "$TMP/untied-emb" --exact "$T1" "$T2" "$T3" >"$TMP/o" 2>"$TMP/err" ||
	fail "embed an untied bare checkpoint: $(cat "$TMP/err")"
close "an untied bare checkpoint without lm_head" "$TMP/o" "$TMP/ref.json" 1e-5

# a chat model's tokenizer appends nothing: the text's own last token
"$PY" - "$CAUSAL" "$EMB" "$TMP/ids3.json" >"$TMP/ref.json" <<'EOF'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["TOP_SRCDIR"], "tests", "cli"))
import embed_reference as r
print(json.dumps(r.embed(sys.argv[1], json.load(open(sys.argv[3])), 0, True)))
EOF
$QWENCHAT embed -m "$CAUSAL" --exact "$T1" "$T2" "$T3" >"$TMP/o"
close "a chat model: nothing appended" "$TMP/o" "$TMP/ref.json" 1e-5

# --- serve's /v1/embeddings -----------------------------------------------------------
"$QWENCHAT" serve -m "$EMB" --backend cpu --threads 2 --exact --kv-f32 --ctx 128 --port 0 \
	2>"$TMP/serve.log" &
SERVE_PID=$!
trap 'kill $SERVE_PID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
while ! grep -q "serving" "$TMP/serve.log" 2>/dev/null && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
PORT=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$TMP/serve.log")
"$PY" "$REF" embed "$EMB" "$TMP/ids3.json" --dimensions 8 >"$TMP/ref8.json"
# every form of input, both encodings, dimensions, errors; then a chat completion after
# them answers as before them
if "$PY" - "$PORT" "$TMP/ref3.json" "$TMP/ref8.json" "$TMP/ids3.json" "$T1" "$T2" "$T3" <<'EOF'
import base64, http.client, json, struct, sys
port = sys.argv[1]
ref, ref8, ids = (json.load(open(f)) for f in sys.argv[2:5])
texts = sys.argv[5:8]
eot = 151643
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, json.loads(r.read())
def near(a, b, tol=1e-5):
    assert len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) <= tol, (a[:3], b[:3])
chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6, "temperature": 0, "seed": 1}
st, before = post("/v1/chat/completions", chat)
assert st == 200, before
st, o = post("/v1/embeddings", {"model": "x", "input": texts})
assert st == 200 and o["object"] == "list" and o["model"], o
for d, r, k in zip(o["data"], ref, range(3)):
    assert d["object"] == "embedding" and d["index"] == k
    near(d["embedding"], r)
n = sum(len(x) + 1 for x in ids)
assert o["usage"] == {"prompt_tokens": n, "total_tokens": n}, o["usage"]
st, o = post("/v1/embeddings", {"input": texts[1], "dimensions": 8, "encoding_format": "base64"})
assert st == 200, o
near(struct.unpack("<8f", base64.b64decode(o["data"][0]["embedding"])), ref8[1])
# token ids are taken as they are: the appended token only where given
st, o = post("/v1/embeddings", {"input": [ids[0] + [eot], ids[2]], "add_special_tokens": True})
assert st == 200, o
near(o["data"][0]["embedding"], ref[0])
assert o["usage"]["prompt_tokens"] == len(ids[0]) + 1 + len(ids[2])
st, o = post("/v1/embeddings", {"input": texts[0], "add_special_tokens": False, "normalize": False})
assert st == 200 and o["usage"]["prompt_tokens"] == len(ids[0]), o
st, o = post("/v1/embeddings", {"input": texts[1], "truncate_prompt_tokens": 2})
assert st == 200 and o["usage"]["prompt_tokens"] == 2, o
for body, param in (({"input": texts[0], "dimensions": 49}, "dimensions"),
                    ({"input": texts[0], "dimensions": 0}, "dimensions"),
                    ({"input": []}, "input"), ({"input": [[1, -2]]}, "input[0][1]"),
                    ({"input": [[151936]]}, "input[0][0]"), ({}, "input"),
                    ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
                    ({"input": "a " * 200}, "input")):
    st, o = post("/v1/embeddings", body)
    assert st == 400 and o["error"]["param"] == param, (body, st, o)
# /tokenize: a prompt gets the appended token unless add_special_tokens is false; a
# conversation gets none unless it is true (vLLM's defaults)
st, o = post("/tokenize", {"prompt": texts[0]})
assert st == 200 and o["tokens"] == ids[0] + [eot], o
st, o = post("/tokenize", {"prompt": texts[0], "add_special_tokens": False})
assert st == 200 and o["tokens"] == ids[0], o
st, o = post("/tokenize", {"messages": chat["messages"]})
assert st == 200 and o["tokens"][-1] != eot, o
st, o2 = post("/tokenize", {"messages": chat["messages"], "add_special_tokens": True})
assert st == 200 and o2["tokens"] == o["tokens"] + [eot], o2
# a body past 64 KiB of input (a RAG batch), and an empty text (the appended token)
st, o = post("/v1/embeddings", {"input": ["word " * 20] * 700})
assert st == 200 and len(o["data"]) == 700, (st, str(o)[:300])
st, o = post("/v1/embeddings", {"input": ["", texts[0]]})
assert st == 200 and o["usage"]["prompt_tokens"] == 1 + len(ids[0]) + 1, o
near(o["data"][1]["embedding"], ref[0])
st, o = post("/v1/embeddings", {"input": "", "add_special_tokens": False})
assert st == 400 and o["error"]["param"] == "input", o
st, after = post("/v1/chat/completions", chat)
assert st == 200 and after["choices"][0]["message"] == before["choices"][0]["message"], (before, after)
print("ok")
EOF
then pass "serve: /v1/embeddings (float, base64, ids, dimensions, errors), chat after it"
else fail "serve: /v1/embeddings"; fi

OPENAI_DIR=$(sh "$TOP_SRCDIR/tests/fetch-openai.sh")
case $? in
0)
	# the official client asks for base64 unless told, and decodes it
	if OPENAI_DIR=$OPENAI_DIR URL="http://127.0.0.1:$PORT/v1" node --input-type=module - \
		"$T1" "$T3" >"$TMP/node.json" 2>"$TMP/node.err" <<'EOF'
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const { default: OpenAI } = await import(pathToFileURL(join(process.env.OPENAI_DIR, 'index.mjs')));
const client = new OpenAI({ baseURL: process.env.URL, apiKey: 'unused', maxRetries: 0 });
const texts = process.argv.slice(2);
const a = await client.embeddings.create({ model: 'm', input: texts });
const b = await client.embeddings.create({ model: 'm', input: texts, encoding_format: 'float' });
console.log(JSON.stringify([a.data.map((d) => d.embedding), b.data.map((d) => d.embedding), a.usage]));
EOF
	then
		if "$PY" - "$TMP/node.json" "$TMP/ref3.json" <<'EOF'
import json, sys
a, b, usage = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
for got in (a, b):
    assert len(got) == 2
    for v, r in zip(got, [ref[0], ref[2]]):
        assert len(v) == len(r) and max(abs(x - y) for x, y in zip(v, r)) <= 1e-5
assert usage["prompt_tokens"] == usage["total_tokens"] > 0
EOF
		then pass "openai client: embeddings.create, base64 and float"
		else fail "openai client: embeddings: $(head -c 300 "$TMP/node.json")"; fi
	else
		fail "openai client: $(head -c 300 "$TMP/node.err")"
	fi ;;
77) echo "skip: the openai npm package is not available (npm missing)" ;;
*) fail "tests/fetch-openai.sh failed" ;;
esac
kill -TERM $SERVE_PID
wait $SERVE_PID && pass "the server stopped cleanly" || fail "the server's exit"

# errors: one line, exit 2 (usage) or 1
expect_exit 2 "--dimensions 0" $QWENCHAT embed -m "$EMB" --dimensions 0 x
expect_err_has "qwenchat: --dimensions:" "it names the option once"
expect_exit 2 "--backend cuda" $QWENCHAT embed -m "$EMB" --backend cuda x
expect_err_has "embeddings run on the CPU engine" "it says where embeddings run"
expect_exit 1 "--dimensions above hidden_size" $QWENCHAT embed -m "$EMB" --dimensions 49 x
expect_err_has "more than the model's 48 (hidden_size)" "it says the limit"
expect_exit 1 "nothing on stdin" sh -c "$QWENCHAT embed -m '$EMB' </dev/null"
expect_err_has "no text to embed" "it says there is no text"
expect_exit 1 "--ctx shorter than a text" $QWENCHAT embed -m "$EMB" --ctx 2 "$T2"
expect_err_has "input 1:" "it names the input"
expect_exit 1 "a text longer than --ctx" sh -c \
	"$PY -c 'print(\"a \" * 300)' | $QWENCHAT embed -m '$CAUSAL' --ctx 16"
# info says the pooling (text and JSON), from the directory and its GGUF
$QWENCHAT info -m "$EMB" | grep -q '^pooling       last (an embedding model' &&
	pass "info: the pooling line" || fail "info: no pooling line"
[ "$($QWENCHAT info -m "$TMP/emb.gguf" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["pooling"])')" = last ] &&
	[ "$($QWENCHAT info -m "$CAUSAL" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["pooling"])')" = None ] &&
	pass "info --json: pooling last, and null for a chat model" || fail "info --json: pooling"

# a pooling other than the last token's is refused, from the directory and from the
# GGUF that quantize writes of it (qwen3.pooling_type, llama.cpp's key)
grep -q 'qwen3.pooling_type' "$TMP/emb.gguf" && pass "quantize writes qwen3.pooling_type" ||
	fail "quantize: no qwen3.pooling_type in the GGUF"
cp -r "$EMB" "$TMP/mean"
printf '{"pooling_mode_mean_tokens": true, "pooling_mode_lasttoken": false}' \
	>"$TMP/mean/1_Pooling/config.json"
expect_exit 1 "mean pooling refused" $QWENCHAT embed -m "$TMP/mean" x
expect_err_has "pools by mean (its modules.json)" "it says which pooling"
$QWENCHAT quantize -m "$TMP/mean" --type f32 --out "$TMP/mean.gguf" >/dev/null 2>&1 ||
	fail "quantize (mean)"
expect_exit 1 "mean pooling refused from a GGUF" $QWENCHAT embed -m "$TMP/mean.gguf" x
expect_err_has "pools by mean (qwen3.pooling_type)" "it names the GGUF key"
printf '{"pooling_mode_mean_tokens": true, "pooling_mode_lasttoken": true}' \
	>"$TMP/mean/1_Pooling/config.json"
expect_exit 1 "two pooling modes refused" $QWENCHAT embed -m "$TMP/mean" x
expect_err_has "1_Pooling/config.json: more than one pooling mode" "it names the file"
printf '[{"type": "sentence_transformers.models.Pooling", "path": "../x"}]' >"$TMP/mean/modules.json"
expect_exit 1 "a Pooling path outside the model refused" $QWENCHAT embed -m "$TMP/mean" x
expect_err_has "modules.json: [0].path" "it names the field"

cp -r "$EMB" "$TMP/bad"
for pp in '{"type": "BertProcessing", "sep": ["x", 1], "cls": ["y", 2]}' \
	'{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [151643]}}}' \
	'{"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<nope>", "type_id": 0}}], "special_tokens": {}}' \
	'{"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "z", "type_id": 0}}], "special_tokens": {"z": {"id": "z", "ids": [999999]}}}'; do
	"$PY" - "$EMB/tokenizer.json" "$TMP/bad/tokenizer.json" "$pp" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
t["post_processor"] = json.loads(sys.argv[3])
json.dump(t, open(sys.argv[2], "w"))
EOF
	expect_exit 1 "post_processor refused: $(echo "$pp" | cut -c1-60)" $QWENCHAT embed -m "$TMP/bad" x
	expect_err_has "tokenizer.json: post_processor" "it names the file and field"
done

[ "$failures" -eq 0 ]
