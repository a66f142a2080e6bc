#!/bin/sh
# quantize-out.sh — what `qwenchat quantize --out` may replace, and what it leaves
# when it cannot finish: a FIFO or a device at the target is refused and left alone
# (the system's /dev/stdout and /dev/null are written through);
# the model's own files (by name, by a link, by a hard link) are refused and left
# whole; a full disk names the file; SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGALRM
# mid-write remove the
# temporary file and end with 128 + the signal (one ignored at the start, as under nohup,
# stays ignored).
. "$TOP_SRCDIR/tests/lib.sh"
MK="$TOP_BUILDDIR/tests/mkmodel"
M=$TMP/m
"$MK" --out "$M" --vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 >/dev/null || { fail "mkmodel"; finish; }
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$M/tokenizer.json"
sums() { (cd "$M" && sha256sum -- * | sha256sum); }
before=$(sums)

# leftovers — temporary files of quantize in $TMP and $M
leftovers() { find "$TMP" -name '*.tmp.*' | head -n 3; }

# a model without a tokenizer (trained on token ids alone): said, nothing written
"$MK" --out "$TMP/notok" --vocab-size 300 --hidden-size 64 --intermediate-size 96 --layers 2 \
	--heads 4 --kv-heads 2 --head-dim 16 >/dev/null
expect_exit 1 "a model without a tokenizer" "$QWENCHAT" quantize -m "$TMP/notok" --type q8_0 \
	--out "$TMP/notok.gguf"
expect_err_has "notok/tokenizer.json: missing: a GGUF file carries its model's tokenizer" \
	"... says why"
[ ! -e "$TMP/notok.gguf" ] && [ -z "$(leftovers)" ] && pass "... and writes nothing" ||
	fail "a model without a tokenizer left: $(ls "$TMP"/notok.gguf*; leftovers)"
mkfifo "$TMP/fifo.gguf"
expect_exit 1 "--out a FIFO" timeout 60 "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/fifo.gguf"
expect_err_has "fifo.gguf: not a regular file" "--out a FIFO: refused by name"
[ -p "$TMP/fifo.gguf" ] && pass "the FIFO is left alone" || fail "the FIFO was replaced"
if [ "$(id -u)" = 0 ] && mknod "$TMP/null" c 1 3 2>/dev/null; then
	# what --out /dev/null did as root: the device replaced by a regular file
	expect_exit 1 "--out a character device" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/null"
	expect_err_has "null: not a regular file" "--out a device: refused by name"
	[ -c "$TMP/null" ] && pass "the device is left alone" || fail "the device was replaced"
else
	echo "skip: no device node can be made here (not root)"
fi
expect_exit 1 "--out a directory" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$M"
# a file it replaces does not lend its mode: the new one is private, whatever the umask
echo old >"$TMP/shared.gguf" && chmod 666 "$TMP/shared.gguf"
(umask 000 && "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/shared.gguf" 2>/dev/null)
[ "$(stat -c %a "$TMP/shared.gguf")" = 600 ] && pass "a 0666 file replaced: the new one is 0600" ||
	fail "a 0666 file replaced: mode $(stat -c %a "$TMP/shared.gguf")"

# the system's names are written through, never replaced (as root, /dev/stdout was
# replaced by a regular file)
expect_exit 0 "--out /dev/stdout" sh -c "'$QWENCHAT' quantize -m '$M' --type q8_0 --out /dev/stdout >'$TMP/piped.gguf'"
"$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/plain.gguf" 2>/dev/null
cmp -s "$TMP/piped.gguf" "$TMP/plain.gguf" && pass "--out /dev/stdout: the same bytes as a file" ||
	fail "--out /dev/stdout: $(wc -c <"$TMP/piped.gguf") bytes differ from the file's"
restore_dev
# general.name is the directory's name, "m" from "$M/" as from "$M" (it was "m/")
"$QWENCHAT" quantize -m "$M/" --type q8_0 --out "$TMP/slash.gguf" 2>/dev/null
cmp -s "$TMP/slash.gguf" "$TMP/plain.gguf" && pass "-m DIR/: the same file as -m DIR" ||
	fail "-m DIR/: not the file -m DIR writes"
"$QWENCHAT" quantize -m "$M" --type q8_0 --out /dev/stdout 2>/dev/null | cmp -s - "$TMP/plain.gguf" &&
	pass "--out /dev/stdout into a pipe" || fail "--out /dev/stdout into a pipe"
(cd "$TMP" && "$QWENCHAT" quantize -m "$M" --type q8_0 --out - 2>/dev/null) |
	cmp -s - "$TMP/plain.gguf" && [ ! -e "$TMP/-" ] && pass "--out -: standard output" ||
	fail "--out -"
expect_exit 0 "--out /dev/null" "$QWENCHAT" quantize -m "$M" --type q8_0 --out /dev/null
restore_dev
expect_exit 1 "--out a new name in /dev" "$QWENCHAT" quantize -m "$M" --type q8_0 --out /dev/qwenchat-test.gguf
[ ! -e /dev/qwenchat-test.gguf ] && pass "nothing made in /dev" || { rm -f /dev/qwenchat-test.gguf; fail "a file was made in /dev"; }

# the model's own files
for f in model.safetensors config.json tokenizer.json; do
	expect_exit 1 "--out the model's $f" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$M/$f"
	expect_err_has "is the model's $f" "--out $f: says it is the model's"
done
ln -s "$M/model.safetensors" "$TMP/link.gguf"
expect_exit 1 "--out a link to the model's weights" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/link.gguf"
ln "$M/model.safetensors" "$TMP/hard.gguf"
expect_exit 1 "--out a hard link to the model's weights" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/hard.gguf"
expect_err_has "is the model's model.safetensors" "hard link: says it is the model's"
[ "$(sums)" = "$before" ] && pass "the model's files are untouched" || fail "the model changed"
expect_exit 0 "--out a new file in the model's directory" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$M/q8.gguf"
expect_exit 0 "--out the same GGUF again (replaced)" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$M/q8.gguf"
rm -f "$M/q8.gguf"

# a full disk (a file size limit gives the same failed write)
( trap '' XFSZ; ulimit -f 64; exec "$QWENCHAT" quantize -m "$M" --type bf16 --out "$TMP/full.gguf" ) \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && grep -q "^qwenchat: $TMP/full.gguf: write failed: " "$TMP/err" &&
	pass "a failed write names the file: $(cat "$TMP/err")" || fail "full disk: exit $rc, $(cat "$TMP/err")"
[ ! -e "$TMP/full.gguf" ] && [ -z "$(leftovers)" ] && pass "a failed write leaves nothing" ||
	fail "left: $(leftovers)"

# signals mid-write: a model whose q4_k_m takes seconds (the K-quants search scales)
B=$TMP/big
"$MK" --out "$B" --vocab-size 300 --hidden-size 1024 --intermediate-size 3072 --layers 8 \
	--heads 8 --kv-heads 4 --head-dim 128 >/dev/null || { fail "mkmodel big"; finish; }
cp "$TOP_SRCDIR/tests/golden/template-tiny-tokenizer.json" "$B/tokenizer.json"
# sig_default CMD... — CMD with SIGINT and SIGHUP as a terminal sends them: a background
# job of a script starts with SIGINT ignored, and quantize keeps an ignored signal ignored
# (a shell cannot reset one, so python does before the exec)
sig_default() {
	exec python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}
for sig in INT TERM HUP USR1 ALRM; do
	case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; USR1) want=138 ;;
	ALRM) want=142 ;; esac
	sig_default "$QWENCHAT" quantize -m "$B" --type q4_k_m --out "$TMP/sig.gguf" 2>"$TMP/err" &
	pid=$!
	i=0
	while [ -z "$(leftovers)" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
	sleep 0.2
	kill -$sig $pid
	wait $pid
	rc=$?
	[ $rc -eq $want ] && pass "SIG$sig mid-write: exit $want" ||
		fail "SIG$sig: exit $rc, stderr $(cat "$TMP/err")"
	grep -q "sig.gguf: not written" "$TMP/err" && pass "SIG$sig: says the file was not written" ||
		fail "SIG$sig: $(cat "$TMP/err")"
	[ ! -e "$TMP/sig.gguf" ] && [ -z "$(leftovers)" ] &&
		pass "SIG$sig: no file and no temporary left" || fail "SIG$sig left: $(leftovers)"
done
# a signal ignored when quantize starts (nohup's SIGHUP) stays ignored: the file is written
sh -c "trap '' HUP; exec '$QWENCHAT' quantize -m '$B' --type q4_k_m --out '$TMP/nohup.gguf'" 2>"$TMP/err" &
pid=$!
i=0
while [ -z "$(leftovers)" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
kill -HUP $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && [ -s "$TMP/nohup.gguf" ] && [ -z "$(leftovers)" ] &&
	pass "SIGHUP under nohup: ignored, the file written" ||
	fail "SIGHUP under nohup: exit $rc, $(cat "$TMP/err")"
rm -f "$TMP/nohup.gguf"
# SIGKILL leaves its temporary file: the next quantize to that name removes it, says so
"$QWENCHAT" quantize -m "$B" --type q4_k_m --out "$TMP/sig.gguf" 2>"$TMP/err" &
pid=$!
i=0
while [ -z "$(leftovers)" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
kill -KILL $pid
wait $pid
left=$(leftovers)
[ -n "$left" ] || fail "SIGKILL left no temporary file (the check below means nothing)"
expect_exit 0 "quantize after a killed one" "$QWENCHAT" quantize -m "$M" --type q8_0 --out "$TMP/sig.gguf"
[ -z "$(leftovers)" ] && grep -q "removed .*sig.gguf.tmp.$pid.* left by a quantize that was killed" "$TMP/err" &&
	pass "the killed run's temporary file is removed, and said so" ||
	fail "after SIGKILL: left $(leftovers), stderr $(cat "$TMP/err")"

# from a GGUF of float weights (llama-quantize's usual input): the same tensors as
# from the directory, so the same logits bit for bit; a quantized GGUF, or --out the
# source file itself, is refused
"$QWENCHAT" quantize -m "$M" --type bf16 --out "$TMP/src-bf16.gguf" 2>/dev/null
expect_exit 0 "quantize a bf16 GGUF" "$QWENCHAT" quantize -m "$TMP/src-bf16.gguf" --type q4_k_m \
	--out "$TMP/from-gguf.gguf"
"$QWENCHAT" quantize -m "$M" --type q4_k_m --out "$TMP/from-dir.gguf" 2>/dev/null
for f in from-gguf from-dir; do
	echo 1 2 3 4 5 | "$QWENCHAT" logits -m "$TMP/$f.gguf" --threads 1 --out "$TMP/$f.bin" 2>/dev/null
done
[ -s "$TMP/from-gguf.bin" ] && cmp -s "$TMP/from-gguf.bin" "$TMP/from-dir.bin" &&
	pass "... the same logits as the directory's quantized the same way" ||
	fail "a GGUF's quantized copy computes other logits than the directory's"
expect_exit 1 "quantize a quantized GGUF" "$QWENCHAT" quantize -m "$TMP/from-dir.gguf" --type q8_0 \
	--out "$TMP/re.gguf"
expect_err_has "from-dir.gguf: holds Q" "... refused, naming the file and the type"
cp "$TMP/src-bf16.gguf" "$TMP/keep.gguf"
expect_exit 1 "--out the source GGUF" "$QWENCHAT" quantize -m "$TMP/src-bf16.gguf" --type q8_0 \
	--out "$TMP/src-bf16.gguf"
cmp -s "$TMP/src-bf16.gguf" "$TMP/keep.gguf" && pass "... refused, the source left whole" ||
	fail "--out the source GGUF changed it"
# ... whatever its name (an ollama blob is sha256-HEX, found by its magic)
cp "$TMP/src-bf16.gguf" "$TMP/model.bin"
expect_exit 1 "--out the source GGUF named model.bin" "$QWENCHAT" quantize -m "$TMP/model.bin" \
	--type q8_0 --out "$TMP/model.bin"
cmp -s "$TMP/model.bin" "$TMP/keep.gguf" && pass "... refused, the source left whole" ||
	fail "--out the source model.bin changed it"

# generation_config.json's sampling defaults travel as general.sampling.* (the
# converter's keys), so the file samples as the directory did
G=$TMP/gen
cp -r "$M" "$G"
printf '{"temperature": 0.42, "top_k": 7, "top_p": 0.77, "min_p": 0.03, "repetition_penalty": 1.3}\n' \
	>"$G/generation_config.json"
"$QWENCHAT" quantize -m "$G" --type q8_0 --out "$TMP/gen.gguf" 2>/dev/null
printf '/sampling\n' | XDG_STATE_HOME="$TMP/state" "$QWENCHAT" chat -m "$TMP/gen.gguf" --threads 1 \
	>"$TMP/out" 2>&1
grep -q 'temp 0.42, top-k 7, top-p 0.77, min-p 0.03, .*repeat 1.3,' "$TMP/out" &&
	pass "the quantized file keeps generation_config.json's sampling defaults" ||
	fail "sampling defaults of the quantized file: $(cat "$TMP/out")"
# every key gguf-py's Metadata.load takes from generation_config.json, with its type
# (int32, float32, string), and penalty_repeat before repetition_penalty
printf '{"temperature": 0.5, "top_k": 9, "sequence": "kpt", "xtc_probability": 0.1, %s
' \
	'"xtc_threshold": 0.2, "penalty_last_n": 64, "penalty_repeat": 1.15, "repetition_penalty": 1.3, "mirostat": 2, "mirostat_tau": 5.0, "mirostat_eta": 0.1}' \
	>"$G/generation_config.json"
"$QWENCHAT" quantize -m "$G" --type bf16 --out "$TMP/gen2.gguf" 2>/dev/null
# sampling_is FILE JSON — FILE's general.sampling.* keys are JSON's {key: [type, value]}
# (GGUF types: 5 int32, 6 float32, 8 string; floats to 5 decimals)
cat >"$TMP/kv.py" <<'PY'
import json, struct, sys
f = open(sys.argv[1], "rb")
def u(fmt): return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]
def string(): return f.read(u("Q")).decode()
SIZES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
def value(t):
    if t == 8: return string()
    if t == 9:
        it, n = u("I"), u("Q")
        return [value(it) for _ in range(n)]
    return u(SIZES[t])
assert f.read(4) == b"GGUF" and u("I") == 3
u("Q")
kv = {}
for _ in range(u("Q")):
    k = string(); t = u("I"); kv[k] = (t, value(t))
got = {k[17:]: [t, round(v, 5) if t == 6 else v] for k, (t, v) in kv.items()
       if k.startswith("general.sampling.")}
sys.exit(0 if got == json.loads(sys.argv[2]) else print(got) or 1)
PY
sampling_is() { python3 "$TMP/kv.py" "$@"; }
sampling_is "$TMP/gen2.gguf" '{"sequence": [8, "kpt"], "top_k": [5, 9], "xtc_probability": [6, 0.1],
	"xtc_threshold": [6, 0.2], "temp": [6, 0.5], "penalty_last_n": [5, 64],
	"penalty_repeat": [6, 1.15], "mirostat": [5, 2], "mirostat_tau": [6, 5.0],
	"mirostat_eta": [6, 0.1]}' && pass "general.sampling.*: the converter's keys and types" ||
	fail "general.sampling.* of the quantized file"
# ... but only values the file's reader takes: a penalty_repeat out of the sampler's
# range gives way to repetition_penalty, a top_k past 2^24 is held to it (as the
# directory's reader holds it), a temperature past a float's range is left out
printf '{"repetition_penalty": 1.3, "penalty_repeat": 0, "top_k": 5e7, "temperature": 1e39}\n' \
	>"$G/generation_config.json"
"$QWENCHAT" quantize -m "$G" --type bf16 --out "$TMP/gen3.gguf" 2>/dev/null &&
	sampling_is "$TMP/gen3.gguf" '{"top_k": [5, 16777216], "penalty_repeat": [6, 1.3]}' &&
	"$QWENCHAT" run -m "$TMP/gen3.gguf" -p x -n 1 --threads 1 >/dev/null 2>"$TMP/err" &&
	pass "... only values its reader takes: the file loads" ||
	fail "sampling values the reader refuses: $(cat "$TMP/err")"
# weights that are not finite, or that a type cannot hold, are refused as llama-quantize
# refuses them: one line naming the tensor and its row, no file
for poison in nan:0 1e7:3; do
	P=$TMP/poison
	rm -rf "$P" && "$MK" --out "$P" --vocab-size 300 --hidden-size 64 --intermediate-size 96 \
		--layers 2 --heads 4 --kv-heads 2 --head-dim 16 --dtype f32 >/dev/null &&
		cp "$M/tokenizer.json" "$P/" || fail "mkmodel poison"
	python3 - "$P/model.safetensors" "${poison%%:*}" "${poison#*:}" <<'PY'
import json, struct, sys
path, value, row = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
t = json.loads(b[8:8 + n])["model.layers.1.mlp.down_proj.weight"]
at = 8 + n + t["data_offsets"][0] + 4 * (row * t["shape"][1] + 5)
b[at:at + 4] = struct.pack("<f", value)
open(path, "wb").write(b)
PY
	expect_exit 1 "quantize weights with a ${poison%%:*}" "$QWENCHAT" quantize -m "$P" \
		--type q8_0 --out "$TMP/poison.gguf"
	case $poison in
	nan*) expect_err_has "tensor blk.1.ffn_down.weight: row 0 holds a weight that is NaN" \
		"... the tensor, the row and the NaN named" ;;
	*) expect_err_has "tensor blk.1.ffn_down.weight: row 3: weights up to 1e+07 overflow Q8_0's fp16 block scale" \
		"... the tensor, the row and the overflow named" ;;
	esac
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -e "$TMP/poison.gguf" ] && [ -z "$(leftovers)" ] &&
		pass "... in one line, and no file" || fail "... $(cat "$TMP/err"; ls "$TMP")"
done
# F16 holds at most 65504: the 1e7 does not fit it either
expect_exit 1 "quantize --type f16 of weights with a 1e7" "$QWENCHAT" quantize -m "$P" \
	--type f16 --out "$TMP/poison.gguf"
expect_err_has "tensor blk.1.ffn_down.weight: row 3: weights up to 1e+07 do not fit F16" \
	"... the tensor, the row and the type named"
[ ! -e "$TMP/poison.gguf" ] && pass "... and no file" || fail "... a file was left"
# --quant converts as quantize does, and names the tensor too
echo 1 2 >"$TMP/ids"
expect_exit 1 "--quant q8_0 of weights with a 1e7" sh -c \
	"'$QWENCHAT' logits -m '$P' --quant q8_0 --out '$TMP/x.bin' <'$TMP/ids'"
expect_err_has "--quant q8_0: tensor blk.1.ffn_down.weight: row 3: weights up to 1e+07" \
	"... the tensor and the row named"
finish
