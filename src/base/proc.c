/* proc.c — resident memory from /proc, online CPUs from sysconf. */
#include "src/base/proc.h"

#include <stdio.h>
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

int proc_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
