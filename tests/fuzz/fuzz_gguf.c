/* fuzz_gguf.c — libFuzzer target for GGUF files: the parser (header, key/values,
 * tensor infos), the config and tensor binding of the loader, the metadata API and
 * the tokenizer built from a file's tokenizer.ggml.* keys. The input is the file.
 * Seeds: tests/fuzz/corpus/gguf/. */
#include "engine/engine.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/rope.h"
#include "src/hub/loader.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every typed read of every key, and the first and last element of arrays. */
static void read_all(const struct eng_gguf *g)
{
	for (int64_t i = 0; i < g->nkv; i++) {
		const char *k = g->kv[i].key, *s;
		size_t n;
		int64_t v;
		double d;
		enum eng_gguf_type et;
		uint64_t count;
		(void)eng_gguf_str(g, k, &s, &n);
		(void)eng_gguf_int(g, k, &v);
		(void)eng_gguf_float(g, k, &d);
		if (eng_gguf_array(g, k, &et, &count) == 0 && count > 0) {
			volatile char c = 0;
			if ((s = eng_gguf_array_str(g, k, count - 1, &n)) && n)
				c ^= s[n - 1];
			(void)c;
			(void)eng_gguf_array_int(g, k, 0, &v);
			(void)eng_gguf_array_int(g, k, count - 1, &v);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eng_gguf *g = gguf_parse(data, size, "fuzz.gguf");
	if (!g)
		return 0;
	/* touch the first and last byte of every tensor: AddressSanitizer catches any
	 * offset the validation let through outside the buffer */
	volatile uint8_t sink = 0;
	for (int64_t i = 0; i < g->ntensors; i++) {
		const struct gguf_tensor *t = &g->tensors[i];
		if (t->nbytes) {
			sink ^= ((const uint8_t *)t->data)[0];
			sink ^= ((const uint8_t *)t->data)[t->nbytes - 1];
		}
		if (gguf_tensor(g, t->name) != t)
			__builtin_trap();
	}
	(void)sink;
	read_all(g);
	struct eng_gguf *files[1] = {g};
	struct eng_model m = {.gg = files, .ngg = 1};
	if (gguf_model_bind(&m) == 0) {
		struct eng_param_counts pc;
		eng_count_params(&m.cfg, &pc);
		float inv_freq[ENG_MAX_HEAD_DIM / 2], scale;
		rope_inv_freq(&m.cfg, inv_freq, &scale);
		(void)eng_model_decode_bytes(&m);
	}
	free(m.w.layers);
	char *json = NULL;
	size_t json_len = 0;
	struct tok *t = loader_tokenizer_gguf(g, &json, &json_len);
	if (!t) /* a tokenizer without a tokenizer.json form (an added token not UTF-8) */
		t = loader_tokenizer_gguf(g, NULL, NULL);
	if (t && json) {
		/* the tokenizer.json a checkpoint gets is JSON whatever the tokens hold */
		json_error_t je;
		json_t *o = json_loadb(json, json_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
		if (!json_is_object(o)) {
			fprintf(stderr, "tokenizer.json of a loaded GGUF tokenizer: %s\n", je.text);
			abort();
		}
		json_decref(o);
	}
	free(json);
	if (t) {
		static const char text[] = "Hello <think>wörld</think> <|im_end|>\xff 123";
		size_t n, len;
		int32_t *ids = tok_encode(t, text, sizeof text - 1, &n);
		char *back = ids ? tok_decode(t, ids, n, false, &len) : NULL;
		free(back);
		free(ids);
		tok_free(t);
	}
	gguf_free(g);
	return 0;
}
