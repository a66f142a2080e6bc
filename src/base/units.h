/* units.h — sizes and durations written for people: "1.19 GB", "596 MB", "24.0 KiB",
 * "42s", "3m07s", "2h15m". */
#ifndef QWENCHAT_UNITS_H
#define QWENCHAT_UNITS_H

#include <stddef.h>

/* Three significant digits in decimal units (B, kB, MB, GB, TB), as model and file
 * sizes are quoted. Writes into buf (n bytes) and returns it. */
const char *units_bytes(double bytes, char *buf, size_t n);

/* The same in binary units (B, KiB, MiB, GiB, TiB), as memory is allocated. */
const char *units_ibytes(double bytes, char *buf, size_t n);

/* Seconds as "42s", "3m07s" or "2h15m" (an estimate has no use for more digits); "?"
 * for a negative, NaN or absurdly large value. Writes into buf and returns it. */
const char *units_duration(double seconds, char *buf, size_t n);

#endif
