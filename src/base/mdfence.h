/* mdfence.h — Markdown's fenced code blocks as CommonMark reads them, for the chat's
 * drawing of answers and /copy N: a fence is up to three spaces, then three or more
 * backticks or tildes; the block ends at a line of at least as many of the same
 * character (and nothing else but spaces), or at the text's end. A shorter fence, one
 * of the other character or one indented four spaces inside a block is code. */
#ifndef QWENCHAT_MDFENCE_H
#define QWENCHAT_MDFENCE_H

#include <stdbool.h>
#include <stddef.h>

struct md_fence {
	char ch; /* '`' or '~' */
	size_t len;
};

/* Whether the line s[0..n) (no newline) opens a fenced block; *f gets its fence. A
 * backtick fence's info string ("```python") may hold no backtick. */
bool md_fence_open(const char *s, size_t n, struct md_fence *f);

/* Whether the line s[0..n) closes the block that fence f opened. */
bool md_fence_close(const char *s, size_t n, const struct md_fence *f);

/* The n-th (1-based) fenced block of text: its lines, each with its newline, without
 * the fences (malloc'd); NULL when there are fewer (or out of memory). */
char *md_code_block(const char *text, long n);

#endif
