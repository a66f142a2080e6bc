/* openai_out.c — what serve writes back in OpenAI's forms (openai.h): the error
 * object, with the request's text kept valid UTF-8, and server-sent events. */
#include "src/serve/openai.h"

#include <jansson.h>
#include <string.h>
#include <utf8proc.h>

void oai_put_text(struct strbuf *b, const char *s, size_t n)
{
	const utf8proc_uint8_t *u = (const utf8proc_uint8_t *)s;
	size_t i = 0, start = 0;
	while (i < n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate(u + i, (utf8proc_ssize_t)(n - i), &cp);
		if (k > 0 && cp != 0) {
			i += (size_t)k;
			continue;
		}
		sb_put(b, s + start, i - start);
		sb_printf(b, "\\x%02x", u[i]);
		start = ++i;
	}
	sb_put(b, s + start, n - start);
}

char *oai_error_json(const char *message, const char *type, const char *param, const char *code)
{
	/* messages quote request text (a role, a JSON parser's context): keep them UTF-8 */
	struct strbuf m = {0}, p = {0};
	oai_put_text(&m, message, strlen(message));
	if (param)
		oai_put_text(&p, param, strlen(param));
	json_t *root = m.oom || p.oom ? NULL
				      : json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "message",
						  m.p ? m.p : "", "type", type, "param",
						  param ? (p.p ? p.p : "") : NULL, "code", code);
	char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	free(m.p);
	free(p.p);
	return text;
}

void oai_sse(struct strbuf *b, const char *text)
{
	sb_puts(b, "data: ");
	sb_puts(b, text);
	sb_puts(b, "\n\n");
}
