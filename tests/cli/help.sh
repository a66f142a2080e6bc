#!/bin/sh
# help.sh — every command's --help: exit 0, on stdout alone, no line wider than 80
# columns (a terminal's default width); every option it lists is in the man page, in
# the command's entry or under COMMON OPTIONS or REMOTE BACKEND; every command has an
# entry there. A typed option in the wrong place says where it goes.
. "$TOP_SRCDIR/tests/lib.sh"

expect_exit 0 "qwenchat --help" "$QWENCHAT" --help
cmds=$(sed -n '/^commands:/,/^$/s/^  \([a-z-]*\)  .*/\1/p' "$TMP/out")
[ "$(echo "$cmds" | wc -w)" -ge 10 ] && pass "--help lists the commands: $(echo $cmds)" ||
	fail "--help lists no commands: $(cat "$TMP/out")"
for c in "" $cmds; do
	# shellcheck disable=SC2086
	"$QWENCHAT" $c --help >"$TMP/out" 2>"$TMP/err"
	rc=$?
	wide=$(python3 -c 'import sys
for l in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    if len(l) > 80: print(len(l), l)' "$TMP/out")
	if [ $rc -eq 0 ] && [ -s "$TMP/out" ] && [ ! -s "$TMP/err" ] && [ -z "$wide" ]; then
		pass "${c:-qwenchat} --help: exit 0, stdout only, within 80 columns"
	else
		fail "${c:-qwenchat} --help: exit $rc, stderr '$(head -c 200 "$TMP/err")', lines wider than 80: $wide"
	fi
done

if python3 - "$QWENCHAT" "$TOP_SRCDIR/man/qwenchat.1" <<'PY'; then
import re, subprocess, sys
qw, man = sys.argv[1], sys.argv[2]
text = open(man, encoding="utf-8").read()
def section(name):
    return re.search(r'^\.SH ' + name + r'\n(.*?)(?=^\.SH )', text, re.S | re.M).group(1)
commands = section("COMMANDS")
common = section("COMMON OPTIONS") + section("REMOTE BACKEND")
heads = [(m.start(), m.group(1).replace('\\-', '-'))
         for m in re.finditer(r'^\.TP\n\.B ([a-z\\-]+)', commands, re.M)]
entry = {name: commands[at:heads[i + 1][0] if i + 1 < len(heads) else len(commands)]
         for i, (at, name) in enumerate(heads)}
listing = subprocess.run([qw, "--help"], capture_output=True, text=True).stdout
bad = 0
for c in re.findall(r'^  ([a-z-]+) {2,}', listing.split("commands:")[1], re.M):
    if c not in entry:
        print(f"{c}: no entry in the man page's COMMANDS", file=sys.stderr)
        bad += 1
    helptext = subprocess.run([qw, c, "--help"], capture_output=True, text=True).stdout
    where = (entry.get(c, "") + common).replace('\\-', '-')
    for o in sorted(set(re.findall(r'^  (?:-\w, )?--([a-z0-9-]+)', helptext, re.M)) - {"help"}):
        if not re.search(r'(?<![a-z-])--' + re.escape(o) + r'(?![a-z0-9-])', where):
            print(f"{c}: --{o} is in --help, not in the man page", file=sys.stderr)
            bad += 1
sys.exit(1 if bad else 0)
PY
	pass "every command has a man page entry, and every option of its --help is there"
else
	fail "the man page lacks commands or options (above)"
fi

# help [COMMAND]
expect_exit 0 "qwenchat help" "$QWENCHAT" help
grep -q '^commands:' "$TMP/out" && pass "help: the list of commands" || fail "help: $(head -c 200 "$TMP/out")"
expect_exit 0 "qwenchat help run" "$QWENCHAT" help run
head -n 1 "$TMP/out" | grep -q '^usage: qwenchat run ' && pass "help run: run's --help" ||
	fail "help run: $(head -c 200 "$TMP/out")"
expect_exit 2 "help of an unknown command" "$QWENCHAT" help bogus
expect_err_has "help: unknown command 'bogus'" "... says so"

# what an unknown option likely meant
M=$TMP/none
expect_exit 2 "run -c 4096" "$QWENCHAT" run -m "$M" -p hi -c 4096
expect_err_has "unknown option '-c'; did you mean --ctx?" "-c: llama.cpp's context option named ours"
expect_exit 2 "run -t 2" "$QWENCHAT" run -m "$M" -p hi -t 2
expect_err_has "unknown option '-t'; did you mean --threads?" "-t: --threads"
expect_exit 2 "run --top_k=5" "$QWENCHAT" run -m "$M" -p hi --top_k=5
expect_err_has "unknown option '--top_k=5'; did you mean --top-k?" "--top_k: --top-k"
expect_exit 2 "run --n-predict 8" "$QWENCHAT" run -m "$M" -p hi --n-predict 8
expect_err_has "did you mean -n?" "--n-predict: -n"
expect_exit 2 "run --bogus" "$QWENCHAT" run -m "$M" -p hi --bogus
expect_err_has "unknown option '--bogus' (try 'qwenchat run --help')" "--bogus: no guess"
expect_exit 2 "qwenchat -m M run -p hi" "$QWENCHAT" -m "$M" run -p hi
expect_err_has "unknown option '-p': 'run' is a command, and comes first ('qwenchat run ...')" \
	"a command after options: said to come first"
expect_exit 2 "qwenchat -m M info" "$QWENCHAT" -m "$M" info
expect_err_has "'info' is a command: it comes first" "... also without an unknown option"
expect_exit 2 "qwenchat --system list foo" "$QWENCHAT" --system list foo
expect_err_has "unexpected argument 'foo'" "an option's value that names a command is no command"
finish
