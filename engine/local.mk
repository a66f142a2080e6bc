# engine/local.mk — model loading, KV cache, forward pass, CPU backend (libengine.a;
# uses only libbase.a).
noinst_LIBRARIES += libengine.a
libengine_a_SOURCES = \
	engine/engine.h \
	engine/config.c engine/config_limits.h engine/safetensors.c engine/safetensors.h \
	engine/model.c engine/model.h engine/model_quant.c engine/gguf.c engine/gguf.h engine/model_gguf.c \
	engine/gguf_write.c engine/ftype.c engine/ftype.h engine/quant.c engine/quant.h engine/quantize.c \
	engine/engine.c engine/backend.h engine/rope.c engine/rope.h engine/cuda_load.c \
	engine/cpu/cpu.c engine/cpu/kernels.c engine/cpu/kernels.h engine/cpu/tiling.h \
	engine/cpu/kernels_avx512.c engine/cpu/kernels_avx512_ops.c engine/cpu/avx512.h \
	engine/cpu/kernels_avx2.c engine/cpu/kernels_quant.c engine/cpu/kernels_quant_avx2.c engine/cpu/avx2.h \
	engine/cpu/kernels_qgemm_avx2.c engine/cpu/amx.c engine/cpu/amx.h \
	engine/cpu/matmul.c engine/cpu/matmul.h engine/cpu/gemm.c engine/cpu/gemm.h \
	engine/cpu/gemm_avx2.c engine/cpu/gemm_avx512.c engine/cpu/gemm_tiles.h \
	engine/train.c engine/train.h engine/train_backend.h engine/cpu/train_cpu.c engine/cpu/train_cpu.h \
	engine/cpu/train_layer.c engine/cpu/train_ops.c \
	engine/cpu/pool.c engine/cpu/pool.h \
	engine/cpu/measure.c engine/cpu/measure.h
