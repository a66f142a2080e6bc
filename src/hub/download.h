/* download.h — HTTP for the Hub with libcurl: file metadata from a HEAD request, and
 * resumable, verified downloads into a partial file. */
#ifndef QWENCHAT_DOWNLOAD_H
#define QWENCHAT_DOWNLOAD_H

#include <stdint.h>
#include <time.h>

/* What the Hub says about one file (from the first response, before any redirect
 * to a CDN, which knows nothing of the repository). */
struct dl_meta {
	char commit[41]; /* X-Repo-Commit: the commit the revision resolved to */
	char etag[65];   /* X-Linked-Etag (LFS: sha256) or ETag (git blob sha1), unquoted */
	uint64_t size;   /* X-Linked-Size or Content-Length */
};

/* Called while bytes arrive: done and total count the whole file (resumed part
 * included); rate is bytes/s of this transfer; final is 1 on the last call. */
typedef void (*dl_progress_fn)(void *ud, const char *label, uint64_t done, uint64_t total,
			       double rate, int final);

struct dl;

/* A connection to the Hub. token: sent as "Authorization: Bearer TOKEN" (NULL for
 * none); source: where it came from ("HF_TOKEN", a file's path; NULL: "HF_TOKEN"),
 * named when it is refused. progress may be NULL. NULL with err_set on failure. */
struct dl *dl_new(const char *token, const char *source, dl_progress_fn progress, void *ud);
void dl_free(struct dl *d);

enum { DL_OK = 0, DL_ABSENT = 1, DL_FAIL = -1, DL_RETRY = -2 };

/* HEAD url, following only same-host redirects (renamed repositories) like
 * huggingface_hub, and fills m. DL_OK; DL_ABSENT when the file does not exist in
 * the repository (HTTP 404 without a repository or revision error); DL_RETRY (with
 * err_set) for what may pass: 429, 5xx, a connection that failed or broke;
 * DL_FAIL with err_set naming label otherwise (404 repo/revision, 401/403, other
 * HTTP status, missing or malformed headers). */
int dl_head(struct dl *d, const char *url, const char *label, struct dl_meta *m);

/* GETs url (redirects followed) into the file name in the directory dir (path, its
 * full name, for messages), continuing from the bytes it already holds with a Range
 * request, hashing as it goes; never opened through a symbolic link, and relative to
 * dir, so that a folder swapped for a link after dir was opened leads nowhere else.
 * Checks the size and the hash against m; a file that fails the check is deleted.
 * DL_OK; DL_RETRY when the transfer broke off, ended early or got 429/5xx, and can
 * resume (the file keeps what arrived); DL_FAIL otherwise. */
int dl_get(struct dl *d, const char *url, int dir, const char *name, const char *path,
	   const char *label, const struct dl_meta *m);

/* The wait (seconds) the last answer asked for with Retry-After; 0 when none. */
double dl_retry_after(const struct dl *d);

/* A Retry-After value, delta-seconds or an HTTP-date (then against now), as a wait
 * in seconds at most DL_MAX_RETRY_AFTER; -1 when it is neither. */
enum { DL_MAX_RETRY_AFTER = 300 };
double dl_parse_retry_after(const char *value, time_t now);

/* GETs a small answer (the Hub's JSON API) into *out (malloc'd, NUL-terminated,
 * *len bytes), following redirects; refuses more than max bytes. DL_OK; DL_RETRY
 * (with err_set) for what may pass, as dl_head: 429, 5xx, a connection that failed
 * or broke; DL_FAIL otherwise (err_set naming label). */
int dl_get_text(struct dl *d, const char *url, const char *label, size_t max, char **out,
		size_t *len);

#endif
