/* sft.h — conversations as training data (`qwenchat train --sft`): files of them read
 * (JSON Lines of {"messages": [...]}, ShareGPT or Alpaca records, or a conversation
 * file as the chat saves it), each rendered with the chat template as the chat renders
 * it and tokenized as the chat tokenizes its prompt, every token marked by whether the
 * assistant wrote it. */
#ifndef QWENCHAT_SFT_H
#define QWENCHAT_SFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/chat/chat.h"
#include "src/chat/template.h"
#include "tokenizer/tokenizer.h"

/* The tokens of conversation c rendered whole (tmpl_render_answers: no generation
 * prompt) and, for each, scored[i] = 1 when it belongs to an answer: from just after
 * an assistant turn's "<|im_start|>assistant\n" through its "<|im_end|>", else 0 (the
 * context). The messages' text is literal, as in the chat (a "<|im_end|>" typed in a
 * message is text; the template's markers are the control tokens). Each answer is
 * tokenized on its own, cut from the text before it, as the chat's generation prompt
 * ends where the answer starts: this differs from tokenizing the whole text at once
 * only where an answer starts with white space holding a line break, which would
 * merge with the newline before it. *ids and *scored are malloc'd (*n of each). 0 or -1
 * (err_set). */
int sft_encode(struct tok *t, const struct chat *c, enum tmpl_variant v, int32_t **ids,
	       unsigned char **scored, size_t *n);

/* A conversation of training data: what chat_from_json reads (OpenAI's messages, a
 * conversation file), or a record of the other two shapes fine-tuning datasets come
 * in — ShareGPT's {"conversations": [{"from": "human", "value": ...}, {"from": "gpt",
 * ...}]} (speakers system, human/user, gpt/assistant/model, tool/observation; or
 * role/content turns under that key) and Alpaca's {"instruction", "input", "output"
 * [, "system"]} (a user message of the instruction, and the input after a blank line;
 * the answer) — with its "tools" array. NULL with err_set starting with where. */
struct chat *sft_chat_from_json(const char *text, size_t len, const char *where);
/* The same on a parsed value (root is not taken). */
struct chat *sft_chat_from_value(struct json_t *root, const char *where);

/* Reads path and calls fn for each conversation in it, in order: every non-blank line
 * of a JSON Lines file (where = "FILE:LINE"), the whole file, a conversation as the
 * chat saves it (where = "FILE"), or in a plain text file (named *.txt or *.md) each
 * pair of consecutive paragraphs, a user message and the assistant's answer (where =
 * "FILE:LINE" of the answer; ill-formed UTF-8 becomes U+FFFD, a NUL byte or more than
 * 1% of ill-formed bytes is refused). Each is what sft_chat_from_json accepts: an
 * array of messages, an object with "messages" (and "tools"), a ShareGPT or an Alpaca
 * record. fn owns nothing it is given;
 * a nonzero return stops the reading and is returned (its err_set kept). 0, or -1
 * with err_set naming the file and line ("conv.jsonl:3: messages[2].role: missing or
 * not a string"). */
int sft_read_file(const char *path, int (*fn)(void *user, const struct chat *c, const char *where),
		  void *user);
/* The same on a file's text[0..len), already read; path names it. */
int sft_read_text(const char *path, const char *text, size_t len,
		  int (*fn)(void *user, const struct chat *c, const char *where), void *user);

#endif
