# lib.sh — helpers sourced by the shell tests (tests/*.sh).
# The harness exports QWENCHAT (the built binary), TOP_SRCDIR and TOP_BUILDDIR.
set -u
: "${QWENCHAT:?run through make check}"
: "${TOP_SRCDIR:?run through make check}"
: "${TOP_BUILDDIR:?run through make check}"

# A scratch directory removed when the test exits.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/qwenchat-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# poke FILE TENSOR VALUE — sets the first float32 of TENSOR in the safetensors FILE
poke() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
path, name, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
b = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
off = 8 + n + json.loads(b[8:8 + n])[name]["data_offsets"][0]
b[off:off + 4] = struct.pack("<f", value)
open(path, "wb").write(b)
PY
}

# expect_exit CODE DESC CMD... — runs CMD, checks its exit status; stderr saved in $TMP/err.
expect_exit() {
	want=$1; desc=$2; shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	if [ "$got" -eq "$want" ]; then pass "$desc (exit $got)"
	else fail "$desc: exit $got, expected $want; stderr: $(head -c 300 "$TMP/err")"; fi
}

# expect_err_has TEXT DESC — the last expect_exit's stderr contains TEXT, on one line
# starting with "qwenchat: ".
expect_err_has() {
	if grep -qF -- "$1" "$TMP/err" && head -n 1 "$TMP/err" | grep -q '^qwenchat: '; then
		pass "$2"
	else
		fail "$2: stderr lacks '$1': $(head -c 300 "$TMP/err")"
	fi
}

# numpy_python — PY: a python3 with numpy (the float64 references need it), or empty.
numpy_python() {
	PY=
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import numpy' 2>/dev/null; then PY=$p; return 0; fi
	done
}

# need_numpy — numpy_python, or the test ends: SKIP (77), a failure under CI.
need_numpy() {
	numpy_python
	[ -n "$PY" ] && return 0
	[ -n "${CI:-}" ] && { echo "no python3 with numpy (scripts/install-deps)" >&2; exit 1; }
	echo "SKIP: no python3 with numpy" >&2
	exit 77
}

# need_torch — PY: a python3 with torch and numpy (the float64 training references),
# or the test ends: SKIP (77).
need_torch() {
	PY=/usr/bin/python3
	[ -x "$PY" ] || PY=python3
	"$PY" -c 'import torch, numpy' 2>/dev/null && return 0
	echo "SKIP: python3 with torch and numpy (Debian: python3-torch) is missing" >&2
	exit 77
}

# Sets TOK_DIR to the real Qwen3 tokenizer files, or exits 77 (SKIP) / 1 (CI).
need_tokenizer() {
	TOK_DIR=$(sh "$TOP_SRCDIR/tests/fetch-tokenizer.sh") || exit $?
}

# chat_model DIR [MKMODEL OPTIONS...] — writes a test model with the real Qwen3
# tokenizer (tests/mkmodel: deterministic random weights; its tiny shape unless the
# options say otherwise) and ends the test when that fails. Skips (77) without the
# tokenizer, as need_tokenizer does.
chat_model() {
	[ -n "${TOK_DIR:-}" ] || need_tokenizer
	dir=$1; shift
	"$TOP_BUILDDIR/tests/mkmodel" --out "$dir" --tokenizer "$TOK_DIR" "$@" >/dev/null ||
		{ echo "mkmodel failed: $*" >&2; exit 1; }
}

# wait_screen REGEX — until the test's `screen` function (its tmux pane, captured) shows
# a line matching REGEX (grep -E), or $WAIT seconds (default 30).
wait_screen() {
	i=0
	while [ $i -lt $((${WAIT:-30} * 10)) ]; do
		screen | grep -qE -- "$1" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# same_run DESC DIR1 DIR2 — two `qwenchat train` runs with the same weights, moments and
# log records (but the time)
same_run() {
	if cmp -s "$2/model.safetensors" "$3/model.safetensors" &&
	   cmp -s "$2/train-state/optimizer.safetensors" "$3/train-state/optimizer.safetensors" &&
	   [ "$(sed 's/"seconds".*//' "$2/train-log.jsonl")" = "$(sed 's/"seconds".*//' "$3/train-log.jsonl")" ]; then
		pass "$1"
	else
		fail "$1: the runs differ"
	fi
}

# train_usage CODE DESC TEXT ARGS... — `qwenchat train ARGS` exits CODE, its error one
# line "qwenchat: ...TEXT..." at the end of stderr (after any progress lines of its own)
train_usage() {
	want=$1 desc=$2 text=$3
	shift 3
	"$QWENCHAT" train "$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	last=$(tail -n 1 "$TMP/err")
	if [ "$got" -ne "$want" ]; then
		fail "$desc: exit $got, expected $want: $last"
	elif [ "$(grep -c '^qwenchat: ' "$TMP/err")" -ne 1 ] ||
	     ! printf '%s\n' "$last" | grep -q '^qwenchat: ' ||
	     ! printf '%s\n' "$last" | grep -qF -- "$text"; then
		fail "$desc: not one line with '$text': $(cat "$TMP/err")"
	else
		pass "$desc (exit $got)"
	fi
}

# Ends the test: exit 0 when no check failed.
finish() {
	if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
	exit 0
}

# restore_dev — puts back /dev/stdout and /dev/null should a regression (running as
# root) have replaced them with regular files; fails the test when it had to.
restore_dev() {
	if [ -f /dev/stdout ] && [ ! -L /dev/stdout ]; then
		rm -f /dev/stdout && ln -s /proc/self/fd/1 /dev/stdout
		fail "/dev/stdout had been replaced by a file (put back)"
	fi
	if [ -f /dev/null ]; then
		rm -f /dev/null && mknod -m 666 /dev/null c 1 3
		fail "/dev/null had been replaced by a file (put back)"
	fi
}
