/* app_slash.c — what each slash command does to the conversation and the settings,
 * and the attention capture for the debug pane. */
#include "src/app/app.h"
#include "src/app/app_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/base/err.h"
#include "src/base/fileio.h"
#include "src/base/jsonschema.h"
#include "src/base/mdfence.h"
#include "src/base/units.h"

static void say(struct app_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct app_result *r, const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(r->msg);
	va_start(ap, fmt);
	vsnprintf(r->msg + n, sizeof r->msg - n, fmt, ap);
	va_end(ap);
}

static void fail(struct app_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct app_result *r, const char *fmt, ...)
{
	va_list ap;
	r->error = true;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof r->msg, fmt, ap);
	va_end(ap);
}

/* The remote backend sends only what the user chose (and, thinking off, the
 * non-thinking preset): the server's own defaults stand for the rest. */
static void show_remote_sampling(struct app *a, struct app_result *r)
{
	const struct samp_params *p = &a->params;
	unsigned s = app_remote_sent(a);
	say(r, "sent to the server:");
	if (s & SAMP_SET_GREEDY && p->greedy)
		say(r, " greedy (temperature 0)");
	else if (s & SAMP_SET_TEMP)
		say(r, " temp %g", p->temperature);
	if (s & SAMP_SET_TOP_K)
		say(r, " top-k %d", p->top_k);
	if (s & SAMP_SET_TOP_P)
		say(r, " top-p %g", p->top_p);
	if (s & SAMP_SET_MIN_P)
		say(r, " min-p %g", p->min_p);
	if (s & SAMP_SET_PRESENCE)
		say(r, " presence %g", p->presence_penalty);
	if (s & SAMP_SET_FREQUENCY)
		say(r, " frequency %g", p->frequency_penalty);
	if (s & SAMP_SET_REPEAT)
		say(r, " repeat %g", p->repetition_penalty);
	if (s & SAMP_SET_SEED)
		say(r, " seed %llu", (unsigned long long)p->seed);
	if (a->max_new_set)
		say(r, " max_tokens %d", a->max_new);
	say(r, "%s thinking %s; the rest: the server's defaults", s || a->max_new_set ? ";" : "",
	    a->think ? "on" : "off");
}

static void show_sampling(struct app *a, struct app_result *r)
{
	if (a->remote) {
		show_remote_sampling(a, r);
		return;
	}
	const struct samp_params *p = &a->params;
	char max_new[32] = "until the context is full";
	if (a->max_new_set)
		snprintf(max_new, sizeof max_new, "%d", a->max_new);
	say(r,
	    "temp %g, top-k %d, top-p %g, min-p %g, presence %g, frequency %g, repeat %g, "
	    "seed %llu, greedy %s, max new %s, thinking %s",
	    p->temperature, p->top_k, p->top_p, p->min_p, p->presence_penalty, p->frequency_penalty,
	    p->repetition_penalty, (unsigned long long)p->seed, p->greedy ? "on" : "off", max_new,
	    a->think ? "on" : "off");
}

/* /temp, /top-k, ...: show or set one sampling value. */
static void set_param(struct app *a, const struct slash_call *c, struct app_result *r)
{
	struct samp_params p = a->params;
	double *d = NULL;
	unsigned bit = 0;
	switch (c->cmd->id) {
	case SLASH_TEMP:
		d = &p.temperature;
		bit = SAMP_SET_TEMP;
		break;
	case SLASH_TOP_P:
		d = &p.top_p;
		bit = SAMP_SET_TOP_P;
		break;
	case SLASH_MIN_P:
		d = &p.min_p;
		bit = SAMP_SET_MIN_P;
		break;
	case SLASH_PRESENCE:
		d = &p.presence_penalty;
		bit = SAMP_SET_PRESENCE;
		break;
	case SLASH_FREQUENCY:
		d = &p.frequency_penalty;
		bit = SAMP_SET_FREQUENCY;
		break;
	case SLASH_REPEAT:
		d = &p.repetition_penalty;
		bit = SAMP_SET_REPEAT;
		break;
	default: break;
	}
	if (!c->has_arg) {
		if (d)
			say(r, "%s = %g", c->cmd->name, *d);
		else if (c->cmd->id == SLASH_TOP_K)
			say(r, "top-k = %d", p.top_k);
		else
			say(r, "seed = %llu", (unsigned long long)p.seed);
		return;
	}
	if (d)
		*d = c->num;
	else if (c->cmd->id == SLASH_TOP_K)
		p.top_k = (int)c->num, bit = SAMP_SET_TOP_K;
	else
		p.seed = (uint64_t)c->num, bit = SAMP_SET_SEED;
	if (bit == SAMP_SET_TEMP && c->num > 0 && !(a->user_set & SAMP_SET_GREEDY))
		p.greedy = false; /* as an option's temperature: over do_sample false */
	if (samp_params_check(&p) || (a->samp && samp_set_params(a->samp, &p))) {
		fail(r, "/%s: %s", c->cmd->name, err_msg());
		return;
	}
	if (c->cmd->id == SLASH_SEED && a->samp)
		samp_reseed(a->samp, p.seed);
	if (c->cmd->id == SLASH_SEED)
		a->seed_drawn = false; /* a choice now: the saved conversation records it */
	a->params = p;
	a->user_set |= bit;
	if (c->cmd->arg == SLASH_ARG_INT)
		say(r, "%s = %.0f", c->cmd->name, c->num);
	else
		say(r, "%s = %g", c->cmd->name, c->num);
}

static void think(struct app *a, const struct slash_call *c, struct app_result *r)
{
	const char *w = c->has_arg ? c->cmd->choices[c->choice] : NULL;
	if (!w) {
		say(r, "thinking %s, reasoning %s (%s%s)", a->think ? "on" : "off",
		    a->show_reasoning ? "shown" : "hidden",
		    a->remote ? "asked of the server: enable_thinking" : "template ",
		    a->remote ? "" : tmpl_variant_name(a->variant));
		return;
	}
	if (!strcmp(w, "hide") || !strcmp(w, "show")) {
		a->show_reasoning = !strcmp(w, "show");
		r->actions |= APP_DO_REASONING;
		say(r, "reasoning %s", a->show_reasoning ? "shown" : "hidden");
		return;
	}
	if (!tmpl_has_think_switch(a->variant)) {
		fail(r, "/think: this model's template (%s) has no thinking switch",
		     tmpl_variant_name(a->variant));
		return;
	}
	a->think = !strcmp(w, "on");
	if (a->remote) {
		samp_params_preset(&a->params, a->think, a->user_set);
	} else { /* the model's own values, or the preset; the user's choices stay */
		struct samp_params p = a->model_params;
		if (!a->think)
			samp_params_preset(&p, false, 0);
		samp_params_override(&p, &a->params, a->user_set);
		p.seed = a->params.seed;
		a->params = p;
	}
	if (a->samp)
		samp_set_params(a->samp, &a->params);
	say(r, "thinking %s from the next answer (sampling preset: temp %g, top-p %g, top-k %d)",
	    a->think ? "on" : "off", a->params.temperature, a->params.top_p, a->params.top_k);
}

/* Whether special tokens typed in messages are control tokens or text. The
 * conversation is tokenized anew for the next answer, so it applies to every turn. */
static void special(struct app *a, const struct slash_call *c, struct app_result *r)
{
	if (c->has_arg) {
		if (a->remote) {
			fail(r, "/special: the server tokenizes the conversation (remote backend)");
			return;
		}
		a->parse_special = c->choice == 0;
	}
	say(r, a->parse_special
		       ? "special tokens typed in messages (<|im_start|>, ...) are control "
			 "tokens, as Hugging Face parses them by default"
		       : "special tokens typed in messages (<|im_start|>, ...) are plain text; "
			 "only the chat template's markers are control tokens");
}

/* /json [on|off|FILE]: without an argument it toggles; a schema FILE replaces JSON
 * mode's any object. */
static void json_mode(struct app *a, const struct slash_call *c, struct app_result *r)
{
	const char *arg = c->has_arg ? c->text : NULL;
	struct js_schema *sc = NULL;
	json_t *json = NULL;
	if (arg && strcmp(arg, "on") && strcmp(arg, "off")) {
		char *path = slash_expand_home(arg, a->home);
		if (!path || !(sc = js_load(path, &json))) {
			fail(r, "/json: %s", path ? err_msg() : "out of memory");
			free(path);
			return;
		}
		free(path);
	}
	js_free(a->schema);
	json_decref(a->schema_json);
	a->schema = sc, a->schema_json = json;
	a->json = sc || (arg ? !strcmp(arg, "on") : !a->json);
	if (sc)
		say(r, "answers are held to the JSON Schema in %s (the reasoning stays free)", arg);
	else
		say(r, a->json ? "answers are held to one JSON object each (the reasoning stays "
				 "free)"
			       : "answers are free text");
}

/* Writes s into r with control characters escaped, the way /stats shows the prompt. */
static void say_escaped(struct app_result *r, const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			say(r, "\\n");
		else if ((unsigned char)*s < 0x20)
			say(r, "\\x%02x", (unsigned char)*s);
		else
			say(r, "%c", *s);
	}
}

static void stats(struct app *a, struct app_result *r)
{
	struct app_figures f;
	app_figures(a, &f);
	const struct sess_stats *t = &f.turn;
	say(r,
	    "last turn: %d token%s reused, %d prefilled at %.1f tok/s, %d generated at "
	    "%.1f tok/s, first token after %.3f s\n",
	    t->reused, t->reused == 1 ? "" : "s", t->prefilled, t->prefill_tps, t->generated,
	    t->decode_tps, t->ttft);
	if (!a->remote || (a->user_set & SAMP_SET_SEED))
		/* the draws go on from one answer to the next: the seed repeats a chat
		   replayed from its start, not one answer alone */
		say(r,
		    "sampling seed %llu (a chat started with --seed %llu and the same messages "
		    "repeats its answers)\n",
		    (unsigned long long)a->params.seed, (unsigned long long)a->params.seed);
	char rss[16];
	units_ibytes((double)f.mem.host_rss, rss, sizeof rss);
	if (a->remote) { /* the prompt is rendered and the memory used on the server */
		say(r, "context %d tokens (the server's count); remote: %s at %s; host RSS %s",
		    f.ctx_used, a->model_name, remote_url(a->remote), rss);
		return;
	}
	char w[16], used[16], alloc[16], in_mem[16], scratch[16];
	say(r,
	    "context %d/%d tokens; memory: weights %s, KV %s/%s (%s in memory), scratch %s, "
	    "host RSS %s\n",
	    f.ctx_used, f.ctx_max, units_ibytes((double)f.mem.weights, w, sizeof w),
	    units_ibytes((double)f.mem.kv_used, used, sizeof used),
	    units_ibytes((double)f.mem.kv_allocated, alloc, sizeof alloc),
	    units_ibytes((double)f.mem.kv_in_memory, in_mem, sizeof in_mem),
	    units_ibytes((double)f.mem.scratch, scratch, sizeof scratch), rss);
	/* The end of the prompt the next answer would get: shows what /think changes. */
	int think = tmpl_has_think_switch(a->variant) ? a->think : TMPL_THINK_ABSENT;
	struct chat *c = chat_dup(a->chat);
	if (c && (!c->n || c->turns[c->n - 1].role != CHAT_USER))
		chat_add(c, CHAT_USER, "...", NULL);
	char *p = c ? tmpl_render(c, a->variant, true, think, NULL) : NULL;
	chat_free(c);
	if (p) {
		size_t n = strlen(p);
		const char *tail = n > 44 ? p + n - 44 : p;
		/* from a whole control token or line, not the middle of "<|im_start|>" */
		for (const char *t = tail; n > 44 && t < p + n - 8; t++)
			if (*t == '<' || t[-1] == '\n') {
				tail = t;
				break;
			}
		say(r, "next prompt ends: %s\"", n > 44 ? "..." : "");
		say_escaped(r, tail);
		say(r, "\"");
	}
	free(p);
}

/* The debug panes show the last answer: once /undo, /edit, /clear or /load takes it
 * away they show nothing until the next one, not an answer no longer there. */
static void forget_answer(struct app *a)
{
	pthread_mutex_lock(&a->lock);
	a->answer_gone = true;
	a->n_probs = 0;
	a->att.len = 0;
	pthread_mutex_unlock(&a->lock);
}

static void save_load(struct app *a, const struct slash_call *c, struct app_result *r)
{
	char *path = slash_expand_home(c->text, a->home);
	if (!path) {
		fail(r, "out of memory");
		return;
	}
	if (c->cmd->id == SLASH_SAVE) {
		struct stat st;
		if (!stat(path, &st) && S_ISCHR(st.st_mode)) /* /dev/stdout, /dev/tty */
			r->actions |= APP_DO_REPAINT;
		/* the autosave of another chat: its conversation would be replaced, and
		 * that chat goes on saving over this one */
		if (!fio_same_file(path, a->session_path) && fio_locked(path)) {
			fail(r,
			     "/save: %s is the conversation of another running qwenchat (not "
			     "replaced: save elsewhere)",
			     path);
			free(path);
			return;
		}
		if (app_held_record(a) || chat_save(a->chat, path, false)) {
			snprintf(a->save_failed, sizeof a->save_failed, "/save: %s", err_msg());
			fail(r, "%s", a->save_failed);
		} else {
			a->save_failed[0] = 0;
			a->saved_copy = true;
			say(r, "saved %zu message%s to %s", chat_count(a->chat),
			    chat_count(a->chat) == 1 ? "" : "s", path);
		}
		free(path);
		return;
	}
	/* a FIFO would hold the chat until something writes it */
	bool other = fio_exists(path) && !fio_is_file(path);
	if (other)
		err_set("%s: not a regular file (a conversation is loaded from a file)", path);
	struct chat *n = other ? NULL : chat_load(path);
	char *left = NULL;
	if (!n || app_new_session(a, &left)) {
		fail(r, "/load: %s", err_msg());
		chat_free(n);
		free(path);
		return;
	}
	chat_free(a->chat);
	a->chat = n;
	forget_answer(a);
	r->actions |= APP_DO_RELOAD;
	say(r, "loaded %zu message%s from %s%s%s", chat_count(n), chat_count(n) == 1 ? "" : "s",
	    path, left ? "; the conversation before stays in " : "", left ? left : "");
	free(left);
	free(path);
	app_conversation_changed(a, false);
	app_autosave(a);
}

/* /copy [N]: the last answer, or its Nth code block, for the front end to send to
 * the terminal's clipboard. */
static void copy(struct app *a, const struct slash_call *c, struct app_result *r)
{
	long last = chat_last(a->chat, CHAT_ASSISTANT);
	if (last < 0) {
		fail(r, "/copy: no answer to copy yet");
		return;
	}
	const struct chat_turn *t = &a->chat->turns[last];
	const char *answer = t->content;
	size_t r_off, r_len, a_off; /* an answer that holds its <think> block: as shown */
	if (!t->reasoning && tmpl_split_think(answer, &r_off, &r_len, &a_off))
		answer += a_off;
	r->copy = c->has_arg ? md_code_block(answer, (long)c->num) : strdup(answer);
	if (!r->copy) {
		if (c->has_arg)
			fail(r, "/copy: the last answer has no code block %.0f", c->num);
		else
			fail(r, "/copy: out of memory");
		return;
	}
	r->actions |= APP_DO_COPY;
	say(r,
	    "copied %zu bytes (%s) to the terminal's clipboard (OSC 52; a terminal that "
	    "does not take it ignores it)",
	    strlen(r->copy), c->has_arg ? "a code block" : "the last answer");
}

/* /retry, /edit, /undo, /clear, /system: changes to the conversation. */
static void history(struct app *a, const struct slash_call *c, struct app_result *r)
{
	struct chat *ch = a->chat;
	long lu = chat_last(ch, CHAT_USER);
	switch (c->cmd->id) {
	case SLASH_RETRY:
		if (lu < 0) {
			fail(r, "/retry: no message to answer again");
			return;
		}
		chat_truncate(ch, (size_t)lu + 1);
		r->actions |= APP_DO_GENERATE | APP_DO_RELOAD;
		return;
	case SLASH_EDIT:
	case SLASH_UNDO:
		if (lu < 0) {
			fail(r, "/%s: no message to take back", c->cmd->name);
			return;
		}
		if (c->cmd->id == SLASH_EDIT) {
			r->edit = strdup(ch->turns[lu].content);
			r->actions |= APP_DO_EDIT;
		}
		chat_truncate(ch, (size_t)lu);
		forget_answer(a);
		r->actions |= APP_DO_RELOAD;
		say(r, "%s the last message and its answer",
		    c->cmd->id == SLASH_EDIT ? "editing" : "removed");
		break;
	case SLASH_CLEAR: {
		char *left = NULL;
		if (chat_count(ch) && app_new_session(a, &left)) {
			fail(r, "/clear: %s", err_msg());
			return;
		}
		chat_clear(ch);
		forget_answer(a);
		r->actions |= APP_DO_RELOAD;
		if (left)
			say(r,
			    "conversation cleared; the previous one stays in %s (/load reopens it)",
			    left);
		else
			say(r, "conversation cleared");
		free(left);
		app_conversation_changed(a, false);
		return; /* saved with its first message: --resume still opens the previous one */
	}
	default: /* SLASH_SYSTEM */
		if (!c->has_arg) {
			say(r, "system prompt: %s", chat_system(ch) ? chat_system(ch) : "(none)");
			return;
		}
		if (!strcmp(c->text, "-") && !chat_system(ch)) {
			say(r, "no system prompt to remove");
			return;
		}
		if (chat_set_system(ch, strcmp(c->text, "-") ? c->text : NULL)) {
			fail(r, "/system: %s", err_msg());
			return;
		}
		r->actions |= APP_DO_RELOAD;
		say(r, strcmp(c->text, "-") ? "system prompt set" : "system prompt removed");
		break;
	}
	app_conversation_changed(a, c->cmd->id != SLASH_SYSTEM); /* /edit, /undo: the end went */
	app_autosave(a);
}

/* Commands that only read, or only change what is shown, may run during a turn. */
static bool allowed_while_busy(const struct slash_call *c)
{
	switch (c->cmd->id) {
	case SLASH_HELP:
	case SLASH_SAMPLING:
	case SLASH_CTX:
	case SLASH_STATS:
	case SLASH_DEBUG:
	case SLASH_COPY:
	case SLASH_QUIT: return true;
	case SLASH_THINK:
		return !c->has_arg || !strcmp(c->cmd->choices[c->choice], "hide") ||
		       !strcmp(c->cmd->choices[c->choice], "show");
	default:
		return !c->has_arg && c->cmd->arg != SLASH_ARG_NONE && c->cmd->id != SLASH_GREEDY &&
		       c->cmd->id != SLASH_JSON;
	}
}

/* Runs a parsed slash command. Commands that change the conversation or settings
 * are refused while a worker turn runs. */
static void app_exec(struct app *a, const struct slash_call *c, struct app_result *r)
{
	memset(r, 0, sizeof *r);
	if (a->worker_running && !allowed_while_busy(c)) {
		fail(r, "/%s: an answer is being generated (Esc stops it)", c->cmd->name);
		return;
	}
	struct app_figures f;
	switch (c->cmd->id) {
	case SLASH_HELP: r->actions |= APP_DO_HELP; break;
	case SLASH_THINK: think(a, c, r); break;
	case SLASH_SPECIAL: special(a, c, r); break;
	case SLASH_JSON: json_mode(a, c, r); break;
	case SLASH_TEMP:
	case SLASH_TOP_K:
	case SLASH_TOP_P:
	case SLASH_MIN_P:
	case SLASH_PRESENCE:
	case SLASH_FREQUENCY:
	case SLASH_REPEAT:
	case SLASH_SEED: set_param(a, c, r); break;
	case SLASH_GREEDY:
		a->params.greedy = c->has_arg ? c->choice == 0 : !a->params.greedy;
		if (a->samp)
			samp_set_params(a->samp, &a->params);
		a->user_set |= SAMP_SET_GREEDY;
		say(r, "greedy %s", a->params.greedy ? "on" : "off");
		break;
	case SLASH_SAMPLING: show_sampling(a, r); break;
	case SLASH_SYSTEM:
	case SLASH_CLEAR:
	case SLASH_RETRY:
	case SLASH_EDIT:
	case SLASH_UNDO: history(a, c, r); break;
	case SLASH_SAVE:
	case SLASH_LOAD: save_load(a, c, r); break;
	case SLASH_COPY: copy(a, c, r); break;
	case SLASH_CTX:
		app_figures(a, &f);
		if (f.no_counts) {
			say(r,
			    "context: not known (the server sends no token counts); %zu message%s",
			    chat_count(a->chat), chat_count(a->chat) == 1 ? "" : "s");
			break;
		}
		if (!f.ctx_max) { /* a server that does not say its context */
			say(r,
			    "context: %d tokens used (the server's limit is not known); %zu "
			    "message%s",
			    f.ctx_used, chat_count(a->chat), chat_count(a->chat) == 1 ? "" : "s");
			break;
		}
		say(r,
		    "context: %d of %d tokens used (%.0f%%), %d free; %zu message%s in the "
		    "conversation",
		    f.ctx_used, f.ctx_max, f.ctx_max ? 100.0 * f.ctx_used / f.ctx_max : 0.0,
		    f.ctx_max > f.ctx_used ? f.ctx_max - f.ctx_used : 0, chat_count(a->chat),
		    chat_count(a->chat) == 1 ? "" : "s");
		break;
	case SLASH_STATS: stats(a, r); break;
	case SLASH_DEBUG:
		r->actions |= APP_DO_DEBUG;
		r->debug = !c->has_arg      ? -1
			   : c->choice <= 1 ? (c->choice == 0 ? 1 : 0)
					    : c->choice - 1;
		break;
	case SLASH_QUIT: r->actions |= APP_DO_QUIT; break;
	}
}

void app_command(struct app *a, const char *line, struct app_result *r)
{
	struct slash_call c;
	memset(r, 0, sizeof *r);
	if (slash_parse(line, &c, r->msg, sizeof r->msg)) {
		r->error = true;
		return;
	}
	app_exec(a, &c, r);
	slash_call_free(&c);
}

/* ---- attention capture ---------------------------------------------------- */

void app_set_capture(struct app *a, bool on)
{
	pthread_mutex_lock(&a->lock);
	a->capture = on;
	/* Only between forwards: when idle now, or the worker's next callback. */
	if (!a->worker_running && a->eng)
		eng_set_capture(a->eng, on);
	pthread_mutex_unlock(&a->lock);
}

void app_capture_layer(struct app *a)
{
	if (!a->eng) /* the remote backend: the attention stays on the server */
		return;
	if (a->answer_gone) { /* the engine still holds the removed answer's capture */
		a->att.len = 0;
		return;
	}
	const struct eng_config *cfg = eng_model_config(a->model);
	int layer = a->att_want < 0                  ? 0
		    : a->att_want >= cfg->num_layers ? cfg->num_layers - 1
						     : a->att_want,
	    len = 0;
	eng_set_capture(a->eng, a->capture);
	if (!eng_attention(a->eng, layer, 0, &len) || len <= 0) {
		/* nothing captured for this layer (the pane was closed meanwhile): another
		 * layer's old rows must not pass for it */
		if (a->att.layer != layer)
			a->att.len = 0;
		return;
	}
	float *rows = realloc(a->att.rows, (size_t)cfg->num_heads * len * sizeof *rows);
	int32_t *ids = rows ? realloc(a->att.ids, (size_t)len * sizeof *ids) : NULL;
	if (rows)
		a->att.rows = rows;
	if (!ids)
		return;
	a->att.ids = ids;
	for (int h = 0; h < cfg->num_heads; h++) {
		int l = 0;
		const float *row = eng_attention(a->eng, layer, h, &l);
		for (int i = 0; i < len; i++)
			rows[(size_t)h * len + i] = row && i < l ? row[i] : 0;
	}
	int n = sess_n(a->sess);
	const int32_t *sid = sess_ids(a->sess);
	for (int i = 0; i < len; i++)
		ids[i] = i < n ? sid[i] : -1;
	a->att.layer = layer;
	a->att.layers = cfg->num_layers;
	a->att.heads = cfg->num_heads;
	a->att.len = len;
}

int app_attention(struct app *a, int layer, struct app_attention *out)
{
	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&a->lock);
	a->att_want = layer;
	if (!a->worker_running)
		app_capture_layer(a);
	int rc = -1;
	if (a->att.len > 0) {
		size_t nr = (size_t)a->att.heads * a->att.len;
		*out = a->att;
		out->rows = malloc(nr * sizeof *out->rows);
		out->ids = malloc((size_t)a->att.len * sizeof *out->ids);
		if (out->rows && out->ids) {
			memcpy(out->rows, a->att.rows, nr * sizeof *out->rows);
			memcpy(out->ids, a->att.ids, (size_t)a->att.len * sizeof *out->ids);
			rc = 0;
		} else {
			app_attention_free(out);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void app_attention_free(struct app_attention *at)
{
	free(at->rows);
	free(at->ids);
	at->rows = NULL;
	at->ids = NULL;
}
