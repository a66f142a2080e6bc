/* proc.h — what the operating system says about this process and machine. */
#ifndef QWENCHAT_PROC_H
#define QWENCHAT_PROC_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

/* Resident set size in bytes (from /proc/self/statm); 0 when unknown. */
size_t proc_rss_bytes(void);

/* Memory this process can have without swapping or meeting the OOM killer, in bytes
 * (0 when unknown): the least of MemAvailable in /proc/meminfo and the headroom of
 * the memory cgroups it is in (a container's limit). `why` (n bytes, may be NULL)
 * gets what set the figure: "MemAvailable", or the cgroup's limit file. */
size_t proc_mem_available(char *why, size_t n);

/* The headroom of the memory cgroups a /proc/self/cgroup file (`self`) names under
 * the cgroup mount `root` (/sys/fs/cgroup; cgroup v2, or v1's memory controller at
 * root/memory): for the cgroup and each parent with a limit, the limit less what it
 * holds apart from its page cache (file pages, which the kernel takes back), the
 * least of them; SIZE_MAX when none has a limit or none can be read. `why` gets
 * the limit file of the least. */
size_t proc_cgroup_headroom(const char *self, const char *root, char *why, size_t n);

/* CPUs online now (at least 1). */
int proc_online_cpus(void);

/* pthread_create for a helper thread, with the stop, hang-up and resize signals blocked
 * in it: the kernel then hands them to the thread that waits for them (a chat blocked
 * in read gets its EINTR, curses its resize) instead of a worker that cannot act. */
int proc_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* sigaction(sig, sa, old) unless sig is ignored now, as the program started (nohup's
 * SIGHUP, the SIGINT of a job a script put in the background): such a signal is not
 * meant for it and stays ignored. *old (may be NULL) gets the disposition to put back
 * either way. */
void proc_catch(int sig, const struct sigaction *sa, struct sigaction *old);

/* The signals that stop a command's work (Ctrl-C, SIGTERM, SIGHUP: a closed terminal),
 * caught with handler (sa_flags flags: SA_RESTART, or 0 for a blocking call to end in
 * EINTR) as proc_catch catches them; old[] gets the dispositions that
 * proc_restore_stops puts back (a signal raised again after that ends the program). */
enum { PROC_N_STOPS = 3 };
void proc_catch_stops(void (*handler)(int), int flags, struct sigaction old[PROC_N_STOPS]);
void proc_restore_stops(const struct sigaction old[PROC_N_STOPS]);

#endif
