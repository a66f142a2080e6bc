/* bpe_write.c — a trained BPE written as Hugging Face tokenizer.json and as the
 * GPT-2 pair vocab.json + merges.txt, every file replaced atomically. */
#include "tokenizer/bpe_write.h"

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/strbuf.h"
#include "tokenizer/tokjson.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Every token's mapped string, NUL-separated in one buffer, and the lists
 * tokjson.h writes: the vocabulary (id order) and the merges. */
struct mapped {
	struct strbuf s;
	size_t *soff;
	struct tokjson_token *vocab;
	struct tokjson_merge *merges;
};

#define TOK(mp, id) ((mp)->s.p + (mp)->soff[id])

static int map_tokens(const struct bpe_model *m, struct mapped *out)
{
	char map[256][3];
	unsigned char len[256];
	byte_map(map, len);
	out->soff = malloc(((size_t)m->n_tokens + 1) * sizeof *out->soff);
	out->vocab = malloc(((size_t)m->n_tokens + 1) * sizeof *out->vocab);
	out->merges = malloc(((size_t)m->n_merges + 1) * sizeof *out->merges);
	if (!out->soff || !out->vocab || !out->merges)
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
	for (int id = 0; id < m->n_tokens; id++)
		out->vocab[id] = (struct tokjson_token){TOK(out, id), strlen(TOK(out, id)), id, false};
	for (int i = 0; i < m->n_merges; i++)
		out->merges[i] = (struct tokjson_merge){out->vocab[m->merges[i][0]].s,
							out->vocab[m->merges[i][1]].s,
							out->vocab[m->merges[i][0]].n,
							out->vocab[m->merges[i][1]].n};
	return 0;
}

/* tokenizer.json: the specials follow the last merge's id, in the order given. The
 * normalizer is null because training counts the text as it is, without NFC: an NFC
 * normalizer would encode text differently from what was counted. */
static int json_tokenizer(struct strbuf *b, const struct bpe_model *m, const struct mapped *mp,
			  const char *const *specials, const bool *special, int n_specials)
{
	struct tokjson_token *added = malloc(((size_t)n_specials + 1) * sizeof *added);
	if (!added)
		return err_set("out of memory");
	for (int k = 0; k < n_specials; k++)
		added[k] = (struct tokjson_token){specials[k], strlen(specials[k]), m->n_tokens + k,
						  !special || special[k]};
	struct tokjson j = {mp->vocab,	(size_t)m->n_tokens, mp->merges, (size_t)m->n_merges,
			    added,	(size_t)n_specials, false};
	tokjson_write(b, &j);
	free(added);
	return 0;
}

static int write_file(const char *dir, const char *name, const struct strbuf *b)
{
	if (b->oom)
		return err_set("%s: out of memory", name);
	char *path = fio_join(dir, name);
	if (!path)
		return err_set("out of memory");
	int rc = fio_write_atomic(path, b->p ? b->p : "", b->n, 0600, 0);
	free(path);
	return rc;
}

int bpe_write(const struct bpe_model *m, const char *const *specials, const bool *special,
	      int n_specials, const char *dir)
{
	struct mapped mp = {{0}, NULL, NULL, NULL};
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
	if (json_tokenizer(&b, m, &mp, specials, special, n_specials) < 0 ||
	    write_file(dir, "tokenizer.json", &b) < 0)
		goto out;
	b.n = 0;
	tokjson_vocab(&b, mp.vocab, (size_t)m->n_tokens, "  ");
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
	free(mp.vocab);
	free(mp.merges);
	return rc;
}
