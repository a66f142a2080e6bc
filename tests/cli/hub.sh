#!/bin/sh
# hub.sh — model resolution and downloads against tests/cli/hub-server.py, a local
# stand-in for the Hugging Face Hub on 127.0.0.1: fresh download, resume, corrupt
# data, 404/401, server down, offline mode, no second download, and that the cache
# never holds a half-written file. Never contacts any other host.
. "$TOP_SRCDIR/tests/lib.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
RESOLVE=$TOP_BUILDDIR/tests/cli/hub_resolve
MKMODEL=$TOP_BUILDDIR/tests/mkmodel
SRV=$TMP/srv STATE=$TMP/state
mkdir -p "$SRV/test/Tiny-Qwen3" "$SRV/test/Sharded-Qwen3" "$STATE"

# The served models: mkmodel's tiny Qwen3 (with the real tokenizer when it can be
# had; the download does not parse it), and a sharded one without generation config.
if TOK=$(sh "$TOP_SRCDIR/tests/fetch-tokenizer.sh" 2>/dev/null); then TOKOPT="--tokenizer $TOK"
else TOKOPT=""; fi
# (every id of the real tokenizer has an embedding row, as the loader checks)
# shellcheck disable=SC2086
"$MKMODEL" --out "$SRV/test/Tiny-Qwen3" --vocab-size 151669 --hidden-size 16 $TOKOPT >/dev/null || exit 1
# shellcheck disable=SC2086
"$MKMODEL" --out "$SRV/test/Sharded-Qwen3" --shards 2 $TOKOPT >/dev/null || exit 1
rm -f "$SRV/test/Sharded-Qwen3/generation_config.json"
# its chat template in chat_template.jinja, as transformers 4.47 on saves it
python3 - "$SRV/test/Sharded-Qwen3" <<'EOF' || exit 1
import json, os, sys
d = sys.argv[1]
p = os.path.join(d, "tokenizer_config.json")
c = json.load(open(p)) if os.path.exists(p) else {}
open(os.path.join(d, "chat_template.jinja"), "w").write(
    c.pop("chat_template", "{{ messages[0]['content'] }}"))
json.dump(c, open(p, "w"))
EOF
for d in Tiny-Qwen3 Sharded-Qwen3; do
	[ -f "$SRV/test/$d/tokenizer.json" ] || echo '{"model":{"type":"BPE"}}' >"$SRV/test/$d/tokenizer.json"
done

# 127.0.0.1 only: no proxy may turn a request into one for another host.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy HF_TOKEN HF_TOKEN_PATH \
	HUGGING_FACE_HUB_TOKEN \
	HF_HUB_OFFLINE HF_HUB_DISABLE_PROGRESS_BARS QWENCHAT_MODEL
export NO_PROXY='*' HF_HOME="$TMP/hf-home" QWENCHAT_DOWNLOAD_ATTEMPTS=3

python3 "$TOP_SRCDIR/tests/cli/hub-server.py" --root "$SRV" --state "$STATE" --lifetime 150 &
SRV_PID=$!
trap 'kill $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
while [ ! -f "$STATE/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$STATE/port" ] || { echo "FAIL: the test server did not start"; exit 1; }
export HF_ENDPOINT="http://127.0.0.1:$(cat "$STATE/port")"

mode() { echo "$*" >"$STATE/mode"; }
requests() { if [ -f "$STATE/log" ]; then wc -l <"$STATE/log"; else echo 0; fi; }
gets_since() { tail -n +"$(($1 + 1))" "$STATE/log" | grep -c '^GET' ; }
commit_of() { python3 -c 'import hashlib,sys; print(hashlib.sha1(sys.argv[1].encode()).hexdigest())' "$1"; }
repo() { echo "$1/models--$(echo "$2" | sed 's|/|--|')"; }

# check_cache CACHE DESC — every blob's name is its sha256 or git sha1 (or it ends in
# .incomplete), and every snapshot entry is a relative link to an existing blob.
check_cache() {
	if python3 - "$1" <<'PY'
import hashlib, os, sys
bad = []
for dirpath, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(dirpath, f)
        if os.path.basename(dirpath) == "blobs" and not f.endswith(".incomplete"):
            data = open(p, "rb").read()
            want = hashlib.sha256(data).hexdigest() if len(f) == 64 else \
                hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            if want != f:
                bad.append("blob " + p)
        if "/snapshots/" in p:
            t = os.readlink(p) if os.path.islink(p) else ""
            if not t.startswith("../../blobs/") or not os.path.isfile(p):
                bad.append("snapshot entry " + p)
if bad:
    print("; ".join(bad)); sys.exit(1)
PY
	then pass "$2: nothing half-written in the cache"; else fail "$2: cache damaged"; fi
}

# err_has TEXT DESC — the error (the last stderr line, after any progress lines) is one
# line starting with "qwenchat: " that contains TEXT.
err_has() {
	if tail -n 1 "$TMP/err" | grep -q '^qwenchat: ' && tail -n 1 "$TMP/err" | grep -qF -- "$1"; then
		pass "$2"
	else
		fail "$2: stderr lacks '$1': $(tail -c 300 "$TMP/err")"
	fi
}

incomplete_count() { find "$1" -name '*.incomplete' 2>/dev/null | wc -l; }

# --- fresh download ---------------------------------------------------------
export HF_HUB_CACHE="$TMP/cache1"
mode normal
expect_exit 0 "pull downloads a model" "$QWENCHAT" pull test/Tiny-Qwen3
SNAP=$(cat "$TMP/out")
C=$(commit_of test/Tiny-Qwen3)
R=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
[ "$SNAP" = "$R/snapshots/$C" ] && pass "pull prints the snapshot directory" ||
	fail "pull printed '$SNAP', expected $R/snapshots/$C"
[ "$(cat "$R/refs/main" 2>/dev/null)" = "$C" ] && pass "refs/main holds the commit" ||
	fail "refs/main: '$(cat "$R/refs/main" 2>/dev/null)'"
same=1
for f in config.json generation_config.json tokenizer.json model.safetensors; do
	cmp -s "$SRV/test/Tiny-Qwen3/$f" "$SNAP/$f" || { same=0; fail "$f differs from the served file"; }
done
[ $same = 1 ] && pass "downloaded files equal the served ones"
SHA=$(sha256sum "$SRV/test/Tiny-Qwen3/model.safetensors" | cut -d' ' -f1)
[ "$(readlink "$SNAP/model.safetensors")" = "../../blobs/$SHA" ] &&
	pass "weights stored as blobs/SHA256 behind a relative link" ||
	fail "model.safetensors links to '$(readlink "$SNAP/model.safetensors")'"
grep -q "^GET /cdn/$SHA" "$STATE/log" && pass "the redirect to the CDN was followed" ||
	fail "no GET on the CDN address"
check_cache "$HF_HUB_CACHE" "fresh download"
[ "$(incomplete_count "$HF_HUB_CACHE")" = 0 ] && pass "no .incomplete left" || fail ".incomplete left"
if python3 -c 'import huggingface_hub' 2>/dev/null; then
	got=$(HF_HUB_OFFLINE=1 python3 -c 'import sys
from huggingface_hub import hf_hub_download
print(hf_hub_download("test/Tiny-Qwen3", "model.safetensors"))')
	[ "$got" = "$SNAP/model.safetensors" ] && pass "huggingface_hub finds the download" ||
		fail "huggingface_hub found '$got'"
fi

# --- the cache is used without downloading again ------------------------------
n=$(requests)
expect_exit 0 "a second pull succeeds" "$QWENCHAT" pull test/Tiny-Qwen3
[ "$(gets_since "$n")" = 0 ] && pass "a second pull downloads nothing" ||
	fail "a second pull made $(gets_since "$n") GET requests"
grep -q "^test/Tiny-Qwen3@main: up to date (commit $(echo "$C" | cut -c1-12))$" "$TMP/err" &&
	pass "and says the model is up to date" || fail "second pull: $(cat "$TMP/err")"
n=$(requests)
expect_exit 0 "-m repo id resolves from the cache" "$RESOLVE" test/Tiny-Qwen3
[ "$(cat "$TMP/out")" = "$SNAP" ] && [ "$(requests)" = "$n" ] &&
	pass "a complete cached model needs no request" || fail "resolve: '$(cat "$TMP/out")', $(( $(requests) - n )) requests"
# hf download records no absent file: a snapshot without chat_template.jinja and without
# a record of its absence is whole all the same
rm -f "$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)/.no_exist/$(commit_of test/Tiny-Qwen3)/chat_template.jinja"
n=$(requests)
expect_exit 0 "-m repo id, no record of chat_template.jinja" "$RESOLVE" test/Tiny-Qwen3
[ "$(requests)" = "$n" ] && pass "... needs no request either" || fail "$(( $(requests) - n )) requests"
# A snapshot lacking an optional file (as `hf download --include` leaves one) is
# completed when the Hub can be reached: tokenizer_config.json holds the chat template.
# Offline, or with the Hub down, the cache is used as it is.
if [ -f "$SNAP/tokenizer_config.json" ]; then
	rm "$SNAP/tokenizer_config.json"
	n=$(requests)
	expect_exit 0 "offline: a snapshot without tokenizer_config.json is used" \
		env HF_HUB_OFFLINE=1 "$RESOLVE" test/Tiny-Qwen3
	[ "$(requests)" = "$n" ] && pass "... without a request" || fail "offline: requests made"
	expect_exit 0 "the Hub down: a snapshot without tokenizer_config.json is used" \
		env HF_ENDPOINT=http://127.0.0.1:9 QWENCHAT_DOWNLOAD_ATTEMPTS=1 "$RESOLVE" test/Tiny-Qwen3
	grep -q "^qwenchat: .*using the cached snapshot, which lacks some optional files$" \
		"$TMP/err" && pass "... saying so" || fail "the Hub down: $(cat "$TMP/err")"
	expect_exit 0 "online: a snapshot without tokenizer_config.json" "$RESOLVE" test/Tiny-Qwen3
	[ -f "$SNAP/tokenizer_config.json" ] && pass "... gets it from the Hub" ||
		fail "tokenizer_config.json not fetched: $(cat "$TMP/err")"
fi
for spec in https://huggingface.co/test/Tiny-Qwen3 hf.co/test/Tiny-Qwen3; do
	expect_exit 0 "-m $spec" "$RESOLVE" "$spec"
	[ "$(cat "$TMP/out")" = "$SNAP" ] && pass "$spec: the Hub's address in front is the repo id" ||
		fail "$spec gave '$(cat "$TMP/out")'"
done
expect_exit 0 "default model from QWENCHAT_MODEL" env QWENCHAT_MODEL=test/Tiny-Qwen3 "$RESOLVE"
[ "$(cat "$TMP/out")" = "$SNAP" ] && pass "QWENCHAT_MODEL names the default model" || fail "default model: $(cat "$TMP/out")"
expect_exit 0 "a directory is used as it is" "$RESOLVE" "$SRV/test/Tiny-Qwen3"
n=$(requests)
expect_exit 0 "qwenchat info -m REPO loads the downloaded model" \
	env HF_HUB_OFFLINE=1 "$QWENCHAT" info -m test/Tiny-Qwen3
[ "$(requests)" = "$n" ] && pass "info used the cache only" || fail "info made requests"

# HF_HUB_CACHE and HF_HOME with ~ and $VAR, expanded as huggingface_hub expands them
d=${HF_HUB_CACHE#"$TMP"/}
expect_exit 0 "HF_HUB_CACHE as ~/..." env HOME="$TMP" HF_HUB_OFFLINE=1 \
	HF_HUB_CACHE="~/$d" "$RESOLVE" test/Tiny-Qwen3
expect_exit 0 "HF_HUB_CACHE as \$VAR/..." env TOPDIR="$TMP" HF_HUB_OFFLINE=1 \
	HF_HUB_CACHE="\${TOPDIR}/$d" "$RESOLVE" test/Tiny-Qwen3
[ "$(cat "$TMP/out")" = "$SNAP" ] && pass "... the same snapshot" || fail "expanded cache: $(cat "$TMP/out")"

# a snapshot missing a file, offline: the file is named
cp -a "$HF_HUB_CACHE" "$TMP/cache-miss"
rm "$TMP/cache-miss/models--test--Tiny-Qwen3/snapshots/$C/config.json"
expect_exit 1 "offline: a snapshot without its config.json" env HF_HUB_OFFLINE=1 \
	HF_HUB_CACHE="$TMP/cache-miss" "$QWENCHAT" info -m test/Tiny-Qwen3
err_has "incomplete in the Hugging Face cache ($TMP/cache-miss/models--test--Tiny-Qwen3/snapshots/$C: no config.json there)" \
	"offline incomplete snapshot: the missing file named"
# refs/main naming a commit whose snapshot is gone: said so
rm -rf "$TMP/cache-miss/models--test--Tiny-Qwen3/snapshots/$C"
expect_exit 1 "offline: refs/main names a missing snapshot" env HF_HUB_OFFLINE=1 \
	HF_HUB_CACHE="$TMP/cache-miss" "$QWENCHAT" info -m test/Tiny-Qwen3
err_has "(refs/main names commit $C, whose snapshot" "offline missing snapshot: said so"

# --- offline mode ---------------------------------------------------------------
n=$(requests)
expect_exit 0 "offline: cached model" env HF_HUB_OFFLINE=1 "$RESOLVE" test/Tiny-Qwen3@$C
expect_exit 0 "offline: pull of a cached model" env HF_HUB_OFFLINE=1 "$QWENCHAT" pull test/Tiny-Qwen3
expect_exit 1 "offline: model not in the cache" env HF_HUB_OFFLINE=1 "$QWENCHAT" pull test/Sharded-Qwen3
err_has "HF_HUB_OFFLINE is set" "offline: clear error"
[ "$(requests)" = "$n" ] && pass "offline mode never connects" || fail "offline mode made requests"
# A host name that does not resolve (.invalid never does) fails at the first try and
# says how to go on without the network, instead of retrying for seconds.
t0=$(date +%s)
expect_exit 1 "a name that does not resolve" env HF_ENDPOINT=http://qwenchat-test.invalid \
	QWENCHAT_DOWNLOAD_ATTEMPTS=5 "$QWENCHAT" pull test/Sharded-Qwen3
t1=$(date +%s)
err_has "Could not resolve host" "unresolved: curl's reason"
err_has "HF_HUB_OFFLINE=1" "unresolved: names HF_HUB_OFFLINE=1"
err_has "-m DIR" "unresolved: names -m DIR"
grep -q retrying "$TMP/err" && fail "unresolved: retried: $(cat "$TMP/err")" ||
	pass "unresolved: not retried ($((t1 - t0)) s)"

# --- list -------------------------------------------------------------------
# (a pull request's ref is stored as refs/refs/pr/1, as huggingface_hub stores it)
mkdir -p "$HF_HUB_CACHE/models--test--Tiny-Qwen3/refs/refs/pr"
printf '%s' "$C" >"$HF_HUB_CACHE/models--test--Tiny-Qwen3/refs/refs/pr/1"
expect_exit 0 "list" "$QWENCHAT" list
grep -q "^test/Tiny-Qwen3 *main,refs/pr/1 ($(echo "$C" | cut -c1-7)) .*complete" "$TMP/out" ||
	grep -q "^test/Tiny-Qwen3 *refs/pr/1,main ($(echo "$C" | cut -c1-7)) .*complete" "$TMP/out" &&
	pass "list shows the model, its revisions (a PR's too) and status" || fail "list: $(cat "$TMP/out")"
rm -r "$HF_HUB_CACHE/models--test--Tiny-Qwen3/refs/refs"

# --- sharded weights, optional files absent -----------------------------------
expect_exit 0 "pull a sharded model" "$QWENCHAT" pull test/Sharded-Qwen3
S2=$(cat "$TMP/out")
[ -f "$S2/model-00001-of-00002.safetensors" ] && [ -f "$S2/model-00002-of-00002.safetensors" ] &&
	[ ! -e "$S2/generation_config.json" ] && pass "index and shards downloaded" ||
	fail "sharded snapshot: $(ls "$S2")"
cmp -s "$S2/chat_template.jinja" "$SRV/test/Sharded-Qwen3/chat_template.jinja" &&
	pass "chat_template.jinja downloaded" || fail "no chat_template.jinja in $(ls "$S2")"

# --- a model the loader refuses is refused before its weights are fetched ------
export HF_HUB_CACHE="$TMP/cache-arch"
for a in Qwen3MoeForCausalLM:qwen3_moe LlamaForCausalLM:llama; do
	d="$SRV/test/${a%%:*}"
	mkdir -p "$d" && cp "$SRV/test/Tiny-Qwen3/"* "$d/"
	python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); c["architectures"] = [sys.argv[2]]; c["model_type"] = sys.argv[3]
json.dump(c, open(sys.argv[1], "w"))' "$d/config.json" "${a%%:*}" "${a#*:}"
	n=$(requests)
	expect_exit 1 "-m of a ${a%%:*} repository" "$RESOLVE" "test/${a%%:*}"
	err_has "test/${a%%:*}@main: config.json: architectures: ${a%%:*} is not supported (only dense Qwen3ForCausalLM)" \
		"${a%%:*}: the loader's message"
	[ "$(tail -n +"$((n + 1))" "$STATE/log" | grep -c '^GET /cdn/')" = 0 ] &&
		[ ! -e "$(repo "$HF_HUB_CACHE" "test/${a%%:*}")/refs/main" ] &&
		pass "${a%%:*}: refused before any weight is fetched" ||
		fail "${a%%:*}: weights fetched: $(tail -n +"$((n + 1))" "$STATE/log")"
done
# ... and so is a config.json the loader cannot read
for bad in "{" '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}'; do
	d="$SRV/test/BadConfig" && rm -rf "$d" "$(repo "$HF_HUB_CACHE" test/BadConfig)"
	mkdir -p "$d" && cp "$SRV/test/Tiny-Qwen3/"* "$d/" && printf '%s' "$bad" >"$d/config.json"
	n=$(requests)
	expect_exit 1 "-m of a repository whose config.json is '$bad'" "$RESOLVE" test/BadConfig
	err_has "test/BadConfig@main: config.json: " "... the loader's message"
	[ "$(tail -n +"$((n + 1))" "$STATE/log" | grep -c '^GET /cdn/')" = 0 ] &&
		pass "... refused before any weight is fetched" ||
		fail "... weights fetched: $(tail -n +"$((n + 1))" "$STATE/log")"
done

# --- tokenizer only, then the rest --------------------------------------------
export HF_HUB_CACHE="$TMP/cache8"
n=$(requests)
expect_exit 0 "tokenizer-only resolve" "$RESOLVE" --tokenizer test/Tiny-Qwen3
T=$(cat "$TMP/out")
[ -f "$T/tokenizer.json" ] && [ ! -e "$T/model.safetensors" ] &&
	[ "$(tail -n +"$((n + 1))" "$STATE/log" | grep -c '^GET /cdn/')" = 0 ] &&
	pass "the tokenizer commands download no weights" || fail "tokenizer-only: $(ls "$T")"
tail -n +"$((n + 1))" "$STATE/log" | grep -q 'config\.json' &&
	! tail -n +"$((n + 1))" "$STATE/log" | grep -v tokenizer_config | grep -q 'config\.json' &&
	pass "nor config.json (only the tokenizer files)" ||
	fail "tokenizer-only asked for: $(tail -n +"$((n + 1))" "$STATE/log")"
n=$(requests)
expect_exit 0 "full resolve after a tokenizer-only one" "$RESOLVE" test/Tiny-Qwen3
[ -f "$T/model.safetensors" ] && ! tail -n +"$((n + 1))" "$STATE/log" | grep -q '^GET .*tokenizer.json' &&
	pass "only the weights are added" || fail "after the full resolve: $(tail -n +"$((n + 1))" "$STATE/log")"
check_cache "$HF_HUB_CACHE" "tokenizer first"

# --- two downloads at once share the work through the .locks files ------------
export HF_HUB_CACHE="$TMP/cache10"
n=$(requests)
"$QWENCHAT" pull test/Tiny-Qwen3 >"$TMP/out1" 2>"$TMP/err1" &
p1=$!
"$QWENCHAT" pull test/Tiny-Qwen3 >"$TMP/out2" 2>"$TMP/err2"
r2=$?
wait $p1
r1=$?
cdn=$(tail -n +"$((n + 1))" "$STATE/log" | grep -c '^GET /cdn/')
[ $r1 = 0 ] && [ $r2 = 0 ] && [ "$cdn" = 1 ] && cmp -s "$TMP/out1" "$TMP/out2" &&
	pass "two concurrent pulls succeed and download the weights once" ||
	fail "concurrent pulls: exits $r1 $r2, $cdn weight downloads; $(cat "$TMP/err1" "$TMP/err2")"
check_cache "$HF_HUB_CACHE" "concurrent pulls"

# --- resume -----------------------------------------------------------------
export HF_HUB_CACHE="$TMP/cache2"
mode drop-once
expect_exit 0 "a dropped connection is resumed in the same run" "$QWENCHAT" pull test/Tiny-Qwen3
grep -q "retrying" "$TMP/err" && grep -q "^GET /cdn/$SHA.* bytes=[1-9][0-9]*-" "$STATE/log" &&
	pass "the retry asked for the rest with a Range request" || fail "no Range retry: $(cat "$TMP/err")"
check_cache "$HF_HUB_CACHE" "resume in one run"

export HF_HUB_CACHE="$TMP/cache3"
R3=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mode drop
expect_exit 1 "a connection dropped every time fails" env QWENCHAT_DOWNLOAD_ATTEMPTS=1 "$QWENCHAT" pull test/Tiny-Qwen3
err_has "download interrupted" "interrupted download: clear error"
PART=$(find "$R3/blobs" -name '*.incomplete' | head -n 1)
[ -n "$PART" ] && [ -s "$PART" ] && [ ! -e "$R3/blobs/$SHA" ] && [ ! -e "$R3/refs/main" ] &&
	[ ! -e "$R3/snapshots/$C/model.safetensors" ] &&
	pass "only a partial .incomplete blob is left, nothing points at it" || fail "after the drop: $(ls -R "$R3")"
check_cache "$HF_HUB_CACHE" "interrupted download"
HAVE=$(stat -c %s "$PART" 2>/dev/null || echo 0)
mode normal
expect_exit 0 "the next run resumes" "$QWENCHAT" pull test/Tiny-Qwen3
grep -q "^GET /cdn/$SHA.* bytes=$HAVE-" "$STATE/log" && grep -q "resuming after" "$TMP/err" &&
	pass "resumed from byte $HAVE" || fail "no resume from $HAVE: $(tail -n 3 "$STATE/log")"
cmp -s "$SRV/test/Tiny-Qwen3/model.safetensors" "$R3/snapshots/$C/model.safetensors" &&
	pass "the resumed file is whole" || fail "the resumed file differs"
check_cache "$HF_HUB_CACHE" "resumed download"
# a partial file whose bytes are wrong (another tool's, a disk's fault): the resumed
# download fails its sha256, and the next try fetches the whole file
export HF_HUB_CACHE="$TMP/cache3b"
R3B=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mkdir -p "$R3B/blobs" && head -c 100000 /dev/urandom >"$R3B/blobs/$SHA.incomplete"
expect_exit 0 "a damaged partial file: fetched again whole" "$QWENCHAT" pull test/Tiny-Qwen3
cmp -s "$SRV/test/Tiny-Qwen3/model.safetensors" "$R3B/snapshots/$C/model.safetensors" &&
	pass "... and the file is whole" || fail "after a damaged partial file: the file differs"
check_cache "$HF_HUB_CACHE" "damaged partial file"

# --- transient failures: a 503 on a HEAD, a 429 on a GET, a short but clean body --
export HF_HUB_CACHE="$TMP/cache11"
R11=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mode head-503-once get-429-once
expect_exit 0 "a 503 on a HEAD and a 429 on a GET are tried again" "$QWENCHAT" pull test/Tiny-Qwen3
grep -q '^qwenchat: .*HTTP 503; retrying in 1 s (try 2 of 3)' "$TMP/err" && grep -q 'HTTP 429; retrying in 1 s' "$TMP/err" &&
	pass "each retry says why and waits as Retry-After asks" || fail "retries: $(cat "$TMP/err")"
cmp -s "$SRV/test/Tiny-Qwen3/model.safetensors" "$R11/snapshots/$C/model.safetensors" &&
	pass "the blob is complete after the retries" || fail "blob after 503/429"
check_cache "$HF_HUB_CACHE" "503 and 429"

export HF_HUB_CACHE="$TMP/cache12"
R12=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mode short-once
n=$(requests)
expect_exit 0 "a body that ends early but cleanly is resumed" "$QWENCHAT" pull test/Tiny-Qwen3
grep -q "the transfer ended after [1-9][0-9]* of" "$TMP/err" &&
	tail -n +"$((n + 1))" "$STATE/log" | grep -q "^GET /cdn/$SHA.* bytes=[1-9][0-9]*-" &&
	pass "the short body is kept and the rest asked for (no restart from zero)" ||
	fail "short body: $(cat "$TMP/err"); $(tail -n 4 "$STATE/log")"
cmp -s "$SRV/test/Tiny-Qwen3/model.safetensors" "$R12/snapshots/$C/model.safetensors" &&
	pass "the resumed blob is whole" || fail "blob after a short body"
check_cache "$HF_HUB_CACHE" "short body"

# a redirect loop on the weights' GET fails at once: another try loops again
export HF_HUB_CACHE="$TMP/cache-loop"
mode cdn-loop
expect_exit 1 "a redirect loop on a GET" env QWENCHAT_DOWNLOAD_ATTEMPTS=5 "$QWENCHAT" pull test/Tiny-Qwen3
err_has "redirects followed" "redirect loop: curl's reason"
grep -q retrying "$TMP/err" && fail "redirect loop: retried: $(cat "$TMP/err")" ||
	pass "redirect loop: not retried"

# A body longer than its Content-Length leaves bytes on the connection, which curl
# reads as the next answer ("Received HTTP/0.9"): the retry takes a new connection.
# An answer without a status line is such bytes too: tried again.
for m in long-once http09-once; do
	export HF_HUB_CACHE="$TMP/cache-$m"
	R15=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
	mode "$m"
	expect_exit 0 "$m: a pull" env QWENCHAT_DOWNLOAD_ATTEMPTS=2 "$QWENCHAT" pull test/Tiny-Qwen3
	grep -q "retrying" "$TMP/err" &&
		cmp -s "$SRV/test/Tiny-Qwen3/model.safetensors" "$R15/snapshots/$C/model.safetensors" &&
		pass "$m: one retry, on a new connection, completes the blob" || fail "$m: $(cat "$TMP/err")"
	check_cache "$HF_HUB_CACHE" "$m"
done
mode normal
# a scheme curl is not let use stays a failure no retry mends
expect_exit 1 "an ftp:// endpoint" env HF_ENDPOINT=ftp://127.0.0.1:9 QWENCHAT_DOWNLOAD_ATTEMPTS=5 \
	"$QWENCHAT" pull test/Tiny-Qwen3
grep -q retrying "$TMP/err" && fail "ftp://: retried: $(cat "$TMP/err")" || pass "ftp://: not retried"

# --- links planted in a shared cache lead nowhere -------------------------------
export HF_HUB_CACHE="$TMP/cache13"
R13=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mode normal
printf 'precious\n' >"$TMP/victim"
mkdir -p "$R13/blobs"
ln -s "$TMP/victim" "$R13/blobs/$SHA.incomplete"
expect_exit 1 "a link at the partial file's name is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "symbolic link" "the partial file's link: clear error"
[ "$(cat "$TMP/victim")" = precious ] && pass "its target is untouched" || fail "victim written"
rm "$R13/blobs/$SHA.incomplete"
# a hard link there: a resume would append to its bytes (or truncate and overwrite
# them), and the blob made of it would stay the other file
ln "$TMP/victim" "$R13/blobs/$SHA.incomplete"
expect_exit 1 "a hard link at the partial file's name is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "hard link" "the partial file's hard link: clear error"
[ "$(cat "$TMP/victim")" = precious ] && pass "the other file is untouched" || fail "victim written"
rm "$R13/blobs/$SHA.incomplete"
# a link at .locks or at the repository's folder there: no lock made where it leads
mkdir -p "$TMP/victim-locks"
for sub in .locks .locks/models--test--Tiny-Qwen3; do
	rm -rf "${HF_HUB_CACHE:?}/.locks" "$R13/blobs/$SHA" && mkdir -p "$(dirname "$HF_HUB_CACHE/$sub")"
	ln -s "$TMP/victim-locks" "$HF_HUB_CACHE/$sub"
	expect_exit 1 "a link at $sub is refused" "$QWENCHAT" pull test/Tiny-Qwen3
	err_has "$sub: a symbolic link (refused" "... named, in one line"
	[ -z "$(ls -A "$TMP/victim-locks")" ] && pass "... nothing made where it leads" ||
		fail "$sub: locks made through it: $(ls -A "$TMP/victim-locks")"
	rm "$HF_HUB_CACHE/$sub"
done
mkdir -p "$HF_HUB_CACHE/.locks/models--test--Tiny-Qwen3"
rm -f "$HF_HUB_CACHE/.locks/models--test--Tiny-Qwen3/$SHA.lock"
ln -s "$TMP/victim" "$HF_HUB_CACHE/.locks/models--test--Tiny-Qwen3/$SHA.lock"
expect_exit 1 "a link at the lock's name is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "symbolic link" "the lock's link: clear error"
[ "$(cat "$TMP/victim")" = precious ] && pass "its target is untouched" || fail "victim written"
rm "$HF_HUB_CACHE/.locks/models--test--Tiny-Qwen3/$SHA.lock"
C2=$(commit_of test/Sharded-Qwen3)
R13s=$(repo "$HF_HUB_CACHE" test/Sharded-Qwen3)
mkdir -p "$R13s/.no_exist/$C2"
ln -s "$TMP/created-by-link" "$R13s/.no_exist/$C2/generation_config.json"
expect_exit 0 "a link at a .no_exist name is left alone" "$QWENCHAT" pull test/Sharded-Qwen3
[ ! -e "$TMP/created-by-link" ] && pass "no file created through it" || fail ".no_exist link followed"
rm "$R13s/.no_exist/$C2/generation_config.json" && mkfifo "$R13s/.no_exist/$C2/generation_config.json"
expect_exit 0 "a FIFO at a .no_exist name is not waited on" timeout 60 "$QWENCHAT" pull test/Sharded-Qwen3
rm "$R13s/.no_exist/$C2/generation_config.json"
# a folder of the repository turned into a link: the files named for it would be made
# (and an existing one replaced) wherever it leads
mkdir -p "$TMP/victim-dir" && printf 'precious\n' >"$TMP/victim-dir/config.json"
for sub in "snapshots/$C" blobs refs; do
	mkdir -p "$(dirname "$R13/$sub")" && rm -rf "${R13:?}/$sub"
	ln -s "$TMP/victim-dir" "$R13/$sub"
	expect_exit 1 "a link at $sub is refused" "$QWENCHAT" pull test/Tiny-Qwen3
	err_has "$sub: a symbolic link (refused" "... named, in one line"
	[ "$(ls "$TMP/victim-dir")" = config.json ] && [ "$(cat "$TMP/victim-dir/config.json")" = precious ] &&
		pass "... nothing made or replaced where it leads" || fail "$sub: written through: $(ls -l "$TMP/victim-dir")"
	rm "$R13/$sub"
done
# ... or turned into one while the pull waits for another's lock on the blob: the
# blob still goes into the folder the pull opened, never where the link leads
for sub in blobs ""; do
	export HF_HUB_CACHE="$TMP/cache13-swap${sub:+-$sub}"
	R=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
	L="$HF_HUB_CACHE/.locks/models--test--Tiny-Qwen3/$SHA.lock"
	mkdir -p "$R/blobs" "$(dirname "$L")" "$TMP/swap-target/blobs"
	rm -f "$TMP/swap-release"
	python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2] + ".held", "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
' "$L" "$TMP/swap-release" &
	holder=$!
	while [ ! -e "$TMP/swap-release.held" ]; do sleep 0.05; done
	rm "$TMP/swap-release.held"
	timeout 60 "$QWENCHAT" pull test/Tiny-Qwen3 >/dev/null 2>"$TMP/swap-err" &
	puller=$!
	i=0
	while ! grep -q "waiting for another" "$TMP/swap-err" && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -n "$sub" ]; then
		mv "$R/blobs" "$R/blobs.moved" && ln -s "$TMP/swap-target/blobs" "$R/blobs"
	else # the repository's own folder
		mv "$R" "$R.moved" && ln -s "$TMP/swap-target" "$R"
	fi
	touch "$TMP/swap-release"
	wait $holder
	wait $puller
	what=${sub:-models--test--Tiny-Qwen3}
	[ -z "$(ls -A "$TMP/swap-target/blobs")" ] &&
		pass "$what made a link during the pull: nothing written where it leads" ||
		fail "$what swapped: written through: $(ls "$TMP/swap-target/blobs")"
	rm -rf "$R" "$R.moved" "$TMP/swap-target" "$TMP/swap-release"
done
export HF_HUB_CACHE="$TMP/cache13"
expect_exit 0 "without the planted links the pull succeeds" "$QWENCHAT" pull test/Tiny-Qwen3
check_cache "$HF_HUB_CACHE" "planted links"

# --- a pull waiting for another's download says so --------------------------------
export HF_HUB_CACHE="$TMP/cache14"
mode slow
"$QWENCHAT" pull test/Tiny-Qwen3 >"$TMP/out1" 2>"$TMP/err1" &
p1=$!
# until the first is downloading, holding the lock (30 s at most: a slow build, the
# sanitizers' on a loaded machine, took more than 5 s to get there)
i=0
while ! grep -q "^GET /cdn/" "$STATE/log" 2>/dev/null || [ ! -d "$HF_HUB_CACHE/.locks" ]; do
	i=$((i + 1)); [ $i -gt 600 ] && break; sleep 0.05
done
"$QWENCHAT" pull test/Tiny-Qwen3 >"$TMP/out2" 2>"$TMP/err2"
r2=$?
wait $p1
[ $? = 0 ] && [ $r2 = 0 ] && grep -q ": waiting for another download of it to finish (" "$TMP/err2" &&
	pass "the second pull says it waits for the first" ||
	fail "lock wait: exit $r2, $(cat "$TMP/err2")"
mode normal

# --- corrupted data -----------------------------------------------------------
export HF_HUB_CACHE="$TMP/cache4"
R4=$(repo "$HF_HUB_CACHE" test/Tiny-Qwen3)
mode corrupt
expect_exit 1 "corrupted data is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "sha256 mismatch" "corruption: clear error"
[ ! -e "$R4/blobs/$SHA" ] && [ "$(incomplete_count "$R4")" = 0 ] && [ ! -e "$R4/refs/main" ] &&
	pass "the corrupted download is not kept" || fail "after corruption: $(ls -R "$R4")"
check_cache "$HF_HUB_CACHE" "corrupted download"

# --- HTTP errors and an unreachable server ----------------------------------
mode normal
expect_exit 1 "unknown repository" "$QWENCHAT" pull test/Nope
err_has "test/Nope@main: config.json: repository not found (HTTP 404)" "404: clear error"
[ "$(wc -l <"$TMP/err")" = 1 ] && pass "404: one line" || fail "404: $(cat "$TMP/err")"
expect_exit 1 "unknown revision" "$QWENCHAT" pull test/Tiny-Qwen3@nobranch
err_has "revision not found" "unknown revision: clear error"
export HF_HUB_CACHE="$TMP/cache9"
mode bad-etag
expect_exit 1 "a path-like ETag is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "no usable ETag header" "bad ETag: clear error"
mode bad-commit
expect_exit 1 "a path-like X-Repo-Commit is refused" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "no valid X-Repo-Commit header" "bad commit: clear error"
[ -z "$(find "$TMP" -name escape)" ] && [ ! -e "$HF_HUB_CACHE/models--test--main" ] &&
	pass "nothing written outside the cache" || fail "bad headers wrote files"
# ---- GGUF repositories: REPO:TAG picks the file (any case, whole tag), a split file
# comes with all its parts, a repo named *-GGUF defaults to Q4_K_M; list shows them.
GM="$TMP/gguf-src" GR="$SRV/test/Tiny-GGUF"
"$MKMODEL" --out "$GM" --vocab-size 300 --hidden-size 32 --intermediate-size 32 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16 --bos-id 1 --eos-id 2 >/dev/null || exit 1
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$GM/tokenizer.json"
mkdir -p "$GR"
python3 "$TOP_SRCDIR/tests/mkgguf.py" "$GM" "$GR/Tiny-Q4_K_M.gguf" &&
	python3 "$TOP_SRCDIR/tests/mkgguf.py" "$GM" "$GR/Tiny-Q4_K_S.gguf" &&
	python3 "$TOP_SRCDIR/tests/mkgguf.py" "$GM" "$GR/Tiny-Q8_0.gguf" --split 2 || exit 1
echo "# Tiny GGUF" >"$GR/README.md"
export HF_HUB_CACHE="$TMP/cache-gguf"
expect_exit 0 "REPO:tag resolves (any case)" "$RESOLVE" test/Tiny-GGUF:q4_k_m
grep -q '/snapshots/[0-9a-f]*/Tiny-Q4_K_M.gguf$' "$TMP/out" && pass "the Q4_K_M file, in a snapshot" ||
	fail "REPO:tag gave $(cat "$TMP/out")"
cmp -s "$(cat "$TMP/out")" "$GR/Tiny-Q4_K_M.gguf" && pass "the downloaded file is the served one" ||
	fail "downloaded GGUF differs"
[ ! -e "$(dirname "$(cat "$TMP/out")")/Tiny-Q4_K_S.gguf" ] && [ ! -e "$(dirname "$(cat "$TMP/out")")/README.md" ] &&
	pass "only the tag's file is downloaded" || fail "other files were downloaded"
n0=$(requests)
expect_exit 0 "a *-GGUF repo without a tag: Q4_K_M, from the cache" "$RESOLVE" test/Tiny-GGUF
grep -q 'Tiny-Q4_K_M.gguf$' "$TMP/out" && cp "$TMP/out" "$TMP/out.notag"
expect_exit 0 "hf.co/REPO:tag, as ollama users write it" "$RESOLVE" hf.co/test/Tiny-GGUF:Q4_K_M
cmp -s "$TMP/out" "$TMP/out.notag" && pass "hf.co/REPO:tag is REPO:tag" || fail "hf.co/REPO:tag: $(cat "$TMP/out")"
grep -q 'Tiny-Q4_K_M.gguf$' "$TMP/out" && [ "$(requests)" = "$n0" ] &&
	pass "no tag: Q4_K_M, no request" || fail "no tag: $(cat "$TMP/out"), $(($(requests) - n0)) requests"
# a pinned commit the Hub does not answer for is refused, not taken for the one it names
A=abababababababababababababababababababab
mode any-revision
expect_exit 1 "pull REPO@COMMIT answered for another commit" "$QWENCHAT" pull test/Tiny-Qwen3@$A
err_has "the Hub answered for commit $(commit_of test/Tiny-Qwen3), not $A" "... said so"
expect_exit 1 "pull REPO:TAG@COMMIT listed for another commit" "$QWENCHAT" pull test/Tiny-GGUF:Q4_K_M@$A
err_has "the Hub's file list is for commit" "... said so"
[ -z "$(find "$HF_HUB_CACHE" -path "*refs/$A")" ] && pass "... no ref made for it" ||
	fail "a ref was made for the commit not answered"
AU=$(printf '%s' "$A" | tr a-f A-F)
expect_exit 1 "pull REPO@COMMIT in capitals answered for another commit" "$QWENCHAT" pull test/Tiny-Qwen3@$AU
err_has "the Hub answered for commit $(commit_of test/Tiny-Qwen3), not $A" "... the commit pinned as well"
[ -z "$(find "$HF_HUB_CACHE" -ipath "*refs/$A")" ] && pass "... no ref made for it" ||
	fail "a ref was made for the commit in capitals"
mode ""
# the CDN a large file is sent to refuses it: not blamed on the token, never sent there
export HF_HUB_CACHE="$TMP/cache-cdn403"
mode cdn-403
HF_TOKEN=secret-token expect_exit 1 "the CDN refuses a file (403)" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "the file's host refused it (HTTP 403) after the Hub's redirect" "... said so, one line"
tail -n 1 "$TMP/err" | grep -q 'the token\|HF_TOKEN' && fail "... the token blamed: $(tail -n 1 "$TMP/err")" ||
	pass "... the token not blamed"
mode ""
export HF_HUB_CACHE="$TMP/cache-gguf"
expect_exit 0 "pull REPO:TAG of a split file" "$QWENCHAT" pull test/Tiny-GGUF:Q8_0
d=$(dirname "$(cat "$TMP/out")")
grep -q 'Tiny-Q8_0-00001-of-00002.gguf$' "$TMP/out" && [ -f "$d/Tiny-Q8_0-00002-of-00002.gguf" ] &&
	pass "both parts of the split file" || fail "split pull: $(cat "$TMP/out")"
n0=$(requests)
expect_exit 0 "info on REPO:TAG, offline" env HF_HUB_OFFLINE=1 "$QWENCHAT" info -m test/Tiny-GGUF:Q8_0
grep -q "GGUF loaded and checked" "$TMP/out" && [ "$(requests)" = "$n0" ] &&
	pass "the split GGUF from the cache loads" || fail "info on the cached split GGUF"
expect_exit 1 "a tag no file has" "$RESOLVE" test/Tiny-GGUF:Q4_K
err_has "no .gguf file for tag Q4_K (there are: Tiny-Q4_K_M.gguf, Tiny-Q4_K_S.gguf, Tiny-Q8_0-00001-of-00002.gguf" \
	"unknown tag: the files there are"
# the file list is tried again after a 503 or a dropped connection, as files are
for m in api-503-once api-drop-once; do
	mode "$m"
	expect_exit 0 "$m: the GGUF file list is tried again" \
		env HF_HUB_CACHE="$TMP/cache-$m" "$QWENCHAT" pull test/Tiny-GGUF:Q4_K_S
	grep -q '/Tiny-Q4_K_S.gguf$' "$TMP/out" &&
		grep -q "^qwenchat: test/Tiny-GGUF: .*; retrying in 1 s (try 2 of 3)$" "$TMP/err" &&
		pass "$m: the retry says why, the pull completes" || fail "$m: $(cat "$TMP/out" "$TMP/err")"
done
mode big-list
expect_exit 1 "a file list of 600,000 entries is refused before it is parsed" "$RESOLVE" test/Tiny-GGUF:Q4_K
err_has "the Hub's file list" "... naming what it is"
err_has "more than 524288 JSON values" "... and the limit"
mode normal
expect_exit 1 "a tag no cached file has, offline" env HF_HUB_OFFLINE=1 "$QWENCHAT" info -m test/Tiny-GGUF:Q4_K
err_has "no .gguf file for tag Q4_K (there are: " "offline unknown tag: the files there are, not \"incomplete\""
expect_exit 0 "list" "$QWENCHAT" list
# MODEL is the name -m takes for the file: the tag from its name, not its type
grep -q '^test/Tiny-GGUF:Q4_K_M .* GGUF BF16 .*complete  Tiny-Q4_K_M.gguf$' "$TMP/out" &&
	grep -q '^test/Tiny-GGUF:Q8_0 .*complete  Tiny-Q8_0-00001-of-00002.gguf$' "$TMP/out" &&
	pass "list shows the GGUF files with type and size" || fail "list: $(cat "$TMP/out")"
for m in $(awk '/^test\/Tiny-GGUF:/ {print $1}' "$TMP/out"); do
	env HF_HUB_OFFLINE=1 "$RESOLVE" "$m" >/dev/null 2>&1 || fail "list's $m does not resolve"
done
pass "each GGUF name list shows resolves"
check_cache "$HF_HUB_CACHE" "GGUF downloads"
# the file list's commit names the snapshot's folder: a path there is refused
mode bad-sha
expect_exit 1 "a file list whose sha is a path" env HF_HUB_CACHE="$TMP/cache-sha/hub" \
	"$QWENCHAT" pull test/Tiny-GGUF:Q4_K_S
err_has "the Hub's file list is not" "a path as the commit: clear error"
[ -z "$(find "$TMP" -name 'escaped*' 2>/dev/null)" ] && pass "nothing made outside the cache" ||
	fail "made outside the cache: $(find "$TMP" -name 'escaped*')"
mode normal
# ollama's store: the manifest's model layer names the blob
O="$TMP/ollama"
blob=$(sha256sum "$GR/Tiny-Q4_K_M.gguf" | cut -d' ' -f1)
mkdir -p "$O/blobs" "$O/manifests/registry.ollama.ai/library/tiny"
cp "$GR/Tiny-Q4_K_M.gguf" "$O/blobs/sha256-$blob"
printf '{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:%s"},{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%s}]}' \
	"$(printf '%064d' 0)" "$blob" "$(wc -c <"$GR/Tiny-Q4_K_M.gguf")" >"$O/manifests/registry.ollama.ai/library/tiny/latest"
expect_exit 0 "ollama:NAME (tag latest)" env OLLAMA_MODELS="$O" "$RESOLVE" ollama:tiny
[ "$(cat "$TMP/out")" = "$O/blobs/sha256-$blob" ] && pass "ollama: the model blob" ||
	fail "ollama gave $(cat "$TMP/out")"
expect_exit 0 "info -m ollama:NAME:TAG" env OLLAMA_MODELS="$O" "$QWENCHAT" info -m ollama:tiny:latest
expect_exit 1 "ollama: a tag not pulled" env OLLAMA_MODELS="$O" "$RESOLVE" ollama:tiny:8b
err_has "ollama:tiny:8b: no such model" "ollama: clear error"
expect_exit 1 "ollama: a path in the name" env OLLAMA_MODELS="$O" "$RESOLVE" "ollama:../x"
# Pulled from another registry ("ollama pull hf.co/USER/REPO:TAG"): HOST/NAMESPACE/NAME/TAG,
# as given, in lower case (as some ollama versions file it) or in any other case (as
# ollama matches names); a host with a port.
for m in hf.co/Unsloth/Tiny-GGUF/Q4_K_M hf.co/unsloth/other-gguf/q4_k_m localhost:5000/me/tiny/v1; do
	mkdir -p "$O/manifests/${m%/*}"
	cp "$O/manifests/registry.ollama.ai/library/tiny/latest" "$O/manifests/$m"
done
for spec in hf.co/Unsloth/Tiny-GGUF:Q4_K_M hf.co/unsloth/Other-GGUF:Q4_K_M localhost:5000/me/tiny:v1 \
	hf.co/Unsloth/tiny-gguf:q4_k_m Tiny:LATEST; do
	expect_exit 0 "ollama:$spec" env OLLAMA_MODELS="$O" "$RESOLVE" "ollama:$spec"
	[ "$(cat "$TMP/out")" = "$O/blobs/sha256-$blob" ] && pass "ollama:$spec: the model blob" ||
		fail "ollama:$spec gave $(cat "$TMP/out")"
done
for spec in a/b/c/d x/../tiny 'hf.co/./tiny' 'lib.rary/tiny' 'tiny:a/b' 'tiny:'; do
	expect_exit 1 "ollama:$spec is refused" env OLLAMA_MODELS="$O" "$RESOLVE" "ollama:$spec"
	err_has "ollama:$spec" "ollama:$spec: names the model"
done
mode auth
export HF_HUB_CACHE="$TMP/cache5"
expect_exit 1 "gated repository without a token" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "access denied (HTTP 401)" "401: clear error"
err_has "set HF_TOKEN" "401: says what to do"
expect_exit 1 "gated repository with a wrong token (403)" env HF_TOKEN=wrong "$QWENCHAT" pull test/Tiny-Qwen3
err_has "HF_TOKEN does not grant access" "403 with a token: clear error"
err_has "the Hub says: Access to model test/Tiny-Qwen3 is restricted and you are not in the authorized list. Visit https://huggingface.co/test/Tiny-Qwen3 to ask for access." \
	"403: the Hub's reason, where to ask for access"
mode auth hostile-message
expect_exit 1 "a gated repository's reason full of escapes" env HF_TOKEN=wrong "$QWENCHAT" pull test/Tiny-Qwen3
[ "$(wc -l <"$TMP/err")" = 1 ] && ! grep -q "$(printf '\033')" "$TMP/err" && [ "$(wc -c <"$TMP/err")" -lt 1000 ] &&
	err_has "the Hub says: ^[]0;owned^G^[[2JAccess to model" "the Hub's reason: one bounded line, escapes shown" ||
	fail "hostile reason: $(wc -c <"$TMP/err") bytes, $(wc -l <"$TMP/err") lines"
mode auth
# cleaned as huggingface_hub cleans it: \r and \n removed, blanks at both ends stripped
expect_exit 0 "HF_TOKEN with a trailing newline and blank" env HF_TOKEN="secret-token
 " "$QWENCHAT" pull test/Tiny-Qwen3
expect_exit 0 "HUGGING_FACE_HUB_TOKEN when HF_TOKEN is unset" \
	env HUGGING_FACE_HUB_TOKEN=secret-token "$QWENCHAT" pull test/Tiny-Qwen3
expect_exit 1 "HF_TOKEN before HUGGING_FACE_HUB_TOKEN" \
	env HF_TOKEN=wrong HUGGING_FACE_HUB_TOKEN=secret-token "$QWENCHAT" pull test/Tiny-Qwen3
mkdir -p "$HF_HOME" && printf '  secret-token \r\n' >"$HF_HOME/token"
expect_exit 0 "a token file with blanks around the token" "$QWENCHAT" pull test/Tiny-Qwen3
printf 'wrong\n' >"$HF_HOME/token"
expect_exit 1 "a wrong token in the token file" "$QWENCHAT" pull test/Tiny-Qwen3
err_has "the token from $HF_HOME/token does not grant access" "the error names the token file"
expect_exit 1 "a wrong HUGGING_FACE_HUB_TOKEN" env HUGGING_FACE_HUB_TOKEN=wrong "$QWENCHAT" pull test/Tiny-Qwen3
err_has "the token from HUGGING_FACE_HUB_TOKEN does not grant access" "the error names HUGGING_FACE_HUB_TOKEN"
rm -f "$HF_HOME/token"
# a token file that cannot be read: said, not taken for no token at all
mkdir "$HF_HOME/token"
expect_exit 1 "a token file that cannot be read" "$QWENCHAT" pull test/Tiny-Qwen3
grep -qF "qwenchat: warning: the Hugging Face token file: $HF_HOME/token: is a directory" "$TMP/err" &&
	tail -n 1 "$TMP/err" | grep -qF "access denied (HTTP 401)" && pass "... is named with the reason, then the 401" ||
	fail "an unreadable token file: $(cat "$TMP/err")"
rmdir "$HF_HOME/token"
expect_exit 0 "gated repository with HF_TOKEN" env HF_TOKEN=secret-token "$QWENCHAT" pull test/Tiny-Qwen3
mkdir -p "$HF_HOME" && echo secret-token >"$HF_HOME/token"
expect_exit 0 "gated repository with the token file of huggingface-cli login" \
	env HF_HUB_CACHE="$TMP/cache7" "$QWENCHAT" pull test/Tiny-Qwen3
rm -f "$HF_HOME/token"
check_cache "$HF_HUB_CACHE" "HTTP errors"
mode normal
kill $SRV_PID; wait $SRV_PID 2>/dev/null
export HF_HUB_CACHE="$TMP/cache6"
expect_exit 1 "server down" "$RESOLVE" test/Tiny-Qwen3
err_has "cannot reach the Hub" "server down: clear error"
expect_exit 2 "pull without a repo" "$QWENCHAT" pull
expect_exit 2 "list with an argument" "$QWENCHAT" list extra
expect_exit 0 "pull --help" "$QWENCHAT" pull --help
grep -q 'usage: qwenchat pull' "$TMP/out" && pass "pull --help prints the usage" || fail "pull --help"
# a repo written wrong is a usage error, said before any lookup (the server is down here)
expect_exit 2 "a malformed repo id" "$QWENCHAT" pull 'Org/bad--name'
err_has "not a valid Hugging Face repo id" "malformed repo id: clear error"
expect_exit 2 "an empty revision" "$QWENCHAT" pull 'Org/name@'
expect_exit 2 "no Org/" "$QWENCHAT" pull 'name'
err_has "name: not a Hugging Face repo id (Org/Name" "no Org/: says what a repo id is"
expect_exit 2 "another site's address" "$QWENCHAT" pull 'https://example.com/Org/name'
err_has "not the Hugging Face Hub's address" "another site: said so"
expect_exit 1 "neither a directory nor a repo id" "$RESOLVE" "$TMP/no/such/dir"
err_has "no such model directory" "bad -m: clear error"
finish
