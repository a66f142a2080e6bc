# engine/local.mk — model loading, KV cache, forward pass, CPU backend.
libqwenchat_a_SOURCES += \
	engine/engine.h

# config.json, safetensors and model loading (issue 2).
libqwenchat_a_SOURCES += \
	engine/config.c engine/safetensors.c engine/safetensors.h engine/model.c

# The engine front, the backend table and the CPU backend (issue 9).
libqwenchat_a_SOURCES += \
	engine/engine.c engine/backend.h engine/rope.c engine/rope.h \
	engine/cpu/cpu.c engine/cpu/kernels.c engine/cpu/kernels.h \
	engine/cpu/pool.c engine/cpu/pool.h
