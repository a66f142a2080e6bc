/* debug.c — the debug pane: the attention of the last generated token (one layer
 * and head at a time) or where the memory goes. */
#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "ui/uistate.h"

static void line(int y, int x, int w, attr_t at, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void line(int y, int x, int w, attr_t at, const char *fmt, ...)
{
	char s[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	move(y, x);
	for (int i = 0; i < w; i++)
		addch(' ');
	attrset(at);
	mvaddnstr(y, x, s, (int)view_fit(s, strlen(s), w));
	attrset(A_NORMAL);
}

/* A token's text with control characters escaped, for one line. */
static void token_text(struct tok *t, int32_t id, char *out, size_t sz)
{
	size_t n = 0, k = 0;
	const char *p = id >= 0 ? tok_piece(t, id, &n) : NULL;
	for (size_t i = 0; p && i < n && k + 5 < sz; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == '\n')
			k += (size_t)snprintf(out + k, sz - k, "\\n");
		else if (c < 0x20)
			k += (size_t)snprintf(out + k, sz - k, "\\x%02x", c);
		else
			out[k++] = (char)c;
	}
	out[k] = 0;
	/* Cut a trailing partial UTF-8 sequence (a byte-level token may end mid-character). */
	size_t valid = view_fit(out, k, 1 << 20);
	out[valid] = 0;
}

static void attention(struct ui *u, int y, int x, int h, int w)
{
	struct app_attention at;
	if (app_attention(u->a, u->att_layer, &at)) {
		line(y, x, w, A_BOLD, "attention: nothing captured yet (send a message)");
		for (int r = 1; r < h; r++)
			line(y + r, x, w, A_NORMAL, "%s", "");
		return;
	}
	if (u->att_layer >= at.layers)
		u->att_layer = at.layers - 1;
	if (u->att_head >= at.heads)
		u->att_head = at.heads - 1;
	const float *row = at.rows + (size_t)u->att_head * at.len;
	int r = 0;
	line(y + r++, x, w, A_BOLD,
	     "attention  layer %d/%d (\xe2\x86\x90/\xe2\x86\x92)  head %d/%d "
	     "(\xe2\x86\x91/\xe2\x86\x93)  %d keys",
	     at.layer, at.layers - 1, u->att_head, at.heads - 1, at.len);
	/* Heat strip: the context squeezed into the pane width, max weight per cell. */
	static const char *const shade[] = {" ", "\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93",
					    "\xe2\x96\x88"};
	move(y + r, x);
	int cells = w - 1 < at.len ? w - 1 : at.len;
	for (int c = 0; c < w; c++) {
		float m = 0;
		for (int i = c * at.len / (cells ? cells : 1);
		     c < cells && i < (c + 1) * at.len / cells; i++)
			m = row[i] > m ? row[i] : m;
		int lvl = c >= cells  ? 0
			  : m <= 0    ? 0
			  : m < 0.05f ? 1
			  : m < 0.2f  ? 2
			  : m < 0.5f  ? 3
				      : 4;
		addstr(shade[lvl]);
	}
	r++;
	/* Entropy and first-token share of every head, on one line each. */
	char e[512] = "entropy (bits):", f[512] = "first-token share:";
	for (int hd = 0; hd < at.heads; hd++) {
		double ent = 0;
		const float *hr = at.rows + (size_t)hd * at.len;
		for (int i = 0; i < at.len; i++)
			if (hr[i] > 0)
				ent -= hr[i] * log2(hr[i]);
		size_t el = strlen(e), fl = strlen(f);
		snprintf(e + el, sizeof e - el, " %.2f", ent);
		snprintf(f + fl, sizeof f - fl, " %.2f", hr[0]);
	}
	line(y + r++, x, w, A_NORMAL, "%s", e);
	if (r < h)
		line(y + r++, x, w, A_NORMAL, "%s", f);
	if (r < h)
		line(y + r++, x, w, A_DIM, "top attended tokens (weight, position, text):");
	/* The top tokens, by weight. */
	char *used = calloc((size_t)at.len, 1);
	while (r < h && used) {
		int best = -1;
		for (int i = 0; i < at.len; i++)
			if (!used[i] && (best < 0 || row[i] > row[best]))
				best = i;
		if (best < 0)
			break;
		used[best] = 1;
		char t[96];
		token_text(app_tok(u->a), at.ids[best], t, sizeof t);
		line(y + r++, x, w, A_NORMAL, "  %.3f  #%-5d '%s'", row[best], best, t);
	}
	free(used);
	for (; r < h; r++)
		line(y + r, x, w, A_NORMAL, "%s", "");
	app_attention_free(&at);
}

static void memory(struct ui *u, int y, int x, int h, int w)
{
	const struct eng_config *cfg = app_eng_config(u->a);
	const struct eng_stats *m = &u->fig.mem;
	struct eng_param_counts pc;
	eng_count_params(cfg, &pc);
	double es = (double)eng_dtype_size(cfg->dtype) / 1048576.0, mib = 1048576.0;
	char rows[12][160];
	int n = 0;
	snprintf(rows[n++], 160, "memory (MiB)  weights %.1f resident", m->weight_bytes / mib);
	snprintf(rows[n++], 160, "  embedding %.1f  lm_head %.1f%s", pc.embedding * es,
		 (pc.lm_head ? pc.lm_head : pc.embedding) * es, pc.lm_head ? "" : " (tied)");
	snprintf(rows[n++], 160, "  attention %.1f  mlp %.1f  norms %.2f",
		 (pc.attn_q + pc.attn_k + pc.attn_v + pc.attn_o) * es,
		 (pc.mlp_gate + pc.mlp_up + pc.mlp_down) * es,
		 (pc.qk_norm + pc.layer_norms + pc.final_norm) * es);
	snprintf(rows[n++], 160, "KV cache %.1f used / %.1f allocated; per layer %.2f / %.2f",
		 m->kv_bytes_used / mib, m->kv_bytes_allocated / mib,
		 m->kv_bytes_used / mib / cfg->num_layers,
		 m->kv_bytes_allocated / mib / cfg->num_layers);
	snprintf(rows[n++], 160, "context %d / %d tokens", u->fig.ctx_used, u->fig.ctx_max);
	if (m->graph_bytes)
		snprintf(rows[n++], 160, "scratch %.1f  CUDA graphs %.1f", m->scratch_bytes / mib,
			 m->graph_bytes / mib);
	else
		snprintf(rows[n++], 160, "scratch %.1f", m->scratch_bytes / mib);
	if (m->device_total)
		snprintf(rows[n++], 160, "GPU %.0f free / %.0f total", m->device_free / mib,
			 m->device_total / mib);
	else
		snprintf(rows[n++], 160, "GPU: none (%s backend)", app_backend(u->a));
	snprintf(rows[n++], 160, "host RSS %.1f", u->rss / mib);
	for (int r = 0; r < h; r++)
		line(y + r, x, w, r == 0 ? A_BOLD : A_NORMAL, "%s", r < n ? rows[r] : "");
}

void debug_draw(struct ui *u, int y, int x, int h, int w)
{
	if (u->debug == DEBUG_ATTENTION)
		attention(u, y, x, h, w);
	else
		memory(u, y, x, h, w);
}
