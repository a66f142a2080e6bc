/* download.c — libcurl transfers from the Hugging Face Hub: HEAD for the metadata
 * headers, resumable GET with size and sha256/sha1 verification. */
#include <nettle/sha1.h>
#include <nettle/sha2.h>

#include "src/hub/download.h"
#include "src/base/clock.h"
#include "src/base/err.h"
#include "src/base/term.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The response headers we care about, reset at each status line so that only the
 * last hop of a redirect chain is kept. */
struct hdrs {
	long status;
	char commit[48], etag[160], linked_etag[160], linked_size[32], length[32];
	char location[2048], err_code[64], content_range[128], retry_after[64];
	char err_message[400]; /* X-Error-Message: shown, so a longer one is cut, not refused */
	bool overflow; /* a header was too long: do not trust the set */
};

struct dl {
	CURL *curl;
	struct curl_slist *headers;
	dl_progress_fn progress;
	void *ud;
	char *token_source; /* where the token came from ("HF_TOKEN", a path); NULL: none */
	char errbuf[CURL_ERROR_SIZE];
	double retry_after; /* seconds the last answer asked to wait; 0: none */
	/* The last request is to be tried again: the next one starts on a new handle,
	 * whose connections are all new, since an old one may still hold what the
	 * failed answer left unread (a body longer than its Content-Length), which curl
	 * would read as the next answer. (CURLOPT_FRESH_CONNECT alone is not enough: a
	 * redirect to the same host takes a connection from the handle's pool.) */
	bool fresh;
};

/* State of one GET, shared with the libcurl callbacks. */
struct xfer {
	struct dl *d;
	const char *label;
	int fd, dir;            /* the file, and the directory it is named in */
	const char *name;       /* ... its name there */
	uint64_t have, size;    /* bytes in the file; bytes expected */
	int use_sha1;           /* 40-hex ETag: git blob sha1, else sha256 */
	struct sha256_ctx s256; /* nettle: uses the CPU's SHA instructions when present */
	struct sha1_ctx s1;
	struct hdrs *h;       /* headers of the GET's last hop */
	double t0, last;      /* clock_now() at the start and at the last report */
	bool started, failed; /* failed: a callback set err and stopped curl */
};

struct dl *dl_new(const char *token, const char *source, dl_progress_fn progress, void *ud)
{
	/* libcurl counts init/cleanup pairs, so each dl holds one. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		err_set("libcurl: initialisation failed");
		return NULL;
	}
	struct dl *d = calloc(1, sizeof *d);
	if (!d || !(d->curl = curl_easy_init())) {
		free(d);
		curl_global_cleanup();
		err_set("libcurl: cannot create a handle");
		return NULL;
	}
	d->progress = progress;
	d->ud = ud;
	char line[4200];
	struct curl_slist *h = curl_slist_append(NULL, "User-Agent: qwenchat/" PACKAGE_VERSION);
	/* Sizes and hashes are those of the raw bytes: never a compressed encoding. */
	h = h ? curl_slist_append(h, "Accept-Encoding: identity") : NULL;
	if (!source)
		source = "HF_TOKEN";
	if (h && token && *token) {
		if (strlen(token) > 4000 || strpbrk(token, "\r\n")) {
			curl_slist_free_all(h);
			dl_free(d);
			err_set("%s: not a valid token (too long or several lines)", source);
			return NULL;
		}
		snprintf(line, sizeof line, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, line);
		d->token_source = h ? strdup(source) : NULL;
		if (!d->token_source) {
			curl_slist_free_all(h);
			h = NULL;
		}
	}
	d->headers = h;
	if (!h) {
		dl_free(d);
		err_set("out of memory");
		return NULL;
	}
	return d;
}

void dl_free(struct dl *d)
{
	if (!d)
		return;
	curl_slist_free_all(d->headers);
	curl_easy_cleanup(d->curl);
	free(d->token_source);
	free(d);
	curl_global_cleanup();
}

static void copy_value(struct hdrs *h, char *dst, size_t cap, const char *v, size_t n)
{
	if (n >= cap) {
		h->overflow = true;
		n = cap - 1;
	}
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
	struct hdrs *h = ud;
	size_t n = size * nitems;
	if (n >= 5 && !memcmp(buf, "HTTP/", 5)) {
		memset(h, 0, sizeof *h);
		return n;
	}
	const char *colon = memchr(buf, ':', n);
	if (!colon)
		return n;
	size_t klen = (size_t)(colon - buf);
	const char *v = colon + 1, *end = buf + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t vlen = (size_t)(end - v);
	static const struct {
		const char *name;
		size_t off, cap;
	} want[] = {
#define H(name, field) {name, offsetof(struct hdrs, field), sizeof(((struct hdrs *)0)->field)}
		H("X-Repo-Commit", commit),      H("ETag", etag),
		H("X-Linked-Etag", linked_etag), H("X-Linked-Size", linked_size),
		H("Content-Length", length),     H("Location", location),
		H("X-Error-Code", err_code),     H("Content-Range", content_range),
		H("Retry-After", retry_after),   H("X-Error-Message", err_message),
#undef H
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		if (strlen(want[i].name) != klen || strncasecmp(buf, want[i].name, klen))
			continue;
		bool shown = want[i].off == offsetof(struct hdrs, err_message);
		copy_value(h, (char *)h + want[i].off, want[i].cap, v,
			   shown && vlen >= want[i].cap ? want[i].cap - 1 : vlen);
	}
	return n;
}

/* The options every request shares; the caller adds the method-specific ones. */
static void common_opts(struct dl *d, const char *url, struct hdrs *h)
{
	CURL *fresh = d->fresh ? curl_easy_init() : NULL;
	if (fresh) {
		curl_easy_cleanup(d->curl);
		d->curl = fresh;
	}
	CURL *c = d->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, d->headers);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
	/* A stalled transfer (under 1 byte/s for 30 s) is broken off and resumed. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (d->fresh && !fresh) /* no new handle: at least the first hop's connection */
		curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
	d->fresh = false;
	d->errbuf[0] = '\0';
	d->retry_after = 0;
	memset(h, 0, sizeof *h);
}

double dl_parse_retry_after(const char *v, time_t now)
{
	while (*v == ' ' || *v == '\t')
		v++;
	if (!*v)
		return -1;
	if (*v >= '0' && *v <= '9') { /* delta-seconds */
		char *end;
		errno = 0;
		unsigned long long n = strtoull(v, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end || errno)
			return -1;
		return n > DL_MAX_RETRY_AFTER ? DL_MAX_RETRY_AFTER : (double)n;
	}
	time_t at = curl_getdate(v, &now); /* an HTTP-date */
	if (at == -1)
		return -1;
	double wait = difftime(at, now);
	return wait < 0 ? 0 : wait > DL_MAX_RETRY_AFTER ? DL_MAX_RETRY_AFTER : wait;
}

double dl_retry_after(const struct dl *d)
{
	return d->retry_after;
}

/* An answer that says "later" (429, 503 and the other 5xx): a reason to try again,
 * after the wait it asks for, if any. */
static bool transient(struct dl *d, const struct hdrs *h)
{
	if (h->status != 429 && h->status < 500)
		return false;
	double w = dl_parse_retry_after(h->retry_after, time(NULL));
	d->retry_after = w > 0 ? w : 0;
	return true;
}

static const char *curl_why(struct dl *d, CURLcode rc)
{
	return d->errbuf[0] ? d->errbuf : curl_easy_strerror(rc);
}

static bool unresolved(CURLcode cc)
{
	return cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Failures another try cannot mend: a URL curl cannot use, a host name that does
 * not resolve (no network, or a typo in HF_ENDPOINT), which five tries turned into
 * 15 s of waiting for the same answer, and a redirect loop, which the next try
 * follows round again. curl says "unsupported protocol" for an answer without an
 * HTTP status line too ("Received HTTP/0.9"): bytes a previous answer left on the
 * connection, which a try on a new connection mends. */
static int after_curl_error(const struct dl *d, CURLcode cc)
{
	bool stray = cc == CURLE_UNSUPPORTED_PROTOCOL && strstr(d->errbuf, "HTTP/0.9");
	return (cc == CURLE_UNSUPPORTED_PROTOCOL && !stray) || cc == CURLE_URL_MALFORMAT ||
			       cc == CURLE_TOO_MANY_REDIRECTS || unresolved(cc)
		       ? DL_FAIL
		       : DL_RETRY;
}

/* "LABEL: cannot reach the Hub: WHY", and where a name did not resolve, the ways to
 * go on without the network. */
static void reach_error(struct dl *d, const char *label, CURLcode cc)
{
	err_set("%s: cannot reach the Hub: %s%s", label, curl_why(d, cc),
		unresolved(cc) ? " (offline? HF_HUB_OFFLINE=1 uses the Hugging Face cache "
				 "alone; -m DIR opens a model directory)"
			       : "");
}

/* Strips a weak marker and quotes: W/"abc" -> abc. */
static void normalize_etag(const char *in, char *out, size_t cap)
{
	if (!strncmp(in, "W/", 2))
		in += 2;
	size_t n = strlen(in);
	if (n >= 2 && in[0] == '"' && in[n - 1] == '"') {
		in++;
		n -= 2;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, in, n);
	out[n] = '\0';
}

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!*s || strlen(s) > 19)
		return -1;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* "access denied" and the Hub's own reason (for a gated repository, where to ask for
 * access), which is the server's text: shown with its control characters made
 * visible, on one line. */
static int denied(const char *label, const struct hdrs *h, const char *token_source)
{
	struct strbuf why = {0};
	if (h->err_message[0]) {
		sb_puts(&why, "; the Hub says: ");
		term_safe_line(&why, h->err_message, strlen(h->err_message));
	}
	if (token_source)
		err_set("%s: access denied (HTTP %ld): the token from %s does not grant access "
			"to this repository%s",
			label, h->status, token_source, why.p && !why.oom ? why.p : "");
	else
		err_set("%s: access denied (HTTP %ld): the repository is gated or private; set "
			"HF_TOKEN%s",
			label, h->status, why.p && !why.oom ? why.p : "");
	free(why.p);
	return -1;
}

static int http_error(const char *label, const struct hdrs *h, const char *token_source)
{
	const char *code = h->err_code;
	if (!strcmp(code, "RepoNotFound"))
		return err_set("%s: repository not found (HTTP %ld)%s", label, h->status,
			       h->status == 401 && !token_source
				       ? "; if it is private or gated, set HF_TOKEN"
				       : "");
	if (!strcmp(code, "RevisionNotFound"))
		return err_set("%s: revision not found (HTTP %ld)", label, h->status);
	if (h->status == 401 || h->status == 403)
		return denied(label, h, token_source);
	if (h->status == 404)
		return err_set("%s: not found (HTTP 404)", label);
	return err_set("%s: the server answered HTTP %ld", label, h->status);
}

/* Fills m from the headers of a 2xx/3xx answer. */
static int meta_from(const char *label, const struct hdrs *h, struct dl_meta *m)
{
	char etag[160];
	if (h->overflow)
		return err_set("%s: the server sent an overlong header", label);
	if (!is_hex(h->commit, 40))
		return err_set("%s: the server sent no valid X-Repo-Commit header", label);
	memcpy(m->commit, h->commit, 41);
	normalize_etag(h->linked_etag[0] ? h->linked_etag : h->etag, etag, sizeof etag);
	if (!is_hex(etag, 64) && !is_hex(etag, 40))
		return err_set(
			"%s: the server sent no usable %s header (want a sha256 or sha1 in hex)",
			label, h->linked_etag[0] ? "X-Linked-Etag" : "ETag");
	memcpy(m->etag, etag, strlen(etag) + 1);
	const char *size = h->linked_size[0] ? h->linked_size : h->length;
	if (parse_u64(size, &m->size) || m->size > (UINT64_C(1) << 42))
		return err_set("%s: the server sent no valid %s header", label,
			       h->linked_size[0] ? "X-Linked-Size" : "Content-Length");
	return 0;
}

int dl_head(struct dl *d, const char *url, const char *label, struct dl_meta *m)
{
	struct hdrs h;
	char *cur = strdup(url);
	int rc = DL_FAIL, hop, done = 0;
	for (hop = 0; cur && hop < 6 && !done; hop++) {
		common_opts(d, cur, &h);
		curl_easy_setopt(d->curl, CURLOPT_NOBODY, 1L);
		curl_easy_setopt(d->curl, CURLOPT_TIMEOUT, 60L);
		CURLcode cc = curl_easy_perform(d->curl);
		if (cc != CURLE_OK) {
			reach_error(d, label, cc);
			rc = after_curl_error(d, cc);
			done = 1;
			break;
		}
		curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &h.status);
		if (h.status >= 300 && h.status < 400 && h.location[0] == '/' && !h.overflow) {
			/* A renamed repository: same host, new path. */
			char *origin_end = strstr(cur, "://");
			origin_end = origin_end ? strchr(origin_end + 3, '/') : NULL;
			size_t olen = origin_end ? (size_t)(origin_end - cur) : strlen(cur);
			char *next = malloc(olen + strlen(h.location) + 1);
			if (next) {
				memcpy(next, cur, olen);
				strcpy(next + olen, h.location);
			}
			free(cur);
			cur = next;
			continue;
		}
		if (h.status == 404 && !h.err_code[0])
			rc = DL_ABSENT;
		else if (h.status == 404 && !strcmp(h.err_code, "EntryNotFound"))
			rc = DL_ABSENT;
		else if (h.status >= 200 && h.status < 400)
			rc = meta_from(label, &h, m) ? DL_FAIL : DL_OK;
		else if (http_error(label, &h, d->token_source), transient(d, &h))
			rc = DL_RETRY;
		done = 1;
	}
	if (!cur)
		err_set("%s: out of memory", label);
	else if (!done)
		err_set("%s: too many redirects", label);
	free(cur);
	d->fresh = rc == DL_RETRY;
	return rc;
}

/* Starts the body: a 200 to a Range request means the server sends the whole file
 * again, so the partial file and the hash start over. */
static int begin_body(struct xfer *x)
{
	long status = 0;
	curl_easy_getinfo(x->d->curl, CURLINFO_RESPONSE_CODE, &status);
	x->started = true;
	if (status == 206) {
		unsigned long long start;
		if (sscanf(x->h->content_range, "bytes %llu-", &start) != 1 || start != x->have) {
			err_set("%s: the server resumed at the wrong offset (Content-Range: %s)",
				x->label, x->h->content_range);
			return -1;
		}
		return 0;
	}
	if (status != 200) {
		err_set("%s: unexpected HTTP %ld with a body", x->label, status);
		return -1;
	}
	if (x->have > 0) {
		if (ftruncate(x->fd, 0) || lseek(x->fd, 0, SEEK_SET) < 0) {
			err_set("%s: cannot restart the partial file: %s", x->label,
				strerror(errno));
			return -1;
		}
		x->have = 0;
	}
	return 0;
}

static void hash_init(struct xfer *x)
{
	if (x->use_sha1) {
		/* git's blob id: sha1("blob SIZE\0" + content). */
		char head[32];
		int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)x->size);
		sha1_init(&x->s1);
		sha1_update(&x->s1, (size_t)n + 1, (const uint8_t *)head);
	} else {
		sha256_init(&x->s256);
	}
}

static void hash_update(struct xfer *x, const void *p, size_t n)
{
	if (x->use_sha1)
		sha1_update(&x->s1, n, p);
	else
		sha256_update(&x->s256, n, p);
}

static size_t on_body(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (!x->started) {
		uint64_t before = x->have;
		if (begin_body(x)) {
			x->failed = true;
			return 0;
		}
		if (before && !x->have)
			hash_init(x);
	}
	if (x->have + n > x->size) {
		err_set("%s: the server sent more than the %llu bytes announced", x->label,
			(unsigned long long)x->size);
		x->failed = true;
		return 0;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(x->fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err_set("%s: write error: %s", x->label, strerror(errno));
			x->failed = true;
			return 0;
		}
		off += (size_t)w;
	}
	hash_update(x, buf, n);
	x->have += n;
	return n;
}

static void report(struct xfer *x, int final)
{
	double now = clock_now(), dt = now - x->t0;
	curl_off_t got = 0;
	curl_easy_getinfo(x->d->curl, CURLINFO_SIZE_DOWNLOAD_T, &got);
	x->last = now;
	if (x->d->progress)
		x->d->progress(x->d->ud, x->label, x->have, x->size, dt > 0 ? (double)got / dt : 0,
			       final);
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ult,
		       curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	(void)ult;
	(void)ulnow;
	struct xfer *x = ud;
	if (clock_now() - x->last >= 0.1)
		report(x, 0);
	return 0;
}

/* Feeds the bytes already in the partial file to the hash. */
static int hash_existing(struct xfer *x)
{
	char buf[1 << 16];
	uint64_t left = x->have;
	if (lseek(x->fd, 0, SEEK_SET) < 0)
		return err_set("%s: seek: %s", x->label, strerror(errno));
	while (left > 0) {
		ssize_t r = read(x->fd, buf, left < sizeof buf ? left : sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return err_set("%s: cannot read the partial file: %s", x->label,
				       r < 0 ? strerror(errno) : "short read");
		hash_update(x, buf, (size_t)r);
		left -= (uint64_t)r;
	}
	return 0;
}

/* Whether two URLs name the same host and port: the token goes to the Hub's, not to
 * the host a redirect leads to (a CDN). */
static bool same_host(const char *a, const char *b)
{
	char *part[2][2] = {{NULL, NULL}, {NULL, NULL}};
	const char *urls[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		CURLU *u = curl_url();
		if (u && curl_url_set(u, CURLUPART_URL, urls[i], 0) == CURLUE_OK) {
			curl_url_get(u, CURLUPART_HOST, &part[i][0], 0);
			curl_url_get(u, CURLUPART_PORT, &part[i][1], CURLU_DEFAULT_PORT);
		}
		curl_url_cleanup(u);
	}
	bool same = part[0][0] && part[1][0] && part[0][1] && part[1][1] &&
		    !strcasecmp(part[0][0], part[1][0]) && !strcmp(part[0][1], part[1][1]);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 2; k++)
			curl_free(part[i][k]);
	return same;
}

static int transfer(struct xfer *x, const char *url)
{
	struct hdrs h;
	char range[48];
	common_opts(x->d, url, &h);
	x->h = &h;
	CURL *c = x->d->curl;
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	if (x->have > 0) {
		snprintf(range, sizeof range, "%llu-", (unsigned long long)x->have);
		curl_easy_setopt(c, CURLOPT_RANGE, range);
	}
	x->t0 = clock_now();
	x->last = x->t0;
	CURLcode cc = curl_easy_perform(c);
	if (x->failed)
		return DL_FAIL;
	if (cc == CURLE_OK)
		return DL_OK;
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_HTTP_RETURNED_ERROR) {
		h.status = status;
		char *at = NULL;
		curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &at);
		if ((status == 401 || status == 403) && at && !same_host(at, url))
			/* the host the Hub sent us to, which was given no token */
			err_set("%s: the file's host refused it (HTTP %ld) after the Hub's "
				"redirect: "
				"the link may have expired; try again",
				x->label, status);
		else
			http_error(x->label, &h, x->d->token_source);
		/* 416: our partial file does not fit the server's; 429, 5xx: worth another
		 * try, resuming from what the partial file holds. */
		if (status == 416 && ftruncate(x->fd, 0) == 0) {
			x->have = 0;
			return DL_RETRY;
		}
		return transient(x->d, &h) ? DL_RETRY : DL_FAIL;
	}
	err_set("%s: download interrupted after %llu of %llu bytes: %s", x->label,
		(unsigned long long)x->have, (unsigned long long)x->size, curl_why(x->d, cc));
	return after_curl_error(x->d, cc);
}

/* Size and hash check; a file that fails it is deleted so it is never kept. */
static int verify(struct xfer *x, const char *path, const struct dl_meta *m)
{
	char got[2 * SHA256_DIGEST_SIZE + 1];
	if (x->have != m->size) {
		unlinkat(x->dir, x->name, 0);
		return err_set("%s: got %llu bytes, the Hub says %llu; the download was discarded",
			       x->label, (unsigned long long)x->have, (unsigned long long)m->size);
	}
	uint8_t digest[SHA256_DIGEST_SIZE];
	size_t dlen = x->use_sha1 ? SHA1_DIGEST_SIZE : SHA256_DIGEST_SIZE;
	if (x->use_sha1)
		sha1_digest(&x->s1, dlen, digest);
	else
		sha256_digest(&x->s256, dlen, digest);
	for (size_t i = 0; i < dlen; i++)
		snprintf(got + 2 * i, 3, "%02x", digest[i]);
	if (strcmp(got, m->etag)) {
		unlinkat(x->dir, x->name, 0);
		return err_set("%s: %s mismatch: the Hub says %s, the download has %s; "
			       "the download was discarded",
			       x->label, x->use_sha1 ? "sha1" : "sha256", m->etag, got);
	}
	if (fsync(x->fd))
		return err_set("%s: fsync: %s", path, strerror(errno));
	return 0;
}

int dl_get(struct dl *d, const char *url, int dir, const char *name, const char *path,
	   const char *label, const struct dl_meta *m)
{
	struct xfer x = {.d = d, .label = label, .size = m->size, .dir = dir, .name = name};
	x.use_sha1 = strlen(m->etag) == 40;
	/* Never through a link planted at the partial file's name (the cache may be
	 * shared): the bytes go only into a regular file of our own. */
	x.fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (x.fd < 0)
		return err_set("%s: cannot create: %s", path,
			       errno == ELOOP ? "it is a symbolic link (refused)"
					      : strerror(errno));
	struct stat st;
	int rc = DL_FAIL;
	if (fstat(x.fd, &st) || !S_ISREG(st.st_mode)) {
		err_set("%s: not a regular file", path);
		goto out;
	}
	/* nor through a hard link planted there: its bytes are another file's, which a
	 * resume would append to (or truncate and overwrite), and the blob it becomes
	 * would stay that file */
	if (st.st_nlink != 1) {
		err_set("%s: has another hard link (refused: its bytes are another file's too)",
			path);
		goto out;
	}
	x.have = (uint64_t)st.st_size;
	if (x.have > x.size) {
		if (ftruncate(x.fd, 0)) {
			err_set("%s: truncate: %s", path, strerror(errno));
			goto out;
		}
		x.have = 0;
	}
	bool resumed = x.have > 0; /* bytes of an earlier run's partial file */
	x.t0 = clock_now();
	hash_init(&x);
	if (hash_existing(&x))
		goto out;
	rc = x.have < x.size ? transfer(&x, url) : DL_OK;
	if (rc == DL_OK && x.have < x.size) {
		/* The server ended the body early but cleanly (a close-delimited answer cut
		 * short): what arrived is kept, and the next try resumes after it. */
		err_set("%s: the transfer ended after %llu of %llu bytes", label,
			(unsigned long long)x.have, (unsigned long long)x.size);
		rc = DL_RETRY;
	}
	if (rc == DL_OK) {
		report(&x, 1);
		rc = verify(&x, path, m) ? DL_FAIL : DL_OK;
		/* the partial file it resumed may be what was wrong (verify removed it): the
		 * next try fetches all of it; a fetch of its own that fails is a failure */
		if (rc == DL_FAIL && resumed)
			rc = DL_RETRY;
	}
out:
	close(x.fd);
	d->fresh = rc == DL_RETRY;
	return rc;
}

/* A small answer (the Hub's JSON API) into memory. */
struct membuf {
	char *p;
	size_t len, max;
	bool overflow;
};

static size_t on_mem(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct membuf *m = ud;
	size_t n = size * nmemb;
	if (m->len + n > m->max) {
		m->overflow = true;
		return 0;
	}
	char *q = realloc(m->p, m->len + n + 1);
	if (!q)
		return 0;
	memcpy(q + m->len, buf, n);
	m->p = q;
	m->len += n;
	m->p[m->len] = 0;
	return n;
}

int dl_get_text(struct dl *d, const char *url, const char *label, size_t max, char **out,
		size_t *len)
{
	struct hdrs h;
	struct membuf m = {NULL, 0, max, false};
	common_opts(d, url, &h);
	curl_easy_setopt(d->curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(d->curl, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(d->curl, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, on_mem);
	curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, &m);
	CURLcode cc = curl_easy_perform(d->curl);
	curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &h.status);
	int rc = DL_FAIL;
	if (m.overflow) {
		err_set("%s: the answer is larger than %zu bytes", label, max);
	} else if (cc != CURLE_OK) {
		reach_error(d, label, cc);
		rc = after_curl_error(d, cc);
	} else if (h.status != 200) {
		http_error(label, &h, d->token_source);
		rc = transient(d, &h) ? DL_RETRY : DL_FAIL;
	} else {
		rc = DL_OK;
	}
	if (rc == DL_OK && !m.p && !(m.p = calloc(1, 1)))
		rc = err_set("out of memory");
	d->fresh = rc == DL_RETRY;
	if (rc != DL_OK) {
		free(m.p);
		return rc;
	}
	*out = m.p;
	*len = m.len;
	return DL_OK;
}
