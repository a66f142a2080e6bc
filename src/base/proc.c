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

size_t proc_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb * 1024;
}

int proc_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
