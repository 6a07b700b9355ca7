/* What the sparse MLA emitters share: the CTA's token and head block with its
 * warp pairs, and the stream of gathered top-k rows (indices read one step
 * ahead, rows double-buffered, invalid slots turned into zero rows with a
 * -inf bias and never read). Internal to mla_fwd and mla_bwd. */
#ifndef PTXGEN_MLA_EMIT_H
#define PTXGEN_MLA_EMIT_H
#include "mla.h"
#include "attn_emit.h"
#include "../templates/row_gather.h"
#include "../templates/stages.h"
#include "../templates/warp_mma.h"

/* One CTA: token t = ctaid.x, heads [h0, h0 + bm) with h0 = bm * ctaid.y.
 * Warps come in pairs, one per 16 heads: warp w is half w / (bm/16) of pair
 * w % (bm/16), whose heads start at warp_row0 = 16 * pair. */
typedef struct {
    int bm, threads;
    Reg t, h0, h_q, pair, half, warp_row0;
} MlaCta;

void mla_cta(Kctx *k, MlaCta *c, int bm, int threads);
/* Only its token, head block and h_q (pair, half and warp_row0 left unset): kernels without warp pairs. */
void mla_cta_token(Kctx *k, MlaCta *c, int bm, int threads);
/* Barrier of the two warps of this warp's pair (id 1 + pair; 0 is the CTA's). */
void mla_pair_sync(Kctx *k, const MlaCta *c);
/* x[h] (rows g and g+8 of the warp, from warp_row0) = op(x[h], the other side's x[h]) where two sides (side
 * 0 or 1: warps or warpgroups) hold the same rows: through [2][rows] f32 at shared offset off, the lanes with
 * t == 0 writing, named barrier bar of `threads` threads in between. */
void mla_rows_swap(Kctx *k, Reg *x, Op op, Reg side, Reg warp_row0, int rows, int off, Opnd bar, int threads);
/* Rows [h0, h0 + tile.rows) of tensor[t] ([s_q, h_q, tile.cols], strides s and h)
 * into the swizzled tile by cp.async in the current group; heads past h_q are
 * zero-filled without a read. */
void mla_load_heads(Kctx *k, const MlaCta *c, const char *tensor, SmemTile tile);


/* The address (b64) of token t's row of indices. */
Reg  mla_index_row(Kctx *k, Reg t);
/* The kv row of a token's slot (slot a register): its index when slot < eff and 0 <= index < s_kv,
 * else -1, with the index read only for slot < eff. *ok (if not NULL): the row is valid. The tcgen05
 * kernels' gathers use -1 as an out-of-map coordinate (zero-filled, nothing read). */
Reg  mla_slot_row(Kctx *k, Reg idx_row, Reg eff, Reg s_kv, Reg slot, Reg *ok);
/* Token t's slot count: topk, or clamp(topk_length[t], 0, topk) when topk_length is not null. */
Reg  mla_token_slots(Kctx *k, Reg t, Reg topk);
/* cdiv(eff, bn) in a new register: the steps (or blocks) of bn slots that cover a token's eff slots. */
Reg  mla_token_steps(Kctx *k, Reg eff, int bn);

/* The token's slots, bn per step, gathered into two stages. */
typedef struct {
    int bn;
    SmemTile skv;              /* stage 0: bn rows of all d_qk columns */
    int bias_off;              /* stage 0: f32 per slot, 0 or -inf (invalid) */
    int rows_off;              /* stage 0: u32 per slot, its kv row (>= s_kv when invalid); -1: not kept */
    RowGather g;
    Reg s_kv, eff, nsteps;     /* eff: the token's slot count, clamp(topk_length, 0, topk) or topk */
    Reg kv, kv_rs, idx_row, idx_next;
} MlaSlots;

void mla_slots_init(Kctx *k, MlaSlots *s, const MlaCta *c);
/* The same for token t gathered by threads 0 .. threads-1 into wgmma's 64-column slabs, 8 threads per row in
 * as many passes as the step's rows need (rg_init_slabs). */
void mla_slots_init_slabs(Kctx *k, MlaSlots *s, Reg t, int threads);
/* The index of this thread's gather row in step n: -1 for slots past the token's count, never read. */
Reg  mla_slot_index(Kctx *k, const MlaSlots *s, Reg n);
/* Row idx of kv into this thread's gather row of the stage at `shift` (a register, or NOGUARD), and the
 * slot's bias (0, or -inf when invalid: no load, a zero row) and kv row, in the current cp.async group. */
void mla_slot_gather(Kctx *k, const MlaSlots *s, Reg idx, Reg shift);
/* The same two for this thread's row of gather pass `pass` (RowGather.passes). */
Reg  mla_slot_index_pass(Kctx *k, const MlaSlots *s, Reg n, int pass);
void mla_slot_gather_pass(Kctx *k, const MlaSlots *s, Reg idx, Reg shift, int pass);
/* The same for columns [col0, col0 + ncols) of the row (rg_issue_cols), with the bias and kv row when bias_too. */
void mla_slot_gather_cols(Kctx *k, const MlaSlots *s, Reg idx, Reg shift, int pass, int col0, int ncols, int bias_too);
/* The token, head block and slot stream of a kernel whose plan has the
 * regions KV.0/.1, bias.0/.1 (and rows.0/.1 when keep_rows), tiled by d->tile. */
void mla_stream_begin(Kctx *k, const AttnDesc *d, const Plan *p, int keep_rows, MlaCta *c, MlaSlots *s, Stages *st);
/* for (n = 0; n < nsteps; n++) step(n): the kernel's loop over the token's slots. */
void mla_slot_loop(Kctx *k, const MlaSlots *s, KeyStep step, void *ctx);
/* Step 0's rows into stage 0 (closing the current cp.async group) and step 1's index read. */
void mla_slots_start(Kctx *k, MlaSlots *s);
/* Step n+1's rows into the other stage and step n+2's index, unless n is the last step. */
void mla_slots_prefetch(Kctx *k, MlaSlots *s, const Stages *st, Reg n);
/* This lane's pair of bias columns in stage 0, from slot `first` on (track it with the stages). */
Reg  mla_bias_lane(Kctx *k, const MlaSlots *s, Reg first);
/* S += bias, this lane's two columns of each n tile. */
void mla_add_bias(Kctx *k, const MlaSlots *s, Reg bias_lane, Acc *acc);
#endif
