#!/bin/sh
# train-bpe.sh — `qwenchat train-bpe` against tests/cli/bpe_reference.py (a naive
# trainer written for this test: all pair counts recomputed every merge): the
# merges must be equal, in order, on several small corpora (ties, overlapping
# pairs, special tokens, several files, Unicode, whitespace runs), for 1, 2 and 3
# counting threads; and bad input gives a one-line error and a non-zero exit.
. "$TOP_SRCDIR/tests/lib.sh"

if ! python3 -c 'import regex' 2>/dev/null; then
	echo "SKIP: python3 with the regex module (Debian: python3-regex) is missing" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
REF="python3 $TOP_SRCDIR/tests/cli/bpe_reference.py"

# Deterministic corpora. Avoid U+001C-001F and U+FEFF: Python's \s and
# Oniguruma's differ there (tokenizer/pretok.h), which is not what this tests.
python3 - "$TMP" <<'EOF'
import random, sys
d = sys.argv[1]
r = random.Random(8)
words = ("the of and to in is was he that it for his on with as I at by had "
         "they be this from are have not or were she but we one which you her "
         "lower lowest newer newest wider widest").split()
def prose(n):
    out = []
    for i in range(n):
        w = r.choice(words)
        if i % 3 == 0:  # made-up words keep the pairs from running out
            w = "".join(r.choice("etaoinshrdlucmfwyp") for _ in range(r.randint(2, 9)))
        out.append(w.capitalize() if i % 11 == 0 else w)
        if i % 13 == 12: out.append(r.choice([".", ",", ";", "!", "?"]))
        if i % 37 == 36: out.append(r.choice(["\n", "\n\n", "\r\n", "  \n "]))
    return " ".join(out)
open(f"{d}/prose.txt", "w").write(prose(5000))  # > 3 x 8 KiB: 3 threads count it
# ties: every pair equally frequent, then runs where pairs overlap
open(f"{d}/ties.txt", "w").write(" ".join(["ab ba cd dc ef fe"] * 40) + " " +
    " ".join("a" * k for k in range(1, 30)) + " " + " ".join(["xyxyxy yxyx"] * 7))
# special tokens between documents; one special is a prefix of another
docs = []
for i in range(60):
    docs.append(prose(40))
    docs.append(r.choice(["<|endoftext|>", "<|im_start|>", "<|im_start|>user",
                          "<|im_start|><|endoftext|>"]))
open(f"{d}/special.txt", "w").write("".join(docs))
# Unicode: accents (composed and decomposed: no NFC), CJK, emoji with ZWJ and
# skin tones, digits, contractions in all cases, tabs, NBSP, runs of spaces
uni = ["café", "cafe\u0301", "naïve", "日本語のテキスト", "中文文本", "👩\u200d💻",
       "👍🏽", "🇫🇷", "12345", "3.14159", "don't", "DON'T", "We'LL", "it's",
       "I'M", "\t\tindent", "a\u00a0b", "x    y", "\u3000全角", "Ωμέγα", "привет",
       "مرحبا", "नमस्ते", "ภาษาไทย", "   ", "\n\n\n", "end."]
open(f"{d}/unicode.txt", "w").write(" ".join(r.choice(uni) for _ in range(1500)))
open(f"{d}/second.txt", "w").write(prose(500) + " café naïve 日本語")
# JSON Lines records (a dataset's to_json()): documents that end and start mid-word
# and mid-special, escaped or not, with other members and blank lines between
import json
with open(f"{d}/records.jsonl", "w", encoding="utf-8") as f:
    f.write("\ufeff")
    for i in range(400):
        t = prose(r.randint(0, 30)) + r.choice(["x", "<|endof", "text|>", " ", "日本", "\n"])
        f.write(json.dumps({"id": i, "text": t, "meta": [i, {"a": None}]},
                           ensure_ascii=i % 2 == 0) + ("\n\n" if i % 7 == 0 else "\n"))
EOF

thread_counts="1 2 3"
[ "${QWENCHAT_SANITIZED:-}" = 1 ] && thread_counts="1 3"   # slower under ASan

# check NAME VOCAB "SPECIALS" FILES... — reference merges vs ours for 1, 2, 3 threads
check() {
	name=$1 vocab=$2 specials=$3
	shift 3
	sargs=""
	for s in $specials; do sargs="$sargs --special $s"; done
	# shellcheck disable=SC2086
	$REF --vocab-size "$vocab" $sargs "$@" >"$TMP/$name.ref" || { fail "$name: reference failed"; return; }
	for t in $thread_counts; do
		# shellcheck disable=SC2086
		if ! "$QWENCHAT" train-bpe -q --vocab-size "$vocab" $sargs --threads $t \
			--out "$TMP/out-$name-$t" "$@" 2>"$TMP/err"; then
			fail "$name ($t threads): exit $?: $(head -c 300 "$TMP/err")"
			continue
		fi
		if cmp -s "$TMP/$name.ref" "$TMP/out-$name-$t/merges.txt"; then
			pass "$name: $(($(wc -l <"$TMP/$name.ref") - 1)) merges equal the reference ($t threads)"
		else
			fail "$name ($t threads): merges differ from the reference:
$(diff "$TMP/$name.ref" "$TMP/out-$name-$t/merges.txt" | head -n 6)"
		fi
	done
}

check prose 600 "" "$TMP/prose.txt"
check ties 330 "" "$TMP/ties.txt"
check special 500 "<|endoftext|> <|im_start|> <|im_start|>user" "$TMP/special.txt"
check unicode 700 "" "$TMP/unicode.txt"
check files 700 "<|endoftext|>" "$TMP/prose.txt" "$TMP/second.txt" "$TMP/unicode.txt"
# more merges asked than pairs exist: training stops early, like the reference
check exhaust 5000 "" "$TMP/ties.txt"
check jsonl 600 "<|endoftext|>" "$TMP/records.jsonl" "$TMP/second.txt"
printf '{"text": "fine"}\n[1]\n' >"$TMP/bad.jsonl"
expect_exit 1 "a *.jsonl line that is not a record" "$QWENCHAT" train-bpe --vocab-size 300 \
	--out "$TMP/o" "$TMP/bad.jsonl"
expect_err_has "bad.jsonl: line 2: not a JSON object" "*.jsonl: names the file and the line"
bad=$(find "$TMP/out-prose-1" -type f ! -perm 0600)
[ -z "$bad" ] && pass "the tokenizer's files are private (0600)" || fail "not 0600: $bad"
(umask 000 && "$QWENCHAT" train-bpe -q --vocab-size 300 --out "$TMP/new/tok" "$TMP/prose.txt") &&
	[ "$(stat -c %a "$TMP/new" "$TMP/new/tok" | tr '\n' ' ')" = "700 700 " ] &&
	pass "the directories it makes are private (0700), whatever the umask" ||
	fail "train-bpe's directories: $(stat -c '%n %a' "$TMP/new" "$TMP/new/tok" 2>&1)"
# a full disk mid-write (a small tmpfs, where this may mount one): room for the new
# tokenizer.json and half its vocab.json. The previous tokenizer stays whole, not a
# new tokenizer.json beside the old vocab.json and merges.txt, and nothing is left.
big="$TMP/prose.txt $TMP/second.txt $TOP_SRCDIR/README.md"
mkdir -p "$TMP/small"
# shellcheck disable=SC2086
if "$QWENCHAT" train-bpe -q --vocab-size 2000 --out "$TMP/big" $big &&
   mount -t tmpfs -o size=512k tmpfs "$TMP/small" 2>/dev/null; then
	"$QWENCHAT" train-bpe -q --vocab-size 260 --out "$TMP/small/tok" "$TMP/prose.txt" &&
		(cd "$TMP/small/tok" && sha256sum -- *) >"$TMP/sums"
	room=$(($(stat -c %s "$TMP/big/tokenizer.json") + $(stat -c %s "$TMP/big/vocab.json") / 2))
	avail=$(df -B1 --output=avail "$TMP/small" | tail -n 1)
	head -c $((avail - room)) /dev/zero >"$TMP/small/fill"
	# shellcheck disable=SC2086
	if "$QWENCHAT" train-bpe -q --vocab-size 2000 --out "$TMP/small/tok" $big 2>"$TMP/err"; then
		fail "the disk did not fill: $(df -B1 "$TMP/small" | tail -n 1)"
	else
		(cd "$TMP/small/tok" && sha256sum -- *) | cmp -s - "$TMP/sums" &&
			[ "$(ls -A "$TMP/small/tok" | wc -l)" = 3 ] &&
			pass "a full disk leaves the previous tokenizer whole, nothing staged" ||
			fail "full disk: $(cat "$TMP/err"); $(ls -la "$TMP/small/tok")"
	fi
	umount "$TMP/small"
else
	echo "skip: no tmpfs can be mounted here (not root)"
fi

# Ids: bytes, merges, then the specials in the order given, as added tokens.
python3 - "$TMP/out-special-1" <<'EOF' && pass "ids: 256 bytes, merges, specials last" || fail "ids layout"
import json, sys
d = sys.argv[1]
t = json.load(open(f"{d}/tokenizer.json"))
v = t["model"]["vocab"]
assert json.load(open(f"{d}/vocab.json")) == v
merges = open(f"{d}/merges.txt").read().split("\n")[1:-1]
n = 256 + len(merges)
assert len(v) == n and len(merges) == 500 - 256 - 3, len(merges)
assert sorted(v.values()) == list(range(len(v)))
for i, m in enumerate(merges):
    a, b = m.split(" ")
    assert v[a + b] == 256 + i and t["model"]["merges"][i] == [a, b]
assert [(a["id"], a["content"], a["special"]) for a in t["added_tokens"]] == [
    (n, "<|endoftext|>", True), (n + 1, "<|im_start|>", True), (n + 2, "<|im_start|>user", True)]
assert t["normalizer"] is None
EOF

# --chat: Qwen3's chat tokens with their roles in Qwen3's tokenizer_config.json
# (tests/golden/template-config-qwen3.json is that file) and its fields and template.
if "$QWENCHAT" train-bpe -q --chat --special '<|im_end|>' --special '<extra>' --vocab-size 500 \
	--out "$TMP/chat" "$TMP/prose.txt" 2>"$TMP/err"; then
	python3 - "$TMP/chat" "$TOP_SRCDIR/tests/golden/template-config-qwen3.json" <<'EOF' &&
import json, sys
d, ref = sys.argv[1], json.load(open(sys.argv[2]))
t = json.load(open(f"{d}/tokenizer.json"))
c = json.load(open(f"{d}/tokenizer_config.json"))
qwen = {v["content"]: v for v in ref["added_tokens_decoder"].values()}
chat = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
        "<tool_response>", "</tool_response>", "<think>", "</think>"]
added = [(a["content"], a["special"]) for a in t["added_tokens"]]
assert added == [(x, qwen[x]["special"]) for x in chat] + [("<extra>", True)], added
n = t["added_tokens"][0]["id"]
assert n == len(t["model"]["vocab"]) and [a["id"] for a in t["added_tokens"]] == list(range(n, n + 10))
dec = c["added_tokens_decoder"]
assert sorted(dec) == sorted(str(a["id"]) for a in t["added_tokens"]), sorted(dec)
for a in t["added_tokens"]:
    want = qwen.get(a["content"], dict(qwen["<|im_end|>"], content="<extra>"))
    assert dec[str(a["id"])] == want, (dec[str(a["id"])], want)
for k in ("chat_template", "eos_token", "pad_token", "bos_token", "add_bos_token", "errors",
          "split_special_tokens", "tokenizer_class", "clean_up_tokenization_spaces"):
    assert c[k] == ref[k], k
assert c["additional_special_tokens"] == ["<|im_start|>", "<|im_end|>", "<extra>"]
EOF
	pass "--chat: Qwen3's chat tokens, their roles, eos/pad tokens and chat template" ||
		fail "--chat: tokenizer files differ from Qwen3's roles"
else
	fail "--chat: $(head -c 300 "$TMP/err")"
fi
printf '[{"role": "user", "content": "the of"}, {"role": "assistant", "content": "and", "reasoning_content": "to"}]' >"$TMP/conv.json"
if "$QWENCHAT" template -m "$TMP/chat" --messages "$TMP/conv.json" --add-generation-prompt \
	>"$TMP/rendered" 2>"$TMP/err" && [ ! -s "$TMP/err" ] &&
   "$QWENCHAT" tokenize -m "$TMP/chat" <"$TMP/rendered" >"$TMP/ids" &&
   python3 - "$TMP/chat" "$TMP/rendered" "$TMP/ids" <<'EOF'
import json, sys
t = json.load(open(f"{sys.argv[1]}/tokenizer.json"))
idof = {a["content"]: a["id"] for a in t["added_tokens"]}
text = open(sys.argv[2]).read()
ids = [int(x) for x in open(sys.argv[3]).read().split()]
for tok in ("<|im_start|>", "<|im_end|>", "<think>", "</think>"):
    assert ids.count(idof[tok]) == text.count(tok) > 0, tok
EOF
then
	pass "--chat: the chat template is recognised and its markers are single tokens"
else
	fail "--chat: template or tokenize: $(head -c 300 "$TMP/err")"
fi

# Bad input: one line on stderr starting with "qwenchat: ", non-zero exit.
printf 'good text\n\300\200 overlong' >"$TMP/bad.txt"
expect_exit 1 "non-UTF-8 input" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o" "$TMP/bad.txt"
expect_err_has "bad.txt: not valid UTF-8 at byte offset 10" "non-UTF-8: names the file and the offset"
printf 'ok \355\240\200' >"$TMP/surrogate.txt"
expect_exit 1 "UTF-8 surrogate" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o" "$TMP/surrogate.txt"
expect_err_has "surrogate.txt: not valid UTF-8 at byte offset 3" "surrogate: names the offset"
# empty input: refused, and a tokenizer already in --out stays as it was
"$QWENCHAT" train-bpe -q --vocab-size 300 --out "$TMP/kept" "$TMP/prose.txt" ||
	fail "train-bpe on prose.txt"
cp "$TMP/kept/tokenizer.json" "$TMP/kept.json"
: >"$TMP/empty.txt"
expect_exit 1 "empty input" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/kept" "$TMP/empty.txt"
expect_err_has "empty.txt: no text to learn merges from (the file is empty)" "empty input: named"
cmp -s "$TMP/kept/tokenizer.json" "$TMP/kept.json" && pass "empty input: the tokenizer in --out kept" ||
	fail "empty input replaced the tokenizer in --out"
expect_exit 1 "missing file" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o" "$TMP/nope.txt"
expect_err_has "nope.txt: No such file or directory" "missing file: named"
expect_exit 1 "a directory as input" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o" "$TMP"
expect_err_has "Is a directory" "directory input: named"
if [ "$(id -u)" -ne 0 ]; then
	cp "$TMP/prose.txt" "$TMP/noread.txt" && chmod 000 "$TMP/noread.txt"
	expect_exit 1 "unreadable file" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o" "$TMP/noread.txt"
	expect_err_has "noread.txt: Permission denied" "unreadable file: named"
fi
expect_exit 2 "vocab below 256 + specials" "$QWENCHAT" train-bpe --vocab-size 257 \
	--special a1 --special a2 --out "$TMP/o" "$TMP/prose.txt"
expect_err_has "below 256 byte tokens + 2 special tokens" "vocab too small: says why"
expect_exit 2 "vocab not a number" "$QWENCHAT" train-bpe --vocab-size many --out "$TMP/o" "$TMP/prose.txt"
expect_exit 2 "no --out" "$QWENCHAT" train-bpe --vocab-size 300 "$TMP/prose.txt"
expect_exit 2 "no input file" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/o"
expect_exit 2 "special given twice" "$QWENCHAT" train-bpe --vocab-size 300 --special '<s>' \
	--special '<s>' --out "$TMP/o" "$TMP/prose.txt"
expect_exit 2 "empty special" "$QWENCHAT" train-bpe --vocab-size 300 --special '' --out "$TMP/o" "$TMP/prose.txt"
expect_exit 1 "special equal to a learned token" "$QWENCHAT" train-bpe -q --vocab-size 300 \
	--special 'Ġthe' --out "$TMP/o" "$TMP/prose.txt"
expect_err_has "is also the learned token" "special colliding with the vocabulary: says so"
expect_exit 1 "output directory cannot be made" "$QWENCHAT" train-bpe --vocab-size 300 \
	--out "$TMP/prose.txt/sub" "$TMP/prose.txt"
# a link at --out is refused (as train's --out), and nothing reaches where it points
mkdir "$TMP/elsewhere" && ln -s elsewhere "$TMP/linked"
expect_exit 1 "--out a symbolic link" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/linked" \
	"$TMP/prose.txt"
expect_err_has "is a symbolic link (refused: name the directory itself)" "--out a link: said so"
expect_exit 1 "--out a symbolic link/ (its directory, by the slash)" "$QWENCHAT" train-bpe \
	--vocab-size 300 --out "$TMP/linked/" "$TMP/prose.txt"
expect_err_has "linked/: is a symbolic link (refused" "--out a link/: said so"
[ -z "$(ls -A "$TMP/elsewhere")" ] && pass "... and nothing written where it points" ||
	fail "a link at --out: $(ls -A "$TMP/elsewhere")"
# a device has no end to count to: refused, as a directory is
expect_exit 1 "a device as input" timeout 20 "$QWENCHAT" train-bpe --vocab-size 300 \
	--out "$TMP/dev" /dev/zero
expect_err_has "/dev/zero: not a regular file, a pipe or a terminal" "... said so, before it is read"
# a run that fails removes the directory it made for its files
expect_exit 1 "a missing input" "$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/made/a/b" \
	"$TMP/none.txt"
[ ! -e "$TMP/made" ] && pass "a failed run leaves no directory it made, parents too" ||
	fail "left $(find "$TMP/made")"
# ... and so does one stopped by a signal while it reads (a FIFO waiting for its writer)
mkfifo "$TMP/wait.fifo"
"$QWENCHAT" train-bpe --vocab-size 300 --out "$TMP/sig/a/b" "$TMP/wait.fifo" 2>/dev/null &
pid=$!
i=0
while [ ! -d "$TMP/sig/a/b" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] && [ ! -e "$TMP/sig" ] &&
	pass "SIGTERM while reading: the directories made for --out go, exit 143" ||
	fail "SIGTERM while reading: exit $rc, left $(find "$TMP/sig" 2>/dev/null)"
# a model's directory keeps its tokenizer: --out holding anything but a tokenizer
mkdir "$TMP/model" && echo '{}' >"$TMP/model/config.json" && echo keep >"$TMP/model/tokenizer.json"
expect_exit 1 "--out a model's directory" "$QWENCHAT" train-bpe -q --vocab-size 300 \
	--out "$TMP/model" "$TMP/prose.txt"
expect_err_has "holds config.json, not only a tokenizer" "a model's directory: said so"
[ "$(cat "$TMP/model/tokenizer.json")" = keep ] && pass "... and its tokenizer is untouched" ||
	fail "train-bpe wrote over a model's tokenizer"
# a tokenizer made again without --chat: the --chat run's tokenizer_config.json goes
"$QWENCHAT" train-bpe -q --chat --vocab-size 400 --out "$TMP/again" "$TMP/prose.txt" &&
	"$QWENCHAT" train-bpe -q --vocab-size 400 --out "$TMP/again" "$TMP/prose.txt" &&
	[ ! -e "$TMP/again/tokenizer_config.json" ] &&
	echo hello | "$QWENCHAT" tokenize -m "$TMP/again" >/dev/null 2>"$TMP/err" &&
	pass "made again without --chat: no stale tokenizer_config.json, it loads" ||
	fail "made again without --chat: $(ls "$TMP/again") $(tail -n 1 "$TMP/err")"
# two runs into one directory: the second stops at once (it cleared the first one's
# staging folder, and the tokenizer could go); the lock file goes with the run
sums() { (cd "$1" && sha256sum -- *) | sha256sum; }
before=$(sums "$TMP/again")
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w"); time.sleep(60)' \
	"$TMP/again/.train-bpe.lock" "$TMP/held" &
holder=$!
i=0
while [ ! -e "$TMP/held" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
expect_exit 1 "a second run into a directory in use" "$QWENCHAT" train-bpe -q --vocab-size 500 \
	--out "$TMP/again" "$TMP/prose.txt"
expect_err_has "another 'qwenchat train-bpe' is writing there" "... said so"
[ "$(sums "$TMP/again")" = "$before" ] && pass "... the tokenizer there untouched" ||
	fail "a second run changed the tokenizer in use"
kill $holder
wait $holder 2>/dev/null
"$QWENCHAT" train-bpe -q --vocab-size 500 --out "$TMP/again" "$TMP/prose.txt" &&
	[ ! -e "$TMP/again/.train-bpe.lock" ] && pass "once free: written, no lock file left" ||
	fail "after the lock: $(ls -A "$TMP/again")"
# ... nor by a run into it stopped by a signal (waiting on a FIFO here)
before=$(sums "$TMP/again")
mkfifo "$TMP/again.fifo"
"$QWENCHAT" train-bpe -q --vocab-size 500 --out "$TMP/again" "$TMP/again.fifo" 2>/dev/null &
pid=$!
i=0
while [ ! -e "$TMP/again/.train-bpe.lock" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] && [ ! -e "$TMP/again/.train-bpe.lock" ] && [ "$(sums "$TMP/again")" = "$before" ] &&
	pass "SIGTERM into an existing directory: exit 143, the lock file gone, the tokenizer kept" ||
	fail "SIGTERM into an existing directory: exit $rc, $(ls -A "$TMP/again")"
# a run killed while writing into its staging folder left a temporary file there: the
# next run clears it (its writer's PID is gone) and writes the tokenizer
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir -p "$TMP/killed/.train-bpe.new"
echo half >"$TMP/killed/.train-bpe.new/.vocab.json.tmp.$dead.0123456789abcdef"
echo '{}' >"$TMP/killed/.train-bpe.new/tokenizer.json"
expect_exit 0 "after a run killed mid-write" "$QWENCHAT" train-bpe -q --vocab-size 300 \
	--out "$TMP/killed" "$TMP/prose.txt"
[ -f "$TMP/killed/tokenizer.json" ] && [ ! -e "$TMP/killed/.train-bpe.new" ] &&
	pass "the killed run's staging folder is gone, the tokenizer written" ||
	fail "after a killed run: $(ls -A "$TMP/killed" "$TMP/killed/.train-bpe.new" 2>&1)"
expect_exit 0 "--help" "$QWENCHAT" train-bpe --help
grep -q 'vocab-size' "$TMP/out" && pass "--help: describes --vocab-size" || fail "--help text"
# a run stopped while it put its files in place (its mark in .train-bpe.new): a load
# of the half-replaced tokenizer is refused, saying so, and the next run finishes it
T=$TMP/placing
"$QWENCHAT" train-bpe --vocab-size 300 -q --out "$T" "$TMP/prose.txt" &&
	"$QWENCHAT" train-bpe --vocab-size 400 -q --out "$TMP/t400" "$TMP/prose.txt" ||
	fail "train-bpe for the placing case"
mkdir "$T/.train-bpe.new" && cp "$TMP/t400/merges.txt" "$TMP/t400/tokenizer.json" \
	"$T/.train-bpe.new/" && cp "$TMP/t400/vocab.json" "$T/vocab.json" &&
	printf 'vocab.json\nmerges.txt\ntokenizer.json\n' >"$T/.train-bpe.new/PLACING"
echo hello | expect_exit 1 "tokenize a tokenizer being put in place" "$QWENCHAT" tokenize -m "$T"
expect_err_has "'qwenchat train-bpe' is putting a new tokenizer in place there, or was stopped" \
	"... refused, saying why"
# ... first, whatever happens after: here the disk takes no new file (ulimit -f 1)
expect_exit 1 "train-bpe again into it, no room for its files" sh -c \
	"ulimit -f 1; '$QWENCHAT' train-bpe --vocab-size 300 -q --out '$T' '$TMP/prose.txt'"
for f in vocab.json merges.txt tokenizer.json; do
	cmp -s "$T/$f" "$TMP/t400/$f" || fail "the stopped run's $f was not put in place"
done
[ ! -e "$T/.train-bpe.new" ] && echo hello | "$QWENCHAT" tokenize -m "$T" >/dev/null &&
	pass "... the stopped run's tokenizer is whole in place" || fail "after a failed run: $(ls -A "$T")"
expect_exit 0 "train-bpe again into it" "$QWENCHAT" train-bpe --vocab-size 300 -q --out "$T" \
	"$TMP/prose.txt"
"$QWENCHAT" train-bpe --vocab-size 300 -q --out "$TMP/placing-ref" "$TMP/prose.txt"
for f in vocab.json merges.txt tokenizer.json; do
	cmp -s "$T/$f" "$TMP/placing-ref/$f" || fail "after the next run, $f is not its own"
done
[ ! -e "$T/.train-bpe.new" ] && echo hello | "$QWENCHAT" tokenize -m "$T" >/dev/null &&
	pass "the next run puts a whole tokenizer in place" ||
	fail "after the next run: $(ls -A "$T")"

# the Unicode version that classes letters and digits for the pre-tokenizer
"$QWENCHAT" --version | grep -q '^utf8proc [0-9.]* (Unicode [0-9][0-9.]*)$' &&
	pass "--version names utf8proc's Unicode version" ||
	fail "--version: $("$QWENCHAT" --version 2>&1)"
finish
