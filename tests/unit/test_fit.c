/* test_fit.c — the chat's context fit (chat_render_fit) against the rule it documents,
 * written here the plain way: the turns dropped before dropped again, then the oldest
 * whole turn dropped one at a time while the prompt and the answer's room (and, once
 * the start moves, the slack) overflow the context. Random conversations, contexts
 * and slacks; the fit must give the same ids, count and remaining turns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/chat/chat.h"
#include "src/chat/fit.h"
#include "tests/unit/tinytok.h"
#include "tokenizer/tokenizer.h"

static struct tok *tk;

/* The rule, one turn at a time. */
static int32_t *fit_plainly(struct chat *c, enum tmpl_variant v, int ctx, int reserve, int slack,
			    size_t *n, int *dropped)
{
	int again = *dropped;
	*dropped = 0;
	size_t extra = 0, room = (size_t)reserve;
	for (;;) {
		size_t first = c->n && c->turns[0].role == CHAT_SYSTEM ? 1 : 0;
		long last = chat_last(c, CHAT_USER);
		size_t end = first + 1;
		while (last >= 0 && end < (size_t)last && c->turns[end].role != CHAT_USER)
			end++;
		bool can_drop = last >= 0 && (size_t)last > first;
		if (*dropped < again && can_drop) {
			chat_remove(c, first, end - first);
			(*dropped)++;
			continue;
		}
		int32_t *ids = chat_encode(tk, c, v, true, TMPL_THINK_ON, true, n);
		assert_non_null(ids);
		if (*n + room + extra <= (size_t)ctx)
			return ids;
		free(ids);
		if (!can_drop)
			return *n < (size_t)ctx
				       ? chat_encode(tk, c, v, true, TMPL_THINK_ON, true, n)
				       : NULL;
		chat_remove(c, first, end - first);
		(*dropped)++;
		if (slack > 0 && room + (size_t)slack < (size_t)ctx)
			extra = (size_t)slack;
	}
}

static unsigned next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* A conversation of up to 60 turns (or 400): a system prompt or not, user and assistant
 * turns of random lengths (sometimes two of a role in a row), ending with a user. */
static struct chat *conversation(unsigned *s)
{
	struct chat *c = chat_new();
	char text[400];
	if (next(s) % 2)
		assert_int_equal(chat_set_system(c, "You are a helpful assistant."), 0);
	/* now and then many: most of them dropped */
	int turns = (int)(next(s) % (next(s) % 20 ? 60 : 400));
	for (int i = 0; i < turns; i++) {
		/* tokens per byte vary from turn to turn (the merge "a b" makes 2 bytes one
		 * token): the fit's first guess, which scales tokens with bytes, is off */
		static const char *const alphabets[] = {"ab cdef", "ab", "cdef"};
		const char *abc = alphabets[next(s) % 3];
		int len = (int)(next(s) % 300) + 1;
		for (int j = 0; j < len; j++)
			text[j] = abc[next(s) % strlen(abc)];
		text[len] = '\0';
		bool user = i % 2 == 0 ? next(s) % 8 != 0 : next(s) % 8 == 0;
		assert_int_equal(chat_add(c, user ? CHAT_USER : CHAT_ASSISTANT, text, NULL), 0);
	}
	assert_int_equal(chat_add(c, CHAT_USER, "and now?", NULL), 0);
	return c;
}

static void test_fit_as_the_rule(void **state)
{
	(void)state;
	unsigned s = 7;
	int refused = 0, moved = 0;
	for (int round = 0; round < 400; round++) {
		struct chat *a = conversation(&s), *b = chat_dup(a);
		enum tmpl_variant v = (enum tmpl_variant)(next(&s) % 4);
		int ctx = (int)(next(&s) % 3000) + 20;
		int reserve = (int)(next(&s) % (unsigned)(ctx / 2 + 1));
		int slack = next(&s) % 3 ? ctx / 4 : 0;
		int again = (int)(next(&s) % 8);
		int da = again, db = again, na = 0;
		size_t nb = 0;
		int32_t *ia = chat_render_fit(tk, a, v, TMPL_THINK_ON, true, ctx, reserve, slack,
					      &na, &da);
		int32_t *ib = fit_plainly(b, v, ctx, reserve, slack, &nb, &db);
		if (!ib) {
			assert_null(ia);
			refused++;
		} else {
			if (!ia)
				fail_msg("round %d: refused (%s), the rule fits %zu ids", round,
					 err_msg(), nb);
			assert_int_equal(na, (int)nb);
			assert_memory_equal(ia, ib, nb * sizeof *ib);
			assert_int_equal(da, db);
			assert_int_equal(a->n, b->n);
			moved += da > again;
		}
		free(ia);
		free(ib);
		chat_free(a);
		chat_free(b);
	}
	/* the cases that matter happened: refusals, and fits that moved the start */
	assert_true(refused > 0);
	assert_true(moved > 20);
}

/* A system prompt that is most of a prompt too long for the context: the error says
 * so, as what to shorten, beside the message's own count. */
static void test_long_system_prompt(void **state)
{
	(void)state;
	struct chat *c = chat_new();
	char sys[2000] = "";
	for (int i = 0; i < 150; i++)
		strcat(sys, "be nice ");
	assert_non_null(c);
	assert_int_equal(chat_add(c, CHAT_SYSTEM, sys, NULL), 0);
	assert_int_equal(chat_add(c, CHAT_USER, "hi", NULL), 0);
	int n = 0, dropped = 0;
	assert_null(
		chat_render_fit(tk, c, TMPL_QWEN3, TMPL_THINK_ON, true, 64, 8, 0, &n, &dropped));
	const char *e = err_msg();
	if (!strstr(e, "the prompt is ") || !strstr(e, ", the system prompt "))
		fail_msg("the message does not name the system prompt: %s", e);
	chat_free(c);
}

int main(void)
{
	tk = tt_tokenizer(false, NULL);
	if (!tk)
		return 1;
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_fit_as_the_rule),
					   cmocka_unit_test(test_long_system_prompt)};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tok_free(tk);
	return rc;
}
