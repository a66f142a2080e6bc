# tokenizer/local.mk — byte-level BPE tokenizer (libtokenizer.a; uses only libbase.a).
noinst_LIBRARIES += libtokenizer.a
libtokenizer_a_SOURCES = \
	tokenizer/tokenizer.h \
	tokenizer/pretok.c tokenizer/pretok.h \
	tokenizer/tokenizer.c tokenizer/tokload.c tokenizer/tokconfig.c tokenizer/tokvocab.c \
	tokenizer/postproc.c \
	tokenizer/stream.c tokenizer/tok_impl.h \
	tokenizer/bpe.c tokenizer/bpe.h tokenizer/added.c tokenizer/added.h \
	tokenizer/bytelevel.c tokenizer/bytelevel.h tokenizer/jscan.c tokenizer/jscan.h \
	tokenizer/nfc.c tokenizer/nfc.h tokenizer/unicode9.h \
	tokenizer/unicode16.h
# BPE training (`qwenchat train-bpe`): counting pre-tokens, the merge loop, writers.
libtokenizer_a_SOURCES += tokenizer/bpe_train.c tokenizer/bpe_train.h \
	tokenizer/bpe_count.c tokenizer/bpe_count.h tokenizer/bpe_write.c tokenizer/bpe_write.h \
	tokenizer/tokjson.c tokenizer/tokjson.h
