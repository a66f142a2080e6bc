#!/bin/sh
# info.sh — `qwenchat info` on generated models (tiny real files, the six published
# shapes from config.json alone) and on every kind of broken model directory.
. "$TOP_SRCDIR/tests/lib.sh"
MK="$TOP_BUILDDIR/tests/mkmodel"
# the system interpreter: version-manager shims (pyenv) add a second per call
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3

# json_get FILE KEY.SUBKEY — one value from `info --json` output.
json_get() {
	$PY -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(str(v).lower() if isinstance(v, bool) else v)' "$1" "$2"
}

# expect_eq DESC GOT WANT
expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1 = $3"; else fail "$1: got '$2', expected '$3'"; fi
}

# Parameters of a Qwen3 shape: V H I L NH NKV HD TIE(1/0).
params() {
	echo $(( $1*$2*(2-$8) + $4*($5*$7*$2*2 + $6*$7*$2*2 + 3*$3*$2 + 2*$7 + 2*$2) + $2 ))
}

# --- tiny real models: tied, untied, sharded, f16/f32, YaRN -------------------------
"$MK" --out "$TMP/tied" --seed 3 || fail "mkmodel tied"
"$MK" --out "$TMP/untied" --no-tie --vocab-size 300 --hidden-size 48 \
	--intermediate-size 80 --layers 3 --heads 6 --kv-heads 2 --head-dim 8 || fail "mkmodel untied"
"$MK" --out "$TMP/sharded" --no-tie --shards 3 || fail "mkmodel sharded"

# a small model's figures in the unit that suits it, not 0.00B
expect_exit 0 "info on a small model" "$QWENCHAT" info -m "$TMP/untied"
grep -q '^summary       82.18K parameters' "$TMP/out" && grep -q '^total .* 82.18K ' "$TMP/out" &&
	pass "a small model's count in K" || fail "small model: $(grep -E '^(total|summary)' "$TMP/out")"

for m in tied untied sharded; do
	expect_exit 0 "info --json $m" "$QWENCHAT" info -m "$TMP/$m" --json
	cp "$TMP/out" "$TMP/$m.json"
	expect_eq "$m loaded" "$(json_get "$TMP/$m.json" loaded)" true
done
# reals in their shortest form that reads back the same (1e-06, not 9.99...95e-07)
python3 -c 'import json, sys
reals = []  # the JSON reals as written (not strings that look like numbers, as a path)
json.loads(open(sys.argv[1]).read(), parse_float=lambda t: reals.append(t) or float(t))
long = [t for t in reals if repr(float(t)) != t and len(t) > len(repr(float(t)))]
sys.exit(1 if long or not reals else 0)' "$TMP/tied.json" && pass "info --json prints the shortest form of each real" ||
	fail "info --json reals: $(grep -E "e-|\\." "$TMP/tied.json" | head -5)"
wp=$(params 1024 64 128 2 4 2 16 1)
expect_eq "tied total" "$(json_get "$TMP/tied.json" params.total)" "$wp"
expect_eq "tied bytes" "$(json_get "$TMP/tied.json" weight_bytes)" $((wp * 2))
expect_eq "tied lm_head" "$(json_get "$TMP/tied.json" params.lm_head)" 0
wp=$(params 300 48 80 3 6 2 8 0)
expect_eq "untied total" "$(json_get "$TMP/untied.json" params.total)" "$wp"
expect_eq "untied lm_head" "$(json_get "$TMP/untied.json" params.lm_head)" $((300 * 48))
expect_eq "untied kv/token" "$(json_get "$TMP/untied.json" kv_bytes_per_token)" $((2*3*2*8*2))
wp=$(params 1024 64 128 2 4 2 16 0)
expect_eq "sharded total" "$(json_get "$TMP/sharded.json" params.total)" "$wp"
expect_eq "sharded bytes" "$(json_get "$TMP/sharded.json" weight_bytes)" $((wp * 2))
[ -f "$TMP/sharded/model-00003-of-00003.safetensors" ] && pass "3 shards written" ||
	fail "3 shards written"

expect_exit 0 "info table" "$QWENCHAT" info -m "$TMP/tied" --ctx 100
for s in "embedding" "attention q_proj" "q_norm + k_norm" "mlp down_proj" \
	"lm_head (tied: embedding)" "non-embedding" "KV cache" "at ctx 100" "cpu " "cuda "; do
	grep -qF -- "$s" "$TMP/out" && pass "table shows '$s'" || fail "table lacks '$s'"
done

"$MK" --out "$TMP/f32" --dtype f32 --yarn-factor 4 --yarn-original-max 1024 \
	--max-position 4096 || fail "mkmodel f32"
expect_exit 0 "f32 + YaRN model" "$QWENCHAT" info -m "$TMP/f32" --json
expect_eq "f32 bytes" "$(json_get "$TMP/out" weight_bytes)" $(( $(params 1024 64 128 2 4 2 16 1) * 4 ))
expect_eq "yarn factor" "$(json_get "$TMP/out" config.rope_factor)" 4.0
# Qwen3's YaRN recipe (factor 4 over 32768, max_position_embeddings left at 40960):
# the factor as given, the context it makes, and the ratio transformers 4.51-4.55 took
"$MK" --out "$TMP/yq" --yarn-factor 4 --yarn-original-max 32768 --max-position 40960 \
	>/dev/null || fail "mkmodel yq"
"$QWENCHAT" info -m "$TMP/yq" >"$TMP/out" 2>&1
grep -q 'YaRN factor 4 over 32768 positions (cos/sin scale 1.139' "$TMP/out" &&
	grep -q "context 131072 (YaRN's factor x original_max_position_embeddings)" "$TMP/out" &&
	grep -q "original_max_position_embeddings = 1.25)" "$TMP/out" &&
	pass "info says which YaRN factor is used, the context, and what 4.51 took" ||
	fail "YaRN factor in info: $(grep -A3 '^rope' "$TMP/out")"
expect_exit 0 "YaRN model, --json" "$QWENCHAT" info -m "$TMP/yq" --json
expect_eq "the context YaRN makes" "$(json_get "$TMP/out" config.max_context)" 131072
expect_eq "the KV cache at it" "$(json_get "$TMP/out" kv_bytes_at_max_position)" \
	$(( $(json_get "$TMP/out" kv_bytes_per_token) * 131072 ))
"$MK" --out "$TMP/f16" --dtype f16 || fail "mkmodel f16"
expect_exit 0 "f16 model" "$QWENCHAT" info -m "$TMP/f16" --json

# A checkpoint of mixed types (BF16 matrices, F32 norms) whose torch_dtype says
# float32, as transformers loads it: the same logits as an all-F32 copy of its values
python3 - "$TMP/f32" "$TMP/mixed" "$TMP/mixed-f32" <<'EOF'
import json, os, shutil, struct, sys
src, mixed, wide = sys.argv[1:4]
raw = open(f"{src}/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
hdr.pop("__metadata__", None)
def write(dst, half):
    os.makedirs(dst)
    for f in os.listdir(src):
        if f != "model.safetensors":
            shutil.copy(f"{src}/{f}", dst)
    out, body = {}, b""
    for k, v in hdr.items():
        x = raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
        if len(v["shape"]) == 2:  # bf16, rounded to nearest even
            u = [(w + 0x7FFF + ((w >> 16) & 1)) >> 16 for w in struct.unpack(f"<{len(x) // 4}I", x)]
            x = struct.pack(f"<{len(u)}H", *u) if half else struct.pack(f"<{len(u)}I", *[w << 16 for w in u])
        out[k] = {"dtype": "BF16" if half and len(v["shape"]) == 2 else "F32", "shape": v["shape"],
                  "data_offsets": [len(body), len(body) + len(x)]}
        body += x
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    open(f"{dst}/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + body)
write(mixed, True)
write(wide, False)
EOF
expect_exit 0 "mixed types, torch_dtype float32" "$QWENCHAT" info -m "$TMP/mixed"
grep -q "weights mostly BF16" "$TMP/out" && pass "info says mostly BF16" || fail "info: $(head -n 2 "$TMP/out")"
echo 1 5 9 200 3 | "$QWENCHAT" logits -m "$TMP/mixed" --out "$TMP/mixed.f32" 2>"$TMP/err" &&
echo 1 5 9 200 3 | "$QWENCHAT" logits -m "$TMP/mixed-f32" --out "$TMP/wide.f32" 2>>"$TMP/err" &&
python3 - "$TMP/mixed.f32" "$TMP/wide.f32" <<'EOF' &&
import struct, sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
a, b = struct.unpack(f"<{len(a) // 4}f", a), struct.unpack(f"<{len(b) // 4}f", b)
assert len(a) == len(b) > 0
d = max(abs(x - y) for x, y in zip(a, b)); m = max(abs(y) for y in b)
assert d <= 1e-5 * m, (d, m)
EOF
	pass "mixed types: the logits of the all-F32 copy" || fail "mixed types: $(tail -n 2 "$TMP/err")"

# mkmodel is deterministic: same seed, same bytes; sharding does not change values
"$MK" --out "$TMP/tied2" --seed 3 || fail "mkmodel again"
cmp -s "$TMP/tied/model.safetensors" "$TMP/tied2/model.safetensors" &&
	pass "mkmodel deterministic" || fail "mkmodel output differs for the same seed"

# --- the six published shapes, from config.json alone ------------------------------
for spec in 0.6B:0.596B 1.7B:1.721B 4B:4.022B 8B:8.191B 14B:14.768B 32B:32.762B; do
	name=${spec%%:*} total=${spec#*:}
	"$MK" --preset "$name" --config-only --out "$TMP/q$name" || fail "mkmodel $name"
	expect_exit 0 "info Qwen3-$name" "$QWENCHAT" info -m "$TMP/q$name" --config-only
	got=$(awk '$1 == "total" { print $3 }' "$TMP/out")
	expect_eq "Qwen3-$name total" "$got" "$total"
done
expect_exit 0 "info Qwen3-8B" "$QWENCHAT" info -m "$TMP/q8B" --config-only
for s in "8.19B parameters" "16.4 GB in BF16" "144 KiB of KV cache per token" \
	"8,190,735,360"; do
	grep -qF "$s" "$TMP/out" && pass "8B: '$s'" || fail "8B: lacks '$s'"
done
expect_exit 0 "8B json" "$QWENCHAT" info -m "$TMP/q8B" --config-only --json
expect_eq "8B kv/token" "$(json_get "$TMP/out" kv_bytes_per_token)" 147456
expect_exit 1 "8B without --config-only needs the weights" "$QWENCHAT" info -m "$TMP/q8B"
expect_err_has "model.safetensors" "names the missing weights"

# --- broken models: exit 1, one line naming the file and the field ------------------
# edit.py SRC DST ACTION [ARG]: rewrites a safetensors file (re-laid-out properly)
# with one thing changed, or with its header deliberately corrupted.
cat >"$TMP/edit.py" <<'EOF'
import json, struct, sys
src, dst, action = sys.argv[1:4]
arg = sys.argv[4] if len(sys.argv) > 4 else None
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.pop("__metadata__", None)
data = {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in hdr.items()}
if action == "drop":
    del hdr[arg]; del data[arg]
elif action == "extra":
    hdr[arg] = {"dtype": "BF16", "shape": [4]}; data[arg] = b"\0" * 8
elif action == "extra_f32":
    hdr[arg] = {"dtype": "F32", "shape": [4]}; data[arg] = b"\0" * 16
elif action == "transpose":
    hdr[arg]["shape"] = hdr[arg]["shape"][::-1]
elif action == "dtype":
    hdr[arg]["dtype"] = "Q7"
off = 0
for k in hdr:
    hdr[k]["data_offsets"] = [off, off + len(data[k])]; off += len(data[k])
names = list(hdr)
if action == "out_of_range":
    hdr[names[-1]]["data_offsets"][1] += 64
elif action == "overlap":
    hdr[names[1]]["data_offsets"] = [0, len(data[names[1]])]
if meta is not None:
    hdr = {"__metadata__": meta, **hdr}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
if action == "bad_json":
    h = h[:-8] + b"  }}}}}}"
length = len(h) if action != "huge_len" else len(raw) * 4
out = struct.pack("<Q", length) + h + b"".join(data[k] for k in data)
open(dst, "wb").write(out)
EOF

# broken NAME: a fresh copy of the tiny untied model in $TMP/NAME
broken() {
	rm -rf "$TMP/$1"; cp -r "$TMP/untied" "$TMP/$1"; B="$TMP/$1"
}
st_edit() { $PY "$TMP/edit.py" "$TMP/untied/model.safetensors" "$B/model.safetensors" "$@"; }
UP=model.layers.1.mlp.up_proj.weight
size=$(wc -c <"$TMP/untied/model.safetensors")

broken trunc4; head -c 4 "$TMP/untied/model.safetensors" >"$B/model.safetensors"
expect_exit 1 "truncated to 4 bytes" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: file is truncated" "truncated file named"
broken trunchdr; head -c 100 "$TMP/untied/model.safetensors" >"$B/model.safetensors"
expect_exit 1 "truncated inside the header" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: header length" "header cut: file and field named"
broken truncdata; head -c $((size - 10)) "$TMP/untied/model.safetensors" >"$B/model.safetensors"
expect_exit 1 "truncated data" "$QWENCHAT" info -m "$B"
expect_err_has "data_offsets" "data cut: offsets named"
expect_err_has "model.safetensors: tensor" "data cut: file and tensor named"
broken hugelen; st_edit huge_len
expect_exit 1 "header length beyond the file" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: header length" "header length named"
expect_err_has "beyond the end of the file" "header length beyond the file"
broken range; st_edit out_of_range
expect_exit 1 "offsets out of range" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor lm_head.weight: data_offsets" "out of range named"
broken overlap; st_edit overlap
expect_exit 1 "overlapping offsets" "$QWENCHAT" info -m "$B"
expect_err_has "overlap" "overlap reported"
expect_err_has "model.safetensors: tensor" "overlap: file and tensor named"
broken dtype; st_edit dtype "$UP"
expect_exit 1 "unknown dtype" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor $UP: unknown dtype" "unknown dtype named"
broken badjson; st_edit bad_json
expect_exit 1 "invalid JSON header" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: header: invalid JSON" "invalid header named"
broken missing; st_edit drop "$UP"
expect_exit 1 "missing tensor" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor $UP is missing" "missing tensor named"
broken extra; st_edit extra model.layers.0.mlp.extra.weight
expect_exit 1 "extra tensor" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: unexpected tensor model.layers.0.mlp.extra.weight" \
	"extra tensor named"
# RoPE's frequencies as older transformers saved them: ignored, as transformers does
broken invfreq; st_edit extra_f32 model.layers.0.self_attn.rotary_emb.inv_freq
expect_exit 0 "a stored rotary_emb.inv_freq ignored" "$QWENCHAT" info -m "$B"
broken shape; st_edit transpose "$UP"
expect_exit 1 "shape mismatch" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor $UP has shape [48,80], config.json needs [80,48]" \
	"shape mismatch named"
broken nolm; st_edit drop lm_head.weight
expect_exit 1 "untied model without lm_head" "$QWENCHAT" info -m "$B"
expect_err_has "tensor lm_head.weight is missing (config.json's tie_word_embeddings is not true" \
	"missing lm_head named, tie_word_embeddings said"

# config.json: absurd values, invalid JSON, wrong architectures
cfg_edit() {  # cfg_edit KEY JSON-VALUE
	$PY -c 'import json,sys
p = sys.argv[1]; c = json.load(open(p)); c[sys.argv[2]] = json.loads(sys.argv[3])
json.dump(c, open(p, "w"))' "$B/config.json" "$1" "$2"
}
# a tied config whose file still holds lm_head.weight: ignored, as transformers does
broken tiedlm; cfg_edit tie_word_embeddings true
expect_exit 0 "tied config, stored lm_head ignored" "$QWENCHAT" info -m "$B" --json
expect_eq "stored lm_head not counted" "$(json_get "$TMP/out" weight_bytes)" \
	$(( $(params 300 48 80 3 6 2 8 1) * 2 ))
broken tiedbad; cfg_edit tie_word_embeddings true; st_edit transpose lm_head.weight
expect_exit 1 "tied config, mis-shaped stored lm_head" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor lm_head.weight is not the embedding's shape [300,48]" \
	"mis-shaped lm_head named"
broken layers; cfg_edit num_hidden_layers 1000000000000
expect_exit 1 "10^12 layers" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: num_hidden_layers" "absurd layers named"
expect_exit 1 "10^12 layers, config only" "$QWENCHAT" info -m "$B" --config-only
expect_err_has "config.json: num_hidden_layers" "absurd layers named (config only)"
broken heads; cfg_edit num_key_value_heads 4
expect_exit 1 "heads not divisible" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: num_attention_heads 6 is not a multiple of num_key_value_heads 4" \
	"GQA mismatch named"
broken hd0; cfg_edit head_dim 0
expect_exit 1 "head_dim 0" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: head_dim" "head_dim named"
broken vocab; cfg_edit vocab_size 1000000000
expect_exit 1 "absurd vocab" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: vocab_size" "vocab named"
broken wide; cfg_edit hidden_size 64
expect_exit 1 "config/weights disagree" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors: tensor model.embed_tokens.weight has shape [300,48], config.json needs [300,64]" \
	"embedding shape named"
broken cjson; printf '{"vocab_size": 300,' >"$B/config.json"
expect_exit 1 "invalid config JSON" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: invalid JSON" "invalid config named"
broken moe; cfg_edit architectures '["Qwen3MoeForCausalLM"]'
expect_exit 1 "Qwen3-MoE refused" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: architectures: Qwen3MoeForCausalLM is not supported" "MoE named"
broken llama; cfg_edit architectures '["LlamaForCausalLM"]'; cfg_edit model_type '"llama"'
expect_exit 1 "Llama refused" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: architectures: LlamaForCausalLM" "Llama named"
broken mtype; cfg_edit model_type '"qwen3_moe"'
expect_exit 1 "model_type qwen3_moe refused" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: model_type: qwen3_moe" "model_type named"
# transformers 5 writes RoPE's settings as rope_parameters (the base inside it)
cfg_del() { $PY -c 'import json,sys
p = sys.argv[1]; c = json.load(open(p)); c.pop(sys.argv[2])
json.dump(c, open(p, "w"))' "$B/config.json" "$1"; }
broken v5; cfg_del rope_theta; cfg_del rope_scaling
cfg_edit rope_parameters '{"rope_theta": 1000000, "rope_type": "default"}'
expect_exit 0 "a transformers 5 config (rope_parameters)" "$QWENCHAT" info -m "$B"
grep -q "theta 1000000, no scaling" "$TMP/out" && pass "rope_parameters' rope_theta read" ||
	fail "rope_parameters: $(grep rope "$TMP/out")"
broken nohd; cfg_del head_dim
expect_exit 1 "head_dim absent (128 as in transformers), weights of 8" "$QWENCHAT" info -m "$B"
expect_err_has "config.json needs [768,48] (6 query and 2 key/value heads of head_dim 128)" \
	"the shape's heads and head_dim said"
broken rope; cfg_edit rope_scaling '{"rope_type": "dynamic", "factor": 2}'
expect_exit 1 "dynamic rope scaling refused" "$QWENCHAT" info -m "$B"
expect_err_has "config.json: rope_scaling.rope_type: dynamic" "rope type named"
broken dtcfg; cfg_edit torch_dtype '"float32"'
expect_exit 0 "torch_dtype disagrees with the tensors: loaded, as transformers does" \
	"$QWENCHAT" info -m "$B"
grep -q "weights BF16," "$TMP/out" && pass "the type is the tensors', not torch_dtype's" ||
	fail "torch_dtype float32 over BF16 tensors: $(head -n 2 "$TMP/out")"
broken noconfig; rm "$B/config.json"
expect_exit 1 "no config.json" "$QWENCHAT" info -m "$B"
expect_err_has "config.json" "missing config named"
broken noweights; rm "$B/model.safetensors"
expect_exit 1 "no safetensors" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors.index.json" "missing weights named"

# sharded models: the index and its shards
shards() { rm -rf "$TMP/$1"; cp -r "$TMP/sharded" "$TMP/$1"; B="$TMP/$1"; IDX="$B/model.safetensors.index.json"; }
shards noshard; rm "$B/model-00002-of-00003.safetensors"
expect_exit 1 "missing shard" "$QWENCHAT" info -m "$B"
expect_err_has "model-00002-of-00003.safetensors: No such file" "missing shard named"
shards wrongshard
sed -i 's/"model.embed_tokens.weight": "model-00001-of-00003/"model.embed_tokens.weight": "model-00002-of-00003/' "$IDX"
expect_exit 1 "index points to the wrong shard" "$QWENCHAT" info -m "$B"
expect_err_has "model-00002-of-00003.safetensors: tensor model.embed_tokens.weight is missing" \
	"wrong shard named"
shards idxmissing; sed -i '/"model.norm.weight"/d' "$IDX"
expect_exit 1 "index lacks a tensor" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors.index.json: tensor model.norm.weight is missing" \
	"index missing tensor named"
shards traversal; sed -i 's#"model-00003-of-00003.safetensors"#"../x.safetensors"#' "$IDX"
expect_exit 1 "index file name outside the model" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors.index.json: weight_map names an invalid file" "traversal named"
shards idxjson; printf '{"weight_map": ' >"$IDX"
expect_exit 1 "invalid index JSON" "$QWENCHAT" info -m "$B"
expect_err_has "model.safetensors.index.json: invalid JSON" "invalid index named"

# usage
expect_exit 2 "unknown option" "$QWENCHAT" info -m "$TMP/tied" --frobnicate
expect_exit 2 "an unknown letter inside a cluster" "$QWENCHAT" info -Zm "$TMP/tied"
expect_err_has "unknown option '-Z'" "... named by its letter, not the argument before it"
expect_exit 2 "--ctx with a leading blank" "$QWENCHAT" info -m "$TMP/tied" --ctx ' 64'
expect_err_has "--ctx: ' 64' is not a whole number" "... refused as a trailing one is"
expect_exit 2 "bad --ctx" "$QWENCHAT" info -m "$TMP/tied" --ctx 0
expect_exit 2 "--json=1" "$QWENCHAT" info -m "$TMP/tied" --json=1
expect_err_has "--json takes no value ('--json=1')" "a flag given a value: says so"
expect_exit 1 "--ctx past the model's positions" "$QWENCHAT" info -m "$TMP/tied" --ctx 16777216
expect_err_has "a context of 16777216 tokens is more than the model's" "... refused as every engine refuses it"
expect_exit 1 "no such directory" "$QWENCHAT" info -m "$TMP/nonexistent"
expect_exit 0 "--help" "$QWENCHAT" info --help
grep -A1 -- '--ctx N' "$TMP/out" | tr -s ' \n' '  ' | grep -q "min(the model's context, 32768)" &&
	! grep -q 'available memory' "$TMP/out" && pass "--help: --ctx gives info's own default" ||
	fail "--help: --ctx: $(grep -A2 -- '--ctx N' "$TMP/out")"
grep -q -- "--config-only" "$TMP/out" && pass "help lists --config-only" || fail "help"

# on a terminal, lines wider than it are broken at spaces, the rest under the values
if command -v tmux >/dev/null; then
	SOCK=qwenchat-info-$$
	"$QWENCHAT" info -m "$TMP/tied" >"$TMP/tty-info" 2>&1
	tmux -L "$SOCK" -f /dev/null new-session -d -s i -x 72 -y 60 \
		"'$QWENCHAT' info -m '$TMP/tied'; echo END; sleep 30" 2>/dev/null
	i=0
	until tmux -L "$SOCK" -f /dev/null capture-pane -p -t i 2>/dev/null | grep -q '^END' ||
		[ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
	tmux -L "$SOCK" -f /dev/null capture-pane -p -J -t i >"$TMP/tty-screen"
	tmux -L "$SOCK" -f /dev/null kill-server 2>/dev/null
	wide=$(awk 'length > 72' "$TMP/tty-screen")
	if grep -q '^END' "$TMP/tty-screen" && [ -z "$wide" ] &&
	   grep -q '^KV cache      [0-9]' "$TMP/tty-screen" &&
	   grep -q '^              ' "$TMP/tty-screen"; then
		pass "info on a 72-column terminal: broken at spaces, within it, under the values"
	else
		fail "info on a 72-column terminal: $(cat "$TMP/tty-screen")"
	fi
	[ "$(awk 'length > 72' "$TMP/tty-info" | wc -l)" -gt 0 ] &&
		pass "... and into a file, lines as they are" || fail "info into a file was wrapped"
fi

finish
