/* amx.c — the AMX tile kernel (amx.h): a 32 x 32 block of C in four tile registers,
 * two tiles of A and two of B loaded per 32 values of k, four TDPBF16PS. */
#include "engine/cpu/amx.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TAMX __attribute__((target("amx-tile,amx-bf16")))

/* Linux (5.16 and later) hands out the 8 KB of tile data per process on request. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

bool cpu_amx_usable(void)
{
	static atomic_int known = -1; /* -1: not asked yet */
	int k = atomic_load(&known);
	if (k >= 0)
		return k;
	unsigned a, b, c, d;
	bool ok = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 24)) /* AMX-TILE */ &&
		  (d & (1u << 22)) /* AMX-BF16 */ &&
		  syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
	atomic_store(&known, ok);
	return ok;
}

/* The tile configuration, palette 1: every tile 16 rows of 64 bytes. */
struct tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

/* A constant in memory: GCC's ldtilecfg tells the compiler it reads only the first 8
 * bytes, so a configuration built on the stack loses its stores to the optimizer. */
static const _Alignas(64) struct tilecfg tiles_16x64 = {
	.palette = 1,
	.colsb = {64, 64, 64, 64, 64, 64, 64, 64},
	.rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

TAMX void cpu_amx_begin(void)
{
	_tile_loadconfig(&tiles_16x64);
}

TAMX void cpu_amx_end(void)
{
	_tile_release();
}

/* Tiles 0-3: C's quarters (rows 0-15 / 16-31 by columns 0-15 / 16-31); 4, 5: A's
 * two halves of rows; 6, 7: B's two halves of columns. */
TAMX void cpu_amx_tile32(float *c, int ldc, const uint32_t *a, size_t lda, const uint32_t *b,
			 size_t ldb, int pairs, int rows, int cols, bool acc)
{
	/* A whole block is summed in place in c; a partial one in tmp, starting from c's
	   values as the whole one starts: the same sums in the same order */
	_Alignas(64) float tmp[32 * 32];
	bool direct = rows == 32 && cols == 32;
	float *o = direct ? c : tmp;
	size_t ldo = direct ? (size_t)ldc : 32, so = ldo * sizeof(float);
	if (!direct && acc) {
		memset(tmp, 0, sizeof tmp);
		for (int r = 0; r < rows; r++)
			memcpy(tmp + r * 32, c + (size_t)r * ldc, (size_t)cols * sizeof(float));
		/* GCC's tileloadd does not say it reads memory: the stores must land first */
		__asm__ volatile("" ::: "memory");
	}
	if (acc) {
		_tile_loadd(0, o, so);
		_tile_loadd(1, o + 16, so);
		_tile_loadd(2, o + 16 * ldo, so);
		_tile_loadd(3, o + 16 * ldo + 16, so);
	} else {
		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		_tile_zero(3);
	}
	size_t sa = lda * sizeof(uint32_t), sb = ldb * sizeof(uint32_t);
	for (int q = 0; q < pairs; q += 16) {
		_tile_loadd(4, a + q, sa);
		_tile_loadd(5, a + 16 * lda + q, sa);
		_tile_loadd(6, b + (size_t)q * ldb, sb);
		_tile_loadd(7, b + (size_t)q * ldb + 16, sb);
		_tile_dpbf16ps(0, 4, 6);
		_tile_dpbf16ps(1, 4, 7);
		_tile_dpbf16ps(2, 5, 6);
		_tile_dpbf16ps(3, 5, 7);
	}
	_tile_stored(0, o, so);
	_tile_stored(1, o + 16, so);
	_tile_stored(2, o + 16 * ldo, so);
	_tile_stored(3, o + 16 * ldo + 16, so);
	if (!direct)
		for (int r = 0; r < rows; r++)
			memcpy(c + (size_t)r * ldc, tmp + r * 32, (size_t)cols * sizeof(float));
}

#else /* no AMX off x86-64 Linux: never usable, never called */

bool cpu_amx_usable(void)
{
	return false;
}

void cpu_amx_begin(void)
{
}

void cpu_amx_end(void)
{
}

void cpu_amx_tile32(float *c, int ldc, const uint32_t *a, size_t lda, const uint32_t *b,
		    size_t ldb, int pairs, int rows, int cols, bool acc)
{
	(void)c, (void)ldc, (void)a, (void)lda, (void)b, (void)ldb, (void)pairs, (void)rows,
		(void)cols, (void)acc;
}

#endif
