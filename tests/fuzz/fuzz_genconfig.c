/* fuzz_genconfig.c — generation_config.json is untrusted: parse any bytes as one; a
 * file that is accepted must give settings the sampler takes, and a refused one must
 * leave the settings and the eos list as they were. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/session/sampler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct samp_params p, before;
	int32_t eos[SAMP_MAX_EOS] = {0}, eos_before[SAMP_MAX_EOS];
	int n_eos = 0;
	samp_params_default(&p);
	before = p;
	memcpy(eos_before, eos, sizeof eos);
	if (samp_parse_generation_config((const char *)data, size, "fuzz.json", &p, eos, &n_eos)) {
		if (memcmp(&p, &before, sizeof p) || memcmp(eos, eos_before, sizeof eos) || n_eos)
			abort();
		return 0;
	}
	if (samp_params_check(&p) || n_eos < 0 || n_eos > SAMP_MAX_EOS)
		abort();
	struct samp *s = samp_new(&p, 16);
	if (!s)
		abort();
	float logits[16];
	for (int i = 0; i < 16; i++)
		logits[i] = (float)(i % 5) - 2;
	int32_t recent[2] = {3, 7};
	struct samp_history h = {recent, 2, recent, 2};
	int32_t id = samp_next(s, logits, 16, &h);
	if (id < 0 || id >= 16)
		abort();
	samp_free(s);
	return 0;
}
