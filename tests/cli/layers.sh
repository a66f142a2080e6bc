#!/bin/sh
# layers.sh — the dependency rule of the source tree, checked on every include:
#   ui/ -> src/ (app subsystems) -> {tokenizer/, engine/} -> src/base/
# src/cli/ (the command line) sits above them all. Inside the app layer the
# subsystems stand in three levels:
#   top     src/app (the chat controller), src/serve (the HTTP server)
#   middle  src/hub (finding models), src/remote (the OpenAI-API client)
#   bottom  src/chat (conversation, template), src/session (session, sampler),
#           src/train (training: it includes no other subsystem, only the engine
#           and the tokenizer, so it sits at the bottom beside chat and session)
# A file may include its own folder's headers and those of the layers and levels
# below it, never one above or beside it. The link order of the per-layer libraries
# (Makefile.am) catches calls between layers the same way.
# Also: only ui/ includes curses, and only src/cli/ reads the environment.
. "$TOP_SRCDIR/tests/lib.sh"
cd "$TOP_SRCDIR" || exit 1

# check DIR ALLOWED DESC — every quoted include in DIR's sources matches ALLOWED (an
# extended regex over the included path).
check() {
	bad=$(find "$1" \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
		-exec grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' {} + |
		sed 's/:\([0-9]*\):[^"]*"\([^"]*\)".*/:\1: \2/' | grep -Ev ": ($2)\$")
	if [ -n "$bad" ]; then
		fail "$3:"
		echo "$bad" | sed 's/^/    /' >&2
	else
		pass "$3"
	fi
}

base='src/base/[a-z0-9_]+\.h'
check src/base "$base" "src/base/ includes only src/base/"
check tokenizer "$base|tokenizer/[a-z0-9_]+\.h" "tokenizer/ includes only itself and src/base/"
check engine "$base|engine/[a-z0-9_/]+\.(h|cuh)|config\.h" "engine/ includes only itself and src/base/"
app="$base|tokenizer/tokenizer\.h|tokenizer/bpe_(train|count|write)\.h|engine/engine\.h"
# training: data files, the loop (around engine/train.h, the engine's training API),
# evaluation, checkpoints; the command line resolves models and tokenizers for it
train="$base|tokenizer/tokenizer\.h|engine/(engine|train)\.h"
below=
for level in "chat session train" "hub remote" "app serve"; do
	for d in $level; do
		apis=$app
		[ "$d" = train ] && apis=$train
		check "src/$d" "$apis|src/($d${below:+|$below})/[a-z_]+\.h" \
			"src/$d includes only itself${below:+, src/($below)}, the engine and tokenizer APIs and src/base/"
	done
	below=$below${below:+|}$(echo "$level" | tr ' ' '|')
done
check ui "$base|src/(hub|chat|session|app)/[a-z0-9_]+\.h|ui/[a-z_]+\.h" \
	"ui/ includes only the app layer (no engine/ or tokenizer/ types) and src/base/"

# Curses and the environment.
curses=$(grep -rln '^[[:space:]]*#[[:space:]]*include[[:space:]]*<n\?cursesw\?\(/[a-z]*\)\?\.h>' \
	src engine tokenizer 2>/dev/null)
[ -z "$curses" ] && pass "only ui/ includes curses" || fail "curses outside ui/: $curses"
env=$(grep -rn '\bgetenv\s*(' src engine tokenizer ui --include='*.c' --include='*.h' \
	--include='*.cu' | grep -v '^src/cli/')
[ -z "$env" ] && pass "only src/cli/ reads the environment" ||
	{ fail "getenv outside src/cli/:"; echo "$env" | sed 's/^/    /' >&2; }
finish
