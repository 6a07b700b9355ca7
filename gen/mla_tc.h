/* What the tcgen05 sparse MLA kernels share: the gather of a step's top-k rows by TMA tile::gather4. */
#ifndef PTXGEN_MLA_TC_H
#define PTXGEN_MLA_TC_H
#include "mla_emit.h"
#include "../templates/umma.h"
#include "../templates/mbar.h"

/* The CTA's token t = ctaid.x and head block from h0 = hb ctaid.y; h_q, s_kv, kv's tensor map, the token's
 * index row, its slot count (topk or its topk_length) and its steps of bn slots. */
typedef struct { Reg t, h0, h_q, s_kv, kv_map, idx_row, eff, nsteps; } MlaTcToken;
void mla_tc_token(Kctx *k, int hb, int bn, MlaTcToken *tk);

/* A token's gather: kv's tensor map (mla_bwd_tc_kv_map), the token's index row and slot count, s_kv; per step
 * bn rows of d_qk columns into the K-major slabs at shared offset kv, each slot's kv row (-1: none) into the
 * rows buffer at shared offset rows (two steps' worth, by n & 1), all completing on the mbarrier full, which
 * counts the 32 lanes of the gathering warp. Step n > 0 starts once the mbarrier `free` (one phase per step:
 * the step's products are done with KV) completed step n - 1's phase. */
typedef struct {
    Reg kv_map, idx_row, eff, s_kv, full, free;
    int bn, d_qk, kv, rows;
} MlaTcGather;
/* Lane l of the warp gathers slots bn n + 4l .. 4l + 3 of every 64-column slab: a slot past the token's count or
 * whose index is not a kv row gets row coordinate -1, out of the map: zero-filled, nothing read. Every lane
 * waits on `free` (the warp stays converged). */
void mla_tc_gather(Kctx *k, const MlaTcGather *g, Reg n);
/* kv's gather4 tensor map parameter (box 64 x 1, 128B swizzle, zero fill), in mla_bwd_tc_desc.c */
void mla_bwd_tc_kv_map(const AttnDesc *d, KernelSpec *ks);
#endif
