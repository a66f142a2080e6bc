/* commands.h — one entry point per subcommand; main.c dispatches to them.
 * Each takes the arguments after the command name (argv[0] is the command)
 * and returns the exit status: EXIT_OK, EXIT_RUNTIME or EXIT_USAGE (cli.h). */
#ifndef QWENCHAT_COMMANDS_H
#define QWENCHAT_COMMANDS_H

int cmd_chat(int argc, char **argv);       /* cmd_chat.c: the interactive UI */
int cmd_run(int argc, char **argv);        /* cmd_run.c */
int cmd_template(int argc, char **argv);   /* cmd_template.c */
int cmd_tokenize(int argc, char **argv);   /* cmd_tokenize.c */
int cmd_detokenize(int argc, char **argv); /* cmd_tokenize.c */
int cmd_train_bpe(int argc, char **argv);  /* cmd_train_bpe.c */
int cmd_logits(int argc, char **argv);      /* cmd_logits.c */
int cmd_embed(int argc, char **argv);       /* cmd_embed.c */
int cmd_bench(int argc, char **argv);       /* cmd_bench.c */
int cmd_info(int argc, char **argv);       /* cmd_info.c */
int cmd_pull(int argc, char **argv);       /* cmd_hub.c */
int cmd_list(int argc, char **argv);       /* cmd_hub.c */
int cmd_serve(int argc, char **argv);      /* cmd_serve.c */
int cmd_quantize(int argc, char **argv);   /* cmd_quantize.c */
int cmd_perplexity(int argc, char **argv); /* cmd_perplexity.c */
int cmd_train(int argc, char **argv);      /* cmd_train.c */

#endif
