/* Writing a warp-tiled accumulator to global memory: staged through a
 * swizzled shared tile so that global stores are 16-byte, coalesced rows. */
#ifndef PTXGEN_EPILOGUE_H
#define PTXGEN_EPILOGUE_H
#include "warp_mma.h"

/* Rounds acc to dt and writes it into `stage` at rows warp_row0 + 16*i + (g | g+8).
 * The caller puts a bar.sync before (stage may alias inputs) and after. */
void acc_to_smem(Kctx *k, const Acc *acc, DType dt, SmemTile stage, Reg warp_row0);
/* The same from an accumulator already packed by pack_a_from_acc (mt x nt tiles):
 * its fragment order is (m tile, n tile, row half), one pair of columns each. */
void packed_to_smem(Kctx *k, const Reg *pairs, int mt, int nt, SmemTile stage, Reg warp_row0);
/* The same from column chunk chunk0 (a runtime register, 8 columns per chunk) on. */
void packed_to_smem_at(Kctx *k, const Reg *pairs, int mt, int nt, SmemTile stage, Reg warp_row0, Reg chunk0);
/* Copies stage rows [0, min(stage.rows, nrows)) to global rows at
 * base + r * stride_bytes with 16-byte stores by `threads` threads. */
void smem_to_global(Kctx *k, SmemTile stage, int threads, Reg base, Reg stride_bytes, Reg nrows);
/* Stores one fp32 per (m tile, half) row from the lanes with t == 0, rows < nrows:
 * base[r] for r = warp_row0 + 16*i + g (+8). */
void rows_to_global_f32(Kctx *k, int mt, const Reg *vals, Reg warp_row0, Reg base, Reg nrows);
#endif
