/* jsonschema_format.c — the string formats a schema may ask for (see jsonschema.h):
 * whether a text is the beginning of a date, a time, a date-time (RFC 3339's
 * full-date, full-time and date-time, the forms Python's fromisoformat reads), a
 * UUID, an e-mail address or an IPv4 address, each field within its range (a day
 * within its month, February 29 in leap years only), so that every beginning taken
 * can be finished within JS_MAX_TEXT characters. */
#include "src/base/jsonschema_impl.h"

#include <string.h>

static const char *const names[JS_N_FORMATS] = {"",     "date",  "time", "date-time",
						"uuid", "email", "ipv4"};

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

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* An e-mail address's beginning, in the plain form: a local part of letters, digits
 * and ._%+- (no dot first, last or twice), '@', then labels of letters, digits and
 * hyphens (none first or last) joined by dots, the last of two letters or more. The
 * fewest characters that would finish it must fit in JS_MAX_TEXT. */
static bool email_prefix(const char *s, int n, bool *whole)
{
	const char *at = memchr(s, '@', (size_t)n);
	int local = at ? (int)(at - s) : n, need;
	*whole = false;
	for (int i = 0; i < local; i++)
		if (!(is_alpha(s[i]) || is_digit(s[i]) || strchr("._%+-", s[i])) ||
		    (s[i] == '.' && (i == 0 || s[i - 1] == '.')))
			return false;
	if (!at) /* the rest of the local part, then "@a.bc" */
		need = local == 0 || s[local - 1] == '.' ? 6 : 5;
	else if (local == 0 || s[local - 1] == '.')
		return false;
	else {
		int dots = 0, label = 0; /* the current label's length */
		bool letters = true;     /* ... all of them letters */
		for (const char *p = at + 1; p < s + n; p++) {
			if (*p == '.') {
				if (label == 0 || p[-1] == '-')
					return false;
				dots++, label = 0, letters = true;
			} else if (is_alpha(*p) || is_digit(*p) || (*p == '-' && label > 0)) {
				label++, letters = letters && is_alpha(*p);
			} else {
				return false;
			}
		}
		bool tld = dots && letters && label >= 2;
		*whole = tld;
		/* to finish: a label's end ("a" after '-'), then ".bc", or the TLD's letters */
		need = tld                             ? 0
		       : dots && letters && label == 1 ? 1
		       : dots && label == 0            ? 2
		       : label == 0                    ? 4
						       : (s[n - 1] == '-') + 3;
	}
	return n + need <= JS_MAX_TEXT;
}

/* An IPv4 address's beginning: four numbers 0-255 joined by dots, none with a
 * leading zero (as Python's ipaddress reads it). */
static bool ipv4_prefix(const char *s, int n, bool *whole)
{
	int dots = 0, digits = 0, v = 0;
	*whole = false;
	for (int i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (digits == 0 || ++dots > 3)
				return false;
			digits = 0, v = 0;
		} else if (!is_digit(s[i]) || (digits == 1 && v == 0) ||
			   (v = v * 10 + (s[i] - '0')) > 255) {
			return false;
		} else {
			digits++;
		}
	}
	*whole = dots == 3 && digits > 0;
	return true;
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
	case JS_F_EMAIL: return email_prefix(s, n, whole);
	case JS_F_IPV4: return ipv4_prefix(s, n, whole);
	default: /* JS_F_UUID */
		*whole = n == 36;
		return n <= 36 && shape(s, n, "ffffffff-ffff-ffff-ffff-ffffffffffff") == n;
	}
}
