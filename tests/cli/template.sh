#!/bin/sh
# template.sh — `qwenchat template` against the jinja2 golden renders: every case of
# tests/golden/template-cases.json, for the hybrid Qwen3, Instruct-2507, Thinking-2507 and
# an unknown (ChatML) template: each case with one --add-generation-prompt/--enable-thinking
# combination, rotating from case to case, and the first cases with all six (test_template
# checks every combination of every case in process); then bad input.
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
        # the object form when the case has tools, else the bare messages array
        json.dump({"messages": c["messages"], "tools": c["tools"]} if "tools" in c else
                  c["messages"], f, ensure_ascii=False)
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

# One model directory per variant: that variant's tokenizer_config.json (for the hybrid
# template, the real one) with a tiny tokenizer.json, because loading the real one
# (11 MB) costs ~0.4 s a run and the template does not depend on it.
# template-tiny-tokenizer.json: `qwenchat train-bpe --vocab-size 300` on one line of text.
for v in qwen3 qwen3-instruct-2507 qwen3-thinking-2507 chatml; do
	mkdir -p "$TMP/m-$v"
	cp "$G/template-tiny-tokenizer.json" "$TMP/m-$v/tokenizer.json"
	if [ "$v" = qwen3 ]; then cp "$TOK_DIR/tokenizer_config.json" "$TMP/m-$v/"
	else cp "$G/template-config-$v.json" "$TMP/m-$v/tokenizer_config.json"; fi
done

combos="0.absent 0.false 0.true 1.absent 1.false 1.true"
full=2 stride=1
# Under the sanitizers a run costs ~0.4 s: one case in three per variant (test_template,
# sanitized too, still checks them all).
[ "${QWENCHAT_SANITIZED:-0}" = 1 ] && full=1 stride=3
for v in qwen3 qwen3-instruct-2507 qwen3-thinking-2507 chatml; do
	dir=$TMP/m-$v
	ok=0 bad=0 i=0
	while [ "$i" -lt "$ncases" ]; do
		if [ "$i" -ge "$full" ] && [ $(((i + ${#v}) % stride)) -ne 0 ]; then
			i=$((i + 1))
			continue
		fi
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

# The real tokenizer directory, as is, and the conversation on stdin.
for combo in 0.absent 1.absent 1.false 1.true; do
	case $combo in 1.*) set -- --messages - --add-generation-prompt ;; *) set -- --messages - ;; esac
	case $combo in *.false) set -- "$@" --enable-thinking false ;; *.true) set -- "$@" --enable-thinking true ;; esac
	"$QWENCHAT" template -m "$TOK_DIR" "$@" <"$TMP/cases/4.json" >"$TMP/got" 2>"$TMP/err" &&
		cmp -s "$TMP/got" "$TMP/want/qwen3/4.$combo" && [ ! -s "$TMP/err" ] &&
		pass "real tokenizer directory, stdin, $combo" ||
		fail "real tokenizer directory, stdin, $combo: $(head -c 300 "$TMP/err")"
done

# Bad input: one line on stderr starting with "qwenchat: ", exit 1 (bad data) or 2 (usage).
printf '[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]' >"$TMP/role.json"
printf '[{"role": "user", "content": "hi"' >"$TMP/trunc.json"
printf '[]' >"$TMP/empty.json"
printf '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}]' >"$TMP/calls.json"
printf '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f"}}]}]' >"$TMP/noargs.json"
printf '{"messages": [{"role": "user", "content": "hi"}], "tools": ["f"]}' >"$TMP/tools.json"
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
expect_exit 1 "a tool call without a name" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/calls.json"
expect_err_has "calls.json: messages[1].tool_calls[0].function.name: missing or not a string" \
	"the nameless call is named by file and index"
expect_exit 1 "a tool call without arguments" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/noargs.json"
expect_err_has "messages[1].tool_calls[0].function.arguments: missing" "missing arguments are named"
expect_exit 1 "a tool that is not an object" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/tools.json"
expect_err_has "tools.json: tools[0]: not an object" "the bad tool is named"
expect_exit 1 "content parts refused" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/parts.json"
expect_err_has "messages[0].content" "content refusal names the field"
expect_exit 2 "missing --messages" "$QWENCHAT" template -m "$TOK_DIR"
expect_err_has "--messages" "usage error names the option"
expect_exit 2 "bad --enable-thinking" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/cases/0.json" --enable-thinking maybe
expect_err_has "--enable-thinking" "usage error names the option"
expect_exit 2 "stray argument" "$QWENCHAT" template -m "$TOK_DIR" --messages "$TMP/cases/0.json" extra
expect_exit 2 "unknown option" "$QWENCHAT" template --frobnicate
expect_exit 1 "missing model directory" "$QWENCHAT" template -m "$TMP/no-such-model" --messages "$TMP/cases/0.json"
mkdir -p "$TMP/badcfg" "$TMP/notok"
cp "$G/template-tiny-tokenizer.json" "$TMP/badcfg/tokenizer.json"
cp "$G/template-config-qwen3-thinking-2507.json" "$TMP/notok/tokenizer_config.json"
expect_exit 1 "no tokenizer.json" "$QWENCHAT" template -m "$TMP/notok" --messages "$TMP/cases/0.json"
expect_err_has "tokenizer.json" "the message names tokenizer.json"
printf '{"chat_template": ' >"$TMP/badcfg/tokenizer_config.json"
expect_exit 1 "corrupt tokenizer_config.json" "$QWENCHAT" template -m "$TMP/badcfg" --messages "$TMP/cases/0.json"
expect_err_has "tokenizer_config.json" "the message names tokenizer_config.json"
for f in "$TMP"/err; do [ "$(wc -l <"$f")" -le 1 ] || fail "multi-line error: $(cat "$f")"; done
# chat_template.jinja beside tokenizer_config.json (as transformers 4.47 on saves it)
# is the template, in preference to the config's; quantize carries it into the GGUF
S=$TMP/m-sidecar
mkdir -p "$S"
cp "$G/template-tiny-tokenizer.json" "$S/tokenizer.json"
python3 - "$TOK_DIR/tokenizer_config.json" "$S" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1], encoding="utf-8"))
open(sys.argv[2] + "/chat_template.jinja", "w", encoding="utf-8").write(c["chat_template"])
c["chat_template"] = "{{ 'the config template' }}"
json.dump(c, open(sys.argv[2] + "/tokenizer_config.json", "w", encoding="utf-8"))
EOF
set -- --messages "$TMP/cases/1.json" --add-generation-prompt --enable-thinking false
"$QWENCHAT" template -m "$S" "$@" >"$TMP/got" 2>"$TMP/err" && cmp -s "$TMP/got" "$TMP/want/qwen3/1.1.false" &&
	! [ -s "$TMP/err" ] && pass "chat_template.jinja is the template, before tokenizer_config.json's" ||
	fail "chat_template.jinja: $(cat "$TMP/err")"
"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/sm" --vocab-size 300 --hidden-size 64 --layers 1 \
	>/dev/null && cp "$S/tokenizer.json" "$S/chat_template.jinja" "$TMP/sm/" &&
	echo '{"chat_template": "{{ 1 }}"}' >"$TMP/sm/tokenizer_config.json" &&
	"$QWENCHAT" quantize -m "$TMP/sm" --type bf16 --out "$TMP/sm.gguf" >/dev/null 2>&1 &&
	"$QWENCHAT" template -m "$TMP/sm.gguf" "$@" >"$TMP/got" 2>"$TMP/err" &&
	cmp -s "$TMP/got" "$TMP/want/qwen3/1.1.false" &&
	pass "quantize writes chat_template.jinja into the GGUF" ||
	fail "chat_template.jinja through quantize: $(cat "$TMP/err")"
# a hybrid template edited to think only when asked (as some fine-tunes ship it): no
# --enable-thinking renders as false does
F=$TMP/m-flipped
mkdir -p "$F"
cp "$G/template-tiny-tokenizer.json" "$F/tokenizer.json"
python3 - "$TOK_DIR/tokenizer_config.json" "$F/tokenizer_config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1], encoding="utf-8"))
was = "enable_thinking is defined and enable_thinking is false"
assert was in c["chat_template"]
c["chat_template"] = c["chat_template"].replace(
    was, "enable_thinking is not defined or enable_thinking is false")
json.dump(c, open(sys.argv[2], "w", encoding="utf-8"))
EOF
"$QWENCHAT" template -m "$F" --messages "$TMP/cases/1.json" --add-generation-prompt >"$TMP/got" 2>"$TMP/err" &&
	cmp -s "$TMP/got" "$TMP/want/qwen3/1.1.false" && ! [ -s "$TMP/err" ] &&
	pass "a template that thinks only when asked: no enable_thinking renders as false" ||
	fail "flipped default: $(cat "$TMP/err"; diff "$TMP/got" "$TMP/want/qwen3/1.1.false" | head -5)"
"$QWENCHAT" template -m "$F" --messages "$TMP/cases/1.json" --add-generation-prompt \
	--enable-thinking true >"$TMP/got" 2>"$TMP/err" && cmp -s "$TMP/got" "$TMP/want/qwen3/1.1.true" &&
	pass "... and --enable-thinking true still thinks" || fail "flipped, true: $(cat "$TMP/err")"
expect_exit 0 "--help" "$QWENCHAT" template --help
grep -q -- "--enable-thinking" "$TMP/out" && pass "--help describes --enable-thinking" || fail "--help lacks --enable-thinking"
finish
