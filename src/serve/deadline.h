/* deadline.h — a deadline for each request on a connection of `qwenchat serve`, its
 * headers and its body. libmicrohttpd's timeout closes a connection that is silent,
 * so one that trickles a byte of its request now and then stayed open for as long as
 * it liked, and 256 of them (the connection cap) shut everyone else out. A watcher
 * thread shuts down the socket of a connection whose request has not all arrived
 * within the deadline; libmicrohttpd then closes it as a hang-up. */
#ifndef QWENCHAT_DEADLINE_H
#define QWENCHAT_DEADLINE_H

struct deadline;
struct deadline_conn;

/* Starts the watcher: `seconds` for each request to arrive whole, from the moment the
 * connection opens or its previous request was answered. expired (may be NULL) is
 * told the `who` of each connection it cut, outside the watcher's lock. NULL with
 * err_set. */
struct deadline *deadline_start(int seconds, void (*expired)(void *user, const char *who),
				void *user);
/* Stops the watcher; every connection must have been closed (deadline_close). */
void deadline_stop(struct deadline *d);

/* A new connection on socket fd (who: the client, for expired): its clock starts.
 * NULL when out of memory (the connection then has no deadline). */
struct deadline_conn *deadline_open(struct deadline *d, int fd, const char *who);
/* The request is all in (headers and body): no deadline until deadline_restart. */
void deadline_met(struct deadline_conn *c);
/* The request was answered: the next one's headers are timed from now. */
void deadline_restart(struct deadline_conn *c);
/* The connection closes; call before its socket is closed. Accepts NULL. */
void deadline_close(struct deadline_conn *c);

#endif
