/* proc.c — resident memory and the memory to be had from /proc and the cgroup
 * files, online CPUs from sysconf. */
#include "src/base/proc.h"

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t proc_rss_bytes(void)
{
	unsigned long size, resident;
	size_t out = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) == 2)
		out = resident * (size_t)sysconf(_SC_PAGESIZE);
	fclose(f);
	return out;
}

size_t proc_mem_available(char *why, size_t n)
{
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				break;
		fclose(f);
	}
	size_t avail = (size_t)kb * 1024;
	if (why && n)
		snprintf(why, n, "MemAvailable");
	char cg[PATH_MAX + 64];
	size_t room = proc_cgroup_headroom("/proc/self/cgroup", "/sys/fs/cgroup", cg, sizeof cg);
	if (room != SIZE_MAX && (avail == 0 || room < avail)) {
		avail = room;
		if (why && n)
			snprintf(why, n, "%s less the cgroup's use", cg);
	}
	return avail;
}

/* The first number in file `dir`/`name`; false when unreadable or not a number ("max"). */
static bool read_number(const char *dir, const char *name, unsigned long long *v)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return false;
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fscanf(f, "%llu", v) == 1;
	fclose(f);
	return ok;
}

/* The page cache a cgroup holds, from the "key value" lines of `dir`/memory.stat: its
 * inactive and active file pages (v1 names the hierarchy's totals "total_..."); 0 when
 * unreadable. */
static unsigned long long page_cache(const char *dir, bool v2)
{
	const char *keys[2] = {v2 ? "inactive_file" : "total_inactive_file",
			       v2 ? "active_file" : "total_active_file"};
	char path[PATH_MAX], line[256];
	unsigned long long sum = 0, x;
	if (snprintf(path, sizeof path, "%s/memory.stat", dir) >= (int)sizeof path)
		return 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		for (int k = 0; k < 2; k++) {
			size_t klen = strlen(keys[k]);
			if (!strncmp(line, keys[k], klen) && line[klen] == ' ' &&
			    sscanf(line + klen, "%llu", &x) == 1)
				sum += x;
		}
	fclose(f);
	return sum;
}

/* The cgroup directory of this process's memory controller (v2: the "0::" line with a
 * cgroup.controllers at root; v1: the line naming "memory", under root/memory) into
 * dir, the mount's top into top and whether it is v2 into *v2_out; false when there is
 * none. A path the mount does not show (a container's own cgroup namespace shows "/")
 * falls back to its top. */
static bool memory_cgroup(const char *self, const char *root, char *dir, char *top, size_t n,
			  bool *v2_out)
{
	char line[PATH_MAX + 64], probe[PATH_MAX];
	bool v2 =
		snprintf(probe, sizeof probe, "%s/cgroup.controllers", root) < (int)sizeof probe &&
		access(probe, R_OK) == 0;
	*v2_out = v2;
	FILE *f = fopen(self, "r");
	if (!f)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = 0;
		const char *ctrls = c1 + 1, *path = c2 + 1;
		bool mem = false;
		for (const char *p = ctrls; *p; p += strcspn(p, ","), p += *p == ',')
			mem |= !strncmp(p, "memory", 6) && (p[6] == ',' || !p[6]);
		if (v2 && !strcmp(line, "0") && !*ctrls)
			found = snprintf(top, n, "%s", root) < (int)n;
		else if (!v2 && mem)
			found = snprintf(top, n, "%s/memory", root) < (int)n;
		if (found && (snprintf(dir, n, "%s%s", top, path) >= (int)n || access(dir, R_OK)))
			found = snprintf(dir, n, "%s", top) < (int)n;
	}
	fclose(f);
	return found;
}

size_t proc_cgroup_headroom(const char *self, const char *root, char *why, size_t n)
{
	char dir[PATH_MAX], top[PATH_MAX];
	bool v2;
	if (!memory_cgroup(self, root, dir, top, sizeof dir, &v2))
		return SIZE_MAX;
	const char *limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
	size_t best = SIZE_MAX, tlen = strlen(top);
	for (;;) { /* the cgroup, then each parent up to the mount's top */
		unsigned long long limit, used;
		/* v1 writes "no limit" as a page-rounded 2^63 */
		if (read_number(dir, limit_file, &limit) && limit < (1ULL << 62) &&
		    read_number(dir, v2 ? "memory.current" : "memory.usage_in_bytes", &used)) {
			/* the page cache (clean file pages, a model's mapping among them) is
			   taken back before the OOM killer comes, as MemAvailable counts it */
			unsigned long long cache = page_cache(dir, v2);
			used = cache < used ? used - cache : 0;
			size_t room = limit > used ? (size_t)(limit - used) : 0;
			if (room < best) {
				best = room;
				if (why && n)
					snprintf(why, n, "%s/%s", dir, limit_file);
			}
		}
		char *slash = strrchr(dir, '/');
		if (strlen(dir) <= tlen || !slash || (size_t)(slash - dir) < tlen)
			break;
		*slash = 0;
	}
	return best;
}

int proc_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

int proc_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t quiet, old;
	sigemptyset(&quiet);
	sigaddset(&quiet, SIGINT);
	sigaddset(&quiet, SIGTERM);
	sigaddset(&quiet, SIGHUP);
	sigaddset(&quiet, SIGQUIT);
	sigaddset(&quiet, SIGWINCH);
	sigaddset(&quiet, SIGTSTP);
	/* a new thread starts with its creator's mask */
	pthread_sigmask(SIG_BLOCK, &quiet, &old);
	int rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void proc_catch(int sig, const struct sigaction *sa, struct sigaction *old)
{
	struct sigaction was;
	if (sigaction(sig, NULL, &was) == 0 && was.sa_handler != SIG_IGN)
		sigaction(sig, sa, NULL);
	if (old)
		*old = was;
}

static const int g_stops[PROC_N_STOPS] = {SIGINT, SIGTERM, SIGHUP};

void proc_catch_stops(void (*handler)(int), int flags, struct sigaction old[PROC_N_STOPS])
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < PROC_N_STOPS; i++)
		proc_catch(g_stops[i], &sa, &old[i]);
}

void proc_restore_stops(const struct sigaction old[PROC_N_STOPS])
{
	for (int i = 0; i < PROC_N_STOPS; i++)
		sigaction(g_stops[i], &old[i], NULL);
}
