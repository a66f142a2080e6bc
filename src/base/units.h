/* units.h — sizes written for people: "1.19 GB", "596 MB", "24.0 KiB". */
#ifndef QWENCHAT_UNITS_H
#define QWENCHAT_UNITS_H

#include <stddef.h>

/* Three significant digits in decimal units (B, kB, MB, GB, TB), as model and file
 * sizes are quoted. Writes into buf (n bytes) and returns it. */
const char *units_bytes(double bytes, char *buf, size_t n);

/* The same in binary units (B, KiB, MiB, GiB, TiB), as memory is allocated. */
const char *units_ibytes(double bytes, char *buf, size_t n);

#endif
