# tokenizer/local.mk — byte-level BPE tokenizer.
libqwenchat_a_SOURCES += \
	tokenizer/tokenizer.h \
	tokenizer/pretok.c tokenizer/pretok.h
