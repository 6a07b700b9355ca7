/* The mla_bwd kernel set (mma.sync family), in launch order:
 *   pre     delta[t, h] = rowsum(dO * o); deterministic, also the bounds that fix dkv's scale
 *   main    per token and head block: dq, and the block's dkv contributions
 *           added into an fp32 accumulator (red.global.add, vector on sm_90+)
 *           or, deterministic, into an s64 one in fixed point (mla_bwd_fixed.c)
 *   convert dkv = the accumulator rounded to the dtype
 * The wgmma (mla_bwd_wg*.c) and tcgen05 (mla_bwd_tc*.c) families have their
 * own main kernels and the same others. Internal to the mla_bwd generator
 * files. Calls point one way:
 *   mla_bwd_{wg,tc}_desc.c (tiles, plan) -> mla_bwd_desc.c (plans, the set)
 *   mla_bwd_desc.c                       -> mla_bwd.c, mla_bwd_wg.c, mla_bwd_tc.c, mla_bwd_rows.c
 *   the main kernels                     -> mla_bwd_math.c (per-element math, dkv stores)
 *   the main kernels, pre and convert    -> mla_bwd_fixed.c (deterministic dkv)
 *   every one of them                    -> mla_bwd_split.c (the work split) */
#ifndef PTXGEN_MLA_BWD_H
#define PTXGEN_MLA_BWD_H
#include "mla_emit.h"

enum { MLA_BWD_PRE, MLA_BWD_MAIN };   /* then the main kernel's `then` (if any), then convert */
#define MLA_STR_(x) #x
#define MLA_STR(x) MLA_STR_(x)       /* a constant's digits, for descriptions */
#define MLA_PRE_HEADS 8          /* heads per CTA of pre: 16 threads per 512-wide row */
#define MLA_CONVERT_ROWS 16      /* kv rows per CTA of convert: 8 threads per 576-wide row */
#define MLA_ROW_THREADS 128
/* mla_bwd_split.c */
/* dkv columns of one warp of the main kernel: warps split the step's bn x d_qk
 * dKV tile into (slot m tile, column group) blocks; a group owns nope columns
 * [nope0, nope0 + nope) and rope columns [rope0, rope0 + rope). */
typedef struct { int mtiles, groups, nope, rope; } MlaDkvSplit;
MlaDkvSplit mla_dkv_split(const AttnTile *t);

void mla_bwd_main_plan(const AttnDesc *d, Plan *p);   /* mla_bwd_desc.c */

/* mla_bwd_math.c: per element of an m16n8-layout accumulator (mma.sync tiles, wgmma's m64nN)
 * -lse log2(e) and delta of the lane's rows warp_row0 + g, + 8 (heads past h_q: -inf and 0, so P = 0) */
void mla_bwd_row_stats(Kctx *k, const MlaCta *c, Reg warp_row0, Reg neg_lse2[2], Reg delta[2]);
/* S -> P = exp2(S scale log2(e) - lse log2(e));  dP -> dS = scale P (dP - delta), in place */
void mla_bwd_probabilities(Kctx *k, Acc *s, Acc *dp, Reg scale_log2, Reg scale, const Reg neg_lse2[2],
                           const Reg delta[2]);
/* Where the lane's rows g and g+8 of a dkv block go (the lane's first column) and whether each is a valid slot
 * (else no access at all) */
typedef struct { Reg addr[2], ok[2]; } MlaDkvRows;
/* The block's values, columns col0 + 8 j + 2 t, +1 of the rows: a reduction per element (vector where the
 * arch has it, vec_red) */
void mla_dkv_store(Kctx *k, int vec_red, const Acc *acc, const MlaDkvRows *r, int col0);
/* The same with whole 128-byte lines (sm_90+; the L2 reduces a line a request, and 32 bytes of each of 16
 * rows per instruction ran at 0.6x of 128 bytes of each of 4 on the H200): two lane exchanges move a warp's
 * 16 x (8 nt) block so that each instruction covers 32 columns of 4 rows, 8 lanes a row, 4 columns a lane.
 * Row i of the lane (i = 2 h + e) is slot 2 (lane >> 3) + e + 8 h of the warp's 16; its columns start at
 * col0 + 32 s + lane_col, lane_col = 8 (lane & 1) + 4 (lane >> 1 & 1) + 16 (lane >> 2 & 1), addr[i] the
 * row at lane_col, ok[i] the slot is valid; bit0, bit2: lane bits 0 and 2 set. acc->nt a multiple of 4. */
typedef struct { Reg addr[4], ok[4], bit0, bit2; } MlaDkvLines;
void mla_dkv_store_lines(Kctx *k, const Acc *acc, const MlaDkvLines *r, int col0);
/* Deterministic: the block into the s64 fixed-point accumulator (8 bytes a column) in whole 128-byte lines. Two
 * lane exchanges (lane bit 2 for a value's column bit 0, lane bit 3 for its column bit 3; bit2, bit3: the lane's
 * bits set) give 16 lanes 16 adjacent columns of a row: each 64-bit reduction instruction covers 2 rows x 128 bytes.
 * Value i then goes to column col0 + 16 (i >> 3) + mla_dkv_fixed_col of row addr[i & 7] (mla_dkv_fixed_rows). */
typedef struct { Reg addr[8], ok[8], bit2, bit3; } MlaDkvFixed;
void mla_dkv_store_fixed(Kctx *k, const Acc *acc, const MlaDkvFixed *r, int col0, Reg mul);
/* The lane's first column there: 2 (lane & 1) + 4 (lane >> 1 & 1) + (lane >> 2 & 1) + 8 (lane >> 3 & 1) */
Reg mla_dkv_fixed_col(Kctx *k);
/* The lane's 8 rows of a 16-slot block (m16: row g + 8 h of the lane's g = lane >> 2): rows_at is the shared
 * address of the block's row 4 (lane >> 4) in a list of kv rows (4 bytes a slot; off further), row i & 7 of
 * mla_dkv_store_fixed is slot (i & 1) + 2 (i >> 2 & 1) + 8 (i >> 1 & 1) past it; base: the accumulator at the
 * lane's column. A row past s_kv (an invalid slot) is not accessed. */
void mla_dkv_fixed_rows(Kctx *k, MlaDkvFixed *r, Reg rows_at, int off, Reg s_kv, Reg base);
/* The lane's bit2, bit3 and the shared address of its row 4 (lane >> 4) of the block at slot0 (rows list at smem) */
void mla_dkv_fixed_lane(Kctx *k, MlaDkvFixed *r, Reg slot0, Reg *rows_at);
/* tcgen05 (one slot a TMEM lane and thread, lane L of the warp holding slot L's kv row, -1 if invalid): the warp's
 * 32 slots x cols columns of a dkv chunk at TMEM column tcol (taddr: the warp's lane quarter) into the fixed-point
 * accumulator at column gcol0, in mla_dkv_store_fixed's lines. tcgen05.ld's 16x256b shape gives 16 lanes in the
 * m16n8 layout; each 16-slot half of the warp takes its rows from their lanes by shuffles. base: the accumulator at
 * mla_dkv_fixed_col; cols a multiple of 16. */
void mla_dkv_fixed_tmem(Kctx *k, Reg taddr, int tcol, int cols, int gcol0, Reg row, Reg s_kv, Reg base, Reg mul);

/* mla_bwd_fixed.c: deterministic dkv in fixed point (the file's head says how S is chosen) */
#define MLA_BOUND_WORDS 4   /* dkv_bound: the fp32 bit patterns of W0..W3 */
#define MLA_DET_MEANING "1: dkv summed in 64-bit fixed point (integer atomics: the same sum in any order); bit-identical"
typedef struct { Reg mul, inv, bad; } MlaFixed;   /* 2^S, 2^-S (f32); the bound is not finite */
/* main and convert: S from dkv_bound and the s_q, h_q parameters */
MlaFixed mla_dkv_fixed(Kctx *k);
/* v[0..n) times mul, rounded to integers, added to the s64 elements at addr + off, + 8, ... if ok */
void mla_dkv_fixed_add(Kctx *k, Reg ok, Reg addr, int off, const Reg *v, int n, Reg mul);
/* pre: a 16-byte chunk of 8 16-bit values into the running max|x| (bit pattern) and, if l1, sum |x| */
void mla_bound_add(Kctx *k, DType dt, const Reg *chunk, Reg *max_bits, Reg *l1);
/* pre: one (t, h) row's W0..W2 (w[0..2]) from its max|dO|, ||dO||_1, max|q| (bit patterns but l1), delta and
 * the softmax_scale parameter; a NaN lse makes W0 NaN */
void mla_bound_row(Kctx *k, Reg w[MLA_BOUND_WORDS], Reg do_max, Reg do_l1, Reg q_max, Reg delta, Reg lse);
/* pre: every thread's w[0..3] to the CTA's maxima (smem: 16 bytes a warp, warps of them), raised into dkv_bound */
void mla_bound_publish(Kctx *k, Reg w[MLA_BOUND_WORDS], int warps, Reg smem);

/* The family's main kernel: its plan, emitter and entry-name part; the rest
 * of the set (pre, convert, workspaces, ABI) is shared. */
typedef struct MlaBwdMain MlaBwdMain;
struct MlaBwdMain {
    void (*plan)(const AttnDesc *d, Plan *p);
    void (*emit)(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
    const char *part;
    int pin_ctas;   /* 1: .minnctapersm from the plan (ptxas otherwise may cap registers for an occupancy the
                       shared memory never allows) */
    void (*abi)(const AttnDesc *d, KernelSpec *ks);   /* parameters past the shared ABI (NULL: none) */
    /* A kernel whose ABI is not main's (NULL: mla_bwd_main_spec), a second main kernel launched after
     * this one (NULL: none), and workspaces past the shared ones (NULL: none). */
    void (*spec)(const AttnDesc *d, const Plan *p, const MlaBwdMain *mk, KernelSpec *ks);
    const MlaBwdMain *then;
    void (*workspaces)(const AttnDesc *d, KernelSet *ks);
};
/* The shared main ABI (q, kv, the selection, do, lse, delta, the dkv workspace, dq, sizes, scale; grid
 * (s_q, cdiv(h_q, bm))) and the set's entry names: mla_bwd_<part>_<dtype>_dqk.._dv..[_bm.._bn..][_det]. */
void mla_bwd_main_spec(const AttnDesc *d, const Plan *p, const MlaBwdMain *mk, KernelSpec *ks);
void mla_bwd_entry(KernelSpec *ks, const AttnDesc *d, const char *part, int with_tile);
void mla_bwd_dkv_workspace(const AttnDesc *d, KernelSpec *ks);   /* dkv_accum, or dkv_fixed and dkv_bound, by the tile */
int  mla_bwd_set_plan(const AttnDesc *d, Plan *plans, const MlaBwdMain *mk);
void mla_bwd_set_build(const AttnDesc *d, KernelSet *ks, Buf *module, const MlaBwdMain *mk);
/* the wgmma main kernel (mla_bwd_wg.c; its plan and maps in mla_bwd_wg_desc.c) */
void mla_bwd_wg_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
/* the tcgen05 main kernel (mla_bwd_tc.c) */
void mla_bwd_tc_main_plan(const AttnDesc *d, Plan *p);
void mla_bwd_tc_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
/* the emitters: main in mla_bwd.c, the row-wise kernels in mla_bwd_rows.c */
void mla_bwd_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
void mla_bwd_pre_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
void mla_bwd_convert_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module);
#endif
