# tests/local.mk — unit tests (cmocka), CLI tests (shell), fixtures and fuzz targets.
EXTRA_DIST += tests/fetch-tokenizer.sh tests/lib.sh

# The slowest tests come first: make -j starts tests in this order, so the others run
# beside them rather than after them (each is described where its files are listed).
TESTS += tests/cli/trained.sh tests/cli/train-ref.sh tests/cli/train-signals.sh tests/cli/train.sh \
	tests/cli/train-lora.sh

# Fuzz targets (./configure CC=clang --enable-fuzzers; `make fuzz-targets`).
# A target is tests/fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput; add it to
# FUZZ_TARGETS and give it tests_fuzz_fuzz_NAME_SOURCES/_LDADD/_LDFLAGS = $(FUZZ_LDFLAGS).
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

# Model files: config.json and safetensors unit tests, `qwenchat info`
# on generated models and on bad inputs.
check_PROGRAMS += tests/unit/test_config tests/unit/test_safetensors
TESTS += tests/unit/test_config tests/unit/test_safetensors
tests_unit_test_config_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_config_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS)
tests_unit_test_safetensors_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_safetensors_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS)
TESTS += tests/cli/info.sh
EXTRA_DIST += tests/cli/info.sh
FUZZ_TARGETS += tests/fuzz/fuzz_safetensors
tests_fuzz_fuzz_safetensors_SOURCES = tests/fuzz/fuzz_safetensors.c
tests_fuzz_fuzz_safetensors_LDADD = $(ENGINE_LIBS)
tests_fuzz_fuzz_safetensors_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_safetensors.c tests/fuzz/corpus/safetensors tests/README.md

# Engine and CPU backend.
check_PROGRAMS += tests/unit/test_engine_kernels
TESTS += tests/unit/test_engine_kernels
tests_unit_test_engine_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_engine_kernels_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/unit/test_gemm tests/unit/test_train tests/unit/test_train_cuda
TESTS += tests/unit/test_gemm tests/unit/test_train tests/unit/test_train_cuda
tests_unit_test_train_cuda_LDADD = $(ENGINE_LIBS) -lm
# Training steps timed on the engine alone (BENCHMARKS.md); built by make check, not run.
check_PROGRAMS += tests/bench/train_bench
tests_bench_train_bench_LDADD = $(ENGINE_LIBS) -lm
# The quantized decode kernel alone on one core, rows in L2 (BENCHMARKS.md); not run.
check_PROGRAMS += tests/bench/qmatvec_bench
tests_bench_qmatvec_bench_LDADD = $(ENGINE_LIBS) -lm
tests_unit_test_gemm_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_gemm_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
tests_unit_test_train_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_train_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/unit/test_engine tests/unit/test_engine_golden
TESTS += tests/unit/test_engine tests/unit/test_engine_golden
tests_unit_test_engine_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_engine_SOURCES = tests/unit/test_engine.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_engine_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
tests_unit_test_engine_golden_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_engine_golden_SOURCES = tests/unit/test_engine_golden.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_engine_golden_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/golden/make-logits-golden.sh tests/golden/logits-tiny.txt \
	tests/golden/logits-odd.txt tests/golden/logits-yarn.txt tests/golden/logits-yarn-af.txt \
	tests/golden/logits-yarn-ms.txt tests/golden/logits-linear.txt tests/golden/logits-q06.txt
TESTS += tests/cli/engine-cli.sh tests/cli/memory.sh
EXTRA_DIST += tests/cli/engine-cli.sh tests/cli/memory.sh
# Data files (src/train/tokens.c: .u32 ids and text documents) and the perplexity
# loop (src/train/ppl.c); `qwenchat perplexity` against a float64 numpy Qwen3 with
# its own sliding-window loop.
check_PROGRAMS += tests/unit/test_tokens tests/unit/test_ppl
TESTS += tests/unit/test_tokens tests/unit/test_ppl
tests_unit_test_tokens_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_tokens_SOURCES = tests/unit/test_tokens.c tests/unit/testutil.c \
	tests/unit/testutil.h tests/unit/tinytok.c tests/unit/tinytok.h
tests_unit_test_tokens_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_ppl_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_ppl_SOURCES = tests/unit/test_ppl.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_ppl_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
FUZZ_TARGETS += tests/fuzz/fuzz_tokens
tests_fuzz_fuzz_tokens_SOURCES = tests/fuzz/fuzz_tokens.c tests/unit/tinytok.c tests/unit/tinytok.h
tests_fuzz_fuzz_tokens_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_tokens_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_tokens.c tests/fuzz/corpus/tokens
TESTS += tests/cli/perplexity.sh tests/cli/perplexity-sft.sh tests/cli/embed.sh
EXTRA_DIST += tests/cli/embed.sh tests/cli/embed_reference.py
EXTRA_DIST += tests/cli/perplexity.sh tests/cli/ppl_reference.py tests/cli/perplexity-sft.sh \
	tests/cli/ppl_sft_ref.py tests/cli/convgen.py

# CUDA backend against the CPU reference; SKIP without a GPU.
TESTS += tests/cuda.sh
EXTRA_DIST += tests/cuda.sh
# The CUDA backend's repacked quantized rows, decoded on the host (needs nvcc, no GPU).
EXTRA_DIST += tests/unit/test_cuda_qblocks.cu
if HAVE_CUDA
TESTS += tests/unit/test_cuda_qblocks
check_SCRIPTS += tests/unit/test_cuda_qblocks
CLEANFILES += tests/unit/test_cuda_qblocks
tests/unit/test_cuda_qblocks: tests/unit/test_cuda_qblocks.cu engine/cuda/qblocks.cuh $(ENGINE_LIBS)
	@$(MKDIR_P) $(@D)
	$(AM_V_CC)$(NVCC) -std=c++17 -O2 -Xcompiler -Wall,-Wextra -include $(top_builddir)/config.h \
		-I$(top_srcdir) -I$(top_builddir) -o $@ $(srcdir)/tests/unit/test_cuda_qblocks.cu \
		$(ENGINE_LIBS) $(JANSSON_LIBS) -lm -lpthread
endif

# Model resolution and downloads: unit tests, and a download test against
# a local stand-in for the Hub (tests/cli/hub-server.py, 127.0.0.1 only).
check_PROGRAMS += tests/unit/test_hub tests/cli/hub_resolve
TESTS += tests/unit/test_hub tests/cli/hub.sh tests/cli/model-paths.sh
EXTRA_DIST += tests/cli/hub.sh tests/cli/hub-server.py tests/cli/model-paths.sh
tests_unit_test_hub_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_hub_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_cli_hub_resolve_SOURCES = tests/cli/hub_resolve.c src/cli/env.c
tests_cli_hub_resolve_LDADD = $(APP_LIBS)

# Sampler and session.
check_PROGRAMS += tests/unit/test_sampler
TESTS += tests/unit/test_sampler
tests_unit_test_sampler_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sampler_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm

# Chat: conversation save/load, the chat templates against
# jinja2 golden renders (tests/golden/make-template-golden.py), `qwenchat template`.
check_PROGRAMS += tests/unit/test_chat tests/unit/test_template tests/cli/tojson_filter
TESTS += tests/unit/test_chat tests/unit/test_template tests/cli/template.sh tests/cli/tojson.sh
EXTRA_DIST += tests/cli/template.sh tests/golden/make-template-golden.py \
	tests/golden/template-cases.json tests/golden/template-chatml.jinja \
	tests/golden/template-qwen3-instruct-2507.jinja tests/golden/template-qwen3-thinking-2507.jinja \
	tests/golden/template-config-qwen3.json tests/golden/template-config-chatml.json \
	tests/golden/template-config-qwen3-instruct-2507.json \
	tests/golden/template-config-qwen3-thinking-2507.json \
	tests/golden/template-golden-qwen3.json tests/golden/template-golden-chatml.json \
	tests/golden/template-golden-qwen3-instruct-2507.json \
	tests/golden/template-golden-qwen3-thinking-2507.json tests/golden/template-tiny-tokenizer.json
tests_unit_test_chat_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_chat_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_template_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_template_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_cli_tojson_filter_LDADD = $(APP_LIBS)
EXTRA_DIST += tests/cli/tojson.sh
# Conversations as training data (src/chat/sft.c), with the real tokenizer.
check_PROGRAMS += tests/unit/test_sft
TESTS += tests/unit/test_sft
tests_unit_test_sft_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_sft_SOURCES = tests/unit/test_sft.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_sft_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_fit
TESTS += tests/unit/test_fit
tests_unit_test_fit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_fit_SOURCES = tests/unit/test_fit.c tests/unit/tinytok.c tests/unit/tinytok.h
tests_unit_test_fit_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
# The chat view's layout, kept per block until the block changes (ui/view.c).
if ENABLE_TUI
check_PROGRAMS += tests/unit/test_view
TESTS += tests/unit/test_view
tests_unit_test_view_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_view_LDADD = libui.a $(APP_LIBS) $(NCURSESW_LIBS) $(READLINE_LIBS) $(CMOCKA_LIBS)
endif
FUZZ_TARGETS += tests/fuzz/fuzz_chat
tests_fuzz_fuzz_chat_SOURCES = tests/fuzz/fuzz_chat.c
tests_fuzz_fuzz_chat_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_chat_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_chat.c tests/fuzz/corpus/chat
check_PROGRAMS += tests/unit/test_session
TESTS += tests/unit/test_session
tests_unit_test_session_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_session_SOURCES = tests/unit/test_session.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_session_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
TESTS += tests/cli/run.sh
EXTRA_DIST += tests/cli/run.sh
TESTS += tests/cli/help.sh
EXTRA_DIST += tests/cli/help.sh

# Tokenizer: the pre-tokenizer scanner against Hugging Face splits.
check_PROGRAMS += tests/unit/test_tokenizer_pretok
TESTS += tests/unit/test_tokenizer_pretok
tests_unit_test_tokenizer_pretok_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_tokenizer_pretok_LDADD = $(TOKENIZER_LIBS) $(CMOCKA_LIBS)

# BPE training: the merge loop against a naive trainer and the
# handout example; `qwenchat train-bpe` against tests/cli/bpe_reference.py and HF tokenizers.
check_PROGRAMS += tests/unit/test_bpe_train
TESTS += tests/unit/test_bpe_train
tests_unit_test_bpe_train_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_bpe_train_LDADD = $(TOKENIZER_LIBS) $(CMOCKA_LIBS)
TESTS += tests/cli/train-bpe.sh tests/cli/train-bpe-hf.sh
EXTRA_DIST += tests/cli/train-bpe.sh tests/cli/train-bpe-hf.sh tests/cli/bpe_reference.py \
	tests/bench/train-bpe.sh
FUZZ_TARGETS += tests/fuzz/fuzz_bpe_train
tests_fuzz_fuzz_bpe_train_SOURCES = tests/fuzz/fuzz_bpe_train.c
tests_fuzz_fuzz_bpe_train_LDADD = $(TOKENIZER_LIBS)
tests_fuzz_fuzz_bpe_train_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_bpe_train.c tests/fuzz/corpus/bpe_train

# Chat UI: slash command parsing; tmux-driven UI tests; plain mode.
check_PROGRAMS += tests/unit/test_slash
TESTS += tests/unit/test_slash tests/cli/ui.sh tests/cli/ui-text.sh tests/cli/plain.sh tests/cli/ui-signals.sh
EXTRA_DIST += tests/cli/ui.sh tests/cli/ui-text.sh tests/cli/plain.sh tests/cli/ui-signals.sh tests/cli/ui_signals.py
tests_unit_test_slash_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_slash_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
FUZZ_TARGETS += tests/fuzz/fuzz_genconfig
tests_fuzz_fuzz_genconfig_SOURCES = tests/fuzz/fuzz_genconfig.c
tests_fuzz_fuzz_genconfig_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_genconfig_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_genconfig.c tests/fuzz/corpus/genconfig

# The tokenizer against Hugging Face tokenizers (golden ids by tests/golden/make-tokenizer-golden.js),
# round trips, streaming decode, bad files; `qwenchat tokenize` / `detokenize`.
check_PROGRAMS += tests/unit/test_tokenizer
TESTS += tests/unit/test_tokenizer
tests_unit_test_tokenizer_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_tokenizer_SOURCES = tests/unit/test_tokenizer.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_tokenizer_LDADD = $(TOKENIZER_LIBS) $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/test_tokenizer_files
TESTS += tests/unit/test_tokenizer_files
tests_unit_test_tokenizer_files_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_tokenizer_files_LDADD = $(TOKENIZER_LIBS) $(CMOCKA_LIBS)
EXTRA_DIST += tests/golden/make-tokenizer-golden.js tests/golden/tokenizer-cases.jsonl \
	tests/golden/make-literal-golden.js tests/golden/tokenizer-literal.jsonl \
	tests/golden/tokenizer-mixed.json tests/golden/qwen2-tokenizer-reference-cases.jsonl \
	tests/golden/qwen2-tokenizer-reference-cases.README
TESTS += tests/cli/tokenizer.sh
EXTRA_DIST += tests/cli/tokenizer.sh
FUZZ_TARGETS += tests/fuzz/fuzz_tokenizer
tests_fuzz_fuzz_tokenizer_SOURCES = tests/fuzz/fuzz_tokenizer.c
tests_fuzz_fuzz_tokenizer_LDADD = $(TOKENIZER_LIBS)
tests_fuzz_fuzz_tokenizer_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_tokenizer.c tests/fuzz/corpus/tokenizer
FUZZ_TARGETS += tests/fuzz/fuzz_tokconfig
tests_fuzz_fuzz_tokconfig_SOURCES = tests/fuzz/fuzz_tokconfig.c
tests_fuzz_fuzz_tokconfig_LDADD = $(TOKENIZER_LIBS)
tests_fuzz_fuzz_tokconfig_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_tokconfig.c tests/fuzz/corpus/tokconfig
EXTRA_DIST += tests/bench/tokenizer-bench.sh tests/bench/tokenizer-bench.js

# `qwenchat serve` (the OpenAI-compatible API): the request parser, <tool_call> parsing
# and the response builders without HTTP; the server itself with the official openai
# npm client (tests/fetch-openai.sh), hostile requests, 50 concurrent clients and KV
# reuse across requests (tests/cli/serve.sh).
check_PROGRAMS += tests/unit/test_openai
TESTS += tests/unit/test_openai
tests_unit_test_openai_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_openai_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/unit/test_openai_request
TESTS += tests/unit/test_openai_request
tests_unit_test_openai_request_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_openai_request_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/unit/test_openai_text
TESTS += tests/unit/test_openai_text
tests_unit_test_openai_text_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_openai_text_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
FUZZ_TARGETS += tests/fuzz/fuzz_openai
tests_fuzz_fuzz_openai_SOURCES = tests/fuzz/fuzz_openai.c
tests_fuzz_fuzz_openai_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_openai_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_openai.c tests/fuzz/corpus/openai
FUZZ_TARGETS += tests/fuzz/fuzz_origin
tests_fuzz_fuzz_origin_SOURCES = tests/fuzz/fuzz_origin.c
tests_fuzz_fuzz_origin_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_origin_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_origin.c tests/fuzz/corpus/origin
TESTS += tests/cli/serve.sh tests/cli/model-forms.sh
EXTRA_DIST += tests/cli/model-forms.sh
EXTRA_DIST += tests/cli/serve.sh tests/cli/serve_client.py tests/cli/serve_text.py \
	tests/cli/serve_tokenize.py \
	tests/cli/serve-openai.test.mjs \
	tests/fetch-openai.sh tests/cli/rig-model.py

# The remote backend (src/remote/): server-sent events, chat-completion chunks and the
# request body (unit tests); the client against a fake vLLM/SGLang server
# (tests/cli/remote-server.py, 127.0.0.1 only) in plain mode, `run` and the UI; and
# against `qwenchat serve`, answering as the local engine does (remote-serve.sh).
check_PROGRAMS += tests/unit/test_remote
TESTS += tests/unit/test_remote
tests_unit_test_remote_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_remote_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
TESTS += tests/cli/remote.sh tests/cli/remote-ui.sh tests/cli/remote-serve.sh
EXTRA_DIST += tests/cli/remote.sh tests/cli/remote-server.py tests/cli/remote-ui.sh \
	tests/cli/remote-serve.sh
FUZZ_TARGETS += tests/fuzz/fuzz_sse
tests_fuzz_fuzz_sse_SOURCES = tests/fuzz/fuzz_sse.c
tests_fuzz_fuzz_sse_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_sse_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_sse.c tests/fuzz/corpus/sse

# The base layer: the atomic writer against planted links, FIFOs and modes.
check_PROGRAMS += tests/unit/test_fileio
TESTS += tests/unit/test_fileio
tests_unit_test_fileio_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_fileio_LDADD = libbase.a $(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_hugemem
TESTS += tests/unit/test_hugemem
tests_unit_test_hugemem_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_hugemem_LDADD = libbase.a $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/test_mdfence
TESTS += tests/unit/test_mdfence
tests_unit_test_mdfence_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_mdfence_LDADD = libbase.a $(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_proc
TESTS += tests/unit/test_proc
tests_unit_test_proc_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_proc_LDADD = libbase.a $(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_rowexp
TESTS += tests/unit/test_rowexp
tests_unit_test_rowexp_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_rowexp_LDADD = libbase.a $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/test_jsonlimit
TESTS += tests/unit/test_jsonlimit
tests_unit_test_jsonlimit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_jsonlimit_LDADD = libbase.a $(CMOCKA_LIBS)
check_PROGRAMS += tests/unit/test_jsonschema
TESTS += tests/unit/test_jsonschema
tests_unit_test_jsonschema_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_jsonschema_LDADD = libbase.a $(JANSSON_LIBS) $(CMOCKA_LIBS)
FUZZ_TARGETS += tests/fuzz/fuzz_jsonschema
tests_fuzz_fuzz_jsonschema_SOURCES = tests/fuzz/fuzz_jsonschema.c
tests_fuzz_fuzz_jsonschema_LDADD = libbase.a
tests_fuzz_fuzz_jsonschema_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_jsonschema.c tests/fuzz/corpus/jsonschema
FUZZ_TARGETS += tests/fuzz/fuzz_jsonlimit
tests_fuzz_fuzz_jsonlimit_SOURCES = tests/fuzz/fuzz_jsonlimit.c
tests_fuzz_fuzz_jsonlimit_LDADD = libbase.a
tests_fuzz_fuzz_jsonlimit_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_jsonlimit.c tests/fuzz/corpus/jsonlimit
check_PROGRAMS += tests/unit/test_term
TESTS += tests/unit/test_term
tests_unit_test_term_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_term_LDADD = libbase.a $(CMOCKA_LIBS)
TESTS += tests/cli/escapes.sh
EXTRA_DIST += tests/cli/escapes.sh
TESTS += tests/cli/signals.sh
EXTRA_DIST += tests/cli/signals.sh
TESTS += tests/cli/resume-lock.sh
EXTRA_DIST += tests/cli/resume-lock.sh
TESTS += tests/cli/truncated.sh
EXTRA_DIST += tests/cli/truncated.sh
TESTS += tests/cli/limits.sh
EXTRA_DIST += tests/cli/limits.sh
TESTS += tests/cli/hostile-files.sh
EXTRA_DIST += tests/cli/hostile-files.sh
# GGUF files: the reader and loader against the same model's Hugging Face directory
# (tests/mkgguf.py writes GGUFs as convert_hf_to_gguf.py does), the malformed-file table.
check_PROGRAMS += tests/unit/test_gguf
TESTS += tests/unit/test_gguf tests/cli/gguf.sh
tests_unit_test_gguf_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_gguf_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/mkgguf.py tests/cli/gguf.sh tests/cli/gguf_bad.py
TESTS += tests/cli/quantize-out.sh
EXTRA_DIST += tests/cli/quantize-out.sh
# ggml's weight formats: dequantization against gguf-py's, bit for bit
check_PROGRAMS += tests/unit/test_quant
TESTS += tests/unit/test_quant
tests_unit_test_quant_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_quant_SOURCES = tests/unit/test_quant.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_quant_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/golden/dequant-golden.txt tests/golden/make-dequant-golden.py
# quantized models against a float64 forward pass on their dequantized weights
TESTS += tests/cli/quant.sh
EXTRA_DIST += tests/cli/quant.sh tests/golden/make-quant-logits-golden.sh \
	tests/golden/gguf-to-f32.py tests/golden/logits-quant-q8_0.txt \
	tests/golden/logits-quant-q6_k.txt tests/golden/logits-quant-q5_k_m.txt \
	tests/golden/logits-quant-q4_k_m.txt tests/golden/logits-quant-q4_0.txt \
	tests/golden/logits-quant-q5_0.txt tests/golden/logits-quant-q4_1.txt \
	tests/golden/logits-quant-q5_1.txt tests/golden/logits-quant-q3_k_m.txt \
	tests/golden/logits-quant-q2_k.txt tests/golden/make-iq4-golden.sh \
	tests/golden/tiny-iq4_xs.gguf tests/golden/logits-iq4_xs.txt
check_PROGRAMS += tests/unit/test_quantize
TESTS += tests/unit/test_quantize
tests_unit_test_quantize_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_quantize_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/golden/quantize-types.json tests/golden/make-quantize-types.py
# The quantizers (engine/quantize.c) against the bytes of ggml's reference code
# (tests/golden/make-quant-golden.py).
check_PROGRAMS += tests/unit/test_quantize_golden
TESTS += tests/unit/test_quantize_golden
tests_unit_test_quantize_golden_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_quantize_golden_SOURCES = tests/unit/test_quantize_golden.c tests/unit/testutil.c \
	tests/unit/testutil.h
tests_unit_test_quantize_golden_LDADD = $(ENGINE_LIBS) $(CMOCKA_LIBS) -lm
EXTRA_DIST += tests/golden/make-quant-golden.py tests/golden/quant-golden.txt
FUZZ_TARGETS += tests/fuzz/fuzz_gguf
tests_fuzz_fuzz_gguf_SOURCES = tests/fuzz/fuzz_gguf.c
tests_fuzz_fuzz_gguf_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_gguf_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_gguf.c tests/fuzz/corpus/gguf

# The dependency rule between the folders (includes), curses only in ui/, the
# environment only in src/cli/.
TESTS += tests/cli/layers.sh
EXTRA_DIST += tests/cli/layers.sh
TESTS += tests/cli/cuda-module.sh
EXTRA_DIST += tests/cli/cuda-module.sh

# Training (src/train): a unit test per module (tests/unit/test_NAME.c for
# src/train/NAME.c; test_checkpoint reads what it writes back with the engine's loader).
TRAIN_UNIT_TESTS = tests/unit/test_schedule tests/unit/test_batch tests/unit/test_checkpoint \
	tests/unit/test_trainlog tests/unit/test_modeldir tests/unit/test_trainstate \
	tests/unit/test_dataset tests/unit/test_panel
check_PROGRAMS += $(TRAIN_UNIT_TESTS)
TESTS += $(TRAIN_UNIT_TESTS)
tests_unit_test_schedule_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_schedule_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
tests_unit_test_batch_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_batch_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_checkpoint_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_checkpoint_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
tests_unit_test_trainlog_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_trainlog_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
tests_unit_test_modeldir_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_modeldir_SOURCES = tests/unit/test_modeldir.c tests/unit/testutil.c tests/unit/testutil.h
tests_unit_test_modeldir_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_trainstate_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_trainstate_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_dataset_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_dataset_SOURCES = tests/unit/test_dataset.c tests/unit/tinytok.c tests/unit/tinytok.h
tests_unit_test_dataset_LDADD = $(APP_LIBS) $(CMOCKA_LIBS)
tests_unit_test_panel_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_unit_test_panel_LDADD = $(APP_LIBS) $(CMOCKA_LIBS) -lm
FUZZ_TARGETS += tests/fuzz/fuzz_hub
tests_fuzz_fuzz_hub_SOURCES = tests/fuzz/fuzz_hub.c
tests_fuzz_fuzz_hub_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_hub_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_hub.c tests/fuzz/corpus/hub
FUZZ_TARGETS += tests/fuzz/fuzz_trainstate
tests_fuzz_fuzz_trainstate_SOURCES = tests/fuzz/fuzz_trainstate.c
tests_fuzz_fuzz_trainstate_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_trainstate_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_trainstate.c tests/fuzz/corpus/trainstate
FUZZ_TARGETS += tests/fuzz/fuzz_peft
tests_fuzz_fuzz_peft_SOURCES = tests/fuzz/fuzz_peft.c
tests_fuzz_fuzz_peft_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_peft_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_peft.c tests/fuzz/corpus/peft
FUZZ_TARGETS += tests/fuzz/fuzz_dscache
tests_fuzz_fuzz_dscache_SOURCES = tests/fuzz/fuzz_dscache.c
tests_fuzz_fuzz_dscache_LDADD = $(APP_LIBS)
tests_fuzz_fuzz_dscache_LDFLAGS = $(FUZZ_LDFLAGS)
EXTRA_DIST += tests/fuzz/fuzz_dscache.c tests/fuzz/corpus/dscache
# `qwenchat train` as a user drives it (train-panel.sh: on a terminal, in tmux), from a
# model's weights (train-init.sh), paths state.json cannot hold and damaged checkpoints
# (train-paths.sh, train-damaged.sh), and
# against a float64 PyTorch reference (SKIP without python3-torch); train.sh,
# train-signals.sh and train-ref.sh are in TESTS at the top.
TESTS += tests/cli/train-sft.sh tests/cli/train-panel.sh tests/cli/train-init.sh \
	tests/cli/train-paths.sh tests/cli/train-damaged.sh
EXTRA_DIST += tests/cli/train-sft.sh tests/cli/train-panel.sh tests/cli/train-signals.sh \
	tests/cli/train-init.sh tests/cli/train-paths.sh tests/cli/train-damaged.sh \
	tests/bench/sft-padding.sh
EXTRA_DIST += tests/cli/train.sh tests/cli/train-ref.sh tests/cli/train_ref.py tests/cli/sft_ref.py \
	tests/cli/train-lora.sh tests/cli/lora_ref.py
# A model trained here on the Brown corpus, and the commands that a trained model tests
# better than random weights: perplexity, quantize, run, serve and the chat UI (in
# TESTS at the top).
EXTRA_DIST += tests/cli/trained.sh tests/trained-model.sh tests/fetch-corpus.sh

# tests/jsonwalk: texts the JSON Schema recognizer lets through, for
# tests/cli/jsonschema.sh to validate with Python's jsonschema.
check_PROGRAMS += tests/jsonwalk
tests_jsonwalk_SOURCES = tests/jsonwalk.c
tests_jsonwalk_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_jsonwalk_LDADD = libbase.a $(JANSSON_LIBS)
TESTS += tests/cli/jsonschema.sh
EXTRA_DIST += tests/cli/jsonschema.sh tests/cli/jsonschema_check.py
