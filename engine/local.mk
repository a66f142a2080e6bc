# engine/local.mk — model loading, KV cache, forward pass, CPU backend.
libqwenchat_a_SOURCES += \
	engine/engine.h
