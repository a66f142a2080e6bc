#!/bin/sh
# cuda-module.sh — the CUDA backend is a module loaded at run time: the program links
# no CUDA library; without a driver `auto` takes the CPU without a word and `cuda`
# names what is missing; the module exports its two entry points (inference and
# training), loads, and reports a missing device through the program's own error. (A GPU machine runs tests/cuda.sh.)
. "$TOP_SRCDIR/tests/lib.sh"

MOD=$TOP_BUILDDIR/qwenchat-cuda.so
ldd "$QWENCHAT" >"$TMP/ldd" 2>&1
grep -qi 'cuda\|cublas' "$TMP/ldd" && fail "qwenchat links a CUDA library: $(grep -i 'cuda\|cublas' "$TMP/ldd")" ||
	pass "qwenchat links no CUDA library"

"$TOP_BUILDDIR/tests/mkmodel" --out "$TMP/m" >/dev/null || exit 1
if [ -e /proc/driver/nvidia/version ] || [ -e /dev/nvidiactl ]; then
	echo "an NVIDIA driver is present: the no-driver checks do not apply here"
else
	echo 1 2 3 | "$QWENCHAT" logits -m "$TMP/m" --out "$TMP/l" 2>"$TMP/err" &&
		[ ! -s "$TMP/err" ] && pass "auto without a driver: the CPU, no notice" ||
		fail "auto without a driver: $(cat "$TMP/err")"
	expect_exit 1 "--backend cuda without a driver" sh -c \
		'echo 1 2 3 | "$1" logits -m "$2" --out "$3" --backend cuda' _ "$QWENCHAT" "$TMP/m" "$TMP/l"
	expect_err_has "backend cuda: no NVIDIA driver" "it names the missing driver"
fi
expect_exit 1 "a module path that is not there" sh -c \
	'echo 1 2 3 | QWENCHAT_CUDA_MODULE=/nonexistent.so "$1" logits -m "$2" --out "$3" --backend cuda' \
	_ "$QWENCHAT" "$TMP/m" "$TMP/l"
expect_err_has "/nonexistent.so: cannot read the CUDA module" "it names the path"

if [ ! -f "$MOD" ]; then
	echo "this build has no CUDA module (configured without CUDA)"
	finish
fi
nm -D --defined-only "$MOD" | awk '$2 == "T" {print $3}' >"$TMP/syms"
[ "$(sort "$TMP/syms" | tr '\n' ' ')" = "qwenchat_cuda_backend qwenchat_cuda_trainer " ] &&
	pass "the module exports only its two entry points (inference, training)" ||
	fail "the module exports: $(tr '\n' ' ' <"$TMP/syms")"
ldd "$MOD" | grep -q 'not found' && echo "note: the module's CUDA libraries are not all here" ||
	pass "the module's libraries resolve"
# Loaded on a machine without a GPU, the module must say so through the program.
echo 1 2 3 | QWENCHAT_CUDA_MODULE=$MOD "$QWENCHAT" logits -m "$TMP/m" --out "$TMP/l" --backend cuda 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ]; then
	pass "the module ran on this machine's GPU"
else
	[ $rc -eq 1 ] && grep -q '^qwenchat: backend cuda: no usable CUDA device' "$TMP/err" &&
		pass "the module loads and reports the missing device in one line" ||
		fail "module without a device: exit $rc, $(cat "$TMP/err")"
fi
finish
