/* test_view.c — the chat view's layout keeps each block's lines until the block
 * changes: after random edits (streamed text, folds, /think hide, blocks dropped from
 * the context, removed or inserted, a new width) the layout must be line for line
 * what a fresh view of the same blocks lays out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "ui/view.h"

static unsigned next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Random text: words, spaces, newlines, fences, Markdown markers, wide characters. */
static void some_text(unsigned *s, char *out, size_t cap)
{
	static const char *const bits[] = {"word ",     "a ",      "longerwordthanmost ",
					   "\n",        "\n\n",    "```\n",
					   "```c\n",    "- item ", "# head ",
					   "**bold** ", "`code` ", "\t",
					   "中文 ",     "é ",      "  two  columns ",
					   "x"};
	size_t n = 0, want = next(s) % (cap / 2);
	out[0] = 0;
	while (n < want) {
		const char *b = bits[next(s) % (sizeof bits / sizeof *bits)];
		size_t k = strlen(b);
		if (n + k + 1 > cap)
			break;
		memcpy(out + n, b, k + 1);
		n += k;
	}
}

/* A view with v's blocks and flags, never laid out: what a layout from scratch gives. */
static void fresh_copy(const struct view *v, struct view *f)
{
	view_init(f);
	f->show_reasoning = v->show_reasoning;
	for (size_t i = 0; i < v->n; i++) {
		const struct vblock *b = &v->b[i];
		assert_int_equal(view_add(f, b->kind, b->reasoning.s, b->content.s), (int)i);
		f->b[i].collapsed = b->collapsed;
		f->b[i].gone = b->gone;
	}
}

static void same_layout(struct view *v, int width)
{
	struct view f;
	fresh_copy(v, &f);
	assert_int_equal(view_layout(v, width), 0);
	assert_int_equal(view_layout(&f, width), 0);
	assert_int_equal(v->lines.n, f.lines.n);
	for (size_t k = 0; k < f.lines.n; k++) {
		const struct vline *a = &v->lines.v[k], *b = &f.lines.v[k];
		assert_int_equal(a->style, b->style);
		assert_int_equal(a->block, b->block);
		assert_int_equal(a->indent, b->indent);
		assert_int_equal(a->len, b->len);
		assert_memory_equal(a->s, b->s, (size_t)a->len);
	}
	view_free(&f);
}

static void edit(struct view *v, unsigned *s, char *text, size_t cap)
{
	size_t i = v->n ? next(s) % v->n : 0;
	switch (next(s) % 9) {
	case 0:
	case 1: /* a streamed piece, into the answer or its reasoning */
		some_text(s, text, 64);
		if (v->n)
			assert_int_equal(
				view_append(v, (int)i, next(s) % 3 == 0, text, strlen(text)), 0);
		break;
	case 2:
		some_text(s, text, cap);
		assert_true(view_add(v, (enum vb_kind)(next(s) % 6), next(s) % 2 ? text : NULL,
				     text) >= 0);
		break;
	case 3:
		if (v->n)
			v->b[i].collapsed = !v->b[i].collapsed;
		break;
	case 4: view_show_reasoning(v, next(s) % 2); break;
	case 5: view_mark_gone(v, (int)(next(s) % 4)); break;
	case 6: view_remove(v, i); break;
	case 7:
		some_text(s, text, cap);
		assert_true(view_insert(v, v->n ? next(s) % (v->n + 1) : 0,
					(enum vb_kind)(next(s) % 6), text) >= 0);
		break;
	case 8: view_cut(v, v->n ? next(s) % (v->n + 1) : 0); break;
	}
}

static void test_kept_lines_as_fresh(void **state)
{
	(void)state;
	char text[600];
	unsigned s = 11;
	for (int round = 0; round < 40; round++) {
		struct view v;
		view_init(&v);
		int width = 1 + (int)(next(&s) % 100);
		for (int k = 0; k < 150; k++) {
			edit(&v, &s, text, sizeof text);
			if (next(&s) % 10 == 0)
				width = 1 + (int)(next(&s) % 100);
			same_layout(&v, width);
		}
		view_free(&v);
	}
}

int main(void)
{
	setlocale(LC_ALL, "C.UTF-8"); /* the widths of wide characters, as the UI sets */
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_kept_lines_as_fresh)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
