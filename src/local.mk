# src/local.mk — the base layer (libbase.a), the app layer (libapp.a: hub, conversation
# and templates, generation session and sampler, chat controller) and the command line
# (src/cli/, linked into the qwenchat program only).

# Base: errors, files, strings, clock, sizes; every other layer may use it.
noinst_LIBRARIES += libbase.a
libbase_a_SOURCES = \
	src/base/err.c src/base/err.h \
	src/base/fileio.c src/base/fileio.h src/base/fileio_paths.c \
	src/base/hugemem.c src/base/hugemem.h \
	src/base/jsonlimit.c src/base/jsonlimit.h \
	src/base/jsontype.c src/base/jsontype.h \
	src/base/strbuf.c src/base/strbuf.h \
	src/base/utf8.c src/base/utf8.h \
	src/base/jsonschema.c src/base/jsonschema_match.c src/base/jsonschema_format.c \
	src/base/jsonschema_starts.c src/base/jsonschema_regex.c \
	src/base/jsonschema_choice.c \
	src/base/jsonschema.h \
	src/base/jsonschema_impl.h \
	src/base/mdfence.c src/base/mdfence.h \
	src/base/clock.c src/base/clock.h \
	src/base/units.c src/base/units.h \
	src/base/proc.c src/base/proc.h \
	src/base/rowexp.c src/base/rowexp.h \
	src/base/array.c src/base/array.h \
	src/base/term.c src/base/term.h

# App: everything between the command line and the engine and tokenizer (the OpenAI
# API server of `qwenchat serve`, the client of the remote backend and the training
# loop of `qwenchat train` with its data files, and perplexity).
noinst_LIBRARIES += libapp.a
libapp_a_SOURCES = \
	src/hub/hub.c src/hub/hub_list.c src/hub/hub_token.c src/hub/hub.h \
	src/hub/hfcache.c src/hub/hfcache.h \
	src/hub/download.c src/hub/download.h \
	src/hub/loader.c src/hub/loader.h src/hub/loader_keys.c src/hub/loader_impl.h src/hub/pooling.c \
	src/hub/ggufname.c src/hub/ggufname.h \
	src/chat/chat.c src/chat/chat.h \
	src/chat/template.c src/chat/template.h \
	src/chat/tojson.c src/chat/tojson.h \
	src/chat/fit.c src/chat/fit.h \
	src/chat/toolcall.c src/chat/toolcall.h \
	src/chat/sft.c src/chat/sft.h src/chat/sft_formats.c \
	src/session/sampler.c src/session/sampler.h \
	src/session/session.c src/session/session.h \
	src/app/app.c src/app/app.h src/app/app_state.h src/app/app_slash.c src/app/app_remote.c \
	src/app/app_held.c src/app/app_session.c \
	src/app/app_probs.c \
	src/app/slash.c src/app/slash.h \
	src/app/plain.c src/app/plain.h \
	src/serve/openai.c src/serve/openai_out.c src/serve/openai.h src/serve/ends.c \
	src/serve/completion.c src/serve/completion.h \
	src/serve/generate.c src/serve/generate.h src/serve/scores.c src/serve/scores.h \
	src/serve/serve.c src/serve/serve.h src/serve/serve_impl.h src/serve/jobs.c \
	src/serve/deadline.c src/serve/deadline.h \
	src/serve/origin.c src/serve/origin.h \
	src/serve/tokenize.c src/serve/tokenize.h src/serve/embed.c src/serve/embed.h \
	src/remote/sse.c src/remote/sse.h \
	src/remote/reply.c src/remote/reply.h \
	src/remote/remote.c src/remote/request.c src/remote/remote.h \
	src/remote/failure.c src/remote/remote_impl.h \
	src/train/tokens.c src/train/tokens.h \
	src/train/ppl.c src/train/ppl.h \
	src/train/schedule.c src/train/schedule.h \
	src/train/batch.c src/train/batch.h \
	src/train/checkpoint.c src/train/checkpoint.h \
	src/train/peft.c src/train/peft.h \
	src/train/modeldir.c src/train/modeldir.h src/train/qwen3_template.c \
	src/train/trainlog.c src/train/trainlog.h \
	src/train/trainstate.c src/train/trainstate.h \
	src/train/dataset.c src/train/dataset.h \
	src/train/save.c src/train/save.h \
	src/train/loop.c src/train/loop.h src/train/rundir.c src/train/rundir.h \
	src/train/panel.c src/train/panel.h

# The command line: main.c dispatches to one cmd_*.c per subcommand.
qwenchat_SOURCES = src/cli/main.c src/cli/cmd_chat.c \
	src/cli/cli.c src/cli/cli_setup.c src/cli/cli.h src/cli/wrap.c src/cli/wrap.h src/cli/hint.c src/cli/hint.h src/cli/commands.h src/cli/env.c src/cli/env.h \
	src/cli/sigbus.c src/cli/sigbus.h src/cli/outfile.c src/cli/outfile.h \
	src/cli/cmd_run.c src/cli/cmd_template.c src/cli/cmd_tokenize.c \
	src/cli/cmd_train_bpe.c src/cli/cmd_logits.c src/cli/cmd_embed.c src/cli/cmd_bench.c src/cli/cmd_info.c src/cli/cmd_hub.c \
	src/cli/cmd_serve.c \
	src/cli/cmd_quantize.c src/cli/cmd_perplexity.c src/cli/ppl_report.c src/cli/ppl_report.h \
	src/cli/cmd_train.c src/cli/train_opts.c src/cli/train_opts.h \
	src/cli/train_model.c src/cli/train_model.h \
	src/cli/conv_data.c src/cli/conv_data.h \
	src/cli/train_report.c src/cli/train_report.h
