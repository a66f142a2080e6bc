/* jsonwalk.c — texts the schema recognizer lets through, for tests/cli/jsonschema.sh
 * to check with Python's jsonschema: `jsonwalk SCHEMA_FILE COUNT SEED` walks COUNT
 * times from the empty text, each step a random byte (or UTF-8 character) of those
 * the recognizer takes, until it calls the text whole; each text goes to stdout as a
 * JSON string on its own line. Past a random length the walk prefers the bytes that
 * close things (quotes, brackets, commas), as a model that means to end would, three
 * times in four.
 * A walk where nothing passes and the text is not whole is a dead end the sampler
 * would meet: exit 3 with the text; a walk that found no end within MAX_TEXT bytes
 * (a pattern's match that random bytes seldom make): exit 4; a schema refused: exit 2
 * with the message.
 * `jsonwalk SCHEMA_FILE check 0` reads texts instead, one JSON string a line on
 * stdin, and prints 1 for each the recognizer reads whole, else 0. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"
#include "src/base/jsonschema.h"

enum { MAX_TEXT = 1 << 16 };

static uint64_t rng;

static uint32_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

/* The candidates: printable ASCII, whitespace, a few multibyte characters whole and
 * every byte past ASCII alone (as a byte-level vocabulary has them: any character a
 * fixed text holds can be written). */
static const char *cands[256];
static int n_cands;

static void make_cands(void)
{
	static char bytes[256][2];
	static const char *const extra[] = {"\n", "\t", "\xc3\xa9", "\xe2\x82\xac",
					    "\xf0\x9f\x98\x80"};
	for (int c = 0x20; c < 0x100; c++) {
		bytes[c][0] = (char)c;
		if (c != 0x7f)
			cands[n_cands++] = bytes[c];
	}
	for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
		cands[n_cands++] = extra[i];
}

/* One walk into text; its length, -1 at a dead end, or -2 where it ran out of room
 * (MAX_TEXT) before the value could end. */
static long walk(const struct js_schema *sc, char *text)
{
	static struct js_state p, t;
	js_init(&p, sc);
	size_t n = 0, budget = 8 + next_rand() % 200;
	for (;;) {
		if (js_done(&p) && (n >= budget || next_rand() % 8 == 0))
			return (long)n;
		const char *pass[256];
		int np = 0, closers = 0;
		for (int i = 0; i < n_cands; i++) {
			js_copy(&t, &p);
			if (js_feed(&t, cands[i], strlen(cands[i])))
				pass[np++] = cands[i];
		}
		if (np == 0)
			return js_done(&p) ? (long)n : -1;
		/* ending: the closing bytes first, but one byte in four of any kind (a string
		 * whose pattern may match anywhere would take closing bytes for ever) */
		if (n >= budget && next_rand() % 4) {
			for (int i = 0; i < np; i++)
				if (strchr("\"}],", pass[i][0]) && pass[i][1] == 0)
					pass[closers++] = pass[i];
			np = closers ? closers : np;
		}
		const char *c = pass[next_rand() % (uint32_t)np];
		if (n + strlen(c) >= MAX_TEXT - 1)
			return -2;
		js_feed(&p, c, strlen(c));
		memcpy(text + n, c, strlen(c));
		n += strlen(c);
	}
}

/* The check mode's loop. */
static int check(struct js_schema *sc)
{
	static char line[4 * MAX_TEXT];
	static struct js_state p;
	while (fgets(line, sizeof line, stdin)) {
		json_t *s = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		js_init(&p, sc);
		bool whole = json_is_string(s) &&
			     js_feed(&p, json_string_value(s), json_string_length(s)) &&
			     js_done(&p);
		printf("%d\n", whole);
		json_decref(s);
	}
	js_free(sc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: jsonwalk SCHEMA_FILE COUNT SEED\n");
		return 1;
	}
	json_error_t je;
	json_t *v = json_load_file(argv[1], JSON_DECODE_ANY, &je);
	if (!v) {
		fprintf(stderr, "jsonwalk: %s: %s\n", argv[1], je.text);
		return 1;
	}
	struct js_schema *sc = js_compile(v, "schema");
	json_decref(v);
	if (!sc) {
		fprintf(stderr, "jsonwalk: %s\n", err_msg());
		return 2;
	}
	if (!strcmp(argv[2], "check"))
		return check(sc);
	rng = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15u + 1;
	make_cands();
	static char text[MAX_TEXT];
	for (long k = atol(argv[2]); k > 0; k--) {
		long n = walk(sc, text);
		json_t *s = json_stringn(text, n < 0 ? strlen(text) : (size_t)n);
		char *line = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
		printf("%s\n", line ? line : "null");
		free(line);
		json_decref(s);
		if (n < 0) {
			fprintf(stderr,
				n == -1 ? "jsonwalk: a dead end: nothing passes after "
					  "the last text\n"
					: "jsonwalk: the walk did not end within its room\n");
			js_free(sc);
			return n == -1 ? 3 : 4;
		}
		memset(text, 0, (size_t)n);
	}
	js_free(sc);
	return 0;
}
