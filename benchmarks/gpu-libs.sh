# gpu-libs.sh BUNDLE — sourced by the GPU scripts beside it: exports LD_LIBRARY_PATH with
# BUNDLE/lib (the bundle's shared libraries) and the machine's CUDA runtime and cuBLAS,
# the toolkit's, else any copy on disk (pip's).
cublas=$(ls /usr/local/cuda*/lib64/libcublas.so.1* 2>/dev/null | head -n 1)
[ -n "$cublas" ] || cublas=$(find / -xdev -name 'libcublas.so.1*' 2>/dev/null | head -n 1)
cudart=$(find "$(dirname "${cublas:-/nonexistent}")" / -xdev -name 'libcudart.so.1*' 2>/dev/null |
	head -n 1)
LD_LIBRARY_PATH=$1/lib:$(dirname "${cublas:-.}"):$(dirname "${cudart:-.}")
export LD_LIBRARY_PATH
