/* proc.h — what the operating system says about this process and machine. */
#ifndef QWENCHAT_PROC_H
#define QWENCHAT_PROC_H

#include <stddef.h>

/* Resident set size in bytes (from /proc/self/statm); 0 when unknown. */
size_t proc_rss_bytes(void);

/* Memory the kernel says can be had without swapping (MemAvailable in
 * /proc/meminfo), in bytes; 0 when unknown. */
size_t proc_mem_available(void);

/* CPUs online now (at least 1). */
int proc_online_cpus(void);

#endif
