/* Warp-level tensor-core tiles with mma.sync.m16n8k16: an accumulator of
 * mt x nt tiles of 16x8 fp32 (4 registers per lane each, fragment map of
 * PTX_FACTS 2.2), fed by ldmatrix from swizzled shared tiles. */
#ifndef PTXGEN_WARP_MMA_H
#define PTXGEN_WARP_MMA_H
#include "smem_tile.h"
#include "dtype.h"

typedef struct { int mt, nt; Reg *r; } Acc;
#define ACC(a, i, j, c) ((a)->r[(((i) * (a)->nt + (j)) << 2) + (c)])

/* The accumulator's registers (and the arrays below) live as long as the kernel's Emit (e_regs). */
void acc_new(Kctx *k, Acc *a, int mt, int nt);
void acc_fill(Kctx *k, Acc *a, float v);

/* C = A B^T, k running over ksteps x 16: A rows (16 per m tile) from a [m][k]
 * tile, B rows (the n of C) from an [n][k] tile. C starts from zero. */
void mma_abt(Kctx *k, Acc *c, const LdsmBases *a, const LdsmBases *b, int ksteps, DType dt, Reg zero);
/* C0 = A0 B^T over ks0 k steps and C1 = A1 B^T over ks1, one m tile each,
 * sharing B's loads (two products of one gathered tile: S = Q K^T and dP = dO V^T). */
void mma_abt_shared_b(Kctx *k, Acc *c0, const LdsmBases *a0, int ks0, Acc *c1, const LdsmBases *a1, int ks1,
                      const LdsmBases *b, DType dt, Reg zero);
/* The A fragments of an [m][k] tile (mt m tiles, ksteps x 16 columns) loaded
 * into registers, packed as pack_a_from_acc packs them, for operands reused
 * across many products. */
Reg *frag_a_load(Kctx *k, const LdsmBases *a, int mt, int ksteps);
/* C = A B^T with A given as packed fragments (mt x ksteps x 4), B rows from
 * an [n][k] tile. C starts from zero. */
void mma_abt_regs(Kctx *k, Acc *c, const Reg *a, int ksteps, const LdsmBases *b, DType dt, Reg zero);
/* The A operand of the next product from C (C's columns become k):
 * mt x (nt/2) x 4 registers of packed 16-bit pairs, in dtype dt. */
Reg *pack_a_from_acc(Kctx *k, const Acc *c, DType dt);
/* C += A B: A given as packed fragments (mt x ksteps x 4), B read transposed
 * from a [k][n] tile. */
void mma_ab_trans(Kctx *k, Acc *c, const Reg *a, int ksteps, const LdsmBases *b, DType dt);
/* C = A B with both operands in shared memory, read transposed: A from a
 * [k][m] tile (m tile i at chunk pair i of `a`), B from a [k][n] tile. C starts from zero. */
void mma_smem_ab(Kctx *k, Acc *c, const LdsmBases *a, int ksteps, const LdsmBases *b, DType dt, Reg zero);
/* The same adding into C. */
void mma_smem_ab_add(Kctx *k, Acc *c, const LdsmBases *a, int ksteps, const LdsmBases *b, DType dt);
/* C *= s */
void acc_scale(Kctx *k, Acc *c, Reg s);
#endif
