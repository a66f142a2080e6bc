/* test_mdfence.c — fenced code blocks against CommonMark's rules (spec 0.31, section
 * 4.5): the examples there that the chat meets in answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "src/base/mdfence.h"

static bool opens(const char *line)
{
	struct md_fence f;
	return md_fence_open(line, strlen(line), &f);
}

static void test_open(void **state)
{
	(void)state;
	assert_true(opens("```"));
	assert_true(opens("```python"));
	assert_true(opens("   ```"));
	assert_true(opens("~~~"));
	assert_true(opens("````` x ~ y"));
	assert_true(opens("~~~ `a`")); /* a tilde fence's info string may hold backticks */
	assert_false(opens("``"));
	assert_false(opens("    ```"));   /* four spaces: an indented code line */
	assert_false(opens("``` a ` b")); /* inline code */
	assert_false(opens("x ```"));
}

static void test_close(void **state)
{
	(void)state;
	struct md_fence f;
	assert_true(md_fence_open("````", 4, &f));
	assert_false(md_fence_close("```", 3, &f));    /* shorter */
	assert_false(md_fence_close("~~~~", 4, &f));   /* the other character */
	assert_false(md_fence_close("````js", 6, &f)); /* an info string */
	assert_false(md_fence_close("    ````", 8, &f));
	assert_true(md_fence_close("````", 4, &f));
	assert_true(md_fence_close("  `````  ", 9, &f));
}

static void expect_block(const char *text, long n, const char *want)
{
	char *got = md_code_block(text, n);
	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_blocks(void **state)
{
	(void)state;
	const char *t = "Example:\n```markdown\nUse a fence:\n    ```\ncode\n    ```\n```\n\n"
			"Then python:\n```python\ndef f(*args):\n    return a*b\n```\nEND";
	expect_block(t, 1, "Use a fence:\n    ```\ncode\n    ```\n");
	expect_block(t, 2, "def f(*args):\n    return a*b\n");
	expect_block(t, 3, NULL);
	/* a longer fence holds a shorter one; an unclosed block runs to the end */
	expect_block("````\n```\nx\n```\n````\n", 1, "```\nx\n```\n");
	expect_block("a\n~~~\nopen to the end", 1, "open to the end");
	expect_block("```\n```", 1, "");
	expect_block("no code here ``` a ` b", 1, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),
		cmocka_unit_test(test_close),
		cmocka_unit_test(test_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
