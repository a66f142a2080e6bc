/* remote.c — HTTP for the remote backend with libcurl: one transfer at a time driven
 * through the multi interface, so that the loop wakes every 50 ms to look at the
 * cancel flag and the stall clock (an easy transfer's progress callback may come only
 * once a second while nothing arrives); failure.c makes failures into one line each. */
#include "src/remote/remote_impl.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/jsonlimit.h"
#include "src/base/strbuf.h"

/* ---- setting up ------------------------------------------------------------ */

static bool is_loopback(const char *host)
{
	return !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "[::1]") ||
	       !strcmp(host, "::1");
}

/* The base without a trailing "/" or "/chat/completions" (a whole endpoint given). */
static char *base_of(const char *url)
{
	static const char tail[] = "/chat/completions";
	size_t n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	if (n >= sizeof tail - 1 && !memcmp(url + n - (sizeof tail - 1), tail, sizeof tail - 1))
		n -= sizeof tail - 1;
	while (n && url[n - 1] == '/')
		n--;
	return strndup(url, n);
}

/* Checks the URL with libcurl's parser and splits it: the API base (r->base), its
 * query (r->query, kept for every endpoint, as gateways take ?api-version=...) and
 * the base shown in messages (r->shown: no user:password, no query). A fragment is
 * never sent, so it is dropped. name: where url came from, for messages ("--url"). */
static int parse_url(struct remote *r, const char *url, const char *name)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *query = NULL, *bare = NULL, *shown = NULL;
	int rc = -1;
	if (!u)
		return err_set("out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		err_set("%s: '%s' is not a URL such as http://HOST:8000/v1", name, url);
		goto done;
	}
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		err_set("%s: the scheme '%s' is not http or https", name, scheme);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
		query = NULL;
	curl_url_set(u, CURLUPART_QUERY, NULL, 0);
	curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &bare, 0) != CURLUE_OK || !(r->base = base_of(bare)) ||
	    (query && *query && !(r->query = strdup(query)))) {
		err_set("out of memory");
		goto done;
	}
	curl_url_set(u, CURLUPART_USER, NULL, 0);
	curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &shown, 0) != CURLUE_OK ||
	    !(r->shown = base_of(shown))) {
		err_set("out of memory");
		goto done;
	}
	r->key_in_clear = r->key && !strcmp(scheme, "http") && !is_loopback(host);
	rc = 0;
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(query);
	curl_free(bare);
	curl_free(shown);
	curl_url_cleanup(u);
	return rc;
}

int remote_check_url(const char *url, const char *name)
{
	struct remote r = {0};
	int rc = parse_url(&r, url, name);
	free(r.base);
	free(r.query);
	free(r.shown);
	return rc;
}

struct remote *remote_new(const struct remote_options *o)
{
	if (!o->url || !*o->url) {
		err_set("the remote backend needs --url (the API base, http://HOST:PORT/v1)");
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		err_set("cannot initialise libcurl");
		return NULL;
	}
	struct remote *r = calloc(1, sizeof *r);
	if (!r) {
		curl_global_cleanup();
		err_set("out of memory");
		return NULL;
	}
	r->connect_timeout = o->connect_timeout > 0 ? o->connect_timeout : REMOTE_CONNECT_TIMEOUT;
	r->stall_timeout = o->stall_timeout > 0 ? o->stall_timeout : REMOTE_STALL_TIMEOUT;
	r->on_retry = o->on_retry;
	r->retry_user = o->retry_user;
	r->key = o->api_key && *o->api_key ? strdup(o->api_key) : NULL;
	if (o->api_key && *o->api_key && !r->key) {
		err_set("out of memory");
		goto fail;
	}
	if (r->key && (strchr(r->key, '\n') || strchr(r->key, '\r'))) {
		err_set("the API key holds a line break");
		goto fail;
	}
	if (parse_url(r, o->url, "--url"))
		goto fail;
	if (!(r->curl = curl_easy_init()) || !(r->multi = curl_multi_init())) {
		err_set("out of memory");
		goto fail;
	}
	return r;
fail:
	remote_free(r);
	return NULL;
}

void remote_free(struct remote *r)
{
	if (!r)
		return;
	if (r->key)
		memset(r->key, 0, strlen(r->key));
	curl_multi_cleanup(r->multi);
	curl_easy_cleanup(r->curl);
	free(r->base);
	free(r->query);
	free(r->shown);
	free(r->key);
	free(r);
	curl_global_cleanup();
}

const char *remote_url(const struct remote *r)
{
	return r->shown;
}

bool remote_key_in_clear(const struct remote *r)
{
	return r->key_in_clear;
}

/* The request's headers: User-Agent, Authorization when a key is set, and extra
 * (NULL-terminated). NULL when out of memory. */
static struct curl_slist *headers(const struct remote *r, const char *const *extra)
{
	struct curl_slist *h = curl_slist_append(NULL, "User-Agent: qwenchat/" PACKAGE_VERSION);
	for (; h && extra && *extra; extra++) {
		struct curl_slist *g = curl_slist_append(h, *extra);
		if (!g)
			curl_slist_free_all(h);
		h = g;
	}
	if (h && r->key) {
		size_t n = strlen(r->key) + 32;
		char *line = malloc(n);
		struct curl_slist *g = NULL;
		if (line) {
			snprintf(line, n, "Authorization: Bearer %s", r->key);
			g = curl_slist_append(h, line);
			memset(line, 0, n);
			free(line);
		}
		if (!g)
			curl_slist_free_all(h);
		h = g;
	}
	return h;
}

/* ---- one transfer ------------------------------------------------------------ */

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	n *= size;
	x->bytes += n;
	x->last_byte = clock_now();
	if (n > 5 && !memcmp(p, "HTTP/", 5)) { /* a new response (after a 100 Continue) */
		x->retry_after = -1;
	} else if (n > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		char v[64];
		size_t k = n - 12 < sizeof v - 1 ? n - 12 : sizeof v - 1;
		memcpy(v, p + 12, k);
		v[k] = '\0';
		v[strcspn(v, "\r\n")] = '\0';
		char *end;
		long s = strtol(v, &end, 10);
		if (end != v && !*end && s >= 0)
			x->retry_after = s > 86400 ? 86400 : (int)s;
		else { /* an HTTP date */
			time_t t = curl_getdate(v + strspn(v, " "), NULL), now = time(NULL);
			if (t != (time_t)-1)
				x->retry_after =
					t > now ? (int)(t - now < 86400 ? t - now : 86400) : 0;
		}
	}
	return n;
}

static int on_event(void *ud, const char *name, const char *data, size_t len)
{
	struct xfer *x = ud;
	char *clean;
	len = without_key(x->r, data, len, &clean);
	int rc = reply_event(x->reply, name, clean ? clean : data, len);
	free(clean);
	return rc;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	n *= size;
	x->bytes += n;
	x->last_byte = clock_now();
	curl_easy_getinfo(x->r->curl, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->events && x->status / 100 == 2) {
		int rc = sse_feed(&x->sse, p, n);
		if (rc < 0)
			snprintf(x->parse_err, sizeof x->parse_err, "%s", err_msg());
		x->parse_rc = rc;
		/* 0 ends the transfer: after [DONE] nothing more is read (a server or proxy
		 * that keeps the connection open, even sending comments, ends nothing) */
		return rc || x->reply->out.stop ? 0 : n;
	}
	size_t room = x->body.n < x->body_max ? x->body_max - x->body.n : 0;
	if (x->whole && x->status / 100 == 2 && n > room) {
		x->too_big = true;
		return 0; /* ends the transfer */
	}
	if (x->status / 100 != 2 && !room)
		return 0; /* an error body: what is kept has arrived, the rest may never end */
	sb_put(&x->body, p, n < room ? n : room);
	return x->body.oom ? 0 : n;
}

/* How a transfer ended besides libcurl's result. */
enum { ENDED, CANCELLED, STALLED };

/* Runs the transfer prepared on r->curl. *cc gets libcurl's result when ENDED. */
static int perform(struct remote *r, struct xfer *x, atomic_int *cancel, CURLcode *cc)
{
	int how = ENDED, running = 1;
	*cc = CURLE_OK;
	x->last_byte = clock_now();
	curl_multi_add_handle(r->multi, r->curl);
	while (running) {
		if (curl_multi_perform(r->multi, &running) != CURLM_OK) {
			*cc = CURLE_OUT_OF_MEMORY;
			break;
		}
		if (!running)
			break;
		if (cancel && atomic_load(cancel)) {
			how = CANCELLED;
			break;
		}
		if (clock_now() - x->last_byte > r->stall_timeout) {
			how = STALLED;
			break;
		}
		curl_multi_poll(r->multi, NULL, 0, POLL_MS, NULL);
	}
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(r->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == r->curl)
			*cc = m->data.result;
	curl_multi_remove_handle(r->multi, r->curl);
	if (!x->status)
		curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &x->status);
	return how;
}

/* Prepares r->curl for a request to base + path. */
static void setup(struct remote *r, struct xfer *x, const char *url, struct curl_slist *h)
{
	CURL *c = r->curl;
	curl_easy_reset(c);
	r->errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Every encoding this libcurl decodes is offered, as the openai client's httpx
	 * offers gzip: a proxy may compress the stream. The caps count decoded bytes. */
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)r->connect_timeout);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	x->r = r;
	x->retry_after = -1;
}

/* ---- the requests -------------------------------------------------------------- */

static char *endpoint(const struct remote *r, const char *path)
{
	size_t n = strlen(r->base) + strlen(path) + (r->query ? strlen(r->query) + 1 : 0) + 1;
	char *u = malloc(n);
	if (u)
		snprintf(u, n, "%s%s%s%s", r->base, path, r->query ? "?" : "",
			 r->query ? r->query : "");
	else
		err_set("out of memory");
	return u;
}

static void models_free_n(struct remote_model *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].id);
		free(m[i].owned_by);
	}
	free(m);
}

void remote_models_free(struct remote_model *m, size_t n)
{
	models_free_n(m, n);
}

/* {"data": [{"id", "owned_by", "max_model_len"}, ...]} into *models. */
static int parse_models(const struct remote *r, const struct xfer *x, struct remote_model **models,
			size_t *n)
{
	/* a bound on what jansson may allocate, and so on the models listed (every one is
	 * read: a model cut from the list would be reported as not served) */
	static const struct jlim lim = {.max_depth = 32, .max_values = 1 << 17};
	char what[600];
	snprintf(what, sizeof what, "%s/models", r->shown);
	if (jlim_check(x->body.p ? x->body.p : "", x->body.n, &lim, what))
		return -1;
	json_error_t je;
	json_t *root = json_loadb(x->body.p ? x->body.p : "", x->body.n, 0, &je);
	json_t *data = json_object_get(root, "data");
	if (!json_is_array(data)) {
		json_decref(root);
		if (!root)
			return err_set("%s/models: not JSON: %s", r->shown, je.text);
		return err_set("%s/models: no \"data\" array of models", r->shown);
	}
	size_t k = json_array_size(data);
	struct remote_model *m = calloc(k ? k : 1, sizeof *m);
	size_t got = 0;
	int rc = m ? 0 : err_set("out of memory");
	for (size_t i = 0; !rc && i < k; i++) {
		json_t *e = json_array_get(data, i), *id = json_object_get(e, "id");
		json_t *own = json_object_get(e, "owned_by"),
		       *len = json_object_get(e, "max_model_len");
		if (!json_is_string(id) || !json_string_length(id) ||
		    strlen(json_string_value(id)) != json_string_length(id)) {
			rc = err_set("%s/models: data[%zu].id is not a model name", r->shown, i);
			break;
		}
		m[got].id = strdup(json_string_value(id));
		m[got].owned_by = strdup(json_is_string(own) ? json_string_value(own) : "");
		m[got].max_len = json_is_integer(len) && json_integer_value(len) > 0 &&
						 json_integer_value(len) < (1LL << 31)
					 ? (long)json_integer_value(len)
					 : 0;
		if (!m[got].id || !m[got++].owned_by)
			rc = err_set("out of memory");
	}
	json_decref(root);
	if (rc) {
		models_free_n(m, got);
		return -1;
	}
	*models = m;
	*n = got;
	return 0;
}

/* Waits s seconds, looking at cancel; false when cancelled. */
static bool wait_for(int s, atomic_int *cancel)
{
	for (double end = clock_now() + s; clock_now() < end;) {
		if (cancel && atomic_load(cancel))
			return false;
		struct timespec ts = {0, POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
	return true;
}

/* Waits before the next try of a request a busy server (429, 503) turned away: its
 * Retry-After, else 1, 2, 4 s; said to on_retry first. False when cancelled. */
static bool busy_wait(struct remote *r, const struct xfer *x, const char *what, int try,
		      atomic_int *cancel)
{
	int s = x->retry_after >= 0 ? x->retry_after : 1 << (try - 1);
	if (r->on_retry) { /* as an error is: the server's message without the key */
		char st[REPLY_MAX_MESSAGE + 64];
		status_line(x, st, sizeof st);
		err_set("%s: the server is busy with %s (%s); trying again in %d s (try %d of %d)",
			r->shown, what, st, s, try + 1, REMOTE_ATTEMPTS);
		redact(r);
		char line[ERR_MAX];
		snprintf(line, sizeof line, "%s", err_msg());
		err_clear();
		r->on_retry(r->retry_user, line);
	}
	return wait_for(s, cancel);
}

/* One try of GET /models: 0 done, 1 to try again (429 or 503), -1 failed. */
static int models_attempt(struct remote *r, const char *url, struct curl_slist *h,
			  struct remote_model **models, size_t *n, atomic_int *cancel, int try)
{
	struct xfer x = {.body_max = MODELS_BODY_MAX, .whole = true};
	CURLcode cc;
	int rc = -1;
	setup(r, &x, url, h);
	int how = perform(r, &x, cancel, &cc);
	r->models_status = x.status;
	if (how == CANCELLED)
		err_set("%s/models: cancelled", r->shown);
	else if (how == STALLED)
		err_set("%s/models: no answer in %d s (stall timeout)", r->shown, r->stall_timeout);
	else if (x.too_big && x.status == 200)
		err_set("%s/models: the reply is larger than %d MiB (a model list is a few kB)",
			r->shown, MODELS_BODY_MAX >> 20);
	else if ((x.status == 429 || x.status == 503) && try < REMOTE_ATTEMPTS &&
		 x.retry_after <= REMOTE_MAX_RETRY_WAIT) /* as for a chat request */
		rc = busy_wait(r, &x, "the model list", try, cancel)
			     ? 1
			     : err_set("%s/models: cancelled", r->shown);
	else if (x.status && x.status != 200) /* an error body may have been cut: cc */
		http_error(r, &x, "the model list (GET /models)", try);
	else if (cc != CURLE_OK)
		curl_error(r, &x, cc);
	else if (x.body.oom)
		err_set("out of memory");
	else
		rc = parse_models(r, &x, models, n);
	free(x.body.p);
	return rc;
}

int remote_models(struct remote *r, struct remote_model **models, size_t *n, atomic_int *cancel)
{
	static const char *const extra[] = {"Accept: application/json", NULL};
	char *url = endpoint(r, "/models");
	struct curl_slist *h = url ? headers(r, extra) : NULL;
	int rc = -1;
	*models = NULL;
	*n = 0;
	if (!h)
		err_set("out of memory");
	for (int try = 1; h && (rc = models_attempt(r, url, h, models, n, cancel, try)) == 1; try++)
		;
	if (rc)
		redact(r);
	curl_slist_free_all(h);
	free(url);
	return rc;
}

/* "a, b, c" (the served models: the first ones, then how many more), malloc'd; NULL
 * when out of memory. */
static char *model_list(const struct remote_model *m, size_t n)
{
	/* a line, not a server's catalogue: up to 20 names and 600 bytes of them (vLLM
	 * names a model by its path), each name whole */
	enum { SHOWN = 20, BYTES = 600 };
	struct strbuf b = {0};
	size_t i = 0;
	for (; i < n && i < SHOWN && (i == 0 || b.n + strlen(m[i].id) <= BYTES); i++)
		sb_printf(&b, "%s%.*s", i ? ", " : "", BYTES, m[i].id);
	if (i < n)
		sb_printf(&b, " and %zu more", n - i);
	if (!n)
		sb_puts(&b, "(none)");
	if (b.oom)
		free(b.p);
	return b.oom ? NULL : b.p;
}

char *remote_pick_model(struct remote *r, const char *want, long *max_len, atomic_int *cancel)
{
	struct remote_model *m;
	size_t n;
	*max_len = 0;
	if (remote_models(r, &m, &n, cancel)) {
		/* Some servers have no model list; a model named is then taken on trust. */
		bool no_list = r->models_status == 404 || r->models_status == 405;
		size_t bl = strlen(r->base);
		bool v1 = bl >= 3 && !strcmp(r->base + bl - 3, "/v1");
		if (no_list && !want)
			err_set("%s has no model list (GET /models: %ld): %s", r->shown,
				r->models_status,
				v1 ? "name the model with -m"
				   : "is the URL the API base, such as http://HOST:8000/v1? (or "
				     "name the model with -m)");
		char *w = no_list && want ? strdup(want) : NULL;
		if (no_list && want && !w)
			err_set("out of memory");
		return w;
	}
	const struct remote_model *pick = NULL;
	for (size_t i = 0; want && i < n; i++)
		if (!strcmp(m[i].id, want))
			pick = &m[i];
	if (!want && n == 1)
		pick = &m[0];
	char *id = pick ? strdup(pick->id) : NULL, *list = pick ? NULL : model_list(m, n);
	if (pick)
		*max_len = pick->max_len;
	if (pick && !id)
		err_set("out of memory");
	else if (!pick && !list)
		err_set("out of memory");
	else if (want && !pick)
		err_set("%s does not serve the model '%s'; it serves: %s", r->shown, want, list);
	else if (!pick)
		err_set("%s serves %zu models: %s; name one with -m", r->shown, n, list);
	free(list);
	remote_models_free(m, n);
	return id;
}

/* A 404 to a chat request: a model the server does not serve (said with the ones it
 * does), or a wrong URL. */
static int not_found(struct remote *r, const struct xfer *x, const char *model, atomic_int *cancel)
{
	char st[REPLY_MAX_MESSAGE + 64];
	status_line(x, st, sizeof st);
	struct remote_model *m;
	size_t n;
	/* the list is a second request, which a stop ends as it ends the turn's */
	if (remote_models(r, &m, &n, cancel)) {
		if (cancel && atomic_load(cancel))
			return 0; /* as a turn cancelled */
		/* no list: the server's word for it */
		if (strcasestr(st, "model"))
			return err_set("%s does not serve the model '%s' (%s)", r->shown, model,
				       st);
		return http_error(r, x, "POST /chat/completions", 1);
	}
	bool served = false;
	for (size_t i = 0; i < n; i++)
		served = served || !strcmp(m[i].id, model);
	char *list = served ? NULL : model_list(m, n);
	remote_models_free(m, n);
	int rc = served ? http_error(r, x, "POST /chat/completions", 1)
		 : list ? err_set("%s does not serve the model '%s' (%s); it serves: %s", r->shown,
				  model, st, list)
			: err_set("out of memory");
	free(list);
	return rc;
}


/* After a 2xx answer: was it a whole stream? 0 or -1 with err_set. */
static int stream_end(struct remote *r, struct xfer *x, CURLcode cc)
{
	struct reply *out = x->reply;
	if (x->parse_rc < 0)
		return err_set("%s: %s", r->shown, x->parse_err);
	if (out->out.stop)
		return 0;
	if (out->done || out->finish != REPLY_UNFINISHED) /* complete, even if cut after */
		return reply_end(out);
	char *type = NULL;
	curl_easy_getinfo(r->curl, CURLINFO_CONTENT_TYPE, &type);
	if (!out->events && cc == CURLE_OK && (!type || !strstr(type, "text/event-stream")))
		return err_set("%s answered with %s, not a stream of events (text/event-stream)",
			       r->shown, type ? type : "no Content-Type");
	bool inside = sse_pending(&x->sse);
	const char *where = inside ? ", inside an event" : "";
	if (header_too_large(cc) && !out->events && !inside)
		return curl_error(r, x, cc);
	if (cc != CURLE_OK) {
		char why[CURL_ERROR_SIZE + 8];
		const char *e = r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
		reply_oneline(why, sizeof why, e, strlen(e));
		return err_set("the stream from %s broke off %s: %s", r->shown,
			       out->events ? (inside ? "mid-answer, inside an event" : "mid-answer")
			       : inside    ? "inside its first event"
					   : "before its first event",
			       why);
	}
	return err_set("the stream from %s ended mid-answer%s (no finish_reason, no [DONE])",
		       r->shown, where);
}

/* One try of the request. 0 done (or stopped), 1 to try again, -1 failed. */
static int attempt(struct remote *r, const struct remote_request *q, const char *url,
		   struct curl_slist *h, const char *body, size_t len, struct reply *out,
		   atomic_int *cancel, int try)
{
	struct xfer x = {.body_max = ERROR_BODY_MAX, .reply = out, .events = true};
	CURLcode cc;
	sse_init(&x.sse, on_event, &x);
	out->max_deltas =
		q->max_tokens > 0 && q->max_tokens < (1 << 29) ? 2 * q->max_tokens + 16 : 0;
	setup(r, &x, url, h);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	int how = perform(r, &x, cancel, &cc), rc = 0;
	if (how != ENDED)
		reply_flush(out); /* the text held back is part of what is kept */
	/* a finish_reason came: whole, even if the server then fell silent */
	bool finished = x.status / 100 == 2 && (out->done || out->finish != REPLY_UNFINISHED);
	if (how == CANCELLED) {
		rc = 0;
	} else if (how == STALLED && !finished) {
		rc = x.bytes ? err_set("no data from %s for %d s (stall timeout)", r->shown,
				       r->stall_timeout)
			     : err_set("no answer from %s in %d s (stall timeout)", r->shown,
				       r->stall_timeout);
	} else if (x.status / 100 == 2) {
		rc = stream_end(r, &x, cc);
		if (rc)
			reply_flush(out); /* what came before the failure is kept whole */
	} else if (cc != CURLE_OK && !x.status) {
		rc = curl_error(r, &x, cc);
	} else if ((x.status == 429 || x.status == 503) && try < REMOTE_ATTEMPTS &&
		   x.retry_after <= REMOTE_MAX_RETRY_WAIT) {
		rc = busy_wait(r, &x, "the request", try, cancel) ? 1 : 0;
	} else if (x.status == 404) {
		rc = not_found(r, &x, q->model, cancel);
	} else {
		rc = http_error(r, &x, "the request", try);
	}
	sse_free(&x.sse);
	free(x.body.p);
	return rc;
}

int remote_chat(struct remote *r, const struct remote_request *q, struct reply *out,
		atomic_int *cancel)
{
	static const char *const extra[] = {"Content-Type: application/json",
					    "Accept: text/event-stream", NULL};
	size_t len = 0;
	char *body = remote_request_json(q, &len),
	     *url = body ? endpoint(r, "/chat/completions") : NULL;
	struct curl_slist *h = url ? headers(r, extra) : NULL;
	int rc = -1;
	if (url && !h)
		err_set("out of memory");
	for (int try = 1; h; try++) {
		rc = attempt(r, q, url, h, body, len, out, cancel, try);
		if (rc != 1)
			break;
	}
	if (rc)
		redact(r);
	curl_slist_free_all(h);
	free(url);
	free(body);
	return rc;
}
