/* cuda_load.c — finding and loading the CUDA backend module (qwenchat-cuda.so) at
 * run time, so that the program itself links no CUDA library: a machine without a GPU
 * never loads cudart or cuBLAS (linked in, they cost every command a noticeable start-up
 * time and memory), and a distribution can ship the module as its own package. */
#include "engine/backend.h"
#include "src/base/err.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/rope.h"

#ifndef PKGLIBDIR
#define PKGLIBDIR "/usr/local/lib/qwenchat"
#endif
#define MODULE_NAME "qwenchat-cuda.so"

/* Whether an NVIDIA driver is loaded: its /proc entry or its control device. Cheap,
 * and loads no library. */
static bool driver_present(void)
{
	return access("/proc/driver/nvidia/version", F_OK) == 0 ||
	       access("/dev/nvidiactl", F_OK) == 0;
}

/* The module's path into out: the one asked for, else beside the program (a build
 * tree, or a relocated install), else the install's library folder. */
static bool find_module(const char *asked, char *out, size_t size)
{
	if (asked && *asked) {
		snprintf(out, size, "%s", asked);
		return access(out, R_OK) == 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, size, "%s/%s", exe, MODULE_NAME);
			if (access(out, R_OK) == 0)
				return true;
		}
	}
	snprintf(out, size, "%s/%s", PKGLIBDIR, MODULE_NAME);
	return access(out, R_OK) == 0;
}

static const struct eng_host host = {
	.abi = ENG_CUDA_ABI,
	.verr = err_vset,
	.model_config = eng_model_config,
	.model_weights = eng_model_weights,
	.dtype_name = eng_dtype_name,
	.rope_table = rope_table,
};

/* dlopen of the module and the address of `entry` in it, or NULL with err_set. */
static void *module_entry(const char *module, bool *no_driver, const char *entry)
{
	*no_driver = false;
	if (!module && !driver_present()) {
		*no_driver = true;
		err_set("no NVIDIA driver (neither /proc/driver/nvidia/version nor "
			"/dev/nvidiactl)");
		return NULL;
	}
	char path[PATH_MAX + 64];
	if (!find_module(module, path, sizeof path)) {
		if (module)
			err_set("%s: cannot read the CUDA module", module);
		else
			err_set("the CUDA module %s is neither beside the program nor in %s%s",
				MODULE_NAME, PKGLIBDIR,
#ifdef HAVE_CUDA
				""
#else
				" (this qwenchat was built without it)"
#endif
			);
		return NULL;
	}
	/* Never closed: the CUDA runtime does not expect to be unloaded. */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err_set("%s", dlerror());
		return NULL;
	}
	void *sym = dlsym(h, entry);
	if (!sym) {
		err_set("%s: no %s in it (not a qwenchat CUDA module)", path, entry);
		return NULL;
	}
	err_set("%s: the module refused this qwenchat (a different version?)", path);
	return sym;
}

const struct eng_backend_ops *eng_cuda_load(const char *module, bool *no_driver)
{
	eng_cuda_entry_fn entry;
	void *sym = module_entry(module, no_driver, ENG_CUDA_ENTRY);
	if (!sym)
		return NULL;
	memcpy(&entry, &sym, sizeof entry); /* ISO C has no object-to-function cast */
	return entry(&host);
}

const struct train_ops *eng_cuda_trainer(const char *module, bool *no_driver)
{
	eng_cuda_train_entry_fn entry;
	void *sym = module_entry(module, no_driver, ENG_CUDA_TRAIN_ENTRY);
	if (!sym)
		return NULL;
	memcpy(&entry, &sym, sizeof entry);
	return entry(&host);
}
