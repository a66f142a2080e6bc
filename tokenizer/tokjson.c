/* tokjson.c — tokenizer.json text from token lists (tokjson.h). */
#include "tokenizer/tokjson.h"

#include "tokenizer/pretok.h"

#include <string.h>

/* Appends s[0..n) (valid UTF-8) as a JSON string literal. */
static void tokjson_string(struct strbuf *b, const char *s, size_t n)
{
	/* only quotes, backslashes and control characters need escapes */
	sb_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sb_put(b, s + run, i - run);
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			sb_put(b, e, 2);
		} else {
			sb_printf(b, "\\u%04x", c);
		}
		run = i + 1;
	}
	sb_put(b, s + run, n - run);
	sb_put(b, "\"", 1);
}

void tokjson_vocab(struct strbuf *b, const struct tokjson_token *vocab, size_t n,
		   const char *indent)
{
	sb_puts(b, "{\n");
	for (size_t i = 0; i < n; i++) {
		sb_puts(b, indent);
		tokjson_string(b, vocab[i].s, vocab[i].n);
		sb_printf(b, ": %d%s\n", (int)vocab[i].id, i + 1 < n ? "," : "");
	}
}

static void added_tokens(struct strbuf *b, const struct tokjson *j)
{
	sb_puts(b, "  \"added_tokens\": [");
	for (size_t k = 0; k < j->n_added; k++) {
		sb_printf(b, "%s\n    {\n      \"id\": %d,\n      \"content\": ", k ? "," : "",
			  (int)j->added[k].id);
		tokjson_string(b, j->added[k].s, j->added[k].n);
		sb_puts(b, ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
			   "      \"rstrip\": false,\n      \"normalized\": false,\n"
			   "      \"special\": ");
		sb_puts(b, j->added[k].special ? "true\n    }" : "false\n    }");
	}
	sb_puts(b, j->n_added ? "\n  ],\n" : "],\n");
}

void tokjson_write(struct strbuf *b, const struct tokjson *j)
{
	static const char bytelevel[] = "\"add_prefix_space\": false, \"trim_offsets\": false, "
					"\"use_regex\": false";
	sb_puts(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
	added_tokens(b, j);
	sb_puts(b, j->nfc ? "  \"normalizer\": {\"type\": \"NFC\"},\n" : "  \"normalizer\": null,\n");
	sb_puts(b, "  \"pre_tokenizer\": {\n    \"type\": \"Sequence\",\n    \"pretokenizers\": [\n"
		   "      {\"type\": \"Split\", \"pattern\": {\"Regex\": ");
	tokjson_string(b, pretok_qwen2_regex, strlen(pretok_qwen2_regex));
	sb_puts(b, "}, \"behavior\": \"Isolated\", \"invert\": false},\n      {\"type\": "
		   "\"ByteLevel\", ");
	sb_puts(b, bytelevel);
	sb_puts(b, "}\n    ]\n  },\n  \"post_processor\": {\"type\": \"ByteLevel\", ");
	sb_puts(b, bytelevel);
	sb_puts(b, "},\n  \"decoder\": {\"type\": \"ByteLevel\", ");
	sb_puts(b, bytelevel);
	sb_puts(b, "},\n  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
		   "    \"unk_token\": null,\n    \"continuing_subword_prefix\": \"\",\n"
		   "    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n"
		   "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": ");
	tokjson_vocab(b, j->vocab, j->n_vocab, "      ");
	sb_puts(b, "    },\n    \"merges\": [");
	for (size_t i = 0; i < j->n_merges; i++) {
		sb_puts(b, i ? ",\n      [" : "\n      [");
		tokjson_string(b, j->merges[i].a, j->merges[i].na);
		sb_puts(b, ", ");
		tokjson_string(b, j->merges[i].b, j->merges[i].nb);
		sb_puts(b, "]");
	}
	sb_puts(b, j->n_merges ? "\n    ]\n  }\n}\n" : "]\n  }\n}\n");
}
