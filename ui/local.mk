# ui/local.mk — the ncurses application (skipped with --disable-tui).
if ENABLE_TUI
endif
