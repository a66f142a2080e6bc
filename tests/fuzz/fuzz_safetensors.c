/* fuzz_safetensors.c — libFuzzer target for the untrusted model-file parsers:
 * the first byte picks the safetensors parser (even) or the config.json parser
 * (odd); the rest is the file. Seeds: tests/fuzz/corpus/safetensors/. */
#include "engine/engine.h"
#include "engine/rope.h"
#include "engine/safetensors.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *body = data + 1;
	size_t n = size - 1;
	if (data[0] & 1) {
		struct eng_config cfg;
		if (eng_config_parse((const char *)body, n, "config.json", &cfg) == 0) {
			struct eng_param_counts pc;
			eng_count_params(&cfg, &pc);
			(void)eng_kv_bytes_per_token(&cfg, 2);
			(void)eng_decode_weight_bytes(&cfg, eng_dtype_size(cfg.dtype));
			float inv_freq[ENG_MAX_HEAD_DIM / 2], scale;
			rope_inv_freq(&cfg, inv_freq, &scale);
		}
		return 0;
	}
	struct st_file *f = st_parse(body, n, "model.safetensors");
	if (!f)
		return 0;
	/* touch the first and last byte of every tensor: AddressSanitizer catches
	 * any offset the validation let through outside the buffer */
	volatile uint8_t sink = 0;
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		if (t->nbytes) {
			sink ^= ((const uint8_t *)t->data)[0];
			sink ^= ((const uint8_t *)t->data)[t->nbytes - 1];
		}
		if (st_find(f, t->name) != t)
			__builtin_trap();
	}
	(void)sink;
	st_free(f);
	return 0;
}
