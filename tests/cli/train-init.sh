#!/bin/sh
# train-init.sh — `qwenchat train --init MODEL`: from a model directory (with or without
# tokenizer files), a repo id in the Hugging Face cache, a bf16 or F16 GGUF (its tokenizer,
# template and sampling defaults carried into the checkpoint); a quantized GGUF refused;
# what the run saves of the model (an absolute path, the snapshot, the threads, where the
# steps ran) and what a resume may and may not change of it.
. "$TOP_SRCDIR/tests/lib.sh"

# Corpora and token ids (fixed), a small BPE tokenizer with the chat's special tokens.
python3 - "$TMP" <<'PY'
import random, struct, sys
d = sys.argv[1]
r = random.Random(12)
w = ("the of and to in is was he that it for his on with as at by had they be this "
     "from are have not or were she but we one which you her lower newer wider").split()
open(f"{d}/a.txt", "w").write(" ".join(r.choice(w) for _ in range(6000)))
open(f"{d}/d.u32", "wb").write(b"".join(struct.pack("<I", r.randrange(1000)) for _ in range(8000)))
PY
"$QWENCHAT" train-bpe -q --vocab-size 400 --special '<|endoftext|>' --special '<|im_start|>' \
	--special '<|im_end|>' --out "$TMP/tok" "$TMP/a.txt" || { echo "train-bpe failed" >&2; exit 1; }
SMALL="--ctx 16 --batch 4 --threads 2"
# a model with the tokenizer above, as a run from scratch leaves it
R="$TMP/run"
"$QWENCHAT" train --out "$R" --tokenizer "$TMP/tok" --layers 2 --hidden-size 64 --heads 4 \
	--kv-heads 2 --intermediate-size 96 --data "$TMP/a.txt" $SMALL --steps 1 2>"$TMP/err" ||
	{ echo "a run from scratch failed: $(tail -n 1 "$TMP/err")" >&2; exit 1; }

# ---- a model without tokenizer files ------------------------------------------------------
M="$TMP/mk"
"$TOP_BUILDDIR/tests/mkmodel" --out "$M" --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 >/dev/null || fail "mkmodel"
if "$QWENCHAT" train --init "$M" --out "$TMP/fromm" --data "$TMP/d.u32" $SMALL --steps 2 2>"$TMP/err" &&
   [ ! -e "$TMP/fromm/tokenizer.json" ] &&
   printf '1 2 3' | "$QWENCHAT" logits -m "$TMP/fromm" --out "$TMP/logits.bin" 2>"$TMP/err"; then
	pass "--init a model without tokenizer files on *.u32 data: a checkpoint logits loads"
else
	fail "--init: $(tail -n 2 "$TMP/err")"
fi
train_usage 1 "--init without a tokenizer on text data" "the model has no tokenizer" \
	--init "$M" --out "$TMP/fromm2" --data "$TMP/a.txt"
# --init is saved as an absolute path, so that a resume naming the model another way (or
# from another directory) agrees with it; a shape flag given to such a run is the model's
if (cd "$TMP" && "$QWENCHAT" train --init mk --out fromm3 --data d.u32 $SMALL --steps 1 \
	>/dev/null 2>"$TMP/err") && grep -q '^trained step 1 in ' "$TMP/err" &&
   grep -qF "\"init\": \"$(cd "$TMP" && pwd -P)/mk\"" "$TMP/fromm3/train-state/state.json" &&
   (cd "$TMP/mk" && "$QWENCHAT" train --resume ../fromm3 --init ./ --steps 2 --head-dim 16 \
	--kv-heads 2 >/dev/null 2>"$TMP/err"); then
	pass "--init saved absolute: resumed naming it another way, with its own shape flags"
else
	fail "--init saved as given: $(grep '"init"' "$TMP/fromm3/train-state/state.json") $(tail -n 1 "$TMP/err")"
fi
# a warm-up longer than the run never reaches --lr: said when the run starts and when a
# resume still ends in it (not as a cosine cut short); an explicit --cosine-steps past
# --steps is the user's, and no resume remarks on it
if "$QWENCHAT" train --out "$TMP/wu" --init "$M" --data "$TMP/d.u32" $SMALL --steps 2 --warmup 5 \
	>/dev/null 2>"$TMP/err" && grep -q 'warmup 5 outlasts --steps 2: .* to 0.00012 at most' "$TMP/err" &&
   "$QWENCHAT" train --resume "$TMP/wu" --steps 3 >/dev/null 2>"$TMP/err" &&
   grep -q 'warmup 5 outlasts --steps 3: .* to 0.00024 at most' "$TMP/err" &&
   ! grep -q 'qwenchat: .*cosine' "$TMP/err" &&
   "$QWENCHAT" train --out "$TMP/cs" --init "$M" --data "$TMP/d.u32" $SMALL --steps 2 \
	--cosine-steps 20 >/dev/null 2>&1 &&
   "$QWENCHAT" train --resume "$TMP/cs" --steps 3 >/dev/null 2>"$TMP/err" &&
   ! grep -q 'qwenchat: .*cosine' "$TMP/err"; then
	pass "notices: a warm-up that outlasts the run, and none for an explicit cosine"
else
	fail "schedule notices: $(cat "$TMP/err")"
fi
# an --init repo id is saved as the snapshot it resolved to; a resume naming the same
# repo id agrees with it (from the cache, never a download), another is refused
snap="$TMP/hf/models--test--tiny/snapshots/0123456789abcdef0123456789abcdef01234567"
mkdir -p "$snap" "$TMP/hf/models--test--tiny/refs" &&
	cp "$R"/config.json "$R"/tokenizer*.json "$R"/model.safetensors "$snap/" &&
	printf 0123456789abcdef0123456789abcdef01234567 >"$TMP/hf/models--test--tiny/refs/main"
if HF_HUB_CACHE="$TMP/hf" HF_HUB_OFFLINE=1 "$QWENCHAT" train --init test/tiny --out "$TMP/repo" \
	--data "$TMP/a.txt" $SMALL --steps 1 >/dev/null 2>"$TMP/err" &&
   HF_HUB_CACHE="$TMP/hf" HF_HUB_OFFLINE=1 "$QWENCHAT" train --resume "$TMP/repo" \
	--init test/tiny --steps 2 >/dev/null 2>"$TMP/err"; then
	pass "--resume naming the run's --init repo id: the same model"
else
	fail "--resume with the same --init repo id: $(tail -n 1 "$TMP/err")"
fi
HF_HUB_CACHE="$TMP/hf" HF_HUB_OFFLINE=1 train_usage 2 "--resume with another --init repo id" \
	"--init test/other conflicts with the run's" --resume "$TMP/repo" --init test/other
# a run given no --threads saves the count it used: resumed with that count, no notice
if "$QWENCHAT" train --init "$M" --out "$TMP/thr" --data "$TMP/d.u32" --ctx 16 --batch 4 \
	--steps 1 >/dev/null 2>&1 &&
   "$QWENCHAT" train --resume "$TMP/thr" --steps 2 --threads "$(getconf _NPROCESSORS_ONLN)" \
	>/dev/null 2>"$TMP/err" && ! grep -q 'bit for bit' "$TMP/err"; then
	pass "--threads as many as the run used: no notice of another count"
else
	fail "--threads the count the run used: $(tail -n 1 "$TMP/err")"
fi
# where the steps ran is saved: --backend naming it is no change; steps that ran
# elsewhere (as state.json says here) are said not to go on bit for bit
if grep -q '"ran_on": "cpu"' "$TMP/thr/train-state/state.json" &&
   "$QWENCHAT" train --resume "$TMP/thr" --steps 3 --backend cpu >/dev/null 2>"$TMP/err" &&
   ! grep -q 'bit for bit' "$TMP/err" &&
   sed -i 's/"ran_on": "cpu"/"ran_on": "cuda"/' "$TMP/thr/train-state/state.json" &&
   "$QWENCHAT" train --resume "$TMP/thr" --steps 4 >/dev/null 2>"$TMP/err" &&
   grep -q 'ran on cuda and go on on cpu: not bit for bit' "$TMP/err" &&
   grep -q '"ran_on": "cpu"' "$TMP/thr/train-state/state.json"; then
	pass "ran_on: --backend cpu after auto on the CPU is no change; a CUDA run's resume says so"
else
	fail "ran_on: $(tail -n 1 "$TMP/err")"
fi
rm -rf "$TMP/badran" && cp -a "$TMP/thr" "$TMP/badran" &&
	sed -i 's/"ran_on": "cpu"/"ran_on": "gpu"/' "$TMP/badran/train-state/state.json"
train_usage 1 "--resume with a bad ran_on" "ran_on: expected \"cpu\" or \"cuda\"" --resume "$TMP/badran" \
	--steps 5
# more --threads than CPUs is the count it gives, there and on the resume: no notice
cpus=$(getconf _NPROCESSORS_ONLN)
if "$QWENCHAT" train --resume "$TMP/thr" --steps 5 --threads $((cpus + 8)) >/dev/null \
	2>"$TMP/err" && ! grep -q 'bit for bit' "$TMP/err"; then
	pass "--threads above the CPUs, resumed: the count used, no notice of another"
else
	fail "--threads above the CPUs on a resume: $(tail -n 1 "$TMP/err")"
fi
train_usage 2 "--resume of an --init run with a shape its model lacks" \
	"--resume: --kv-heads 4 conflicts with the run's model ($TMP/fromm3/config.json: num_key_value_heads 2)" \
	--resume "$TMP/fromm3" --kv-heads 4
# --init with --tokenizer: config.json's bos/eos become the new tokenizer's (the model's
# own, 1000 and 1001 here, are not its tokens).
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/mk2" --hidden-size 64 --intermediate-size 96 --layers 1 \
	--heads 4 --kv-heads 2 --head-dim 16 --vocab-size 1024 --bos-id 1000 --eos-id 1001 >/dev/null
"$QWENCHAT" train --init "$TMP/mk2" --tokenizer "$TMP/tok" --out "$TMP/fromt" --data "$TMP/a.txt" \
	$SMALL --steps 1 2>"$TMP/err" && python3 - "$TMP/fromt" <<'EOF' &&
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
g = json.load(open(sys.argv[1] + "/generation_config.json"))
t = {a["content"]: a["id"] for a in json.load(open(sys.argv[1] + "/tokenizer.json"))["added_tokens"]}
assert (c["bos_token_id"], c["eos_token_id"]) == (t["<|endoftext|>"], t["<|im_end|>"]), c
assert g["bos_token_id"] == t["<|endoftext|>"], g
EOF
	pass "--init with --tokenizer: the ids in config.json are the new tokenizer's" ||
	fail "--init --tokenizer ids: $(tail -n 2 "$TMP/err"; cat "$TMP/fromt/config.json")"
if TOK_DIR=$(sh "$TOP_SRCDIR/tests/fetch-tokenizer.sh" 2>/dev/null); then
	chat_model "$TMP/q" --hidden-size 64 --intermediate-size 96 --layers 1 --heads 2 \
		--kv-heads 1 --head-dim 32 --vocab-size 151936
	"$QWENCHAT" quantize -m "$TMP/q" --type q8_0 --out "$TMP/q.gguf" 2>"$TMP/err" ||
		fail "quantize: $(tail -n 1 "$TMP/err")"
	train_usage 1 "--init a quantized GGUF" "q.gguf: its weights are Q8_0: train from the bf16 model" --init "$TMP/q.gguf" \
		--out "$TMP/fromq" --data "$TMP/d.u32" $SMALL
	"$QWENCHAT" train --init "$TMP/q" --out "$TMP/fromq2" --data "$TMP/a.txt" $SMALL --steps 1 \
		2>"$TMP/err" && cmp -s "$TMP/q/tokenizer.json" "$TMP/fromq2/tokenizer.json" &&
		pass "--init a model directory: its tokenizer files carried over" ||
		fail "--init with the Qwen3 tokenizer: $(tail -n 2 "$TMP/err")"
	# From a GGUF file: the checkpoint gets the tokenizer.json its keys came from (the
	# same vocabulary, merges and added tokens as Qwen3's own file) and its template.
	"$QWENCHAT" quantize -m "$TMP/q" --type bf16 --out "$TMP/q16.gguf" 2>"$TMP/err" &&
		"$QWENCHAT" train --init "$TMP/q16.gguf" --out "$TMP/fromg" --data "$TMP/a.txt" \
			$SMALL --steps 1 2>"$TMP/err" ||
		fail "--init a bf16 GGUF: $(tail -n 2 "$TMP/err")"
	if /usr/bin/python3 - "$TMP/q" "$TMP/fromg" <<'PY'; then
import json, sys
a, b = (json.load(open(f"{d}/tokenizer.json", encoding="utf-8")) for d in sys.argv[1:3])
pairs = lambda m: [tuple(x.split(" ")) if isinstance(x, str) else tuple(x) for x in m]
# GGUF keeps "special" as a token type (the converters mark every <|...|> token a
# control token; the loader gives Qwen's six non-special ones their kind back)
added = lambda t: [(x["id"], x["content"], x["special"]) for x in t["added_tokens"]]
assert a["model"]["vocab"] == b["model"]["vocab"], "vocab"
assert pairs(a["model"]["merges"]) == pairs(b["model"]["merges"]), "merges"
assert added(a) == added(b), "added tokens"
assert a["normalizer"] == b["normalizer"], "normalizer"
ca, cb = (json.load(open(f"{d}/tokenizer_config.json")) for d in sys.argv[1:3])
assert ca["chat_template"] == cb["chat_template"], "chat template"
PY
		pass "--init a GGUF: the checkpoint's tokenizer.json and template are Qwen3's"
	else
		fail "--init a GGUF: the checkpoint's tokenizer files differ from the model's"
	fi
	# A GGUF's sampling defaults (general.sampling.*, as the converter writes them from
	# generation_config.json) go into the checkpoint's generation_config.json, and a
	# float GGUF with one quantized tensor is refused before the data is read.
	python3 - "$TMP/q/generation_config.json" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
g.update(temperature=0.7, top_k=40, top_p=0.8, min_p=0.05)
json.dump(g, open(sys.argv[1], "w"))
EOF
	python3 "$TOP_SRCDIR/tests/mkgguf.py" "$TMP/q" "$TMP/qs.gguf" &&
		python3 "$TOP_SRCDIR/tests/mkgguf.py" "$TMP/q" "$TMP/qe.gguf" \
			--q8-tensor blk.0.attn_q.weight || fail "mkgguf.py"
	"$QWENCHAT" train --init "$TMP/qs.gguf" --out "$TMP/fromgs" --data "$TMP/a.txt" $SMALL \
		--steps 0 2>"$TMP/err" && python3 - "$TMP/fromgs" "$TMP/q" <<'EOF' &&
import json, sys
g = json.load(open(sys.argv[1] + "/generation_config.json"))
got = {k: g.get(k) for k in ("temperature", "top_k", "top_p", "min_p")}
assert got == {"temperature": 0.7, "top_k": 40, "top_p": 0.8, "min_p": 0.05}, got
# the GGUF's float32 settings as the decimals the model's config.json had (1e-06)
c, src = (json.load(open(d + "/config.json")) for d in sys.argv[1:3])
for k in ("rms_norm_eps", "rope_theta"):
    assert repr(c[k]) == repr(float(src[k])), (k, c[k], src[k])
EOF
		pass "--init a GGUF: its sampling defaults go into generation_config.json, eps as 1e-06" ||
		fail "--init a GGUF's settings: $(tail -n 1 "$TMP/err"; cat "$TMP/fromgs/generation_config.json" "$TMP/fromgs/config.json")"
	# An F16 GGUF (convert_hf_to_gguf.py's --outtype f16: F16 matrices, F32 norms): the
	# checkpoint's F32 weights are the source's rounded to half precision, as Python's
	# own half conversion rounds them
	python3 "$TOP_SRCDIR/tests/mkgguf.py" "$TMP/q" "$TMP/qh.gguf" --outtype f16 &&
		"$QWENCHAT" train --init "$TMP/qh.gguf" --out "$TMP/fromqh" --data "$TMP/a.txt" \
			$SMALL --steps 0 2>"$TMP/err" && python3 - "$TMP/q" "$TMP/fromqh" <<'EOF' &&
import json, struct, sys

def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    out = {}
    for k, t in json.loads(b[8:8 + n]).items():
        if k == "__metadata__":
            continue
        raw = b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]
        assert t["dtype"] in ("BF16", "F32"), t["dtype"]
        if t["dtype"] == "BF16":
            raw = b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2))
        out[k] = (len(t["shape"]), struct.unpack("<%df" % (len(raw) // 4), raw))
    return out

src, got = (tensors(d + "/model.safetensors") for d in sys.argv[1:3])
assert set(got) <= set(src) and "model.embed_tokens.weight" in got, sorted(got)
for k, (dims, v) in got.items():
    want = src[k][1]
    if dims == 2:
        want = struct.unpack("<%de" % len(want), struct.pack("<%de" % len(want), *want))
    assert v == tuple(want), k
EOF
		pass "--init an F16 GGUF: the weights are the source's in half precision" ||
		fail "--init an F16 GGUF: $(tail -n 2 "$TMP/err")"
	# ... and the chat's engine runs the F16 file as it runs those F32 weights
	printf '1 2 3 4 5 100 200\n' | "$QWENCHAT" logits -m "$TMP/qh.gguf" --out "$TMP/qh.f32" &&
		printf '1 2 3 4 5 100 200\n' | "$QWENCHAT" logits -m "$TMP/fromqh" --out "$TMP/qhd.f32" &&
		python3 - "$TMP/qh.f32" "$TMP/qhd.f32" <<'EOF' &&
import array, sys
a, b = (array.array("f", open(f, "rb").read()) for f in sys.argv[1:3])
assert len(a) == len(b) > 0
top = max(abs(y) for y in b)
assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-5 * top
EOF
		pass "an F16 GGUF's logits: those of its weights in F32" ||
		fail "an F16 GGUF's logits differ from its F32 weights'"
	"$QWENCHAT" train --init "$TMP/qe.gguf" --out "$TMP/fromqe" --data "$TMP/a.txt" $SMALL \
		>/dev/null 2>"$TMP/err"
	[ $? -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -e "$TMP/fromqe" ] &&
		grep -qF "qe.gguf: 1 of its tensors is Q8_0: train from the bf16 model" "$TMP/err" &&
		pass "--init a bf16 GGUF with one Q8_0 tensor: refused in one line, first" ||
		fail "--init a GGUF with one Q8_0 tensor: $(cat "$TMP/err")"
	text='Héllo wörld, 世界! <|im_start|>user <think>x</think>  spaces	and 123456'
	[ "$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$TMP/fromg" 2>&1)" = \
	  "$(printf '%s' "$text" | "$QWENCHAT" tokenize -m "$TMP/q" 2>&1)" ] &&
		printf 'hi\n' | "$QWENCHAT" run -m "$TMP/fromg" -n 3 >/dev/null 2>"$TMP/err" &&
		pass "--init a GGUF: the checkpoint tokenizes as the model and chats" ||
		fail "--init a GGUF: the checkpoint does not load or tokenize: $(tail -n 2 "$TMP/err")"
else
	echo "skipped: the --init checks with the real Qwen3 tokenizer (tests/fetch-tokenizer.sh)"
fi
finish
