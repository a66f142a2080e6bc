#!/bin/sh
# hostile-files.sh — local files an attacker (or bad luck) put in place: a FIFO where
# a model file should be (each refused at once with one line naming it, where an
# open() would wait forever), JSON files far larger or more nested than they can
# legitimately be (refused before they are parsed), and an ollama store whose
# manifest or blob is wrong; and writes that cannot finish (a file-size limit, a full
# standard output) or that a planted link would aim.
. "$TOP_SRCDIR/tests/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
need_tokenizer
export XDG_STATE_HOME="$TMP/state" HOME="$TMP"
unset QWENCHAT_MODEL
M=$TMP/m
chat_model "$M" --vocab-size 151936 --hidden-size 32 --intermediate-size 64 --layers 1 \
	--heads 2 --kv-heads 1 --head-dim 16
python3 "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/m.gguf" --norm-type bf16 &&
	python3 "$TOP_SRCDIR/tests/mkgguf.py" "$M" "$TMP/sp.gguf" --norm-type bf16 --split 2 ||
	{ fail "mkgguf"; finish; }

# refused CMD FILE DESC — CMD (a shell line) ends within 20 s with exit 1 and one line
# naming FILE (its last path component).
refused() {
	timeout 20 sh -c "$1" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	name=$(basename "$2")
	if [ $rc -eq 124 ]; then
		fail "$3: hung (killed after 20 s)"
	elif [ $rc -ne 1 ] || [ "$(wc -l <"$TMP/err")" -ne 1 ] ||
		! grep -q "^qwenchat: .*$name" "$TMP/err"; then
		fail "$3: exit $rc, stderr: $(head -c 300 "$TMP/err")"
	else
		pass "$3: $(cut -c1-120 "$TMP/err")"
	fi
}

# ---- a FIFO, or a loop of links, in place of each file a model is read from ----------
# (a loop was taken for a missing optional file, and config.json's for no config.json)
for kind in FIFO loop; do
	for f in config.json tokenizer.json tokenizer_config.json generation_config.json; do
		cp -r "$M" "$TMP/f"
		rm "$TMP/f/$f"
		if [ $kind = FIFO ]; then
			mkfifo "$TMP/f/$f"
		else
			ln -s "$TMP/f/x" "$TMP/f/$f" && ln -s "$TMP/f/$f" "$TMP/f/x"
		fi
		case $f in
		tokenizer*) cmd="echo hi | '$QWENCHAT' tokenize -m '$TMP/f'" ;;
		generation*) cmd="'$QWENCHAT' run -m '$TMP/f' -p hi -n 1" ;;
		*) cmd="'$QWENCHAT' info -m '$TMP/f'" ;;
		esac
		refused "$cmd" "$f" "a $kind as $f"
		rm -rf "$TMP/f"
	done
done
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/sh" --shards 2 >/dev/null || fail "mkmodel --shards"
rm "$TMP/sh/model-00002-of-00002.safetensors" && mkfifo "$TMP/sh/model-00002-of-00002.safetensors"
refused "'$QWENCHAT' info -m '$TMP/sh'" model-00002-of-00002.safetensors "a FIFO as a shard"
rm "$TMP/sh/model.safetensors.index.json" && mkfifo "$TMP/sh/model.safetensors.index.json"
refused "'$QWENCHAT' info -m '$TMP/sh'" model.safetensors.index.json "a FIFO as the shard index"
rm "$TMP/sp-00002-of-00002.gguf" && mkfifo "$TMP/sp-00002-of-00002.gguf"
refused "'$QWENCHAT' info -m '$TMP/sp-00001-of-00002.gguf'" sp-00002-of-00002.gguf \
	"a FIFO as a split GGUF's part"
mkfifo "$TMP/fifo.gguf"
refused "'$QWENCHAT' info -m '$TMP/fifo.gguf'" fifo.gguf "a FIFO given as -m"

# ---- an ollama store ------------------------------------------------------------------
O=$TMP/ollama
MF=$O/manifests/registry.ollama.ai/library/tiny
mkdir -p "$O/blobs" "$MF"
sha=$(sha256sum "$TMP/m.gguf" | cut -d' ' -f1)
size=$(wc -c <"$TMP/m.gguf")
cp "$TMP/m.gguf" "$O/blobs/sha256-$sha"
manifest() { # manifest TAG SIZE [PAD]: a manifest naming the blob, PAD spaces inside
	printf '{"schemaVersion":2,%s"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%s}]}' \
		"${3:-}" "$sha" "$2" >"$MF/$1"
}
manifest good "$size"
expect_exit 0 "ollama: a good manifest" env OLLAMA_MODELS="$O" "$QWENCHAT" info -m ollama:tiny:good
rm "$MF/good" && mkfifo "$MF/good"
refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:good" good "ollama: a FIFO as the manifest"
manifest big "$size" "$(head -c 70000 /dev/zero | tr '\0' ' ')"
refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:big" big "ollama: a 70 kB manifest"
grep -q "larger than 65536 bytes" "$TMP/err" && pass "ollama: the manifest's cap is named" ||
	fail "ollama big manifest: $(cat "$TMP/err")"
printf '{"layers": [' >"$MF/broken"
refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:broken" broken "ollama: a manifest that is not JSON"
grep -q "not valid JSON" "$TMP/err" && ! grep -q "ollama pull" "$TMP/err" &&
	pass "ollama: says the manifest is not JSON, not that the model is missing" ||
	fail "ollama broken manifest: $(cat "$TMP/err")"
manifest short $((size + 1))
refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:short" "sha256-$sha" "ollama: a blob of the wrong size"
grep -q "where the manifest says $((size + 1))" "$TMP/err" && pass "ollama: the sizes are named" ||
	fail "ollama size: $(cat "$TMP/err")"
for sz in '"5"' 1.5 1e30 null; do
	manifest odd "$sz"
	refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:odd" odd "ollama: a size of $sz"
	grep -q "the model layer's size is not a count of bytes" "$TMP/err" ||
		fail "ollama size $sz: $(cat "$TMP/err")"
done
pass "ollama: a size that is not a count of bytes is named"
mkdir -p "$TMP/outside"
sha2=$(printf x | sha256sum | cut -d' ' -f1)
cp "$TMP/m.gguf" "$TMP/outside/model.gguf"
ln -s "$TMP/outside/model.gguf" "$O/blobs/sha256-$sha2"
printf '{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":%s}]}' \
	"$sha2" "$size" >"$MF/linked"
refused "OLLAMA_MODELS='$O' '$QWENCHAT' info -m ollama:tiny:linked" "sha256-$sha2" "ollama: a blob linked out of the store"
grep -q "a link out of the ollama store" "$TMP/err" && pass "ollama: the link is refused as such" ||
	fail "ollama link: $(cat "$TMP/err")"
# blobs/ moved to another disk and linked back: its blobs load, links out of it do not
O2=$TMP/ollama2
MF2=$O2/manifests/registry.ollama.ai/library/tiny
mkdir -p "$MF2" "$TMP/disk"
rm -f "$MF/good" && manifest good "$size" && mv "$MF/good" "$MF2/good" &&
	cp "$MF/linked" "$MF2/linked"
mv "$O/blobs" "$TMP/disk/blobs" && ln -s "$TMP/disk/blobs" "$O2/blobs"
expect_exit 0 "ollama: blobs/ linked to another disk" env OLLAMA_MODELS="$O2" "$QWENCHAT" info -m ollama:tiny:good
refused "OLLAMA_MODELS='$O2' '$QWENCHAT' info -m ollama:tiny:linked" "sha256-$sha2" \
	"ollama: a blob linked out of a linked blobs/"
# ... and manifests/ too
mv "$O2/manifests" "$TMP/disk/manifests" && ln -s "$TMP/disk/manifests" "$O2/manifests"
expect_exit 0 "ollama: manifests/ linked to another disk" env OLLAMA_MODELS="$O2" \
	"$QWENCHAT" info -m ollama:tiny:good
mv "$TMP/disk/blobs" "$O/blobs"

# ---- conversation files beyond what one can be ------------------------------------------
# 1M empty arrays (3 MB): 136 MB and most of a second for jansson before the cap
python3 -c 'import sys; sys.stdout.write("[" + ",".join(["[]"] * 1000000) + "]")' >"$TMP/nested.json"
refused "'$QWENCHAT' template -m '$M' --messages '$TMP/nested.json'" nested.json \
	"a conversation of a million values"
grep -q "more than 524288 JSON values" "$TMP/err" && pass "the values cap is named" ||
	fail "values cap: $(cat "$TMP/err")"
python3 -c 'import sys; sys.stdout.write("[" * 100 + "]" * 100)' >"$TMP/deep.json"
refused "'$QWENCHAT' template -m '$M' --messages '$TMP/deep.json'" deep.json "a conversation nested 100 deep"
head -c $((65 << 20)) /dev/zero | tr '\0' ' ' >"$TMP/huge.json"
refused "'$QWENCHAT' template -m '$M' --messages '$TMP/huge.json'" huge.json "a 65 MiB conversation"
mkdir -p "$XDG_STATE_HOME/qwenchat"
echo "$TMP/nested.json" >"$XDG_STATE_HOME/qwenchat/last-session"
refused "echo hi | '$QWENCHAT' chat -m '$M' --resume -n 1" nested.json "--resume of a million values"
mkfifo "$TMP/conv.fifo"
echo "$TMP/conv.fifo" >"$XDG_STATE_HOME/qwenchat/last-session"
refused "echo hi | '$QWENCHAT' chat -m '$M' --resume -n 1" conv.fifo "--resume of a FIFO"
rm "$XDG_STATE_HOME/qwenchat/last-session" && mkfifo "$XDG_STATE_HOME/qwenchat/last-session"
refused "echo hi | '$QWENCHAT' chat -m '$M' --resume -n 1" last-session "a FIFO as last-session"

# ---- writes that cannot finish, and links where a file goes ------------------------------
mkdir -p "$TMP/w"
echo 1 2 3 >"$TMP/ids"
refused "ulimit -f 100; '$QWENCHAT' logits -m '$M' --out '$TMP/w/l.bin' <'$TMP/ids'" l.bin \
	"logits past a file-size limit"
grep -q "File too large" "$TMP/err" && [ -z "$(ls -A "$TMP/w")" ] &&
	pass "a file-size limit is an error like a full disk, no temporary file left" ||
	fail "file-size limit: $(cat "$TMP/err"), left: $(ls -A "$TMP/w")"
refused "'$QWENCHAT' quantize -m '$M' --type q8_0 --out /dev/full" full "quantize to /dev/full"
expect_exit 1 "--help into a full standard output" sh -c "'$QWENCHAT' --help >/dev/full"
expect_err_has "standard output: write failed" "a full standard output is said"
printf '[{"role": "user", "content": "hi"}]' >"$TMP/hi.json"
for cmd in "tokenize" "template --messages $TMP/hi.json" "run -p hi -n 2 --threads 1" "info" \
	"run -p hi -n 50 --threads 1 --logprobs 1"; do
	# shellcheck disable=SC2086
	echo hi | "$QWENCHAT" $cmd -m "$M" >/dev/full 2>"$TMP/err"
	rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] &&
		grep -q '^qwenchat: standard output: write failed: No space left on device$' "$TMP/err" &&
		pass "${cmd%% *} into a full standard output: one line with the reason" ||
		fail "${cmd%% *} into /dev/full: exit $rc: $(cat "$TMP/err")"
done
"$QWENCHAT" run -m "$M" -p hi -n 50 --threads 1 --logprobs 1 --stats >/dev/full 2>"$TMP/err"
grep -q 'stopped: output error' "$TMP/err" && pass "run --logprobs stops at a full standard output" ||
	fail "run --logprobs into /dev/full goes on: $(cat "$TMP/err")"
echo keep >"$TMP/w/victim"
ln -s victim "$TMP/w/out.bin"
expect_exit 0 "logits --out at a link" sh -c "'$QWENCHAT' logits -m '$M' --out '$TMP/w/out.bin' <'$TMP/ids'"
[ "$(cat "$TMP/w/victim")" = keep ] && [ -f "$TMP/w/out.bin" ] && [ ! -L "$TMP/w/out.bin" ] &&
	[ "$(stat -c %a "$TMP/w/out.bin")" = 600 ] &&
	pass "the link is replaced by a private file, its target untouched" ||
	fail "a link at --out: victim '$(cat "$TMP/w/victim")', $(ls -l "$TMP/w")"
# standard output by name: written through, never replaced
expect_exit 0 "logits --out /dev/stdout" sh -c "'$QWENCHAT' logits -m '$M' --out /dev/stdout <'$TMP/ids' >'$TMP/w/so.bin'"
expect_exit 0 "logits --out -" sh -c "cd '$TMP/w' && '$QWENCHAT' logits -m '$M' --out - <'$TMP/ids' >'$TMP/w/dash.bin'"
restore_dev
cmp -s "$TMP/w/so.bin" "$TMP/w/out.bin" && cmp -s "$TMP/w/dash.bin" "$TMP/w/out.bin" &&
	pass "--out /dev/stdout and --out -: the file's bytes" ||
	fail "--out /dev/stdout: $(wc -c <"$TMP/w/so.bin"), -: $(wc -c <"$TMP/w/dash.bin")"
[ ! -e "$TMP/w/-" ] && pass "--out - makes no file named '-'" || fail "--out - made a file '-'"
# a path longer than realpath() resolves (links inside, 4,000+ characters once
# expanded) still leads into /dev: /dev/null is written through, not replaced
A=$(printf 'a%.0s' $(seq 200))
D=$TMP/deep
for i in $(seq 19); do D=$D/$A; done
mkdir -p "$D" && (cd "$D" && mkdir -p "$A/$A/$A" && ln -s /dev "$A/$A/$A/d") &&
	ln -s "$A/$A/$A/d" "$D/y" && ln -s "$D" "$TMP/w/x"
expect_exit 0 "--out through a long path into /dev" sh -c "'$QWENCHAT' logits -m '$M' --out '$TMP/w/x/y/null' <'$TMP/ids'"
restore_dev
rm -rf "$TMP/deep" "$TMP/w/x"
# the model's own files: refused, the model left whole (a GGUF, a hard link to it)
cp "$M/config.json" "$TMP/config.keep"
expect_exit 1 "logits --out the model's config.json" sh -c "'$QWENCHAT' logits -m '$M' --out '$M/config.json' <'$TMP/ids'"
expect_err_has "is the model's config.json" "... says it is the model's"
cmp -s "$M/config.json" "$TMP/config.keep" && pass "... config.json is whole" ||
	fail "logits --out replaced the model's config.json"
cp "$TMP/m.gguf" "$TMP/w/keep.gguf" && ln "$TMP/m.gguf" "$TMP/w/hard.bin"
expect_exit 1 "logits --out a hard link to the GGUF" sh -c "'$QWENCHAT' logits -m '$TMP/m.gguf' --out '$TMP/w/hard.bin' <'$TMP/ids'"
expect_exit 1 "logits --out the GGUF itself" sh -c "'$QWENCHAT' logits -m '$TMP/m.gguf' --out '$TMP/m.gguf' <'$TMP/ids'"
cmp -s "$TMP/m.gguf" "$TMP/w/keep.gguf" && pass "... the GGUF is whole" ||
	fail "logits --out replaced the GGUF it read"
# a file of the kernel's is not written through (only a descriptor's file is)
expect_exit 1 "logits --out /proc/self/comm" sh -c "'$QWENCHAT' logits -m '$M' --out /proc/self/comm <'$TMP/ids'"
expect_err_has "a file of the system's (refused" "--out a kernel file: refused, said so"
finish
