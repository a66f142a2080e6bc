/* hub.h — turning a -m argument into a model directory: an existing directory,
 * the Hugging Face cache, or a download from the Hub. */
#ifndef QWENCHAT_HUB_H
#define QWENCHAT_HUB_H

/* Resolves MODEL (a directory, or a repo id "Org/Name[@rev]"; NULL means
 * $QWENCHAT_MODEL, else "Qwen/Qwen3-0.6B") to a malloc'd directory path.
 * NULL on error (err_set says what was tried). */
char *hub_resolve(const char *model);

#endif
