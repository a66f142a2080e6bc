/* units.c — byte counts with a unit and three significant digits; durations. */
#include "src/base/units.h"

#include <stdio.h>

static const char *scaled(double b, double step, const char *const u[5], char *buf, size_t n)
{
	int i = 0;
	while (b >= step && i < 4) {
		b /= step;
		i++;
	}
	const char *fmt = i == 0 ? "%.0f %s" : b < 10 ? "%.2f %s" : b < 100 ? "%.1f %s" : "%.0f %s";
	snprintf(buf, n, fmt, b, u[i]);
	return buf;
}

const char *units_bytes(double bytes, char *buf, size_t n)
{
	static const char *const u[5] = {"B", "kB", "MB", "GB", "TB"};
	return scaled(bytes, 1000, u, buf, n);
}

const char *units_ibytes(double bytes, char *buf, size_t n)
{
	static const char *const u[5] = {"B", "KiB", "MiB", "GiB", "TiB"};
	return scaled(bytes, 1024, u, buf, n);
}

const char *units_duration(double s, char *buf, size_t n)
{
	if (!(s >= 0) || s > 1e9)
		snprintf(buf, n, "?");
	else if (s < 60)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)s % 3600 / 60);
	return buf;
}
