# engine/cuda/local.mk — the CUDA backend, built when configure finds nvcc + cuBLAS.
if HAVE_CUDA
endif
