# src/local.mk — the command-line program and the chat logic.
libqwenchat_a_SOURCES += \
	src/err.c src/err.h \
	src/fileio.c src/fileio.h src/strbuf.c src/strbuf.h \
	src/cli.c src/cli.h \
	src/hub.c src/hub.h \
	src/hfcache.c src/hfcache.h src/download.c src/download.h \
	src/commands.h \
	src/cmd_run.c src/cmd_tokenize.c src/cmd_train_bpe.c src/cmd_engine.c \
	src/cmd_info.c src/cmd_hub.c
# The conversation, the chat templates and `qwenchat template`.
libqwenchat_a_SOURCES += src/chat.c src/chat.h src/template.c src/template.h src/cmd_template.c \
	src/tojson.c src/tojson.h
# The chat controller and slash commands shared by the curses UI and the plain mode.
libqwenchat_a_SOURCES += src/slash.c src/slash.h src/app.c src/app.h src/app_impl.h src/app_cmd.c \
	src/plain.c src/plain.h
# The sampler and the KV-reusing session (issue 4).
libqwenchat_a_SOURCES += src/sampler.c src/sampler.h src/session.c src/session.h
