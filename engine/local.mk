# engine/local.mk — model loading, KV cache, forward pass, CPU backend.
libqwenchat_a_SOURCES += \
	engine/engine.h

# config.json, safetensors and model loading (issue 2).
libqwenchat_a_SOURCES += \
	engine/config.c engine/safetensors.c engine/safetensors.h engine/model.c
