#!/bin/sh
# template.sh — `qwenchat template` against the jinja2 golden renders: every case of
# tests/golden/template-cases.json, for the hybrid Qwen3, Instruct-2507, Thinking-2507 and
# an unknown (ChatML) template, with each --add-generation-prompt/--enable-thinking
# combination (under the sanitizers, one combination per case, rotating); then bad input.
. "$TOP_SRCDIR/tests/lib.sh"
need_tokenizer
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to read the golden files"; exit 77; }
G=$TOP_SRCDIR/tests/golden

# Split the golden files into one file per case and per expected render.
python3 - "$G" "$TMP" <<'EOF' || exit 1
import json, os, sys
g, tmp = sys.argv[1], sys.argv[2]
cases = json.load(open(os.path.join(g, "template-cases.json"), encoding="utf-8"))["cases"]
os.makedirs(os.path.join(tmp, "cases"))
for i, c in enumerate(cases):
    with open(os.path.join(tmp, "cases", "%d.json" % i), "w", encoding="utf-8") as f:
        json.dump(c["messages"], f, ensure_ascii=False)
for v in ("qwen3", "qwen3-instruct-2507", "qwen3-thinking-2507", "chatml"):
    d = os.path.join(tmp, "want", v)
    os.makedirs(d)
    for r in json.load(open(os.path.join(g, "template-golden-%s.json" % v), encoding="utf-8"))["renders"]:
        t = {None: "absent", False: "false", True: "true"}[r["enable_thinking"]]
        with open(os.path.join(d, "%d.%d.%s" % (r["case"], r["add_generation_prompt"], t)), "wb") as f:
            f.write(r["text"].encode("utf-8"))
EOF
ncases=$(ls "$TMP/cases" | wc -l)
[ "$ncases" -ge 40 ] || fail "only $ncases cases"

# One model directory per variant: the real tokenizer, and (except for the hybrid
# template, which is the real tokenizer_config.json) that variant's tokenizer_config.json.
for v in qwen3-instruct-2507 qwen3-thinking-2507 chatml; do
	mkdir -p "$TMP/m-$v"
	ln -s "$TOK_DIR/tokenizer.json" "$TMP/m-$v/tokenizer.json"
	cp "$G/template-config-$v.json" "$TMP/m-$v/tokenizer_config.json"
done

combos="0.absent 0.false 0.true 1.absent 1.false 1.true"
full=4
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && full=1
for v in qwen3 qwen3-instruct-2507 qwen3-thinking-2507 chatml; do
	if [ "$v" = qwen3 ]; then dir=$TOK_DIR; else dir=$TMP/m-$v; fi
	ok=0 bad=0 i=0
	while [ "$i" -lt "$ncases" ]; do
		k=0
		for combo in $combos; do
			k=$((k + 1))
			# Every case once per variant, the combination rotating from case to case,
			# and every combination on the first cases (test_template checks them all
			# in process: a run here costs a process start, and there are 1176 renders).
			if [ "$i" -ge "$full" ] && [ $(((i + ${#v}) % 6 + 1)) -ne "$k" ]; then
				continue
			fi
			set -- --messages "$TMP/cases/$i.json"
			case $combo in 1.*) set -- "$@" --add-generation-prompt ;; esac
			case $combo in *.false) set -- "$@" --enable-thinking false ;;
			               *.true) set -- "$@" --enable-thinking true ;; esac
			if "$QWENCHAT" template -m "$dir" "$@" >"$TMP/got" 2>"$TMP/err" &&
			   cmp -s "$TMP/got" "$TMP/want/$v/$i.$combo"; then
				ok=$((ok + 1))
			else
				bad=$((bad + 1))
				[ "$bad" -le 3 ] && fail "$v case $i ($combo): output differs from jinja2: $(head -c 300 "$TMP/err")"
			fi
			# Known templates render silently; the unknown one warns, on stderr.
			if [ "$v" != chatml ] && [ -s "$TMP/err" ]; then
				fail "$v case $i: unexpected stderr: $(head -c 200 "$TMP/err")"
			fi
		done
		i=$((i + 1))
	done
	if [ "$v" = chatml ]; then
		grep -q '^qwenchat: warning: .*ChatML' "$TMP/err" && pass "unknown template: ChatML warning" ||
			fail "unknown template: no ChatML warning: $(head -c 200 "$TMP/err")"
	fi
	if [ "$bad" -eq 0 ]; then pass "$v: $ok renders byte-identical to jinja2"
	else fail "$v: $bad of $((ok + bad)) renders differ"; fi
done

# The conversation may come on stdin.
"$QWENCHAT" template -m "$TOK_DIR" --messages - --add-generation-prompt <"$TMP/cases/1.json" >"$TMP/got" &&
	cmp -s "$TMP/got" "$TMP/want/qwen3/1.1.absent" && pass "--messages - reads stdin" ||
	fail "--messages - does not read stdin"

# Bad input: one line on stderr starting with "qwenchat: ", exit 1 (bad data) or 2 (usage).
printf '[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]' >"$TMP/role.json"
printf '[{"role": "user", "content": "hi"' >"$TMP/trunc.json"
printf '[]' >"$TMP/empty.json"
printf '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]' >"$TMP/calls.json"
printf '{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]}' >"$TMP/tools.json"
printf '[{"role": "user", "content": ["a", "b"]}]' >"$TMP/parts.json"

expect_exit 1 "unreadable --messages" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/nonexistent.json"
expect_err_has "nonexistent.json" "the message names the unreadable file"
expect_exit 1 "--messages is a directory" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP"
expect_err_has "$TMP" "the message names the directory"
expect_exit 1 "unknown role" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/role.json"
expect_err_has 'role.json: messages[1].role: unknown role "robot"' "the message names the file, index and role"
expect_exit 1 "invalid JSON" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/trunc.json"
expect_err_has "trunc.json: invalid JSON" "the message names the file"
expect_exit 1 "empty conversation" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/empty.json"
expect_err_has "no messages" "empty conversation is explained"
expect_exit 1 "tool_calls refused" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/calls.json"
expect_err_has "messages[1].tool_calls: tool calls are not supported" "tool_calls refusal is explained"
expect_exit 1 "tools refused" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/tools.json"
expect_err_has "tools: tool definitions are not supported" "tools refusal is explained"
expect_exit 1 "content parts refused" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/parts.json"
expect_err_has "messages[0].content" "content refusal names the field"
expect_exit 2 "missing --messages" "$QWENCHAT" template -m "$TOK_DIR"
expect_err_has "--messages" "usage error names the option"
expect_exit 2 "bad --enable-thinking" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/cases/0.json" --enable-thinking maybe
expect_err_has "--enable-thinking" "usage error names the option"
expect_exit 2 "stray argument" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/cases/0.json" extra
expect_exit 2 "unknown option" "$QWENCHAT" template --frobnicate
expect_exit 1 "missing model directory" "$QWENCHAT" template -m "$TMP/no-such-model" --messages "$TMP/cases/0.json"
mkdir -p "$TMP/badcfg"
ln -s "$TOK_DIR/tokenizer.json" "$TMP/badcfg/tokenizer.json"
printf '{"chat_template": ' >"$TMP/badcfg/tokenizer_config.json"
expect_exit 1 "corrupt tokenizer_config.json" "$QWENCHAT" template -m "$TMP/badcfg" --messages "$TMP/cases/0.json"
expect_err_has "tokenizer_config.json" "the message names tokenizer_config.json"
for f in "$TMP"/err; do [ "$(wc -l <"$f")" -le 1 ] || fail "multi-line error: $(cat "$f")"; done
expect_exit 0 "--help" "$QWENCHAT" template --help
grep -q -- "--enable-thinking" "$TMP/out" && pass "--help describes --enable-thinking" || fail "--help lacks --enable-thinking"
finish
