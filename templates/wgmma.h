/* wgmma (sm_90a) building blocks: a warpgroup (4 warps, 128 threads) issues
 * m64nNk16 products asynchronously; A from a shared-memory descriptor (SS)
 * or from registers (RS), B always from a descriptor.
 *
 * The f32 accumulator of m64nN is, per warp, exactly the mma.sync m16n8
 * accumulator of N/8 tiles (warp w of the group holds rows 16w..16w+15; lane
 * (g, t) rows g and g+8, columns 8j + 2t, +1 of tile j), so it is an Acc with
 * mt = 1 and the softmax, packing and epilogue templates of the mma.sync
 * family apply to it unchanged. pack_a_from_acc of it is the RS A operand.
 *
 * Operands live in shared memory as TMA writes them with the 128-byte
 * swizzle: a [rows][cols] 16-bit tile as cols/64 slabs of [rows][64], each
 * row 128 bytes, 16-byte chunk c of row r at chunk c ^ (r & 7), slabs 1024-aligned. */
#ifndef PTXGEN_WGMMA_H
#define PTXGEN_WGMMA_H
#include "warp_mma.h"
#include "dtype.h"

#define WG_SLAB_COLS 64   /* 16-bit columns in one 128-byte swizzled row */

/* Descriptor of a K-major operand (rows are M or N, K along the 128-byte row) at shared offset off:
 * SBO 1024 (eight rows), 128B swizzle. A K step of 16 is +32 bytes inside a slab. */
Reg wg_desc_kmajor(Kctx *k, int off);
/* Descriptor of an MN-major operand (rows are K, MN along the row) whose slabs of 64 MN columns are
 * slab_bytes apart. A K step of 16 is +16 rows = +2048 bytes. */
Reg wg_desc_mn(Kctx *k, int off, int slab_bytes);
/* Which operands are MN-major (wgmma's imm-trans-a / imm-trans-b); K-major otherwise. */
enum { WG_KMAJOR = 0, WG_A_MN = 1, WG_B_MN = 2 };
/* D (+)= A B over one k16 step: A from desc a (SS) or 4 packed registers (RS; a_regs != NULL, K-major
 * by definition), B from desc b; mn: WG_A_MN | WG_B_MN. accumulate: a predicate, false for D = A B. */
void wg_mma(Kctx *k, Acc *d, Reg a, const Reg *a_regs, Reg b, int mn, DType dt, Reg accumulate);
/* An m64nN accumulator packed by pack_a_from_acc (ncols = N) into 128B-swizzled slabs of [rows][64]
 * slab_bytes apart from shared address base + off: the warp's rows from warp_row0 (a multiple of 8), the
 * layout a TMA store and an MN-major wgmma operand read. */
void wg_pairs_to_smem(Kctx *k, const Reg *pairs, int ncols, Reg warp_row0, Reg base, int off, int slab_bytes);
/* The same for ncols <= 64 columns into one slab from chunk chunk0 (a register, a multiple of ncols / 8
 * that those columns never carry into): columns chunk0 * 8 .. of the slab. */
void wg_pairs_to_smem_at(Kctx *k, const Reg *pairs, int ncols, Reg warp_row0, Reg smem, int off, Reg chunk0);
/* Whether wgmma has an m64nNk16 row in ops.def for N. */
int wg_has_n(int n);
#endif
