/* app_state.h — the chat controller's state, shared by the controller's own files
 * (src/app/app*.c) only: the UI and the command line know it through app.h alone. */
#ifndef QWENCHAT_APP_STATE_H
#define QWENCHAT_APP_STATE_H

#include "src/app/app.h"
#include "src/base/err.h"
#include "src/chat/template.h"

struct app_buf {
	char *s;
	size_t n, cap;
};

/* A run of queued text of one part. */
struct app_seg {
	enum sess_part part;
	size_t len;
};

struct js_schema;

struct app {
	char *dir, *model_name, *state_dir, *home, *session_path;
	char *held_model; /* the local model as --resume reopens it (app_held_model) */
	bool seed_drawn;  /* the seed was drawn for this run, not chosen: not recorded */
	int lock_fd;      /* holds session_path's lock (another qwenchat resumes into a copy) */
	struct eng_model *model;
	struct eng *eng;
	struct tok *tok;
	struct sess *sess;
	struct samp *samp;
	struct samp_params params;
	struct samp_params model_params; /* the model's own (generation_config.json) */
	unsigned user_set; /* SAMP_SET_* bits the user chose (presets leave them) */
	int32_t eos[SAMP_MAX_EOS];
	int n_eos;
	enum tmpl_variant variant;
	bool think, show_reasoning;
	bool parse_special; /* special tokens in messages are tokens, not text (/special) */
	bool json;          /* each answer is one JSON object (/json) */
	struct js_schema *any_object; /* ... the schema that holds it, once made, */
	struct js_schema *schema;     /* ... or /json FILE's, compiled, */
	struct json_t *schema_json;   /* ... and as written (the remote backend sends it) */
	int max_new;
	bool max_new_set;      /* -n given: the remote backend sends it as max_tokens */
	struct remote *remote; /* the remote backend, or NULL: the local engine */
	void (*busy_notice)(const char *msg); /* app_config's */
	void (*open_notice)(const char *msg); /* app_open's, while the model is picked */
	struct chat *chat;
	/* The last user message is this run's own, not answered yet (stopped while it
	 * was prefilled): the next one replaces it. One that came with a loaded or
	 * resumed conversation stays. */
	bool own_unanswered;
	/* The last /save could not write its file (the reason), "" otherwise: the chat
	 * ends with status 1 unless a later /save writes one. */
	char save_failed[300];
	bool session_unsaved; /* the last autosave did not write the session file itself */
	bool saved_copy;      /* /save wrote the conversation as it is now */
	/* ... and the last turn refused it as too long for the context */
	bool refused;
	/* Turns the last turn's context fit left out (chat_render_fit), left out again
	 * so that the cache's start stays put; 0 after the conversation is replaced. */
	int fit_dropped;
	int dropped_told; /* the dropped turns the last notice counted (fig.dropped_more) */
	atomic_int cancel;
	struct app_buf reasoning, answer; /* the turn being generated */

	/* Everything below is shared with the worker thread: under lock. */
	pthread_mutex_t lock;
	struct app_figures fig;
	double first_token_time; /* monotonic seconds, for the live decode speed */
	double weights_checked;  /* when the weights' pages in memory were last counted */
	struct app_buf queue;    /* text not drained yet */
	struct app_seg *segs;
	size_t n_segs, cap_segs;
	bool capture;                 /* attention pane shown */
	bool answer_gone;             /* /undo, /clear...: the panes show nothing */
	int att_want;                 /* layer the pane shows */
	struct app_attention att;     /* last capture of that layer */
	bool probs_on;                /* the probabilities view is open */
	struct app_token_prob *probs; /* the last answer's tokens */
	size_t n_probs, cap_probs;

	pthread_t worker;
	bool worker_running, worker_prefill, worker_done;
	int worker_rc;
	char worker_err[ERR_MAX];
};

/* Copies the captured attention of layer a->att_want into a->att (lock held, engine
 * idle). */
void app_capture_layer(struct app *a);

/* app_held.c: what a saved conversation records of the chat it was held in, and
 * --resume's use of it. */
struct app_held {
	char *model, *url; /* NULL: not recorded */
	int think;         /* 1, 0, or -1: not recorded */
	int max_new;       /* 0: not recorded */
	struct samp_params sampling;
	unsigned sampling_set; /* the recorded fields of sampling */
};
/* -m as the record keeps it: a path made absolute, a repo id as it is (NULL: "").
 * malloc'd; NULL with err_set. */
char *app_held_model(const char *model);
/* Puts the record of the chat as it stands into a->chat->meta. 0 or -1. */
int app_held_record(struct app *a);
/* The resumed conversation's record (a->chat->meta) into h, and eff (a copy of cfg)
 * completed with it where the command line gave nothing: the model when the backend
 * is the same, thinking, -n, the sampling choices. A differing model is said through
 * notice. 0, or -1 with err_set naming the file and the field. */
int app_held_apply(const struct app *a, const struct app_config *cfg, struct app_config *eff,
		   struct app_held *h, void (*notice)(const char *));
void app_held_free(struct app_held *h);

/* app_session.c: the conversation's file (sessions/DATE-TIME-PID.json in the state
 * directory), locked while this chat holds it. */
/* A new conversation's file, named and locked: a->session_path, a->lock_fd. 0 or -1. */
int app_new_session_file(struct app *a);
/* --resume: the last conversation into a->chat, its file locked, or a copy's when
 * another qwenchat holds it; what was resumed is said through notice. 0 or -1. */
int app_resume_last(struct app *a, void (*notice)(const char *));
/* Lets go of a conversation file's lock held on fd. */
void app_release_lock(const char *path, int fd);

/* app_remote.c: the remote backend's side of app_open and app_turn. */
int app_remote_open(struct app *a, const struct app_config *cfg, void (*notice)(const char *));
int app_remote_turn(struct app *a, sess_emit_fn emit, void *user);
/* The SAMP_SET_* bits of the settings sent to the server: the user's, and with
 * thinking off the non-thinking preset's (as the local chat switches to it). */
unsigned app_remote_sent(const struct app *a);
/* app_probs.c: clears the record and sets the session's token hook for a turn. */
void app_probs_turn(struct app *a);
/* Adds text to a buffer; 0 or -1. */
int app_buf_add(struct app_buf *b, const char *s, size_t n);

/* The figures follow a conversation changed by a slash command (/clear, /load,
 * /edit, /undo, /system): the context is what it now takes, not the cache. kept_start:
 * only turns at its end went (/edit, /undo), so the turns left out of the context stay
 * out and the next turn reuses the cache; else the fit starts over. */
void app_conversation_changed(struct app *a, bool kept_start);

#endif
