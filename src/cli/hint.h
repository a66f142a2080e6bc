/* hint.h — what an unknown option or argument probably meant: another tool's spelling
 * of an option (llama.cpp's -c, ollama's num_ctx, Python's --top_k), or a command
 * named after options, where it is taken for the chat's argument. */
#ifndef QWENCHAT_HINT_H
#define QWENCHAT_HINT_H

#include <getopt.h>
#include <stddef.h>

/* The command names, for hint_misplaced_command (main sets them once). */
void hint_commands(const char *const *names, size_t n);

/* For an unknown option arg ("-c", "--ctx-size=4", "--top_k"): the option of the table
 * lo it likely means ("--ctx"), or NULL. */
const char *hint_option(const struct option *lo, const char *arg);

/* The first word of argv[1..argc) that names a command, not as an option's value (by
 * the option table lo), or NULL: "qwenchat -m M run -p x" parses as the chat's
 * options, and the command must come first. */
const char *hint_misplaced_command(const struct option *lo, int argc, char **argv);

#endif
