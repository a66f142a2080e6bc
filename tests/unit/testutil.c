/* testutil.c — test models and the real tokenizer for the unit tests. */
#include "tests/unit/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *env_or_dot(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : ".";
}

const char *tu_srcdir(void)
{
	return env_or_dot("TOP_SRCDIR");
}

const char *tu_builddir(void)
{
	return env_or_dot("TOP_BUILDDIR");
}

void tu_tokenizer_dir(char *out, size_t size)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "sh '%s/tests/fetch-tokenizer.sh'", tu_srcdir());
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(out, (int)size, p))
		out[0] = 0;
	int st = p ? pclose(p) : -1;
	out[strcspn(out, "\n")] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		fprintf(stderr, "SKIP: no tokenizer\n");
		exit(77);
	}
	if (st != 0 || !out[0]) {
		fprintf(stderr, "fetch-tokenizer.sh failed\n");
		exit(1);
	}
}

int tu_make_model(const char *dir, const char *flags, bool tokenizer)
{
	char tdir[4096] = "", cmd[16384];
	if (tokenizer)
		tu_tokenizer_dir(tdir, sizeof tdir);
	snprintf(cmd, sizeof cmd, "'%s/tests/mkmodel' --out '%s' %s%s%s %s >/dev/null",
		 tu_builddir(), dir, tokenizer ? "--tokenizer '" : "", tdir, tokenizer ? "'" : "",
		 flags);
	if (system(cmd) != 0) {
		fprintf(stderr, "mkmodel failed: %s\n", cmd);
		return -1;
	}
	return 0;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int tu_unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
