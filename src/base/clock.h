/* clock.h — the monotonic clock every timing in qwenchat reads. */
#ifndef QWENCHAT_CLOCK_H
#define QWENCHAT_CLOCK_H

#include <stdint.h>

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC): for intervals only. */
double clock_now(void);

/* The same in nanoseconds, for short waits where a double's rounding would matter. */
int64_t clock_ns(void);

#endif
