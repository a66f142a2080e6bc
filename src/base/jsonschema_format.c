/* jsonschema_format.c — the string formats a schema may ask for (see jsonschema.h):
 * whether a text is the beginning of a date, a time, a date-time (RFC 3339's
 * full-date, full-time and date-time, the forms Python's fromisoformat reads) or a
 * UUID, each field within its range (a day within its month, February 29 in leap
 * years only), so that every beginning taken can be finished. */
#include "src/base/jsonschema_impl.h"

#include <string.h>

static const char *const names[JS_N_FORMATS] = {"", "date", "time", "date-time", "uuid"};

int js_format_id(const char *name)
{
	for (int f = 1; f < JS_N_FORMATS; f++)
		if (!strcmp(name, names[f]))
			return f;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A field of width w at s (k of its digits typed, k < w or all): some value of it
 * within [lo, hi] begins so. */
static bool field_ok(const char *s, int k, int w, int lo, int hi)
{
	int v = 0, scale = 1;
	for (int i = 0; i < k; i++)
		v = v * 10 + (s[i] - '0');
	for (int i = k; i < w; i++)
		v *= 10, scale *= 10;
	return v + scale - 1 >= lo && v <= hi; /* [v, v + scale) meets [lo, hi] */
}

static int month_days(int year, int month)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
	return month == 2 && leap ? 29 : days[month - 1];
}

static int number(const char *s, int w)
{
	int v = 0;
	for (int i = 0; i < w; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Fixed-width text: each byte as the template says ('9' a digit, 'f' a hex digit,
 * anything else itself); the number of bytes matched, or -1 at one that is not. */
static int shape(const char *s, int n, const char *tmpl)
{
	int i = 0;
	for (; i < n && tmpl[i]; i++) {
		char t = tmpl[i], c = s[i];
		bool hex = is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
		if (t == '9' ? !is_digit(c) : t == 'f' ? !hex : c != t)
			return -1;
	}
	return i;
}

/* Field (at, width, lo, hi) of a fixed-width text of n bytes: within range as far as
 * typed. */
static bool field(const char *s, int n, int at, int w, int lo, int hi)
{
	int k = n - at < 0 ? 0 : n - at > w ? w : n - at;
	return field_ok(s + at, k, w, lo, hi);
}

/* A full-date's beginning, YYYY-MM-DD (the year from 0001). */
static bool date_prefix(const char *s, int n, bool *whole)
{
	*whole = n == 10;
	if (n > 10 || shape(s, n, "9999-99-99") < n || !field(s, n, 0, 4, 1, 9999) ||
	    !field(s, n, 5, 2, 1, 12))
		return false;
	if (n <= 8)
		return true;
	int days = month_days(number(s, 4), number(s + 5, 2));
	return field(s, n, 8, 2, 1, days);
}

/* A full-time's beginning: HH:MM:SS, a fraction of 1 to 9 digits, then Z or +HH:MM
 * (or -). */
static bool time_prefix(const char *s, int n, bool *whole)
{
	*whole = false;
	if (shape(s, n, "99:99:99") < (n < 8 ? n : 8) || !field(s, n, 0, 2, 0, 23) ||
	    !field(s, n, 3, 2, 0, 59) || !field(s, n, 6, 2, 0, 59))
		return false;
	int i = 8;
	if (n > i && s[i] == '.') {
		int d = 0;
		while (++i < n && is_digit(s[i]))
			d++;
		if (d > 9 || (i < n && d == 0))
			return false;
		if (i == n)
			return true; /* a fraction goes on */
	}
	if (n <= i)
		return true;
	if (s[i] == 'Z')
		return (*whole = n == i + 1), n == i + 1;
	if (s[i] != '+' && s[i] != '-')
		return false;
	const char *o = s + i + 1;
	int m = n - i - 1;
	*whole = m == 5;
	return m <= 5 && shape(o, m, "99:99") == m && field(o, m, 0, 2, 0, 23) &&
	       field(o, m, 3, 2, 0, 59);
}

bool js_format_prefix(int format, const char *s, size_t len, bool *whole)
{
	int n = (int)len;
	*whole = false;
	switch (format) {
	case JS_F_DATE: return date_prefix(s, n, whole);
	case JS_F_TIME: return time_prefix(s, n, whole);
	case JS_F_DATE_TIME:
		if (n <= 10) {
			bool date = date_prefix(s, n, whole);
			*whole = false; /* the time is still to come */
			return date;
		}
		return date_prefix(s, 10, whole) && s[10] == 'T' &&
		       time_prefix(s + 11, n - 11, whole);
	default: /* JS_F_UUID */
		*whole = n == 36;
		return n <= 36 && shape(s, n, "ffffffff-ffff-ffff-ffff-ffffffffffff") == n;
	}
}
