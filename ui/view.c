/* view.c — the chat's screen model and its layout into display lines. */
#include "ui/view.h"

#include "src/base/array.h"
#include "src/base/mdfence.h"
#include "src/chat/template.h"
#include "ui/markdown.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <wchar.h>

void view_init(struct view *v)
{
	memset(v, 0, sizeof *v);
	v->show_reasoning = true;
}

static void block_free(struct vblock *b)
{
	free(b->reasoning.s);
	free(b->content.s);
	free(b->laid.v);
}

void view_cut(struct view *v, size_t n)
{
	for (size_t i = n; i < v->n; i++)
		block_free(&v->b[i]);
	if (n < v->n)
		v->n = n;
	v->scroll = 0;
}

void view_remove(struct view *v, size_t i)
{
	if (i >= v->n)
		return;
	block_free(&v->b[i]);
	memmove(&v->b[i], &v->b[i + 1], (v->n - i - 1) * sizeof *v->b);
	v->n--;
}

static void view_clear(struct view *v)
{
	view_cut(v, 0);
}

void view_free(struct view *v)
{
	view_clear(v);
	free(v->b);
	free(v->lines.v);
}

static int text_add(struct vb_text *t, const char *s, size_t n)
{
	if (arr_reserve(&t->s, &t->cap, t->n + n + 1, 1))
		return -1;
	memcpy(t->s + t->n, s, n);
	t->n += n;
	t->s[t->n] = 0;
	return 0;
}

int view_add(struct view *v, enum vb_kind kind, const char *reasoning, const char *content)
{
	if (arr_reserve(&v->b, &v->cap, v->n + 1, sizeof *v->b))
		return -1;
	struct vblock *b = &v->b[v->n];
	memset(b, 0, sizeof *b);
	b->kind = kind;
	if (text_add(&b->reasoning, "", 0) || text_add(&b->content, "", 0) ||
	    (reasoning && text_add(&b->reasoning, reasoning, strlen(reasoning))) ||
	    (content && text_add(&b->content, content, strlen(content)))) {
		free(b->reasoning.s);
		free(b->content.s);
		return -1;
	}
	return (int)v->n++;
}

int view_insert(struct view *v, size_t at, enum vb_kind kind, const char *content)
{
	int i = at <= v->n ? view_add(v, kind, NULL, content) : -1;
	if (i < 0 || (size_t)i == at)
		return i;
	struct vblock b = v->b[i];
	memmove(&v->b[at + 1], &v->b[at], ((size_t)i - at) * sizeof *v->b);
	v->b[at] = b;
	return (int)at;
}

int view_append(struct view *v, int i, bool reasoning, const char *s, size_t n)
{
	if (i < 0 || (size_t)i >= v->n)
		return -1;
	return text_add(reasoning ? &v->b[i].reasoning : &v->b[i].content, s, n);
}

void view_from_chat(struct view *v, const struct chat *c)
{
	view_clear(v);
	for (size_t i = 0; i < c->n; i++) {
		const struct chat_turn *t = &c->turns[i];
		enum vb_kind k = t->role == CHAT_USER        ? VB_USER
				 : t->role == CHAT_ASSISTANT ? VB_ASSISTANT
				 : t->role == CHAT_TOOL      ? VB_TOOL
							     : VB_SYSTEM;
		/* an answer whose content holds its <think> block shows it as reasoning, as
		 * the template takes it */
		size_t r_off, r_len, a_off;
		char *reasoning = NULL;
		int b;
		if (k == VB_ASSISTANT && !t->reasoning &&
		    tmpl_split_think(t->content, &r_off, &r_len, &a_off) &&
		    (reasoning = strndup(t->content + r_off, r_len))) {
			b = view_add(v, k, reasoning, t->content + a_off);
			free(reasoning);
		} else {
			b = view_add(v, k, t->reasoning, t->content);
		}
		/* tool calls of a loaded conversation, a line each after the content */
		for (size_t j = 0; b >= 0 && j < t->n_calls; j++) {
			const char *sep = t->content[0] || j ? "\n" : "";
			view_append(v, b, false, sep, strlen(sep));
			view_append(v, b, false, "tool call: ", 11);
			view_append(v, b, false, t->calls[j].name, strlen(t->calls[j].name));
			view_append(v, b, false, " ", 1);
			view_append(v, b, false, t->calls[j].arguments,
				    strlen(t->calls[j].arguments));
		}
	}
}

bool view_toggle_reasoning(struct view *v)
{
	bool any_open = false;
	for (size_t i = 0; i < v->n; i++)
		if (v->b[i].kind == VB_ASSISTANT && v->b[i].reasoning.n && !v->b[i].collapsed &&
		    v->show_reasoning)
			any_open = true;
	for (size_t i = 0; i < v->n; i++)
		v->b[i].collapsed = any_open;
	/* unfolding shows the reasoning again, also after /think hide */
	if (!any_open)
		v->show_reasoning = true;
	return !any_open;
}

void view_show_reasoning(struct view *v, bool show)
{
	v->show_reasoning = show;
	for (size_t i = 0; i < v->n; i++)
		v->b[i].collapsed = !show;
}

int view_cp_width(int32_t cp)
{
	/* bidi embeddings, overrides and isolates: on a terminal that orders text both
	   ways they would reorder what follows them (text shown other than it reads), so
	   they are not drawn, as control characters are not */
	if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return -1;
	return wcwidth((wchar_t)cp);
}

/* One character at column col of its line: its byte length and display width. */
static int char_at(const char *s, size_t n, int col, int *width)
{
	utf8proc_int32_t cp;
	utf8proc_ssize_t k =
		utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
	if (k <= 0) {
		*width = 1; /* an invalid byte is drawn as one replacement column */
		return 1;
	}
	int w = view_cp_width(cp);
	/* A tab reaches the next multiple of VIEW_TAB columns, as on a terminal; other
	 * control characters are drawn as one column, but a carriage return is not drawn
	 * (draw_put); combining marks take none. */
	*width = cp == '\t'                ? VIEW_TAB - col % VIEW_TAB
		 : cp == '\r'              ? 0
		 : cp < 0x20 || cp == 0x7f ? 1
		 : w < 0                   ? 1
					   : w;
	return (int)k;
}

size_t view_fit_at(const char *s, size_t n, int col, int cols, int *used)
{
	size_t i = 0;
	int u = 0, w;
	while (i < n) {
		int k = char_at(s + i, n - i, col + u, &w);
		if (u + w > cols)
			break;
		u += w;
		i += (size_t)k;
	}
	if (used)
		*used = u;
	return i;
}

int view_width(const char *s, size_t n)
{
	int used;
	view_fit_at(s, n, 0, INT_MAX, &used);
	return used;
}

size_t view_fit(const char *s, size_t n, int cols)
{
	return view_fit_at(s, n, 0, cols, NULL);
}

static int push(struct vlines *out, enum vl_style st, const char *s, int len)
{
	if (arr_reserve(&out->v, &out->cap, out->n + 1, sizeof *out->v))
		return -1;
	out->v[out->n++] = (struct vline){st, s, len, -1, 0};
	return 0;
}

/* How a paragraph is measured: as drawn. In an answer, light Markdown's markers take
 * no column (nor a heading's "# "), so a line wraps at the width its text is drawn
 * in; the markers' state is carried from the paragraph's start, line to line. */
struct measure {
	bool md;
	const char *line, *end; /* the paragraph (a code span's end is looked for there) */
	struct md_state st;
	size_t hidden; /* bytes at the line's start drawn in no column (a heading's "# ") */
	size_t plain;  /* bytes at its start that are no markers (an item's "- ") */
};

static void measure_start(struct measure *m, bool md, const char *line, size_t n)
{
	bool heading, item;
	memset(m, 0, sizeof *m);
	m->md = md;
	m->line = line;
	m->end = line + n;
	if (!md)
		return;
	size_t k = md_line_kind(line, n, &heading, &item);
	if (heading)
		m->hidden = k;
	else
		m->plain = k;
}

/* Bytes of s[0..n) (within the paragraph) that fit in cols columns as drawn; the
 * state is not changed. */
static size_t measure_fit(const struct measure *m, const char *s, size_t n, int cols)
{
	struct md_state st = m->st;
	size_t i = 0, start = (size_t)(s - m->line);
	int used = 0, w;
	while (i < n) {
		size_t at = start + i, k = 0;
		if (at < m->hidden)
			k = m->hidden - at;
		else if (m->md && at >= m->plain)
			k = md_marker(s + i, n - i, m->line, &st, true);
		if (k) {
			i += k;
			continue;
		}
		k = (size_t)char_at(s + i, n - i, used, &w);
		if (used + w > cols)
			break;
		used += w;
		i += k;
	}
	return i;
}

/* The state after s[0..n), the bytes a display line took. */
static void measure_skip(struct measure *m, const char *s, size_t n)
{
	if (!m->md)
		return;
	for (size_t i = 0; i < n;) {
		size_t at = (size_t)(s + i - m->line);
		size_t k = at < m->hidden || at < m->plain
				   ? 0
				   : md_marker(s + i, (size_t)(m->end - (s + i)), m->line, &m->st,
					       true);
		i += k ? k : 1;
	}
}

/* Wraps one paragraph (no newline) at word boundaries; words longer than the width
 * (and code, when hard) are cut at the width; the lines after the first are indented
 * by hang columns. md: an answer's light Markdown. */
static int wrap(struct vlines *out, enum vl_style st, const char *s, size_t n, int width, bool hard,
		bool md, int hang)
{
	if (n == 0)
		return push(out, st, s, 0);
	struct measure m;
	measure_start(&m, md, s, n);
	for (int row = 0; n > 0; row++) {
		if (row == 1)
			width -= hang;
		size_t fit = measure_fit(&m, s, n, width);
		if (fit == 0) { /* a character wider than the screen: take it anyway */
			int w;
			fit = (size_t)char_at(s, n, 0, &w);
		}
		size_t cut = fit, len = fit;
		if (fit < n && !hard && (s[fit] == ' ' || s[fit] == '\t')) {
			/* the line ends at a space: the words before it fit, and the spaces
			 * after the break start no row of their own */
			cut = fit + 1;
			while (cut < n && s[cut] == ' ')
				cut++;
		} else if (fit < n && !hard) {
			size_t sp = fit;
			while (sp > 0 && s[sp - 1] != ' ' && s[sp - 1] != '\t')
				sp--;
			/* A break at the space when there is one, but not the one after a
			 * heading's or an item's marker; CJK text has none and is cut
			 * anywhere (each ideograph is a word). */
			size_t mark = s == m.line ? m.hidden + m.plain : 0;
			if (sp > mark)
				cut = sp, len = sp - 1;
		}
		if (push(out, st, s, (int)len))
			return -1;
		out->v[out->n - 1].indent = row ? hang : 0;
		measure_skip(&m, s, cut);
		s += cut;
		n -= cut;
	}
	return 0;
}

/* The hanging indent of a notice's paragraph that is a row of two columns, as the
 * help's are ("  /think [on|off]    thinking on/off ..."; a line of its own holding
 * only the second column, indented): its wrapped lines go on in the second column,
 * or, where that leaves less than half the width, a few columns in. Other
 * paragraphs have none. */
static int hang_of(const char *s, size_t n, int width)
{
	size_t lead = 0, i;
	while (lead < n && s[lead] == ' ')
		lead++;
	if (!lead || lead == n)
		return 0;
	size_t col2 = lead;
	for (i = lead; i + 2 < n; i++)
		if (s[i] != ' ' && s[i + 1] == ' ' && s[i + 2] == ' ') {
			col2 = i + 1 + strspn(s + i + 1, " ");
			break;
		}
	int hang = view_width(s, col2 < n ? col2 : lead);
	if (hang > width / 2)
		hang = (int)lead + 4 <= width / 2 ? (int)lead + 4 : 0;
	return hang;
}

/* Splits text at newlines; in an answer, lines of fenced blocks are code (hard
 * wrapped, no Markdown). */
static int layout_text(struct vlines *out, enum vl_style st, const char *s, size_t n, int width)
{
	bool code = false;
	struct md_fence f;
	for (;;) {
		const char *nl = memchr(s, '\n', n);
		size_t len = nl ? (size_t)(nl - s) : n;
		bool fence = st == VL_ASSIST &&
			     (code ? md_fence_close(s, len, &f) : md_fence_open(s, len, &f));
		bool md = st == VL_ASSIST && !code && !fence, heading, item;
		int hang = st == VL_NOTICE ? hang_of(s, len, width) : 0;
		/* a list item's wrapped lines go on under its text, not under its bullet */
		size_t mark = md ? md_line_kind(s, len, &heading, &item) : 0;
		if (md && item && (int)mark <= width / 2)
			hang = (int)mark;
		if (wrap(out, code || fence ? VL_CODE : st, s, len, width, code || fence, md, hang))
			return -1;
		if (fence)
			code = !code;
		if (!nl)
			break;
		s = nl + 1;
		n -= len + 1;
	}
	return 0;
}

/* Block b's lines (their block index left -1) into out. */
static int layout_block(struct vlines *out, const struct vblock *b, bool folded, int width)
{
	static const char *const labels[] = {"you", "assistant"};
	static const char *const gone[] = {"you (no longer in the model's context)",
					   "assistant (no longer in the model's context)"};
	switch (b->kind) {
	case VB_USER:
	case VB_ASSISTANT: {
		const char *head = b->gone ? gone[b->kind] : labels[b->kind];
		if (push(out, b->kind == VB_USER ? VL_USER_HEAD : VL_ASSIST_HEAD, head,
			 (int)strlen(head)))
			return -1;
		if (b->kind == VB_ASSISTANT && b->reasoning.n) {
			const char *label = folded ? "thinking (folded; Tab shows it)" : "thinking";
			if (push(out, VL_REASON_HEAD, label, (int)strlen(label)))
				return -1;
			if (!folded &&
			    layout_text(out, VL_REASON, b->reasoning.s, b->reasoning.n, width))
				return -1;
		}
		return layout_text(out, b->kind == VB_USER ? VL_USER : VL_ASSIST, b->content.s,
				   b->content.n, width);
	}
	case VB_SYSTEM:
	case VB_TOOL: { /* drawn alike: text the model reads that nobody typed here */
		const char *head = b->kind == VB_TOOL ? "tool result" : "system prompt";
		if (push(out, VL_SYSTEM_HEAD, head, (int)strlen(head)))
			return -1;
		return layout_text(out, VL_SYSTEM, b->content.s, b->content.n, width);
	}
	case VB_NOTICE:
	case VB_ERROR:
		return layout_text(out, b->kind == VB_NOTICE ? VL_NOTICE : VL_ERROR, b->content.s,
				   b->content.n, width);
	}
	return 0;
}

/* b->laid for this width, laid out again only when what it shows has changed: its
 * text grows only by appending (a new length, maybe a new buffer), and everything
 * else it is drawn from is in the key. */
static int block_lines(const struct view *v, struct vblock *b, int width)
{
	bool folded = b->collapsed || !v->show_reasoning;
	if (b->laid_from.width == width && b->laid_from.gone == b->gone &&
	    b->laid_from.folded == folded && b->laid_from.reasoning == b->reasoning.s &&
	    b->laid_from.reasoning_n == b->reasoning.n && b->laid_from.content == b->content.s &&
	    b->laid_from.content_n == b->content.n)
		return 0;
	b->laid.n = 0;
	b->laid_from.width = 0;
	if (layout_block(&b->laid, b, folded, width))
		return -1;
	b->laid_from.width = width;
	b->laid_from.gone = b->gone;
	b->laid_from.folded = folded;
	b->laid_from.reasoning = b->reasoning.s;
	b->laid_from.reasoning_n = b->reasoning.n;
	b->laid_from.content = b->content.s;
	b->laid_from.content_n = b->content.n;
	return 0;
}

void view_mark_gone(struct view *v, int turns)
{
	int users = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (v->b[i].kind == VB_USER)
			users++;
		v->b[i].gone = (v->b[i].kind == VB_USER || v->b[i].kind == VB_ASSISTANT) &&
			       users > 0 && users <= turns;
	}
}

int view_layout(struct view *v, int width)
{
	v->lines.n = 0;
	if (width < 1)
		width = 1;
	for (size_t i = 0; i < v->n; i++) {
		struct vblock *b = &v->b[i];
		if (block_lines(v, b, width) ||
		    arr_reserve(&v->lines.v, &v->lines.cap, v->lines.n + b->laid.n + 1,
				sizeof *v->lines.v))
			return -1;
		if (i)
			v->lines.v[v->lines.n++] = (struct vline){VL_BLANK, "", 0, -1, 0};
		for (size_t k = 0; k < b->laid.n; k++) {
			v->lines.v[v->lines.n] = b->laid.v[k];
			v->lines.v[v->lines.n++].block = (int)i;
		}
	}
	return 0;
}
