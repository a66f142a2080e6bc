/* env.h — the environment, read in one place: the layers below get its values as
 * settings (docs/architecture.md: nothing outside the command line reads the environment). */
#ifndef QWENCHAT_CLI_ENV_H
#define QWENCHAT_CLI_ENV_H

#include "engine/engine.h"
#include "src/hub/hub.h"

/* huggingface_hub's variables (HF_HUB_CACHE, HF_HOME, HF_ENDPOINT, HF_TOKEN,
 * HF_HUB_OFFLINE, ...), QWENCHAT_MODEL and QWENCHAT_DOWNLOAD_ATTEMPTS. The strings
 * point into the environment. */
void cli_env_hub(struct hub_env *h);

/* Where the chat saves conversations: $XDG_STATE_HOME/qwenchat, else
 * ~/.local/state/qwenchat (./.local/state/qwenchat without a home). Malloc'd; NULL
 * when out of memory. */
char *cli_env_state_dir(void);
/* XDG_STATE_HOME when it is set to a relative path, which cli_env_state_dir ignores (as
 * the XDG spec says), or NULL: worth a notice, the files are not where it says. */
const char *cli_env_state_home_ignored(void);

/* The official OpenAI clients' variables, for the remote backend: $OPENAI_API_KEY
 * (the server's key) and $OPENAI_BASE_URL (its API base); NULL when unset or empty. */
const char *cli_env_openai_api_key(void);
const char *cli_env_openai_base_url(void);

/* The engine's knobs from the environment, into o: QWENCHAT_CPU_ISA (a kernel set),
 * QWENCHAT_CPU_BF16_PREFILL=1, QWENCHAT_CUDA_GRAPH=0, QWENCHAT_CUDA_SAMPLE=0,
 * QWENCHAT_CUDA_MODULE (the CUDA module's path). 0, or -1
 * with err_set naming the variable and its bad value. */
int cli_env_engine(struct eng_options *o);
/* QWENCHAT_CPU_BF16_PREFILL alone into *fast (left as it is when unset): `logits`
 * takes the exact path unless this asks for the fast one. 0 or -1 (err_set). */
int cli_env_fast_prefill(bool *fast);

/* QWENCHAT_CUDA_TRAIN_ATTN: "tiled" or "materialised" (the default) into *tiled: the
 * CUDA trainer's attention kernels (eng_train_options.cuda_tiled_attention). 0 or -1
 * (err_set naming the variable and its bad value). */
int cli_env_train_attention(bool *tiled);

/* $HOME, or NULL when unset or empty. */
const char *cli_env_home(void);

/* $TERM (the terminal's type, for its terminfo entry), or NULL when unset or empty. */
const char *cli_env_term(void);

/* $NO_COLOR is set and not empty (no-color.org): output without colours. */
bool cli_env_no_color(void);

#endif
