/* env.h — the environment, read in one place: the layers below get its values as
 * settings (DESIGN.md: nothing outside the command line reads the environment). */
#ifndef QWENCHAT_CLI_ENV_H
#define QWENCHAT_CLI_ENV_H

#include "src/hub/hub.h"

/* huggingface_hub's variables (HF_HUB_CACHE, HF_HOME, HF_ENDPOINT, HF_TOKEN,
 * HF_HUB_OFFLINE, ...), QWENCHAT_MODEL and QWENCHAT_DOWNLOAD_ATTEMPTS. The strings
 * point into the environment. */
void cli_env_hub(struct hub_env *h);

/* Where the chat saves conversations: $XDG_STATE_HOME/qwenchat, else
 * ~/.local/state/qwenchat (./.local/state/qwenchat without a home). Malloc'd; NULL
 * when out of memory. */
char *cli_env_state_dir(void);

/* $HOME, or NULL when unset or empty. */
const char *cli_env_home(void);

#endif
