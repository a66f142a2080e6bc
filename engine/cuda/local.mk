# engine/cuda/local.mk — the CUDA backend, built when configure finds nvcc + cuBLAS.
# Its objects go into libengine.a like every other module, so the program and the
# tests link it the same way; engine.c offers it once ENG_HAVE_CUDA_BACKEND is set.
EXTRA_DIST += engine/cuda/common.cuh engine/cuda/kernels.cuh
if HAVE_CUDA
AM_CPPFLAGS += -DENG_HAVE_CUDA_BACKEND
libengine_a_SOURCES += \
	engine/cuda/cuda.cu engine/cuda/kernels.cu engine/cuda/attention.cu \
	engine/cuda/sample.cu engine/cuda/measure.cu
LIBS += $(CUDA_LIBS) -lstdc++

NVCCFLAGS = -std=c++17 -O3 $(NVCC_GENCODE) -Xcompiler -Wall,-Wextra
SUFFIXES = .cu
.cu.o:
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) $(DEFS) -include $(top_builddir)/config.h \
		-I$(top_srcdir) -I$(top_builddir) -DENG_HAVE_CUDA_BACKEND -c -o $@ $<

# nvcc does no automake dependency tracking: every .cu depends on the headers.
cuda_backend_headers = $(srcdir)/engine/cuda/common.cuh $(srcdir)/engine/cuda/kernels.cuh \
	$(srcdir)/engine/backend.h $(srcdir)/engine/engine.h $(srcdir)/engine/rope.h
engine/cuda/cuda.$(OBJEXT) engine/cuda/kernels.$(OBJEXT) engine/cuda/attention.$(OBJEXT) \
	engine/cuda/sample.$(OBJEXT) engine/cuda/measure.$(OBJEXT): $(cuda_backend_headers)
endif
