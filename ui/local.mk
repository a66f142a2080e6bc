# ui/local.mk — the ncurses application (skipped with --disable-tui).
# Linked into the qwenchat program only: nothing in libqwenchat.a uses curses.
if ENABLE_TUI
qwenchat_SOURCES += ui/ui.c ui/ui.h ui/uistate.h ui/view.c ui/view.h ui/input.c \
	ui/draw.c ui/debug.c
qwenchat_CPPFLAGS = $(AM_CPPFLAGS) $(NCURSESW_CFLAGS) $(READLINE_CFLAGS)
qwenchat_LDADD += $(NCURSESW_LIBS) $(READLINE_LIBS) $(UTF8PROC_LIBS) -lm
else
# qwenchat_CPPFLAGS is per-target either way: without this, --disable-tui compiles
# src/main.c without AM_CPPFLAGS (no config.h, no -I).
qwenchat_CPPFLAGS = $(AM_CPPFLAGS)
endif
