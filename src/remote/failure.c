/* failure.c — what went wrong with a transfer of the remote backend, as one line:
 * the HTTP status and the server's own explanation, libcurl's error in words, and the
 * API key taken out of every message. */
#include "src/remote/remote_impl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/err.h"

size_t without_key(const struct remote *r, const char *s, size_t n, char **out)
{
	*out = NULL;
	const char *k = r->key;
	size_t kl = k ? strlen(k) : 0;
	if (!kl || !memmem(s, n, k, kl))
		return n;
	struct strbuf b = {0};
	for (const char *p, *end = s + n; (p = memmem(s, (size_t)(end - s), k, kl)); s = p + kl) {
		sb_put(&b, s, (size_t)(p - s));
		sb_puts(&b, "[API key]");
		n = (size_t)(end - p - kl);
	}
	sb_put(&b, s, n);
	*out = b.p;
	return b.oom ? 0 : b.n;
}

static const char *status_text(long s)
{
	switch (s) {
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return s >= 500 ? "server error" : s >= 400 ? "client error" : "unexpected status";
	}
}

/* The server's explanation in an error body: OpenAI's {"error": {"message"}}, the
 * older vLLM {"message"}, FastAPI's {"detail"}, or the text itself. */
static void server_message(const struct xfer *x, char *out, size_t sz)
{
	char *clean = NULL;
	size_t n = x->body.n ? without_key(x->r, x->body.p, x->body.n, &clean) : 0;
	const char *body = clean ? clean : x->body.p;
	json_t *root = n ? json_loadb(body, n, 0, NULL) : NULL;
	json_t *e = json_object_get(root, "error"), *m = NULL;
	if (json_is_object(e))
		m = json_object_get(e, "message");
	else if (json_is_string(e))
		m = e;
	if (!m)
		m = json_object_get(root, "message");
	if (!m)
		m = json_object_get(root, "detail");
	if (json_is_array(m) && json_array_size(m)) /* FastAPI: [{"msg": ...}] */
		m = json_object_get(json_array_get(m, 0), "msg");
	char *plain = NULL; /* the key again: the raw body may have spelled it with escapes */
	size_t pn = json_is_string(m)
			    ? without_key(x->r, json_string_value(m), json_string_length(m), &plain)
			    : 0;
	if (json_is_string(m))
		reply_oneline(out, sz, plain ? plain : json_string_value(m), pn);
	else if (!root && n)
		reply_oneline(out, sz, body, n);
	else
		out[0] = '\0';
	json_decref(root);
	free(clean);
	free(plain);
}

void status_line(const struct xfer *x, char *out, size_t sz)
{
	char msg[REPLY_MAX_MESSAGE + 8];
	server_message(x, msg, sizeof msg);
	snprintf(out, sz, "%ld %s%s%s", x->status, status_text(x->status), msg[0] ? ": " : "", msg);
}

int http_error(const struct remote *r, const struct xfer *x, const char *what, int tries)
{
	char st[REPLY_MAX_MESSAGE + 64];
	status_line(x, st, sizeof st);
	long s = x->status;
	if (s == 401 || s == 403)
		return err_set("%s: %s (%s)", r->shown, st,
			       r->key ? "the API key was refused" : "no API key was sent");
	if (s == 429 || s == 503) {
		char wait[64] = "";
		if (x->retry_after >= 0)
			snprintf(wait, sizeof wait, "; it asks to retry after %d s",
				 x->retry_after);
		return err_set("%s: the server is busy (%s)%s%s", r->shown, st, wait,
			       tries > 1 ? "; gave up after several tries" : "");
	}
	if (s / 100 == 3) {
		char *loc = NULL, *bare = NULL;
		curl_easy_getinfo(r->curl, CURLINFO_REDIRECT_URL, &loc);
		/* shown as the URL is: a query or user:password there may hold a key */
		CURLU *u = loc ? curl_url() : NULL;
		if (u && curl_url_set(u, CURLUPART_URL, loc, 0) == CURLUE_OK) {
			curl_url_set(u, CURLUPART_QUERY, NULL, 0);
			curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
			curl_url_set(u, CURLUPART_USER, NULL, 0);
			curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
			if (curl_url_get(u, CURLUPART_URL, &bare, 0) != CURLUE_OK)
				bare = NULL;
		}
		curl_url_cleanup(u);
		int rc = err_set("%s: %s redirects (%s)%s%s", r->shown, what, st,
				 bare ? " to " : "", bare ? bare : "");
		curl_free(bare);
		return rc;
	}
	if (s >= 500)
		return err_set("%s: the server failed (%s)", r->shown, st);
	if (s == 404)
		return err_set("%s: %s: %s (is the URL the API base, such as http://HOST:8000/v1?)",
			       r->shown, what, st);
	return err_set("%s: the server refused %s (%s)", r->shown, what, st);
}

static bool tls_error(CURLcode cc)
{
	switch (cc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_USE_SSL_FAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CLIENTCERT: return true;
	default: return false;
	}
}

bool header_too_large(CURLcode cc)
{
	/* libcurl's code for a header line past its 100 KB (CURL_MAX_HTTP_HEADER):
	 * CURLE_TOO_LARGE (100) since 8.6, out of memory before; compared as a number, as
	 * the libcurl run may be newer than the one built against */
	return cc == CURLE_OUT_OF_MEMORY || (int)cc == 100;
}

int curl_error(const struct remote *r, const struct xfer *x, CURLcode cc)
{
	char why[CURL_ERROR_SIZE + 8];
	reply_oneline(why, sizeof why, r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc),
		      strlen(r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc)));
	curl_off_t connected = 0;
	curl_easy_getinfo(r->curl, CURLINFO_CONNECT_TIME_T, &connected);
	if (cc == CURLE_COULDNT_CONNECT)
		return err_set("cannot connect to %s: %s (is the server running?)", r->shown, why);
	if (cc == CURLE_COULDNT_RESOLVE_HOST)
		return err_set("cannot find the host of %s: %s", r->shown, why);
	if (cc == CURLE_OPERATION_TIMEDOUT && !connected)
		return err_set("no connection to %s after %d s (connect timeout)", r->shown,
			       r->connect_timeout);
	if (tls_error(cc))
		return err_set("TLS error with %s: %s", r->shown, why);
	if (cc == CURLE_GOT_NOTHING)
		return err_set("%s closed the connection without an answer", r->shown);
	if (header_too_large(cc))
		return err_set("%s: libcurl stopped reading the answer: a header line of it over "
			       "libcurl's limit of 100 KB (or memory ran out)",
			       r->shown);
	if (x->bytes && (cc == CURLE_RECV_ERROR || cc == CURLE_PARTIAL_FILE))
		return err_set("the connection to %s broke: %s", r->shown, why);
	return err_set("%s: %s", r->shown, why);
}

/* A quote cut to one line ends in "...": where the cut fell inside the key (a server
 * that spelled it with JSON escapes, which the raw body's search cannot see), the
 * part before the cut is the key's first bytes. Those go too (4 or more: fewer say
 * nothing of it, and a message may well hold them). */
static void without_cut_key(const struct remote *r, const char *m, char *out, size_t sz)
{
	size_t kl = r->key ? strlen(r->key) : 0, k = 0;
	const char *from = m;
	for (const char *dots = strstr(m, "..."); kl >= 4 && dots; dots = strstr(dots + 3, "...")) {
		size_t before = (size_t)(dots - from), l = kl - 1 < before ? kl - 1 : before;
		while (l >= 4 && memcmp(dots - l, r->key, l))
			l--;
		if (l < 4)
			continue;
		k += (size_t)snprintf(out + k, k < sz ? sz - k : 0, "%.*s[API key]",
				      (int)(before - l), from);
		from = dots;
	}
	snprintf(out + (k < sz ? k : sz - 1), k < sz ? sz - k : 1, "%s", from);
}

void redact(const struct remote *r)
{
	const char *m = err_msg();
	char *clean;
	size_t n = without_key(r, m, strlen(m), &clean);
	if (clean || (!n && *m)) /* 0 for a message that is not empty: out of memory */
		err_set("%s", n ? clean : "(an error message quoting the API key)");
	free(clean);
	char copy[ERR_MAX], out[ERR_MAX + 64];
	snprintf(copy, sizeof copy, "%s", err_msg());
	without_cut_key(r, copy, out, sizeof out);
	err_set("%s", out);
}
