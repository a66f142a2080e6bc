#!/bin/sh
# jsonschema.sh — what the JSON Schema recognizer lets a model write, checked with
# Python's jsonschema (tests/cli/jsonschema_check.py): random schemas of every
# keyword it follows, texts walked through it to the end, each a valid value.
. "$TOP_SRCDIR/tests/lib.sh"
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! $PY -c 'import jsonschema' 2>/dev/null; then
	echo "skip: Python's jsonschema is not installed (scripts/install-deps)"
	exit 77
fi
if $PY "$TOP_SRCDIR/tests/cli/jsonschema_check.py" "$TOP_BUILDDIR/tests/jsonwalk" "$TMP" \
	>"$TMP/check.out" 2>&1; then
	pass "$(tail -n 1 "$TMP/check.out")"
else
	fail "texts the recognizer let through are not values of their schema:"
	head -n 40 "$TMP/check.out" >&2
fi
finish
