#!/bin/sh
# train-bpe-hf.sh — the tokenizer.json that `qwenchat train-bpe` writes loads in
# Hugging Face `tokenizers` (npm @anush008/tokenizers, a Node binding of the Rust
# crate) and encodes held-out text, special tokens included, to the same ids as
# `qwenchat tokenize -m DIR`; and HF's decode of those ids gives the text back.
# SKIP (77) without npm or the registry, except under CI=true.
. "$TOP_SRCDIR/tests/lib.sh"

skip() {
	echo "SKIP: $*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}

cache=${QWENCHAT_TEST_CACHE:-$TOP_SRCDIR/tests/cache}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=$TOP_BUILDDIR/tests/cache
mkdir -p "$cache" || exit 1
command -v node >/dev/null 2>&1 || skip "node not installed (Debian: nodejs)"
if [ ! -f "$cache/node_modules/@anush008/tokenizers/package.json" ]; then
	command -v npm >/dev/null 2>&1 || skip "npm not installed (Debian: npm)"
	npm install --prefix "$cache" --no-audit --no-fund --silent @anush008/tokenizers \
		>"$TMP/npm.log" 2>&1 || skip "npm install @anush008/tokenizers failed: $(tail -n 1 "$TMP/npm.log")"
fi

# Training text and a held-out text drawn differently from the same kinds of pieces.
python3 - "$TMP" <<'EOF'
import random, sys
d = sys.argv[1]
pieces = ("the of and to in is was he that it for his on with as at by had they be "
          "this from are have not or were she but we one which you her").split() + [
    "café", "cafe\u0301", "naïve", "日本語", "中文", "👩\u200d💻", "👍🏽", "2024", "3.14",
    "don't", "DON'T", "We'LL", "\t", "\n", "\r\n", "  ", "a\u00a0b", "Ωμέγα", "привет",
    "مرحبا", "नमस्ते", "ภาษาไทย", "end.", "(x)", "x=1;", "    return 0;"]
def text(r, n, specials):
    out = []
    for i in range(n):
        p = r.choice(pieces)
        if i % 4 == 0:
            p = "".join(r.choice("etaoinshrdlucmfwyp") for _ in range(r.randint(1, 8)))
        out.append(p)
        if specials and i % 50 == 49:
            out.append(r.choice(specials))
    return " ".join(out)
sp = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
open(f"{d}/train.txt", "w").write(text(random.Random(1), 40000, sp))
open(f"{d}/heldout.txt", "w").write(text(random.Random(2), 4000, sp + ["<|im_start|><|im_end|>"])
                                    + " unseen wordsmithery ÆØÅ 🦀🦀🦀 <|endoftext|>")
EOF

if ! "$QWENCHAT" train-bpe -q --vocab-size 2000 --special '<|endoftext|>' --special '<|im_start|>' \
	--special '<|im_end|>' --out "$TMP/tok" "$TMP/train.txt" 2>"$TMP/err"; then
	fail "train-bpe: $(head -c 300 "$TMP/err")"
	finish
fi

cat >"$TMP/hf.js" <<'EOF'
const { Tokenizer } = require("@anush008/tokenizers");
const fs = require("fs");
const [dir, file] = process.argv.slice(2);
(async () => {
	const tok = Tokenizer.fromFile(dir + "/tokenizer.json");
	const text = fs.readFileSync(file, "utf8");
	const enc = await tok.encode(text, null, { addSpecialTokens: false });
	const ids = enc.getIds();
	fs.writeFileSync(dir + "/hf.ids", ids.join(" ") + "\n");
	const back = await tok.decode(ids, false);
	fs.writeFileSync(dir + "/hf.decoded", back);
})().catch((e) => { console.error(String(e)); process.exit(1); });
EOF
if NODE_PATH="$cache/node_modules" node "$TMP/hf.js" "$TMP/tok" "$TMP/heldout.txt" 2>"$TMP/err"; then
	pass "HF tokenizers loads the written tokenizer.json"
else
	fail "HF tokenizers: $(head -c 300 "$TMP/err")"
	finish
fi
if cmp -s "$TMP/heldout.txt" "$TMP/tok/hf.decoded"; then
	pass "HF decode(encode(held-out text)) is the text"
else
	fail "HF decode of the held-out ids differs from the text"
fi

if "$QWENCHAT" tokenize -m "$TMP/tok" <"$TMP/heldout.txt" >"$TMP/ours.ids" 2>"$TMP/err"; then
	tr -s ' \n' '\n\n' <"$TMP/tok/hf.ids" >"$TMP/hf.lines"
	tr -s ' \n' '\n\n' <"$TMP/ours.ids" >"$TMP/ours.lines"
	if cmp -s "$TMP/hf.lines" "$TMP/ours.lines"; then
		pass "qwenchat tokenize: $(wc -l <"$TMP/ours.lines") ids equal HF's on the held-out text"
	else
		fail "qwenchat tokenize ids differ from HF's: $(diff "$TMP/hf.lines" "$TMP/ours.lines" | head -n 4)"
	fi
else
	fail "qwenchat tokenize -m on the trained tokenizer: $(head -c 300 "$TMP/err")"
fi
# the specials really were kept whole: each occurrence is its own id
n_special=$(grep -o '<|endoftext|>' "$TMP/heldout.txt" | wc -l)
id=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print([a['id'] for a in t['added_tokens'] if a['content']=='<|endoftext|>'][0])" "$TMP/tok/tokenizer.json")
got=$(tr ' ' '\n' <"$TMP/tok/hf.ids" | grep -cx "$id")
[ "$got" -eq "$n_special" ] && pass "<|endoftext|> is one id ($id), $got times" ||
	fail "<|endoftext|> id $id appears $got times, the text has $n_special"
finish
