/* tokenizer.h — Qwen3 byte-level BPE: load tokenizer.json, encode, decode, stream.
 * The tokenizer knows nothing about tensors. */
#ifndef QWENCHAT_TOKENIZER_H
#define QWENCHAT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tok;

/* Loads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json.
 * NULL on error (err_set names the file and the field). A directory whose files
 * `qwenchat train-bpe` is putting in place (TOK_PLACING there) is refused: it may
 * hold some of the new files beside the old. */
struct tok *tok_load(const char *dir);
#define TOK_PLACING ".train-bpe.new/PLACING"

/* The same from explicit paths; config_path may be NULL. */
struct tok *tok_load_files(const char *tokenizer_json, const char *config_path);

/* tokenizer.json's "normalizer" value v into *nfc: NFC alone or as a Sequence of one;
 * null or an empty Sequence is none. Any other is refused (err_set naming file). */
struct json_t;
int tok_read_normalizer(struct json_t *v, bool *nfc, const char *file);

/* DIR/chat_template.jinja, where transformers (4.47 on) saves a chat template and
 * which it prefers to tokenizer_config.json's chat_template (tok_load does too): its
 * text, or NULL, with *missing true when there is none, else err_set. */
char *tok_read_template_file(const char *dir, bool *missing);
void tok_free(struct tok *t);

/* A tokenizer given as lists in memory (a GGUF file's tokenizer.ggml.tokens,
 * token_type and merges) instead of tokenizer.json. Built by the same code, it gives
 * the same ids as the tokenizer.json it was converted from. */
enum tok_kind {
	TOK_NORMAL,  /* a vocabulary token, in the byte-level alphabet */
	TOK_SPECIAL, /* an added token marked special (<|im_end|>) */
	TOK_ADDED,   /* an added token that is not special (<think>) */
	TOK_UNUSED,  /* no token (padding of the embedding): skipped */
};
struct tok_vocab {
	const char *name;                      /* the file, for messages */
	const char *tokens_key, *merges_key;   /* the fields, for messages */
	size_t n_tokens;                       /* ids 0..n_tokens-1 */
	const char *const *tokens;             /* (n_tokens) texts, not NUL-terminated */
	const size_t *token_len;               /* (n_tokens) */
	const unsigned char *kinds;            /* (n_tokens) enum tok_kind */
	size_t n_merges;                       /* in rank order */
	const char *const *merges;             /* (n_merges) "left right" */
	const size_t *merge_len;               /* (n_merges) */
	bool nfc;                              /* NFC normalizer (Qwen2's) or none */
	const char *chat_template, *eos, *pad; /* NUL-terminated; may be NULL */
};
/* NULL on error (err_set names v->name and the field). */
struct tok *tok_from_vocab(const struct tok_vocab *v);
/* The tokenizer.json (Hugging Face format) these lists were converted from: the
 * normal tokens as model.vocab, the merges, the special and added tokens as
 * added_tokens, the NFC normalizer when v->nfc; loaded, it gives the ids
 * tok_from_vocab(v) gives. Malloc'd, NUL-terminated, *len bytes; NULL on error
 * (err_set names v->name and the field). Check the lists with tok_from_vocab first. */
char *tok_vocab_json(const struct tok_vocab *v, size_t *len);

/* Number of ids (base vocabulary plus added tokens: max id + 1). */
int tok_vocab_size(const struct tok *t);

/* Encodes bytes (not necessarily valid UTF-8) the way Hugging Face `tokenizers`
 * does for Qwen3 with add_special_tokens=false: added tokens split out first,
 * NFC, the Qwen2 pre-tokenizer, byte-level BPE. Returns a malloc'd array of *n
 * ids, or NULL on error. Threads may share one struct tok: its encodes take turns
 * (they share a cache of pieces), and the const functions below never wait. */
int32_t *tok_encode(struct tok *t, const char *text, size_t len, size_t *n);

/* The special tokens a post-processor puts around a text, as Hugging Face's
 * add_special_tokens=True adds them: ids[0] before it, ids[1] after it (Qwen3-Embedding
 * appends <|endoftext|>; Qwen3's chat models add none). */
enum { TOK_MAX_ENDS = 8 };
struct tok_ends {
	int32_t ids[2][TOK_MAX_ENDS];
	int n[2];
};
/* tokenizer.json's "post_processor" value v into *out: ByteLevel or null (none), a
 * TemplateProcessing whose "single" template is special tokens around the text ($A),
 * or a Sequence of those. -1 with err_set naming file and the field at fault. */
int tok_parse_ends(struct json_t *v, const char *file, struct tok_ends *out);
/* The tokenizer's (read from tokenizer.json, or set). */
const struct tok_ends *tok_get_ends(const struct tok *t);
/* Sets them (a GGUF's add_bos_token and add_eos_token): -1 with err_set for an id not
 * in the vocabulary. */
int tok_set_ends(struct tok *t, const struct tok_ends *e);
/* tok_encode with those tokens around the text. */
int32_t *tok_encode_ends(struct tok *t, const char *text, size_t len, size_t *n);

/* A byte range [start, end) of a text. */
struct tok_span {
	size_t start, end;
};
/* tok_encode, except that within the `literal` spans (sorted, not overlapping) the
 * special added tokens (<|im_start|>, <|im_end|>, ...) are plain text, as Hugging
 * Face's split_special_tokens=True makes them everywhere; the non-special ones
 * (<think>, <tool_call>) stay tokens, as there. For a chat: what the user typed is
 * literal, the template's own markers around it are not. */
int32_t *tok_encode_literal(struct tok *t, const char *text, size_t len,
			    const struct tok_span *literal, size_t n_literal, size_t *n);

/* Decodes ids to a malloc'd NUL-terminated byte string (*len bytes, may hold
 * invalid UTF-8 if the ids do). skip_special drops tokens marked special.
 * NULL on error (an id out of range). */
char *tok_decode(const struct tok *t, const int32_t *ids, size_t n, bool skip_special, size_t *len);

/* The id of a token given its exact content (e.g. "<|im_end|>"), or -1. */
int tok_id(const struct tok *t, const char *content);
/* The decoded bytes of one id (*len bytes), or NULL when out of range. */
const char *tok_piece(const struct tok *t, int32_t id, size_t *len);
/* One id as tokenizer.json spells it (transformers' convert_ids_to_tokens): an added
 * token's content, any other token's bytes in GPT-2's byte-level alphabet ("Ġworld").
 * Malloc'd, NUL-terminated, *len bytes; NULL when out of range (or out of memory). */
char *tok_spelling(const struct tok *t, int32_t id, size_t *len);
/* True for added tokens marked special in tokenizer.json. */
bool tok_is_special(const struct tok *t, int32_t id);
/* True for any added token (special or not, e.g. <think>). */
bool tok_is_added(const struct tok *t, int32_t id);

/* From tokenizer_config.json; NULL when absent. */
const char *tok_chat_template(const struct tok *t);
const char *tok_eos_token(const struct tok *t);
const char *tok_pad_token(const struct tok *t);

/* Streaming decode: feed one id at a time, get back only complete UTF-8
 * characters; a partial sequence is held until a later token completes it. */
struct tok_stream;
struct tok_stream *tok_stream_new(const struct tok *t, bool skip_special);
void tok_stream_free(struct tok_stream *s);
/* Returns the bytes now complete (*len, possibly 0), valid until the next call.
 * NULL on error (id out of range). */
const char *tok_stream_push(struct tok_stream *s, int32_t id, size_t *len);
/* Returns whatever is held back (an incomplete sequence at end of stream). */
const char *tok_stream_flush(struct tok_stream *s, size_t *len);

#endif
