/* debug.c — the debug pane: the attention of the last generated token (one layer
 * and head at a time) or where the memory goes. */
#include <curses.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/units.h"
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

/* A label and its figures (ASCII, one blank before each), wrapped at the pane's width
 * so that no figure is cut ("3.41" cut to "3." reads as another number); at most rows
 * lines, the others indented. Returns the lines drawn. */
static int figures(int y, int x, int w, int rows, const char *text)
{
	int drawn = 0;
	size_t n = strlen(text), at = 0;
	while (at < n && drawn < rows) {
		size_t indent = drawn ? 2 : 0, room = w > (int)indent ? (size_t)w - indent : 1;
		size_t len = n - at;
		if (len > room) { /* up to the last blank that keeps the line within room */
			len = room;
			while (len > 0 && text[at + len] != ' ')
				len--;
			if (len == 0)
				len = room;
		}
		line(y + drawn++, x, w, A_NORMAL, "%*s%.*s", (int)indent, "", (int)len, text + at);
		at += len;
		while (at < n && text[at] == ' ')
			at++;
	}
	return drawn;
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
	/* the header in full, or short when the pane is narrow (an 80-column screen) */
	if (w >= 58)
		line(y + r++, x, w, A_BOLD,
		     "attention  layer %d of %d (%s)  head %d of %d (%s)  %d keys", at.layer + 1,
		     at.layers, ui_glyph(u, "\xe2\x86\x90/\xe2\x86\x92", "left/right"),
		     u->att_head + 1, at.heads, ui_glyph(u, "\xe2\x86\x91/\xe2\x86\x93", "up/down"),
		     at.len);
	else
		line(y + r++, x, w, A_BOLD, "layer %d of %d head %d of %d, %d keys", at.layer + 1,
		     at.layers, u->att_head + 1, at.heads, at.len);
	/* Heat strip: the context squeezed into the pane width, max weight per cell. */
	static const char *const shade_utf8[] = {" ", "\xe2\x96\x91", "\xe2\x96\x92",
						 "\xe2\x96\x93", "\xe2\x96\x88"};
	static const char *const shade_ascii[] = {" ", ".", ":", "*", "#"};
	const char *const *shade = u->ascii ? shade_ascii : shade_utf8;
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
	r += figures(y + r, x, w, h - r, e);
	r += figures(y + r, x, w, h - r, f);
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
		app_token_text(u->a, at.ids[best], t, sizeof t);
		line(y + r++, x, w, A_NORMAL, "  %.3f  #%-5d '%s'", row[best], best, t);
	}
	free(used);
	for (; r < h; r++)
		line(y + r, x, w, A_NORMAL, "%s", "");
	app_attention_free(&at);
}

/* Where the memory goes. The rows fit the side pane (48 columns at 120): a figure
 * cut at the edge reads as another number. On the CPU, what the rows say is in
 * memory (weights read so far, KV pages touched, scratch) adds up to the host RSS
 * but for the program itself and its tokenizer; the last row says how closely. */
static void memory(struct ui *u, int y, int x, int h, int w)
{
	const struct app_memory *m = &u->fig.mem;
	double mib = 1048576.0;
	int layers = m->layers > 0 ? m->layers : 1;
	bool gpu = m->device_total > 0;
	char rows[12][160];
	int n = 0;
	snprintf(rows[n++], 160, "memory (MiB), %s weights", m->weight_type);
	if (gpu)
		snprintf(rows[n++], 160, "weights %.1f on the GPU", m->weights / mib);
	else
		snprintf(rows[n++], 160, "weights %.1f, %.1f in memory", m->weights / mib,
			 m->weights_in_memory / mib);
	if (m->tied)
		snprintf(rows[n++], 160, "  embedding %.1f, lm_head tied", m->embedding / mib);
	else
		snprintf(rows[n++], 160, "  embedding %.1f  lm_head %.1f", m->embedding / mib,
			 m->lm_head / mib);
	snprintf(rows[n++], 160, "  attention %.1f  mlp %.1f  norms %.2f", m->attention / mib,
		 m->mlp / mib, m->norms / mib);
	snprintf(rows[n++], 160, "KV cache %.1f used, %.1f in memory", m->kv_used / mib,
		 m->kv_in_memory / mib);
	snprintf(rows[n++], 160, "  of %.1f; per layer %.2f / %.2f", m->kv_allocated / mib,
		 m->kv_used / mib / layers, m->kv_allocated / mib / layers);
	snprintf(rows[n++], 160, "context %d / %d tokens", u->fig.ctx_used, u->fig.ctx_max);
	if (m->graphs)
		snprintf(rows[n++], 160, "scratch %.1f  CUDA graphs %.1f", m->scratch / mib,
			 m->graphs / mib);
	else
		snprintf(rows[n++], 160, "scratch %.1f", m->scratch / mib);
	if (gpu) {
		snprintf(rows[n++], 160, "GPU %.0f free / %.0f total", m->device_free / mib,
			 m->device_total / mib);
		snprintf(rows[n++], 160, "host RSS %.1f", m->host_rss / mib);
	} else {
		double sum = (double)(m->weights_in_memory + m->kv_in_memory + m->scratch);
		snprintf(rows[n++], 160, "host RSS %.1f; the above %.1f", m->host_rss / mib,
			 sum / mib);
		if (m->host_rss)
			snprintf(rows[n - 1] + strlen(rows[n - 1]), 40, " (%.0f%%)",
				 100.0 * sum / (double)m->host_rss);
	}
	for (int r = 0; r < h; r++)
		line(y + r, x, w, r == 0 ? A_BOLD : A_NORMAL, "%s", r < n ? rows[r] : "");
}

/* text, then spaces up to cols display columns (CJK takes two a character, Cyrillic
 * one in two bytes: printf's %-12s pads by bytes). Returns the bytes written. */
static int pad_text(char *out, size_t sz, const char *text, int cols)
{
	int k = snprintf(out, sz, "%s", text);
	if (k < 0 || (size_t)k >= sz)
		return k < 0 ? 0 : (int)sz - 1;
	for (int w = view_width(text, strlen(text)); w < cols && (size_t)k + 1 < sz; w++)
		out[k++] = ' ';
	out[k] = 0;
	return k;
}

/* Token probabilities: a row per token of the last answer (the newest at the
 * bottom unless scrolled): its probability in the distribution it was drawn from,
 * in the plain softmax of the logits, and the likeliest alternatives drawn from. */
static void probs(struct ui *u, int y, int x, int h, int w)
{
	struct app_token_prob rows[128];
	int view = h - 1 < 128 ? h - 1 : 128;
	int total = app_token_probs(u->a, rows, 0, 0);
	if (u->prob_scroll > total - view)
		u->prob_scroll = total - view > 0 ? total - view : 0;
	int first = total - view - u->prob_scroll;
	if (first < 0)
		first = 0;
	int n = app_token_probs(u->a, rows, first, view) - first;
	if (n > view)
		n = view;
	line(y, x, w, A_BOLD,
	     "probabilities: drawn from (raw softmax) | alternatives | rest  %d tokens%s", total,
	     total > view ? " (up/down)" : "");
	/* short lines, for a pane beside the chat; every row drawn, none left from
	 * the view before */
	static const char *const none[] = {"nothing yet: the next answer's tokens",
					   "are recorded while this view is open"};
	for (int r = 0; r < h - 1; r++) {
		if (r >= n || !total) {
			line(y + 1 + r, x, w, A_DIM, "%s", !total && r < 2 ? none[r] : "");
			continue;
		}
		const struct app_token_prob *t = &rows[r];
		char s[512];
		int k = pad_text(s, sizeof s, t->text, 12);
		k += snprintf(s + k, sizeof s - (size_t)k, " %.3g (%.3g)", t->p, t->p_raw);
		double sum = t->p; /* the token, its alternatives and the rest make 1 */
		for (int i = 0, alts = 0; i < t->n_top && k < (int)sizeof s; i++)
			if (t->top[i].id != t->id) {
				sum += t->top[i].p;
				k += snprintf(s + k, sizeof s - (size_t)k, "%s %s %.3g",
					      alts++ ? "" : " |", t->top[i].text, t->top[i].p);
			}
		/* float32 sums of a set listed whole miss 1 by a few 1e-8: that is no rest */
		if (k < (int)sizeof s)
			snprintf(s + k, sizeof s - (size_t)k, " | rest %.3g",
				 sum < 1 - 1e-6 ? 1 - sum : 0.0);
		line(y + 1 + r, x, w, t->p < 0.5f ? A_BOLD : A_NORMAL, "%s", s);
	}
}

/* The remote backend: the model, its attention and its memory are on the server. */
static void remote(struct ui *u, int y, int x, int h, int w)
{
	char rows[3][512], rss[16];
	snprintf(rows[0], sizeof rows[0], "%s: not available with the remote backend",
		 u->debug == DEBUG_ATTENTION ? "attention" : "memory");
	snprintf(rows[1], sizeof rows[1], "the model runs on %s", app_remote_url(u->a));
	snprintf(rows[2], sizeof rows[2], "context %d tokens; this process: host RSS %s",
		 u->fig.ctx_used, units_ibytes((double)u->fig.mem.host_rss, rss, sizeof rss));
	for (int r = 0; r < h; r++)
		line(y + r, x, w, r == 0 ? A_BOLD : A_NORMAL, "%s", r < 3 ? rows[r] : "");
}

void debug_draw(struct ui *u, int y, int x, int h, int w)
{
	if (app_remote_url(u->a))
		remote(u, y, x, h, w);
	else if (u->debug == DEBUG_ATTENTION)
		attention(u, y, x, h, w);
	else if (u->debug == DEBUG_PROBS)
		probs(u, y, x, h, w);
	else
		memory(u, y, x, h, w);
}
