/* host.cu — the module's side of the program interface (engine/backend.h,
 * struct eng_host): the entry point, and the few engine functions the backend calls,
 * forwarded to the program that loaded it. Everything else in the module is hidden. */
#include <stdarg.h>

#include "engine/cuda/kernels.cuh"
#include "engine/cuda/train.cuh"

extern "C" {
#include "engine/rope.h"
}

static const struct eng_host *host; /* set once, by the entry point */

extern "C" int err_set(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	host->verr(fmt, ap);
	va_end(ap);
	return -1;
}

extern "C" const struct eng_config *eng_model_config(const struct eng_model *m)
{
	return host->model_config(m);
}

extern "C" const struct eng_weights *eng_model_weights(const struct eng_model *m)
{
	return host->model_weights(m);
}

extern "C" const char *eng_dtype_name(enum eng_dtype t)
{
	return host->dtype_name(t);
}

extern "C" void rope_table(const struct eng_config *c, int ctx, float *cos_out, float *sin_out)
{
	host->rope_table(c, ctx, cos_out, sin_out);
}

extern "C" __attribute__((visibility("default"))) const struct eng_backend_ops *
qwenchat_cuda_backend(const struct eng_host *h)
{
	if (!h || h->abi != ENG_CUDA_ABI)
		return NULL; /* the host's message ("a different version?") stands */
	host = h;
	return cuda_backend_ops();
}

extern "C" __attribute__((visibility("default"))) const struct train_ops *
qwenchat_cuda_trainer(const struct eng_host *h)
{
	if (!h || h->abi != ENG_CUDA_ABI)
		return NULL;
	host = h;
	return cuda_train_ops();
}
