#!/bin/sh
# ui-signals.sh — the chat UI ended or stopped by signals from outside (SIGQUIT,
# SIGUSR1, SIGALRM, a crash's SIGSEGV, SIGTERM; SIGTSTP then SIGCONT) gives the
# terminal back as it was: tests/cli/ui_signals.py on a pseudo-terminal.
. "$TOP_SRCDIR/tests/lib.sh"

"$QWENCHAT" chat --help | grep -q -- --plain || { echo "SKIP: built without the TUI"; exit 77; }
grep -q '^#define HAVE_TUI 1' "$TOP_BUILDDIR/config.h" || { echo "SKIP: --disable-tui"; exit 77; }
need_tokenizer
chat_model "$TMP/model" --vocab-size 151669
mkdir -p "$TMP/home"
if python3 "$TOP_SRCDIR/tests/cli/ui_signals.py" "$QWENCHAT" "$TMP/model" "$TMP/home"; then
	pass "the terminal comes back after every signal"
else
	fail "a signal left the terminal changed (above)"
fi
[ "$failures" -eq 0 ]
