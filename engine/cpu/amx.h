/* amx.h — Intel AMX tiles for the bf16 matrix products (internal to engine/cpu/).
 *
 * Where the CPU has AMX-BF16 (Xeon since Sapphire Rapids) and Linux lets the process
 * use the tile registers, one TDPBF16PS multiplies a 16 x 32 block of bf16 values by a
 * 32 x 16 block into 16 x 16 fp32 sums: 16 times the work of one vdpbf16ps. The
 * operands are the ones the AVX-512 BF16 kernels already read: A as rows of bf16
 * pairs (k, k + 1), B as a panel whose row q holds, for each column, the pair of
 * rows 2q and 2q + 1 (what Intel calls the VNNI layout). */
#ifndef QWENCHAT_CPU_AMX_H
#define QWENCHAT_CPU_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this CPU has AMX-BF16 and the kernel granted this process the tile state
 * (asked once; the answer is kept). */
bool cpu_amx_usable(void);

/* A thread sets the tile shapes before its first cpu_amx_tile32 and releases the
 * tiles after its last (so that an idle thread does not carry 8 KB of tile state
 * through every context switch). */
void cpu_amx_begin(void);
void cpu_amx_end(void);

/* c (its first `rows` <= 32 rows, ldc floats apart, and `cols` <= 32 columns) (+)=
 * A . B over `pairs` pairs of k (a multiple of 16):
 *   A's row r: its pairs at a + r * lda (32-bit words), 32 rows readable (those past
 *   `rows` are read and dropped);
 *   B's pair q of column j: b[q * ldb + j], for 32 columns (likewise past `cols`).
 * acc adds to c. Each value of c is computed the same way wherever it sits in the
 * block and whatever the block's `rows` and `cols`: the same bits however a product
 * is cut into blocks. */
void cpu_amx_tile32(float *c, int ldc, const uint32_t *a, size_t lda, const uint32_t *b,
		    size_t ldb, int pairs, int rows, int cols, bool acc);

#endif
