// tokenizer-bench.js — Hugging Face tokenizers (npm @anush008/tokenizers) on the same
// files as `qwenchat tokenize --bench`: load time, then single-sequence encode
// throughput (first pass and best of REPS), add_special_tokens=false.
// usage: node tokenizer-bench.js TOKENIZER_DIR REPS FILE...
'use strict';
const fs = require('fs');
const path = require('path');
const mod = process.env.TOKENIZERS_MODULE ||
	path.join(__dirname, '..', 'cache', 'node_modules', '@anush008', 'tokenizers');
const { Tokenizer } = require(mod);
async function main() {
	const [dir, reps, ...files] = process.argv.slice(2);
	let t0 = process.hrtime.bigint();
	const tok = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
	const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
	console.log(`hf load        ${loadMs.toFixed(1)} ms (Tokenizer.fromFile)`);
	for (const f of files) {
		const text = fs.readFileSync(f, 'utf8');
		const bytes = Buffer.byteLength(text);
		let first = 0, best = Infinity, n = 0;
		for (let r = 0; r < +reps; r++) {
			t0 = process.hrtime.bigint();
			const e = await tok.encode(text, null, { addSpecialTokens: false });
			n = e.getLength();
			const s = Number(process.hrtime.bigint() - t0) / 1e9;
			if (r === 0) first = s;
			best = Math.min(best, s);
		}
		console.log(`hf ${path.basename(f)}: ${bytes} bytes, ${n} tokens; 1st ${(bytes / first / 1e6).toFixed(2)} MB/s ` +
			`${(n / first).toFixed(0)} tok/s; best ${(bytes / best / 1e6).toFixed(2)} MB/s ${(n / best).toFixed(0)} tok/s`);
	}
}
main().catch(e => { console.error(e); process.exit(1); });
