/* model_quant.c — `--quant TYPE`: a model's float matrices quantized in memory as
 * they load, each to the type llama-quantize gives it in that mix (eng_quant_type),
 * so a safetensors model runs as the GGUF `qwenchat quantize` would write. The
 * quantized tensors live in one anonymous mapping; each source tensor's pages are
 * dropped from this process once it is done, so the resident memory ends near the
 * quantized size, not the file's. Rows are split over threads. */
#include "engine/ftype.h"
#include "engine/model.h"
#include "engine/quant.h"
#include "src/base/err.h"
#include "src/base/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Gives back the pages of the source tensor this process mapped (whole pages inside
 * it only: the neighbours may still be needed). */
static void drop_pages(const struct eng_tensor *t)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)t->data + pg - 1) & ~(pg - 1);
	uintptr_t b = ((uintptr_t)t->data + t->nbytes) & ~(pg - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

struct plan {
	struct eng_tensor *t;
	enum eng_tensor_role role;
	int layer;
	enum eng_dtype type;
	size_t offset;
};

/* The tensor's name in llama.cpp's GGUF files, for messages. */
static const char *plan_name(const struct plan *p, char *buf, size_t size)
{
	if (p->role >= ENG_ROLE_ATTN_Q)
		snprintf(buf, size, "blk.%d.%s.weight", p->layer, eng_role_gguf_name(p->role));
	else
		snprintf(buf, size, "%s.weight", eng_role_gguf_name(p->role));
	return buf;
}

static int quantize_tensor(const struct plan *p, enum eng_ftype f, uint8_t *dst, int threads)
{
	struct eng_tensor *t = p->t;
	char name[64];
	if (quant_convert_rows(t, t->shape[1], 0, t->shape[0], p->type, dst, threads))
		return err_prefix("--quant %s: tensor %s", eng_ftype_name(f),
				  plan_name(p, name, sizeof name));
	enum eng_dtype type = p->type;
	drop_pages(t);
	t->data = dst;
	t->dtype = type;
	t->nbytes = eng_row_bytes(type, t->shape[1]) * (size_t)t->shape[0];
	return 0;
}

/* Every matrix with its role (the tied lm_head is the embedding: done once). */
static int make_plan(struct eng_model *m, enum eng_ftype f, struct plan *p, int *n)
{
	struct eng_config *c = &m->cfg;
	*n = 0;
	p[(*n)++] = (struct plan){.t = &m->w.embed, .role = ENG_ROLE_EMBED};
	if (!c->tie_word_embeddings)
		p[(*n)++] = (struct plan){.t = &m->w.lm_head, .role = ENG_ROLE_OUTPUT};
	for (int l = 0; l < c->num_layers; l++) {
		struct eng_layer *L = &m->w.layers[l];
		struct eng_tensor *ts[] = {&L->wq,     &L->wk,   &L->wv,    &L->wo,
					   &L->w_gate, &L->w_up, &L->w_down};
		enum eng_tensor_role rs[] = {ENG_ROLE_ATTN_Q,  ENG_ROLE_ATTN_K,   ENG_ROLE_ATTN_V,
					     ENG_ROLE_ATTN_O,  ENG_ROLE_FFN_GATE, ENG_ROLE_FFN_UP,
					     ENG_ROLE_FFN_DOWN};
		for (int i = 0; i < 7; i++)
			p[(*n)++] = (struct plan){.t = ts[i], .role = rs[i], .layer = l};
	}
	size_t off = 0;
	for (int i = 0; i < *n; i++) {
		struct eng_tensor *t = p[i].t;
		if (eng_dtype_quantized(t->dtype)) {
			/* named by what most weights are (the embedding is often another type) */
			enum eng_dtype most = eng_model_main_type(m);
			return err_set("--quant %s: the model's weights are already %s; give it a "
				       "model with float weights",
				       eng_ftype_name(f),
				       eng_dtype_name(eng_dtype_quantized(most) ? most : t->dtype));
		}
		p[i].type = eng_quant_type(c, f, p[i].role, p[i].layer, t->shape[1]);
		if (!eng_row_bytes(p[i].type, t->shape[1])) { /* the writer's words */
			char name[64];
			return err_set("--quant %s: tensor %s: rows of %lld weights are not whole "
				       "%s blocks, and the mix has no other type for it",
				       eng_ftype_name(f), plan_name(&p[i], name, sizeof name),
				       (long long)t->shape[1], eng_dtype_name(p[i].type));
		}
		p[i].offset = off;
		off += (eng_row_bytes(p[i].type, t->shape[1]) * (size_t)t->shape[0] + 63) &
		       ~(size_t)63;
	}
	m->quant_size = off;
	return 0;
}

int eng_model_quantize(struct eng_model *m, enum eng_ftype f, int threads,
		       void (*progress)(size_t done, size_t total))
{
	int cap = 2 + 7 * m->cfg.num_layers, n;
	struct plan *p = calloc((size_t)cap, sizeof *p);
	if (!p)
		return err_set("out of memory");
	if (make_plan(m, f, p, &n)) {
		free(p);
		return -1;
	}
	void *buf = mmap(NULL, m->quant_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (buf == MAP_FAILED) {
		free(p);
		char size[16];
		return err_set("--quant %s: cannot allocate %s", eng_ftype_name(f),
			       units_ibytes((double)m->quant_size, size, sizeof size));
	}
	m->quant_buf = buf;
	if (threads < 1)
		threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int rc = 0;
	size_t done = 0, total = 0;
	for (int i = 0; i < n; i++)
		total += p[i].t->nbytes;
	for (int i = 0; i < n && rc == 0; i++) {
		size_t nb = p[i].t->nbytes;
		rc = quantize_tensor(&p[i], f, (uint8_t *)buf + p[i].offset,
				     threads < 1 ? 1 : threads);
		if (progress)
			progress(done += nb, total);
	}
	free(p);
	if (rc)
		return -1;
	if (m->cfg.tie_word_embeddings)
		m->w.lm_head = m->w.embed;
	m->cfg.dtype = eng_model_main_type(m);
	m->weight_bytes = 0;
	struct eng_type_count tc[ENG_DTYPE_COUNT];
	eng_model_type_counts(m, tc);
	for (int t = 0; t < ENG_DTYPE_COUNT; t++)
		m->weight_bytes += tc[t].bytes;
	mprotect(buf, m->quant_size, PROT_READ);
	return 0;
}

bool eng_model_quantized_in_memory(const struct eng_model *m)
{
	return m->quant_buf != NULL;
}
