/* outfile.h — the check of a command's output file against its model's own files. */
#ifndef QWENCHAT_CLI_OUTFILE_H
#define QWENCHAT_CLI_OUTFILE_H

#include <stdbool.h>

/* 0 when out may be replaced: nothing there, a regular file or a link (the link is
 * replaced, never written through), and none of the files the model is read from (or a
 * link or hard link to one): renaming over those destroyed the model and exited 0. A
 * device or a FIFO is refused, as fio_write_atomic refuses them: --out /dev/null as root
 * replaced /dev/null with a regular file. model: the model's directory, or its GGUF file
 * (gguf). -1 and a message naming out otherwise. */
int cli_check_out(const char *out, const char *model, bool gguf);

#endif
