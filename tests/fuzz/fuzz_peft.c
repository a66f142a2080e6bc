/* fuzz_peft.c — a PEFT adapter_config.json given to `train --lora-init` is untrusted:
 * the input is one (peft_parse_config). A file that is taken must give options a LoRA
 * run can have: a rank from 1 to 4096, an alpha above 0 and finite, and targets that
 * tstate_lora_targets reads back as a non-empty set; a refused one says why. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/train/peft.h"
#include "src/train/trainstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tstate_opts o;
	if (tstate_opts_default(&o))
		abort();
	err_clear();
	if (peft_parse_config((const char *)data, size, "adapter_config.json", &o) == 0) {
		if (o.lora < 1 || o.lora > 4096 || !(o.lora_alpha > 0) || !isfinite(o.lora_alpha) ||
		    !o.lora_targets || !tstate_lora_targets(&o))
			abort();
	} else if (!err_msg()[0]) {
		abort();
	}
	tstate_opts_free(&o);
	return 0;
}
