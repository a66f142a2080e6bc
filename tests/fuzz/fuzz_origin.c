/* fuzz_origin.c — serve's Host, Origin and request-target helpers take what a client
 * sends. The input's first line is the subject (each function gets it in a buffer of
 * its exact size, so that a read past its NUL is caught); the next lines, up to 4, are
 * origins allowed with --allow-origin. Asserted: each answer is the same twice; a Host
 * judged local holds only [A-Za-z0-9.:[]-], a port of digits, and names localhost,
 * *.localhost, 127.x.y.z, an IPv6 loopback in brackets or this machine, with or
 * without its port and in any case, and never does with "@evil.example" or "/x"
 * after it; an Origin this machine's pages may use is http(s)://local-host; "*" or
 * itself lets a printable origin through, and more allowed ones never refuse one;
 * origin_check takes only "*", "null" and scheme://host[:port][/]; a request target
 * is split where its path starts, its host the bytes before; a header list judged
 * safe to send back is printable ASCII on one line. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "src/serve/origin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_ALLOWED = 4 };

/* A malloc'd copy of p[0..n) with its NUL right after it. */
static char *dup_exact(const char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static char *concat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *s = malloc(na + nb + 1);
	if (!s)
		abort();
	memcpy(s, a, na);
	memcpy(s + na, b, nb + 1);
	return s;
}

static bool host_local(const char *h)
{
	bool local = origin_host_is_local(h);
	if (origin_host_is_local(h) != local)
		abort();
	return local;
}

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

#define DIGITS "0123456789"
#define ALNUM  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" DIGITS

/* 127.a.b.c, each part digits. */
static bool loopback4(const char *s, size_t n)
{
	if (n < 7 || strncmp(s, "127.", 4) || !all_of(s, n, DIGITS "."))
		return false;
	int dots = 0;
	for (size_t i = 0; i < n; i++)
		dots += s[i] == '.';
	return dots == 3 && s[n - 1] != '.' && !strstr(s, "..");
}

/* Whether name[0..n) is one of those origin_host_is_local's comment lists. */
static bool local_name(const char *name, size_t n, bool bracketed)
{
	char self[256] = "";
	if (n && name[n - 1] == '.')
		n--; /* the absolute form */
	if (bracketed && n && all_of(name, n, "0123456789abcdefABCDEF:.") && memchr(name, ':', n))
		return true; /* the address itself is for inet_pton to judge */
	if ((n == 9 && !strncasecmp(name, "localhost", 9)) ||
	    (n > 10 && !strncasecmp(name + n - 10, ".localhost", 10)) || loopback4(name, n))
		return true;
	return gethostname(self, sizeof self - 1) == 0 && strlen(self) == n &&
	       !strncasecmp(name, self, n);
}

/* h is judged local: its form. */
static void check_local_form(const char *h)
{
	size_t n = strlen(h);
	if (!all_of(h, n, ALNUM "-.:[]"))
		abort();
	const char *name = h, *port;
	if (h[0] == '[') {
		name = h + 1;
		port = strchr(name, ']');
		if (!port)
			abort();
		port++;
	} else {
		port = strchr(h, ':');
		port = port ? port : h + n;
	}
	size_t nn = (size_t)(port - name) - (h[0] == '[');
	if ((*port && (*port != ':' || !all_of(port + 1, strlen(port + 1), DIGITS))) ||
	    !local_name(name, nn, h[0] == '['))
		abort();
	/* the same host without its port, with another one, in another case */
	char *bare = dup_exact(h, (size_t)(port - h)), *other = concat(bare, ":1");
	char *flip = dup_exact(h, n);
	for (char *c = flip; *c; c++)
		*c = (char)(*c >= 'a' && *c <= 'z'   ? *c - 32
			    : *c >= 'A' && *c <= 'Z' ? *c + 32
						     : *c);
	if (!host_local(bare) || !host_local(other) || !host_local(flip))
		abort();
	free(bare);
	free(other);
	free(flip);
}

static void check_host(const char *h)
{
	if (host_local(h))
		check_local_form(h);
	static const char *const tails[] = {"@evil.example", "/x", "?", "#"};
	for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
		char *s = concat(h, tails[i]);
		if (host_local(s))
			abort();
		free(s);
	}
}

static bool visible(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static const char *after_scheme(const char *s)
{
	return !strncasecmp(s, "http://", 7)    ? s + 7
	       : !strncasecmp(s, "https://", 8) ? s + 8
						: NULL;
}

static void check_origin(const char *o, const char *const *allowed, int n_allowed)
{
	bool page = origin_allowed(o, NULL, 0);
	const char *host = after_scheme(o);
	if (page && (!visible(o) || !host || !*host || strpbrk(host, "/?#@") || !host_local(host)))
		abort();
	const char *star[] = {"*"}, *self[] = {o};
	if (origin_allowed(o, star, 1) != visible(o) || origin_allowed(o, self, 1) != visible(o))
		abort();
	bool before = page;
	for (int k = 1; k <= n_allowed; k++) {
		bool now = origin_allowed(o, allowed, k);
		if ((before && !now) || (now && !visible(o)))
			abort();
		before = now;
	}
}

static void check_allowed_value(const char *s)
{
	if (origin_check(s) || !strcmp(s, "*") || !strcmp(s, "null"))
		return;
	const char *sep = strstr(s, "://");
	if (!sep || sep == s || !visible(s))
		abort();
	size_t n = strlen(sep + 3), at = strcspn(sep + 3, "/?#@");
	if (!n || (at < n && (at != n - 1 || sep[3 + at] != '/')))
		abort();
}

static void check_target(const char *url)
{
	char *host;
	const char *path = origin_target_path(url, &host);
	const char *a = after_scheme(url);
	if (!a) {
		if (host || path != url)
			abort();
		return;
	}
	const char *slash = strchr(a, '/');
	size_t hn = slash ? (size_t)(slash - a) : strlen(a);
	if (!host || strlen(host) != hn || memcmp(host, a, hn) ||
	    (slash ? path != slash : strcmp(path, "/")))
		abort();
	host_local(host);
	free(host);
}

/* Sent back as a header's value: printable, one line, no second header in it. */
static void check_header_list(const char *h)
{
	if (!origin_header_list(h))
		return;
	if (strlen(h) >= 1024)
		abort();
	for (const char *c = h; *c; c++)
		if (*c < ' ' || *c > '~' || *c == ':')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *lines[1 + MAX_ALLOWED];
	int n = 0;
	while (n < 1 + MAX_ALLOWED && (n == 0 || p < end)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		lines[n++] = dup_exact(p, (size_t)((nl ? nl : end) - p));
		p = nl ? nl + 1 : end;
	}
	const char *s = lines[0];
	if (!host_local(NULL))
		abort(); /* HTTP/1.0 without a Host */
	check_host(s);
	check_origin(s, (const char *const *)lines + 1, n - 1);
	for (int i = 0; i < n; i++)
		check_allowed_value(lines[i]);
	check_target(s);
	check_header_list(s);
	for (int i = 0; i < n; i++)
		free(lines[i]);
	return 0;
}
