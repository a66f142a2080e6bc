# engine/cuda/local.mk — the CUDA backend as a shared module, qwenchat-cuda.so, built
# when configure finds nvcc and cuBLAS. The engine loads it at run time
# (engine/cuda_load.c), so the program links no CUDA library; `make install` puts it in
# $(pkglibdir), and in a build tree it sits beside the qwenchat program.
cuda_module_sources = engine/cuda/host.cu engine/cuda/cuda.cu engine/cuda/plan.cu engine/cuda/upload.cu \
	engine/cuda/step.cu engine/cuda/forward.cu engine/cuda/gemm.cu engine/cuda/kernels.cu \
	engine/cuda/matvec.cu engine/cuda/quant.cu engine/cuda/attention.cu engine/cuda/sample.cu engine/cuda/measure.cu \
	engine/cuda/train.cu engine/cuda/train_kernels.cu engine/cuda/train_step.cu \
	engine/cuda/train_attn.cu
EXTRA_DIST += engine/cuda/common.cuh engine/cuda/kernels.cuh engine/cuda/state.cuh \
	engine/cuda/quant.cuh engine/cuda/qblocks.cuh engine/cuda/train.cuh $(cuda_module_sources)
if HAVE_CUDA
cuda_module_objects = $(cuda_module_sources:.cu=.$(OBJEXT))
CLEANFILES += $(cuda_module_objects) qwenchat-cuda.so

# Position-independent, every symbol hidden but the entry point (host.cu), so that
# nothing of the module can collide with the program's own functions.
NVCCFLAGS = -std=c++17 -O3 $(NVCC_GENCODE) -Xcompiler -Wall,-Wextra,-fPIC,-fvisibility=hidden
SUFFIXES = .cu
.cu.$(OBJEXT):
	@$(MKDIR_P) $(@D)
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) $(DEFS) -include $(top_builddir)/config.h \
		-I$(top_srcdir) -I$(top_builddir) -c -o $@ $<

qwenchat-cuda.so: $(cuda_module_objects)
	$(AM_V_CCLD)$(NVCC) -shared $(NVCC_GENCODE) -o $@ $(cuda_module_objects) $(CUDA_LIBS) \
		-Xlinker --no-undefined -Xlinker -z,defs

all-local: qwenchat-cuda.so

install-exec-local: qwenchat-cuda.so
	$(MKDIR_P) '$(DESTDIR)$(pkglibdir)'
	$(INSTALL_PROGRAM) qwenchat-cuda.so '$(DESTDIR)$(pkglibdir)/qwenchat-cuda.so'

uninstall-local:
	rm -f '$(DESTDIR)$(pkglibdir)/qwenchat-cuda.so'

# nvcc does no automake dependency tracking: every .cu depends on the headers.
cuda_backend_headers = $(srcdir)/engine/cuda/common.cuh $(srcdir)/engine/cuda/kernels.cuh \
	$(srcdir)/engine/cuda/state.cuh $(srcdir)/engine/cuda/quant.cuh $(srcdir)/engine/cuda/qblocks.cuh $(srcdir)/engine/cuda/train.cuh \
	$(srcdir)/engine/backend.h $(srcdir)/engine/engine.h $(srcdir)/engine/rope.h \
	$(srcdir)/engine/train.h $(srcdir)/engine/train_backend.h \
	$(srcdir)/src/base/err.h
$(cuda_module_objects): $(cuda_backend_headers)
endif
