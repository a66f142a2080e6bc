/* bpe_write.c — a trained BPE written as Hugging Face tokenizer.json and as the
 * GPT-2 pair vocab.json + merges.txt, every file replaced atomically. */
#include "tokenizer/bpe_write.h"

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"
#include "tokenizer/pretok.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A JSON string literal (the text is valid UTF-8; only quotes, backslashes and
 * control characters need escapes). */
static void sb_json(struct strbuf *b, const char *s, size_t n)
{
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

/* GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the
 * other 68 bytes (controls, space, DEL, NBSP, soft hyphen) take U+0100.. in order. */
static void byte_map(char map[256][3], unsigned char len[256])
{
	int extra = 0;
	for (int c = 0; c < 256; c++) {
		bool self = (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae;
		unsigned cp = self ? (unsigned)c : 256u + (unsigned)extra++;
		if (cp < 0x80) {
			map[c][0] = (char)cp;
			len[c] = 1;
		} else {
			map[c][0] = (char)(0xc0 | cp >> 6);
			map[c][1] = (char)(0x80 | (cp & 0x3f));
			len[c] = 2;
		}
	}
}

/* Every token's mapped string, NUL-separated in one buffer: strs + soff[id]. */
struct mapped {
	struct strbuf s;
	size_t *soff;
};

static int map_tokens(const struct bpe_model *m, struct mapped *out)
{
	char map[256][3];
	unsigned char len[256];
	byte_map(map, len);
	out->soff = malloc(((size_t)m->n_tokens + 1) * sizeof *out->soff);
	if (!out->soff)
		return err_set("out of memory");
	for (int id = 0; id < m->n_tokens; id++) {
		size_t n;
		const char *t = bpe_model_token(m, id, &n);
		out->soff[id] = out->s.n;
		for (size_t i = 0; i < n; i++)
			sb_put(&out->s, map[(unsigned char)t[i]], len[(unsigned char)t[i]]);
		sb_put(&out->s, "", 1);
	}
	if (out->s.oom)
		return err_set("out of memory");
	return 0;
}

#define TOK(mp, id) ((mp)->s.p + (mp)->soff[id])

static void json_vocab(struct strbuf *b, const struct bpe_model *m, const struct mapped *mp,
		       const char *indent)
{
	sb_puts(b, "{\n");
	for (int id = 0; id < m->n_tokens; id++) {
		sb_puts(b, indent);
		sb_json(b, TOK(mp, id), strlen(TOK(mp, id)));
		sb_printf(b, ": %d%s\n", id, id + 1 < m->n_tokens ? "," : "");
	}
}

/* Hugging Face tokenizer.json, laid out as `tokenizers` saves it (pretty). The
 * normalizer is null because training counts the text as it is, without NFC:
 * an NFC normalizer would encode text differently from what was counted. */
static void json_tokenizer(struct strbuf *b, const struct bpe_model *m, const struct mapped *mp,
			   const char *const *specials, const bool *special, int n_specials)
{
	static const char bytelevel[] = "\"add_prefix_space\": false, \"trim_offsets\": false, "
					"\"use_regex\": false";
	sb_puts(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
		   "  \"added_tokens\": [");
	for (int k = 0; k < n_specials; k++) {
		sb_printf(b, "%s\n    {\n      \"id\": %d,\n      \"content\": ", k ? "," : "",
			  m->n_tokens + k);
		sb_json(b, specials[k], strlen(specials[k]));
		sb_puts(b, ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
			   "      \"rstrip\": false,\n      \"normalized\": false,\n"
			   "      \"special\": ");
		sb_puts(b, !special || special[k] ? "true\n    }" : "false\n    }");
	}
	sb_puts(b, n_specials ? "\n  ],\n" : "],\n");
	sb_puts(b, "  \"normalizer\": null,\n  \"pre_tokenizer\": {\n"
		   "    \"type\": \"Sequence\",\n    \"pretokenizers\": [\n"
		   "      {\"type\": \"Split\", \"pattern\": {\"Regex\": ");
	sb_json(b, pretok_qwen2_regex, strlen(pretok_qwen2_regex));
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
	json_vocab(b, m, mp, "      ");
	sb_puts(b, "    },\n    \"merges\": [");
	for (int i = 0; i < m->n_merges; i++) {
		const char *x = TOK(mp, m->merges[i][0]), *y = TOK(mp, m->merges[i][1]);
		sb_puts(b, i ? ",\n      [" : "\n      [");
		sb_json(b, x, strlen(x));
		sb_puts(b, ", ");
		sb_json(b, y, strlen(y));
		sb_puts(b, "]");
	}
	sb_puts(b, m->n_merges ? "\n    ]\n  }\n}\n" : "]\n  }\n}\n");
}

static int write_file(const char *dir, const char *name, const struct strbuf *b)
{
	if (b->oom)
		return err_set("%s: out of memory", name);
	char *path = fio_join(dir, name);
	if (!path)
		return err_set("out of memory");
	int rc = fio_write_atomic(path, b->p ? b->p : "", b->n, 0644, 0);
	free(path);
	return rc;
}

int bpe_write(const struct bpe_model *m, const char *const *specials, const bool *special,
	      int n_specials, const char *dir)
{
	struct mapped mp = {{0}, NULL};
	struct strbuf b = {0};
	int rc = -1;
	if (map_tokens(m, &mp) < 0)
		goto out;
	/* `tokenizers` would give such a special the vocabulary's id, not its own */
	for (int k = 0; k < n_specials; k++)
		for (int id = 0; id < m->n_tokens; id++)
			if (!strcmp(specials[k], TOK(&mp, id))) {
				err_set("special token '%s' is also the learned token %d",
					specials[k], id);
				goto out;
			}
	json_tokenizer(&b, m, &mp, specials, special, n_specials);
	if (write_file(dir, "tokenizer.json", &b) < 0)
		goto out;
	b.n = 0;
	json_vocab(&b, m, &mp, "  ");
	sb_puts(&b, "}\n");
	if (write_file(dir, "vocab.json", &b) < 0)
		goto out;
	b.n = 0;
	sb_puts(&b, "#version: 0.2\n");
	for (int i = 0; i < m->n_merges; i++) {
		sb_puts(&b, TOK(&mp, m->merges[i][0]));
		sb_puts(&b, " ");
		sb_puts(&b, TOK(&mp, m->merges[i][1]));
		sb_puts(&b, "\n");
	}
	rc = write_file(dir, "merges.txt", &b);
out:
	free(b.p);
	free(mp.s.p);
	free(mp.soff);
	return rc;
}
