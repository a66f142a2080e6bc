/* app.h — the chat controller shared by the curses UI and the plain line mode:
 * model, tokenizer, engine, session and sampler; the conversation; the effect of
 * every slash command; autosave to the state directory; an optional worker thread
 * that generates while the caller's thread stays free. No terminal I/O here. */
#ifndef QWENCHAT_APP_H
#define QWENCHAT_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"
#include "src/chat/chat.h"
#include "src/hub/hub.h"
#include "src/remote/remote.h"
#include "src/session/sampler.h"
#include "src/session/session.h"
#include "src/app/slash.h"

struct app_config {
	const char *model;           /* directory or repo id (hub_resolve); NULL: the default */
	const struct hub_env *hub;   /* where models are found */
	struct eng_options engine;   /* backend, threads, context, ... */
	struct samp_params sampling; /* the user's sampling settings ... */
	unsigned sampling_set;       /* ... those whose SAMP_SET_* bit is set */
	int max_new;                 /* new tokens per answer; 0: the default */
	/* 1: thinking on, 0: off; -1: not given: on, or what a resumed conversation was
	 * held with */
	int think;
	bool seed_drawn;    /* sampling.seed was drawn at random, not given */
	const char *system; /* system prompt for a new conversation, or NULL */
	bool parse_special; /* special tokens in messages are control tokens */
	/* Reopen the last session file, with the model, thinking and sampling choices it
	 * records where this config gives none (a different model is said aloud). */
	bool resume;
	const char *state_dir; /* where conversations are saved (created 0700) */
	const char *home;      /* the home directory, for ~/ in /save and /load; or NULL */
	/* The remote backend when remote.url is set: the conversation goes to that
	 * OpenAI-compatible server, model names a model it serves (NULL: the only one),
	 * engine and hub are not used. */
	struct remote_options remote;
	/* Told of each wait for a busy server (429, 503), from the thread running the
	 * turn (the plain mode prints it); NULL: the figures alone say it, and the
	 * waits while the model is picked go to app_open's notices. */
	void (*busy_notice)(const char *msg);
};

/* What a slash command asks of the front end, besides its message. */
enum {
	APP_DO_QUIT = 1 << 0,      /* leave */
	APP_DO_GENERATE = 1 << 1,  /* run a turn now (/retry) */
	APP_DO_RELOAD = 1 << 2,    /* the conversation changed: redraw it */
	APP_DO_EDIT = 1 << 3,      /* put app_result.edit into the input line */
	APP_DO_DEBUG = 1 << 4,     /* debug pane: see app_result.debug */
	APP_DO_REASONING = 1 << 5, /* reasoning shown/hidden changed */
	APP_DO_HELP = 1 << 6,      /* show the help (message holds the command list) */
	APP_DO_COPY = 1 << 7,      /* put app_result.copy on the terminal's clipboard */
	APP_DO_REPAINT = 1 << 8,   /* /save wrote to a device (the terminal?): repaint all */
};

struct app_result {
	unsigned actions; /* APP_DO_* */
	bool error;       /* the message is an error */
	char msg[4096];   /* what to show ("" = nothing) */
	char *edit;       /* APP_DO_EDIT: malloc'd text for the input line */
	char *copy;       /* APP_DO_COPY: malloc'd text for the clipboard */
	int debug;        /* APP_DO_DEBUG: -1 toggle, 0 off, 1 attention, 2 memory */
};

/* Where the memory goes, for the status bar and the debug pane (bytes). */
struct app_memory {
	size_t weights;                   /* the backend's: mapped (CPU) or uploaded (GPU) */
	size_t weights_in_memory;         /* of those mapped, the pages in memory (CPU) */
	size_t embedding, lm_head;        /* by component, from the parameter counts */
	bool tied;                        /* lm_head is the embedding */
	size_t attention, mlp, norms;     /* all layers */
	size_t kv_used, kv_allocated;     /* the whole KV cache */
	size_t kv_in_memory;              /* its pages touched so far (CPU: grows with use) */
	int layers;                       /* for the per-layer KV figures */
	size_t scratch, graphs;           /* activations; CUDA graphs (0 on the CPU) */
	size_t device_free, device_total; /* GPU memory (0 without a GPU) */
	size_t host_rss;                  /* this process's resident set */
	char weight_type[32];             /* "BF16", or the most common type of a GGUF */
};

/* Live figures for the status bar and debug pane; copied under the app's lock. */
struct app_figures {
	bool busy;              /* a turn is running */
	bool prefilling;        /* ... and has not produced a token yet */
	struct sess_stats turn; /* the current or last turn */
	int ctx_used, ctx_max;
	bool no_counts; /* a server sent no token counts (usage): ctx_used, prefill unknown */
	struct app_memory mem;
	char save_error[256]; /* last autosave failure, "" when the last one worked */
	int dropped;          /* turns dropped for context on the last turn */
	bool dropped_more;    /* ... more than the last turn that dropped any told of */
	/* The last wait for a busy server (remote) in this turn, else ""; waits counts
	 * them all, so that a front end tells each once. */
	char waiting[1024];
	unsigned waits;
};

/* The attention of the last generated token in one layer: every head's row. */
struct app_attention {
	int layer, layers, heads, len; /* len: keys attended */
	float *rows;                   /* (heads, len), malloc'd */
	int32_t *ids;                  /* (len) the context's ids */
};

struct app;

/* The conversation file the last session in state_dir wrote (its path, malloc'd,
 * from state_dir/last-session). NULL with err_set when there is none, or when
 * last-session or the file it names is not a regular file (a FIFO would block). */
char *app_last_session(const char *state_dir);

/* The server the last conversation in state_dir was held on (malloc'd), or NULL (none,
 * or held on the local engine): --resume goes back to it. */
char *app_resume_url(const char *state_dir);

/* Opens the model (hub_resolve), the tokenizer, the engine on the backend asked for,
 * the session and the sampler; starts a new conversation or (cfg->resume) loads the
 * last one. notice (may be NULL) receives one-line notices (backend fallback, template
 * warning, resumed file). With the remote backend it asks the server for its models
 * instead and checks the one named. NULL with err_set on failure. */
struct app *app_open(const struct app_config *cfg, void (*notice)(const char *msg));
void app_free(struct app *a);

/* Read-only while no turn runs. */
const struct chat *app_chat(const struct app *a);
const char *app_model_name(const struct app *a);
const char *app_backend(const struct app *a);
bool app_thinking(const struct app *a);
bool app_show_reasoning(const struct app *a);
/* What /think show|hide set, changed from the full-screen chat (Tab unfolds). */
void app_set_show_reasoning(struct app *a, bool show);
const char *app_session_path(const struct app *a);
/* The server's URL with the remote backend (the model runs there: no attention or
 * memory figures here), else NULL. */
const char *app_remote_url(const struct app *a);
/* A token's text for one line of a debug pane, into out (sz bytes): well-formed
 * UTF-8 as it is, newlines and tabs as \n and \t, other control characters as \xNN
 * (C1: \u00NN),
 * each ill-formed part (a byte-level token may hold part of a character) as U+FFFD as
 * the chat shows it; a text too long for out ends in "…". */
void app_token_text(const struct app *a, int32_t id, char *out, size_t sz);
const char *app_state_dir(const struct app *a);

/* Adds a user message after the last turn; the last message this run added and no
 * answer followed (stopped while it was prefilled) is replaced. 0 or -1 with err_set. */
int app_add_user(struct app *a, const char *text);
/* Whether app_add_user will replace the last turn. */
bool app_replaces_last(const struct app *a);

/* After a turn that refused the last message as too long for the context: takes it
 * back out of the conversation (as /edit does) and returns its text, malloc'd, to be
 * trimmed and sent again; NULL when the last turn refused nothing. */
char *app_take_refused(struct app *a);

/* Runs one turn synchronously for the conversation as it stands (its last turn must
 * be a user turn): fits the context, syncs the session, generates, appends the
 * assistant turn (also a partial one when stopped), autosaves. emit gets the pieces.
 * Stop it with app_cancel from another thread or a signal handler.
 * 0, or -1 with err_set (the conversation is then as before the turn). */
int app_turn(struct app *a, sess_emit_fn emit, void *user);

/* Prefills the conversation as loaded (after --resume or /load) so the next turn
 * costs only its own tokens. 0, 1 cancelled, -1 error. */
int app_prefill(struct app *a);

/* Asks the running turn to stop (async-signal-safe). */
void app_cancel(struct app *a);

/* Parses and runs a line starting with '/'. */
void app_command(struct app *a, const char *line, struct app_result *r);

/* Why the last /save wrote nothing ("/save: FILE: ..."), or "" when it wrote its file
 * or none was asked for. */
const char *app_save_failed(const struct app *a);

/* Saves the conversation to the session file now (also done after every turn).
 * 0 or -1 (the error is in app_figures.save_error and err_msg). */
int app_autosave(struct app *a);

/* Before /clear or /load replaces the conversation: the one saved so far stays whole
 * in its file (*left: that path, malloc'd, for the notice; NULL when nothing was
 * saved yet) and autosaves go to a new file from now on. 0, or -1 with err_set. */
int app_new_session(struct app *a, char **left);

/* --- worker thread (the curses UI) ---------------------------------------- */

/* Starts app_turn (prefill_only: app_prefill) on a worker thread; its pieces are
 * queued for app_drain. -1 when one is already running. */
int app_start(struct app *a, bool prefill_only);
/* Takes the queued text: calls piece() for each run of one part, in order. Returns
 * true when the worker has finished (joined; *rc gets app_turn's result and
 * err gets its message). */
bool app_drain(struct app *a, void (*piece)(void *u, enum sess_part p, const char *s, size_t n),
	       void *u, int *rc, char *err, size_t errsz);
bool app_busy(const struct app *a);
/* Busy with a prefill alone (app_start's prefill_only), no answer under way. */
bool app_busy_prefilling(const struct app *a);
void app_figures(struct app *a, struct app_figures *f);

/* The token probabilities view: each token of the last answer with its probability
 * in the distribution the sampler drew from (after penalties, temperature and the
 * top-k/top-p/min-p cut) and in the plain softmax of the logits, and the most likely
 * alternatives of each. */
#define APP_PROB_TOP 5
struct app_prob_alt {
	int32_t id;
	char text[48]; /* quoted, as app_token_text writes it */
	float p;
};
struct app_token_prob {
	int32_t id;
	char text[48];
	float p, p_raw;
	int n_top, n_top_raw;
	struct app_prob_alt top[APP_PROB_TOP], top_raw[APP_PROB_TOP];
};
/* Records them from the next answer on (every token is then sampled on the host). */
void app_set_probs(struct app *a, bool on);
/* Copies up to max entries from index first; returns how many the answer has. */
int app_token_probs(struct app *a, struct app_token_prob *out, int first, int max);

/* Debug pane: capture attention while on; app_attention copies the last captured
 * layer (clamped) under the lock. 0, or -1 when nothing was captured yet. */
void app_set_capture(struct app *a, bool on);
int app_attention(struct app *a, int layer, struct app_attention *out);
void app_attention_free(struct app_attention *at);

#endif
