# ui/local.mk — the ncurses application (libui.a; skipped with --disable-tui).
# Only src/cli/ calls into it (main.c for the chat, train_report.c for the training
# panel's place on the terminal, ui/live.h), and nothing outside ui/ uses curses.
if ENABLE_TUI
noinst_LIBRARIES += libui.a
libui_a_SOURCES = ui/ui.c ui/ui.h ui/uistate.h ui/view.c ui/view.h ui/input.c ui/history.c \
	ui/draw.c ui/debug.c ui/markdown.c ui/markdown.h ui/live.c ui/live.h
libui_a_CPPFLAGS = $(AM_CPPFLAGS) $(NCURSESW_CFLAGS) $(READLINE_CFLAGS)
qwenchat_LDADD = libui.a $(APP_LIBS) $(NCURSESW_LIBS) $(READLINE_LIBS)
else
qwenchat_LDADD = $(APP_LIBS)
endif
