# tests/local.mk — unit tests (cmocka), CLI tests (shell), fixtures and fuzz targets.
EXTRA_DIST += tests/fetch-tokenizer.sh tests/lib.sh

# Fuzz targets (./configure CC=clang --enable-fuzzers; `make fuzz-targets`).
# A target is tests/fuzz_NAME.c defining LLVMFuzzerTestOneInput; add it to
# FUZZ_TARGETS and give it tests_fuzz_NAME_SOURCES/_LDADD/_LDFLAGS = $(FUZZ_LDFLAGS).
# Seed corpora live in tests/fuzz/corpus/NAME/.
FUZZ_TARGETS =
if ENABLE_FUZZERS
EXTRA_PROGRAMS = $(FUZZ_TARGETS)
CLEANFILES += $(FUZZ_TARGETS)
endif
fuzz-targets: $(FUZZ_TARGETS)
.PHONY: fuzz-targets

# tests/mkmodel: random-weight Qwen3 model directories of any shape (tests/README.md).
check_PROGRAMS += tests/mkmodel
tests_mkmodel_SOURCES = tests/mkmodel.c
tests_mkmodel_LDADD = -lm

# Model files (issue 2): config.json and safetensors unit tests, `qwenchat info`
# on generated models and on bad inputs.
check_PROGRAMS += tests/test_config tests/test_safetensors
TESTS += tests/test_config tests/test_safetensors
tests_test_config_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_config_LDADD = libqwenchat.a $(CMOCKA_LIBS)
tests_test_safetensors_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_safetensors_LDADD = libqwenchat.a $(CMOCKA_LIBS)
TESTS += tests/info.sh
EXTRA_DIST += tests/info.sh
FUZZ_TARGETS += tests/fuzz_safetensors
tests_fuzz_safetensors_SOURCES = tests/fuzz_safetensors.c
tests_fuzz_safetensors_LDADD = libqwenchat.a
tests_fuzz_safetensors_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz_safetensors.c tests/fuzz/corpus/safetensors tests/README.md

# Engine and CPU backend (issue 9).
check_PROGRAMS += tests/test_engine_kernels
TESTS += tests/test_engine_kernels
tests_test_engine_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_engine_kernels_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/test_engine tests/test_engine_golden
TESTS += tests/test_engine tests/test_engine_golden
tests_test_engine_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_engine_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm
tests_test_engine_golden_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_engine_golden_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/golden/make-logits-golden.sh tests/golden/logits-tiny.txt \
	tests/golden/logits-odd.txt tests/golden/logits-yarn.txt tests/golden/logits-yarn-af.txt \
	tests/golden/logits-yarn-ms.txt tests/golden/logits-linear.txt tests/golden/logits-q06.txt
TESTS += tests/engine-cli.sh
EXTRA_DIST += tests/engine-cli.sh

# CUDA backend against the CPU reference (issue 5); SKIP without a GPU.
TESTS += tests/cuda.sh
EXTRA_DIST += tests/cuda.sh

# Model resolution and downloads (issue 7): unit tests, and a download test against
# a local stand-in for the Hub (tests/hub-server.py, 127.0.0.1 only).
check_PROGRAMS += tests/test_hub tests/test_hub_resolve
TESTS += tests/test_hub tests/hub.sh
EXTRA_DIST += tests/hub.sh tests/hub-server.py
tests_test_hub_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_hub_LDADD = libqwenchat.a $(CMOCKA_LIBS)
tests_test_hub_resolve_LDADD = libqwenchat.a

# Sampler and session (issue 4).
check_PROGRAMS += tests/test_sampler
TESTS += tests/test_sampler
tests_test_sampler_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_sampler_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm

# Chat (issue 4, helper tmpl): conversation save/load, the chat templates against
# jinja2 golden renders (tests/golden/make-template-golden.py), `qwenchat template`.
check_PROGRAMS += tests/test_chat tests/test_template tests/tojson_filter
TESTS += tests/test_chat tests/test_template tests/template.sh tests/tojson.sh
EXTRA_DIST += tests/template.sh tests/golden/make-template-golden.py \
	tests/golden/template-cases.json tests/golden/template-chatml.jinja \
	tests/golden/template-qwen3-instruct-2507.jinja tests/golden/template-qwen3-thinking-2507.jinja \
	tests/golden/template-config-qwen3.json tests/golden/template-config-chatml.json \
	tests/golden/template-config-qwen3-instruct-2507.json \
	tests/golden/template-config-qwen3-thinking-2507.json \
	tests/golden/template-golden-qwen3.json tests/golden/template-golden-chatml.json \
	tests/golden/template-golden-qwen3-instruct-2507.json \
	tests/golden/template-golden-qwen3-thinking-2507.json tests/golden/template-tiny-tokenizer.json
tests_test_chat_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_chat_LDADD = libqwenchat.a $(CMOCKA_LIBS)
tests_test_template_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_template_LDADD = libqwenchat.a $(CMOCKA_LIBS)
tests_tojson_filter_LDADD = libqwenchat.a
EXTRA_DIST += tests/tojson.sh
FUZZ_TARGETS += tests/fuzz_chat
tests_fuzz_chat_SOURCES = tests/fuzz_chat.c
tests_fuzz_chat_LDADD = libqwenchat.a
tests_fuzz_chat_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz_chat.c tests/fuzz/corpus/chat
check_PROGRAMS += tests/test_session
TESTS += tests/test_session
tests_test_session_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_session_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm
TESTS += tests/run.sh
EXTRA_DIST += tests/run.sh

# Tokenizer (issue 3, helper tok): the pre-tokenizer scanner against Hugging Face splits.
check_PROGRAMS += tests/test_tokenizer_pretok
TESTS += tests/test_tokenizer_pretok
tests_test_tokenizer_pretok_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_tokenizer_pretok_LDADD = libqwenchat.a $(CMOCKA_LIBS)

# BPE training (issue 8, helper bpe): the merge loop against a naive trainer and the
# handout example; `qwenchat train-bpe` against tests/bpe_reference.py and HF tokenizers.
check_PROGRAMS += tests/test_bpe_train
TESTS += tests/test_bpe_train
tests_test_bpe_train_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_bpe_train_LDADD = libqwenchat.a $(CMOCKA_LIBS)
TESTS += tests/train-bpe.sh tests/train-bpe-hf.sh
EXTRA_DIST += tests/train-bpe.sh tests/train-bpe-hf.sh tests/bpe_reference.py \
	tests/bench/train-bpe.sh
FUZZ_TARGETS += tests/fuzz_bpe_train
tests_fuzz_bpe_train_SOURCES = tests/fuzz_bpe_train.c
tests_fuzz_bpe_train_LDADD = libqwenchat.a
tests_fuzz_bpe_train_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz_bpe_train.c tests/fuzz/corpus/bpe_train

# Chat UI (issue 6, helper ui): slash command parsing; tmux-driven UI tests; plain mode.
check_PROGRAMS += tests/test_slash
TESTS += tests/test_slash tests/ui.sh tests/plain.sh
EXTRA_DIST += tests/ui.sh tests/plain.sh
tests_test_slash_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_slash_LDADD = libqwenchat.a $(CMOCKA_LIBS) -lm
FUZZ_TARGETS += tests/fuzz_genconfig
tests_fuzz_genconfig_SOURCES = tests/fuzz_genconfig.c
tests_fuzz_genconfig_LDADD = libqwenchat.a
tests_fuzz_genconfig_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz_genconfig.c tests/fuzz/corpus/genconfig

# The tokenizer against Hugging Face tokenizers (golden ids by tests/golden/make-tokenizer-golden.js),
# round trips, streaming decode, bad files; `qwenchat tokenize` / `detokenize`.
check_PROGRAMS += tests/test_tokenizer
TESTS += tests/test_tokenizer
tests_test_tokenizer_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_tokenizer_LDADD = libqwenchat.a $(CMOCKA_LIBS)
EXTRA_DIST += tests/golden/make-tokenizer-golden.js tests/golden/tokenizer-cases.jsonl \
	tests/golden/tokenizer-mixed.json tests/golden/qwen2-tokenizer-reference-cases.jsonl \
	tests/golden/qwen2-tokenizer-reference-cases.README
TESTS += tests/tokenizer.sh
EXTRA_DIST += tests/tokenizer.sh
FUZZ_TARGETS += tests/fuzz_tokenizer
tests_fuzz_tokenizer_SOURCES = tests/fuzz_tokenizer.c
tests_fuzz_tokenizer_LDADD = libqwenchat.a
tests_fuzz_tokenizer_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz_tokenizer.c tests/fuzz/corpus/tokenizer
EXTRA_DIST += tests/bench/tokenizer-bench.sh tests/bench/tokenizer-bench.js
