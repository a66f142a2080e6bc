/* origin.h — which names and which web pages may use the server: the socket it
 * listens on, the Host check that keeps a server on a loopback address to this
 * machine's names, and the browser's Origin check behind the CORS headers (a page's
 * script reads the answers only when its origin is allowed). */
#ifndef QWENCHAT_ORIGIN_H
#define QWENCHAT_ORIGIN_H

#include <stdbool.h>

/* A listening socket on host:port (0: any free one), and what it is bound to: the
 * port, whether IPv6, whether a loopback address (then origin_host_is_local holds
 * requests to this machine's names). -1 with err_set. */
int origin_listen(const char *host, int port, int *bound, bool *v6, bool *loopback);

/* Whether an address (struct in_addr or in6_addr by family) is a loopback one. */
bool origin_loopback_addr(int family, const void *a);

/* Whether a request's Host header ("name", "name:port", "[v6]:port") names this
 * machine: localhost, *.localhost, a loopback address or gethostname(). NULL (no
 * Host: HTTP/1.0) is local. */
bool origin_host_is_local(const char *host);

/* Whether a browser's Origin header ("scheme://host[:port]", or "null") may use the
 * server: a page of this machine (http or https on a local host, as
 * origin_host_is_local says), or one of allowed[0..n) — an exact origin (compared
 * without case, a trailing "/" ignored), "*" for every origin, "null" for pages
 * without one (files, sandboxed frames). */
bool origin_allowed(const char *origin, const char *const *allowed, int n);

/* 0 when s may be one of origin_allowed's allowed values ("*", "null", or
 * "scheme://host[:port]" as a browser sends it: no path, no user, printable), else
 * -1 with err_set saying why. */
int origin_check(const char *s);

/* The path of a request target: an absolute-form one ("http://HOST/v1/models", which
 * RFC 9112, 3.2.2, has a server accept, as clients send it through a proxy) gives its
 * path and its HOST malloc'd into *host; an origin-form one is returned as it is, *host
 * NULL. */
const char *origin_target_path(const char *url, char **host);

/* Whether h is a list of header names ("authorization, content-type"), safe to send
 * back as it is in a CORS preflight's answer. */
bool origin_header_list(const char *h);

#endif
