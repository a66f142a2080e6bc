/* origin.c — the Host and Origin checks of serve, the host a request target names,
 * the header names a preflight's answer repeats, and its listening socket (see
 * origin.h). */
#include "src/serve/origin.h"

#include "src/base/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

bool origin_loopback_addr(int family, const void *a)
{
	return family == AF_INET6 ? IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a)
				  : ntohl(((const struct in_addr *)a)->s_addr) >> 24 == 127;
}

/* A web page whose name its owner points at 127.0.0.1 (DNS rebinding) reaches a
 * server listening there, as the page's own origin, and could read its answers; so a
 * server on a loopback address answers, as Ollama's does, only requests to
 * localhost, a loopback address or this machine's name. */
bool origin_host_is_local(const char *host)
{
	if (!host)
		return true;
	char name[256];
	const char *start = host, *end;
	if (host[0] == '[') { /* [v6]:port */
		start = host + 1;
		end = strchr(start, ']');
	} else {
		end = strchr(host, ':');
	}
	size_t n = end ? (size_t)(end - start) : strlen(start);
	if (!n || n >= sizeof name || (host[0] == '[' && !end))
		return false;
	/* after the name only a port ("localhost:1@evil.example" names evil.example) */
	const char *port = end ? end + (host[0] == '[') : "";
	if (*port && (*port != ':' || strspn(port + 1, "0123456789") != strlen(port + 1)))
		return false;
	memcpy(name, start, n);
	name[n] = '\0';
	/* brackets hold an IPv6 address and nothing else ("[localhost]" is none) */
	struct in6_addr a6;
	if (host[0] == '[')
		return inet_pton(AF_INET6, name, &a6) == 1 && origin_loopback_addr(AF_INET6, &a6);
	/* a name is a host name ("?.localhost" is none) */
	static const char host_chars[] = "abcdefghijklmnopqrstuvwxyz"
					 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.";
	if (strspn(name, host_chars) != n)
		return false;
	if (name[n - 1] == '.') /* the absolute form, "localhost." */
		name[--n] = '\0';
	if (!strcasecmp(name, "localhost") || (n > 10 && !strcasecmp(name + n - 10, ".localhost")))
		return true;
	struct in_addr a4;
	if (inet_pton(AF_INET, name, &a4) == 1)
		return origin_loopback_addr(AF_INET, &a4);
	char self[256] = "";
	return gethostname(self, sizeof self - 1) == 0 && self[0] && !strcasecmp(name, self);
}

/* Whether origin is "http://" or "https://" and a local host[:port], nothing after:
 * a page served from this machine, which could as well call the server itself. */
static bool local_page(const char *origin)
{
	const char *host = !strncasecmp(origin, "http://", 7)    ? origin + 7
			   : !strncasecmp(origin, "https://", 8) ? origin + 8
								 : NULL;
	if (!host || !*host || strpbrk(host, "/?#@"))
		return false;
	return origin_host_is_local(host);
}

static bool same_origin(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	na -= na > 1 && a[na - 1] == '/';
	nb -= nb > 1 && b[nb - 1] == '/';
	return na == nb && !strncasecmp(a, b, na);
}

/* Whether s is printable ASCII without spaces, as an origin is sent (and sent back in
 * a header). */
static bool visible_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

bool origin_allowed(const char *origin, const char *const *allowed, int n)
{
	if (!visible_ascii(origin))
		return false;
	if (strcmp(origin, "null") && local_page(origin))
		return true;
	for (int i = 0; i < n; i++)
		if (!strcmp(allowed[i], "*") || same_origin(origin, allowed[i]))
			return true;
	return false;
}

int origin_check(const char *s)
{
	if (!strcmp(s, "*") || !strcmp(s, "null"))
		return 0;
	const char *sep = strstr(s, "://");
	if (!sep || sep == s || !sep[3])
		return err_set("'%.200s' is not an origin such as https://chat.example:3000", s);
	if (!visible_ascii(s))
		return err_set("'%.200s' holds a space or a character outside ASCII (an "
			       "origin's name is sent in its ASCII form)",
			       s);
	size_t n = strlen(sep + 3);
	if (strcspn(sep + 3, "/?#@") < n - (sep[3 + n - 1] == '/'))
		return err_set("'%.200s' holds a path, a query or a user: an origin is "
			       "scheme://host[:port]",
			       s);
	return 0;
}

int origin_listen(const char *host, int port, int *bound, bool *v6, bool *loopback)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int rc = getaddrinfo(host, ps, &hints, &res);
	if (rc)
		return err_set("--host %s: %s", host, gai_strerror(rc));
	int fd = -1, e = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		int one = 1;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
			e = errno;
			close(fd);
			fd = -1;
			continue;
		}
		*v6 = ai->ai_family == AF_INET6;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err_set("%s:%d: %s", host, port, strerror(e));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						: ((struct sockaddr_in *)&ss)->sin_port);
	*loopback =
		ss.ss_family == AF_INET6
			? origin_loopback_addr(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr)
			: origin_loopback_addr(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr);
	return fd;
}

/* The path of an absolute-form target ("http://HOST/v1/models": RFC 9112, 3.2.2, has
 * a server accept it, as clients send it through a proxy), its HOST malloc'd into
 * *host; an origin-form target as it is, *host NULL. */
const char *origin_target_path(const char *url, char **host)
{
	size_t skip = !strncasecmp(url, "http://", 7)    ? 7
		      : !strncasecmp(url, "https://", 8) ? 8
							 : 0;
	*host = NULL;
	if (!skip)
		return url;
	const char *a = url + skip, *slash = strchr(a, '/');
	*host = strndup(a, slash ? (size_t)(slash - a) : strlen(a));
	return !*host ? url : slash ? slash : "/"; /* out of memory: no path found */
}

/* Whether h is a list of header names ("authorization, content-type"), safe to send
 * back as it is. */
bool origin_header_list(const char *h)
{
	size_t n = strlen(h);
	return n < 1024 && strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789-_.!#$%&'*+^`|~, ") == n;
}
