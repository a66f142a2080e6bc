#!/bin/sh
# model-forms.sh — every command that takes -m, with each form a model can be named
# by: a directory, a .gguf file, REPO:TAG of a GGUF repository in the Hugging Face
# cache (offline), and ollama:NAME:TAG in an ollama store. Each must load the model
# (quantize refuses a GGUF by saying so); serve must answer a chat completion.
. "$TOP_SRCDIR/tests/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
need_tokenizer

D=$TMP/dir
chat_model "$D" --vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16 --seed 4
G=$TMP/Tiny-Q8_0.gguf
python3 "$TOP_SRCDIR/tests/mkgguf.py" "$D" "$G" --norm-type bf16 || { fail "mkgguf"; finish; }

# A GGUF repository as `qwenchat pull` leaves it in the cache: the file a blob named
# by its sha256, the snapshot's entry a relative link to it, refs/main the commit.
unset QWENCHAT_MODEL HF_ENDPOINT HF_TOKEN
export HF_HUB_CACHE="$TMP/hf" HF_HUB_OFFLINE=1
commit=0123456789abcdef0123456789abcdef01234567
sha=$(sha256sum "$G" | cut -d' ' -f1)
R=$HF_HUB_CACHE/models--test--Tiny-GGUF
mkdir -p "$R/blobs" "$R/refs" "$R/snapshots/$commit"
cp "$G" "$R/blobs/$sha"
ln -s "../../blobs/$sha" "$R/snapshots/$commit/Tiny-Q8_0.gguf"
printf '%s' "$commit" >"$R/refs/main"

# ollama's store: the manifest's model layer names the blob
export OLLAMA_MODELS="$TMP/ollama"
mkdir -p "$OLLAMA_MODELS/blobs" "$OLLAMA_MODELS/manifests/registry.ollama.ai/library/tiny"
cp "$G" "$OLLAMA_MODELS/blobs/sha256-$sha"
printf '{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%s}]}' \
	"$sha" "$(wc -c <"$G")" >"$OLLAMA_MODELS/manifests/registry.ollama.ai/library/tiny/q8"

export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
printf '[{"role": "user", "content": "Hi"}]' >"$TMP/conv.json"
ids="151644 872 198 13048 151645"

# serve_check MODEL [ID] — a server on a free port answers a completion (and names the
# model ID in /v1/models, where given). It may take minutes
# to start on a machine loaded by other work (seen: a start that takes 0.25 s alone got
# 80 ms of CPU in 15 s), so it is waited for as long as it lives, up to 10 minutes.
serve_check() {
	# (a fresh log: the last server's "serving" line must not be read as this one's)
	rm -f "$TMP/serve.log"
	"$QWENCHAT" serve -m "$1" --backend cpu --threads 1 --port 0 2>"$TMP/serve.log" &
	pid=$!
	i=0
	while ! grep -q "serving" "$TMP/serve.log" 2>/dev/null && kill -0 $pid 2>/dev/null &&
		[ $i -lt 6000 ]; do i=$((i + 1)); sleep 0.1; done
	port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$TMP/serve.log")
	if [ -z "$port" ]; then
		kill $pid 2>/dev/null; wait $pid
		fail "serve -m $1 did not start (exit $?): $(head -c 300 "$TMP/serve.log")"
		return
	fi
	if python3 - "$port" "${2:-}" <<'PY'; then pass "serve -m $1 answers"; else fail "serve -m $1: no answer"; fi
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
if sys.argv[2]:
    c.request("GET", "/v1/models")
    got = json.loads(c.getresponse().read())["data"][0]["id"]
    if got != sys.argv[2]:
        sys.exit("the model's id is %r, not %r" % (got, sys.argv[2]))
c.request("POST", "/v1/chat/completions", json.dumps(
    {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}),
    {"Content-Type": "application/json"})
r = c.getresponse()
d = json.loads(r.read())
sys.exit(0 if r.status == 200 and d["usage"]["completion_tokens"] >= 1 else 1)
PY
	kill -TERM $pid; wait $pid
}

for m in "$D" "$G" test/Tiny-GGUF:Q8_0 ollama:tiny:q8; do
	echo "--- -m $m"
	expect_exit 0 "info -m $m" "$QWENCHAT" info -m "$m"
	expect_exit 0 "tokenize -m $m" sh -c "printf 'Hi there' | '$QWENCHAT' tokenize -m '$m'"
	[ "$(cat "$TMP/out")" = "13048 1052" ] && pass "tokenize -m $m: the ids" ||
		fail "tokenize -m $m: '$(cat "$TMP/out")'"
	expect_exit 0 "detokenize -m $m" sh -c "echo 13048 1052 | '$QWENCHAT' detokenize -m '$m'"
	expect_exit 0 "template -m $m" "$QWENCHAT" template -m "$m" --messages "$TMP/conv.json"
	expect_exit 0 "logits -m $m" sh -c "echo $ids | '$QWENCHAT' logits -m '$m' --backend cpu --out '$TMP/l'"
	expect_exit 0 "bench -m $m" "$QWENCHAT" bench -m "$m" --backend cpu -p 4 -n 2 -r 1 --bw-buffer 64
	expect_exit 0 "run -m $m" "$QWENCHAT" run -m "$m" --backend cpu -p Hi -n 2
	expect_exit 0 "chat -m $m (plain)" sh -c "echo Hi | '$QWENCHAT' chat -m '$m' --backend cpu -n 2"
	serve_check "$m"
	if [ "$m" = "$D" ]; then # "-m .": named as the directory it is
		here=$PWD && cd "$D" && serve_check . "$(basename "$D")"
		cd "$here" || exit 1
	fi
	# every form holds float weights (mkgguf.py writes bf16): each one quantizes
	expect_exit 0 "quantize -m $m" "$QWENCHAT" quantize -m "$m" --type q8_0 --out "$TMP/q.gguf"
done
finish
