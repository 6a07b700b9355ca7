/* attn_fwd, wgmma family (sm_90a): FlashAttention-3's warp-specialised forward.
 *
 *   the producer (one warp after the consumers, or a warpgroup before them that
 *     gives its registers away by setmaxnreg.dec): one thread streams Q_m once and
 *     K_n, V_n through rings of `stages` slots with TMA; each slot has a full
 *     barrier (its bytes landed) and an empty one (every consumer warp is done).
 *   bm/64 consumer warpgroups (setmaxnreg.inc after a producer warpgroup), 64 query rows each:
 *     O = 0; m_i = -inf; l_i = 0
 *     for each key block n (unmasked blocks first, then the ragged/causal ones):
 *       S = Q K_n^T                  wgmma, Q and K from shared memory
 *       m_new = max(m_i, rowmax S); P = exp(scale*(S - m_new))
 *       l_i = e^(m_i - m_new) l_i + rowsum P;  O = e^(m_i - m_new) O
 *       O += P V_n                   wgmma, P from registers, V from shared memory
 *     O /= l_i -> shared (over the warpgroup's own Q rows) -> TMA store;
 *     lse = scale*m_i + log l_i -> global
 *
 * Persistent (tile key persist, gen/attn_sched.c): the producer hands tiles to the consumers; with two Q buffers and
 * at most two consumer warpgroups, consumer_tiles() carries each tile's last P V and epilogue into the next tile's
 * first block (carry_block), else consumer() stores each tile before taking the next.
 *
 * A consumer's accumulators are mma.sync-shaped (wgmma.h), so the online
 * softmax is the mma.sync family's. The inner loop is consumer_step(). */
#include "attn_fwd_wg.h"
#include "attn_sched.h"
#include "attn_sparse.h"
#include "attn_splitkv.h"
#include <string.h>
#include "../templates/mbar.h"
#include "../templates/softmax.h"
#include "../templates/wgmma.h"
#include "../templates/epilogue.h"
#include "../templates/smem_desc.h"

enum { B_Q, B_K_FULL, B_K_EMPTY, B_V_FULL, B_V_EMPTY };   /* barrier rings, each `stages` long but Q's */

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int cw, stages, q_off, k_off, v_off, k_stride, v_stride, o_off;
    Reg bar[WG_MAX_BARS];
    Reg ring[5];                      /* the first barrier of each ring (B_*) */
    Reg b, h, kvh, m_start, s_q, s_k, off;
    Reg split, lo;                    /* split-KV: this CTA's split and its first key block (its blocks [lo, n_max)) */
    Reg tb, q_row, k_row;             /* TMA coordinates: batch; the first row of Q_m, of K_0 (varlen: packed) */
    Reg it, it_v;                     /* passes over the K ring (the producer: both rings), the V ring */
    RowBlocks rb;
    /* consumers */
    Reg wg;                           /* this consumer warpgroup, 0 .. cw-1 */
    Reg warp_row0;                    /* the warp's first row in the CTA's tile */
    Reg scale_log2, yes, no;
    Reg q_desc, k_desc, v_desc;       /* the warpgroup's Q rows; K and V ring slot 0 */
    Reg *pk;                          /* P of the block whose P V is next, packed (bn/4 registers) */
    Reg alpha[2];                     /* the rows' factor for O from the last softmax */
    Reg turn_mine, turn_next;         /* ping-pong barriers: this warpgroup's, its successor's */
    Acc o;
    Reg o_live;                       /* carried boundary: false while O holds the last tile's rows, which the tile's
                                       * first P V then overwrites (its first wgmma's scale-d) instead of O being zeroed */
    int carried;                      /* consumer_tiles runs: o_live is in use */
    RowStats rows;
    KeyList kl;                       /* block-sparse: the query block's key list (problem) */
    Reg kl_first, kl_unmasked;        /* consumers: its first entry and how many need no mask (consumer_problem) */
    /* persistent (tile.persist): the tiles handed to the consumers, each Q buffer's full and empty barriers, this
     * role's tiles so far, and the empty barrier of the buffer the consumers' tile is in */
    TileSlots ts;
    Reg q_full[2], q_empty[2], tit, q_empty_t;
} WgFwd;

/* The tile's rows, head and batch (persistent: of tile t, else of the CTA); key blocks [0, n_full) need no mask,
 * [n_full, n_max) do. */
static void problem(Kctx *k, WgFwd *f, Reg t, Reg n_full, Reg n_max) {
    Emit *e = &k->e;
    f->rb = (RowBlocks){f->d->causal, f->d->tile.bm, f->d->tile.bn, 16, .first_warp = wg_consumer_warp0(&f->d->tile),
                        .last_first = f->d->causal, .own_lengths = f->d->varlen || f->d->page_size,
                        .m_held = f->d->tile.persist > 0};
    Reg mblk = e_reg(e, RC_B32);
    if (f->d->tile.persist) sched_coords(k, t, f->d->tile.bm, f->rb.last_first, &mblk, &f->h, &f->b);
    else {
        row_block(k, &f->rb, mblk);
        cta_coords(k, &f->b, &f->h);
    }
    if (f->d->splitkv) splitkv_coords(k, &f->b, &f->split);   /* %ctaid.z = b num_splits + split */
    f->kvh = kv_head_of(k, f->h);
    if (f->d->varlen) {   /* packed: the sequence's lengths; TMA rows from its first, batch coordinate 0 */
        SeqSpan sp = seq_span(k, f->b);
        f->s_q = sp.s_q, f->s_k = sp.s_k, f->tb = kc_imm32(k, 0), f->k_row = sp.k0;
        f->m_start = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(f->m_start), R(mblk), I(f->d->tile.bm));
        INS(e, ADD_U32, R(f->q_row = e_reg(e, RC_B32)), R(sp.q0), R(f->m_start));
    } else {
        f->s_q = kc_u32(k, "s_q");
        f->s_k = f->d->page_size ? paged_seqlen(k, f->b) : kc_u32(k, "s_k");
        f->m_start = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(f->m_start), R(mblk), I(f->d->tile.bm));
        f->tb = f->b, f->q_row = f->m_start, f->k_row = (Reg){0};
    }
    f->off = e_reg(e, RC_B32);
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    f->rb.s_q = f->s_q, f->rb.s_k = f->s_k, f->rb.off = f->off, f->rb.m_start = f->m_start;
    key_blocks(k, &f->rb, n_full, n_max);
    if (f->d->splitkv) {   /* the split's blocks [lo, hi): n_max becomes hi, n_full clamped into them */
        Reg hi;
        splitkv_range(k, f->split, n_max, n_full, &f->lo, &hi);
        INS(e, MOV_B32, R(n_max), R(hi));
    }
    if (f->d->block_m) sparse_key_list_at(k, &f->kl, f->d->tile.bm, f->d->tile.bn, f->b, f->h, mblk);
}

/* The consumers' problem(): block-sparse, the list's first entry and the count of those that need no mask are
 * loaded as the tile is taken, so that their loads run under the wait for its Q rather than each on its own at the
 * tile's start. */
static void consumer_problem(Kctx *k, WgFwd *f, Reg t, Reg n_full, Reg n_max) {
    problem(k, f, t, n_full, n_max);
    if (!f->d->block_m) return;
    f->kl_first = sparse_entry_or0(k, f->kl.list, f->kl.count, kc_imm32(k, 0));
    f->kl_unmasked = sparse_unmasked_entries(k, &f->kl, f->d->tile.bm, f->d->tile.bn, n_full);
}

/* How many key blocks a role walks: [0, n_max), split-KV [lo, n_max), or block-sparse the list's entries */
static Reg walked(Kctx *k, const WgFwd *f, Reg n_max) {
    if (f->d->block_m) return f->kl.count;
    if (!f->d->splitkv) return n_max;
    Reg c = e_reg(&k->e, RC_B32);
    INS(&k->e, SUB_U32, R(c), R(n_max), R(f->lo));
    return c;
}

/* The step's ring slot once the consumers freed it: its byte offset from slot 0, and its full barrier. */
static Reg slot_free(Kctx *k, WgFwd *f, int ring, int slot_bytes, Reg *full) {
    Reg empty, parity;
    Reg stage = wg_ring_slot(k, f->ring[ring + 1], f->ring[ring], f->stages, f->it, slot_bytes, &empty, &parity, full);
    INS(&k->e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as freed: the phase before the first */
    mbar_wait(k, empty, parity, 0);
    return stage;
}

/* The block's rows by TMA into a freed slot (wg_key_block says from where). */
static void slot_fill(Kctx *k, WgFwd *f, Reg full, Reg stage, Reg map, int off, int rows, int cols, const WgKeyBlock *kb) {
    Emit *e = &k->e;
    Reg st = e_reg(e, RC_B64);
    WgKeyBlock at = *kb;
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(full, 0), I(rows * cols * 2));
    if (f->d->varlen) INS(e, ADD_U32, R(at.row = e_reg(e, RC_B32)), R(kb->row), R(f->k_row));   /* the packed row */
    wg_tma_key_block(k, map, off, rows, cols, stage, f->kvh, &at, full);
}

/* The Q buffer of the role's tile tit (persistent): its full and empty barriers, the phase to wait for (plus 1: the
 * producer's wait for the buffer to be freed) and, with two buffers, its byte offset from the first (with one: none,
 * (Reg){0}, which the callers do not use). Two buffers take the tiles in turn, so the producer loads the next tile's Q
 * while this one runs. */
static Reg q_buffer(Kctx *k, WgFwd *f, int plus, Reg *full, Reg *empty, Reg *parity) {
    Emit *e = &k->e;
    if (wg_q_bufs(&f->d->tile) == 1) {
        *full = f->q_full[0], *empty = f->q_empty[0], *parity = mbar_parity(k, f->tit, 0, plus);
        return (Reg){0};
    }
    Reg odd = e_reg(e, RC_PRED), b = e_reg(e, RC_B32), at = e_reg(e, RC_B32);
    *full = e_reg(e, RC_B32), *empty = e_reg(e, RC_B32);
    INS(e, AND_B32, R(b), R(f->tit), I(1));
    INS(e, SETP_NE_U32, R(odd), R(b), I(0));
    INS(e, SELP_B32, R(*full), R(f->q_full[1]), R(f->q_full[0]), R(odd));
    INS(e, SELP_B32, R(*empty), R(f->q_empty[1]), R(f->q_empty[0]), R(odd));
    INS(e, MUL_LO_U32, R(at), R(b), I(f->d->tile.bm * f->d->d * 2));
    *parity = mbar_parity(k, f->tit, 1, plus);
    return at;
}

/* Paged, whether the walk's last block holds rows past the sequence (then the ring's V copy of it has a tail that the
 * page fills with whatever it holds: another sequence's keys, stale or unwritten memory, NaN included). */
static Reg v_tail(Kctx *k, WgFwd *f, Reg n_max) {
    Emit *e = &k->e;
    Reg end = e_reg(e, RC_B32), tail = e_reg(e, RC_PRED);
    INS(e, MUL_LO_U32, R(end), R(n_max), I(f->d->tile.bn));
    INS(e, SETP_GT_U32, R(tail), R(end), R(f->s_k));
    return tail;
}

/* The producer thread, once the last V block landed: its rows from the sequence's end zeroed (whole 128-byte rows of
 * each 64-column slab, so the swizzle does not matter: P = 0 there, and 0 times a NaN is NaN), fenced to the async
 * proxy, then the tail barrier, which the consumers wait on before that block's P V. */
static void zero_v_tail(Kctx *k, WgFwd *f, Reg n, Reg stage) {
    Emit *e = &k->e;
    int bn = f->d->tile.bn, top = e_label(e), done = e_label(e);
    Reg full, parity, empty, r = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
    Reg z = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), st = e_reg(e, RC_B64);
    wg_ring_slot(k, f->ring[B_V_FULL], f->ring[B_V_EMPTY], f->stages, f->it, f->v_stride, &full, &parity, &empty);
    mbar_wait(k, full, parity, 0);
    INS(e, MUL_LO_U32, R(r), R(n), I(bn));
    INS(e, SUB_U32, R(r), R(f->s_k), R(r));   /* the block's first row past the sequence */
    INS(e, MOV_B32, R(z), I(0));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(r), I(bn));
    INSP(e, p, 0, BRA, L(done));
    INS(e, MAD_LO_U32, R(a), R(r), I(128), R(k->smem));
    INS(e, ADD_U32, R(a), R(a), R(stage));
    for (int s = 0; s < f->d->dv / WG_SLAB_COLS; s++)
        for (int c = 0; c < 8; c++) INS(e, ST_SHARED_V4_B32, A(a, f->v_off + s * bn * 128 + 16 * c), V4(z, z, z, z));
    INS(e, ADD_U32, R(r), R(r), I(1));
    INS(e, BRA, L(top));
    e_place(e, done);
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, MBAR_ARRIVE, R(st), A(f->bar[WG_TAIL(f->stages)], 0));
}

static void producer(Kctx *k, void *ctx) {
    WgFwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bm = d->tile.bm, bn = d->tile.bn, done = e_label(e);
    Reg lead = e_reg(e, RC_PRED), st = e_reg(e, RC_B64), zero = kc_imm32(k, 0);
    if (plan_role_regs(f->p, "producer")) INS(e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    INS(e, SETP_EQ_U32, R(lead), R(k->tid), I(32 * wg_producer_warp(&d->tile)));
    INSP(e, lead, 1, BRA, L(done));
    e_comment(e, "producer: one thread issues every TMA copy");
    Reg n_full = e_reg(e, RC_B32), n_max = e_reg(e, RC_B32), n = e_reg(e, RC_B32), q = kc_tmap(k, "q_map");
    Reg km = kc_tmap(k, "k_map"), vm = kc_tmap(k, "v_map"), row = e_reg(e, RC_B32), more = e_reg(e, RC_PRED);
    Reg tile = {0}, tiles = {0}, ordered = {0};
    int next_tile = 0, tile_end = done;
    if (d->tile.persist) {   /* fetched tiles, each handed to the consumers, and the end too */
        Reg over = e_reg(e, RC_PRED);
        tile = e_reg(e, RC_B32), tiles = sched_tiles(k, bm);
        next_tile = e_label(e), tile_end = e_label(e);
        INS(e, MOV_B32, R(f->it), I(0));
        if (f->ts.order) ordered = sched_order_begin(k, &f->ts, tiles);
        INS(e, MOV_B32, R(tile), R(sched_next(k, &f->ts, tiles, ordered)));
        INS(e, MOV_B32, R(f->tit), I(0));
        e_place(e, next_tile);
        sched_publish(k, &f->ts, f->tit, tile, f->it);   /* the ring pass its first block takes */
        INS(e, SETP_GE_U32, R(over), R(tile), R(tiles));
        INSP(e, over, 0, BRA_UNI, L(done));
    }
    problem(k, f, tile, n_full, n_max);
    Reg q_full = f->bar[0], q_at = zero;
    if (d->tile.persist) {   /* the buffer's last tile's S are done */
        Reg q_empty, parity, at = q_buffer(k, f, 1, &q_full, &q_empty, &parity);
        if (wg_q_bufs(&d->tile) == 2) q_at = at;
        mbar_wait(k, q_empty, parity, 0);
    }
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(q_full, 0), I(bm * d->d * 2));
    wg_tma_rows(k, q, f->q_off, bm, d->d, q_at, f->h, f->q_row, f->tb, q_full);
    INS(e, MOV_B32, R(n), I(0));
    if (!d->tile.persist) INS(e, MOV_B32, R(f->it), I(0));
    Reg steps = walked(k, f, n_max), tail = d->page_size ? v_tail(k, f, n_max) : (Reg){0};
    int top = e_label(e);
    e_place(e, top);
    INS(e, SETP_LT_U32, R(more), R(n), R(steps));
    INSP(e, more, 1, BRA_UNI, L(tile_end));
    Reg blk = d->block_m ? sparse_entry(k, f->kl.list, n) : n;   /* step n's key block: split-KV lo + n */
    if (d->splitkv) INS(e, ADD_U32, R(blk = e_reg(e, RC_B32)), R(n), R(f->lo));
    Reg kfull, vfull, kstage = slot_free(k, f, B_K_FULL, f->k_stride, &kfull);
    INS(e, MUL_LO_U32, R(row), R(blk), I(bn));   /* after the wait: a list entry's load runs under it */
    WgKeyBlock kb = wg_key_block(k, d->page_size, bn, f->b, row, f->s_k, f->tb);
    slot_fill(k, f, kfull, kstage, km, f->k_off, bn, d->d, &kb);
    Reg vstage = slot_free(k, f, B_V_FULL, f->v_stride, &vfull);
    slot_fill(k, f, vfull, vstage, vm, f->v_off, bn, d->dv, &kb);
    if (d->page_size) {   /* the last block's tail, once it landed */
        Reg last = e_reg(e, RC_B32), is_last = e_reg(e, RC_PRED);
        int skip = e_label(e);
        INS(e, ADD_U32, R(last), R(blk), I(1));
        INS(e, SETP_EQ_U32, R(is_last), R(last), R(n_max));
        INS(e, AND_PRED, R(is_last), R(is_last), R(tail));
        INSP(e, is_last, 1, BRA, L(skip));
        zero_v_tail(k, f, blk, vstage);
        e_place(e, skip);
    }
    INS(e, ADD_U32, R(n), R(n), I(1));
    INS(e, ADD_U32, R(f->it), R(f->it), I(1));
    INS(e, BRA_UNI, L(top));
    if (d->tile.persist) {
        e_place(e, tile_end);
        /* the next tile is fetched only once this one's loads are issued, a ring's depth before the consumers finish
         * it: fetched as this one starts, it would wait a whole tile in this CTA while others may run out of tiles */
        INS(e, MOV_B32, R(tile), R(sched_next(k, &f->ts, tiles, ordered)));
        INS(e, ADD_U32, R(f->tit), R(f->tit), I(1));
        INS(e, BRA_UNI, L(next_tile));
    }
    e_place(e, done);
}

/* Waits for ring slot `it` of `ring` to fill; returns the slot's byte offset from slot 0. */
static Reg consume(Kctx *k, WgFwd *f, int ring, Reg it, int slot_bytes, Reg *empty) {
    Reg full, parity, stage = wg_ring_slot(k, f->ring[ring], f->ring[ring + 1], f->stages, it, slot_bytes, &full, &parity, empty);
    mbar_wait(k, full, parity, 0);
    return stage;
}

/* S = Q K_n^T issued as one commit group once K_n landed; *empty is K_n's slot to free. */
static void issue_s(Kctx *k, WgFwd *f, Acc *s, Reg *empty) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bm = d->tile.bm, bn = d->tile.bn;
    Reg stage = consume(k, f, B_K_FULL, f->it, f->k_stride, empty);
    acc_new(k, s, 1, bn / 8);
    Reg kd = wg_desc_plus(k, f->k_desc, stage);
    INS0(e, WGMMA_FENCE);
    for (int kk = 0; kk < d->d / 16; kk++) {
        int slab = kk / 4, in = (kk % 4) * 32;   /* 64 columns per slab, 16 (32 bytes) per step */
        wg_mma(k, s, smem_desc_at(k, f->q_desc, slab * bm * 128 + in), NULL, smem_desc_at(k, kd, slab * bn * 128 + in),
               WG_KMAJOR, d->dtype, kk ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
}

/* O += P V_n issued as one commit group once V_n landed (P from registers); *empty is V_n's slot. */
static void issue_pv(Kctx *k, WgFwd *f, Reg *empty) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bn = d->tile.bn;
    Reg stage = consume(k, f, B_V_FULL, f->it_v, f->v_stride, empty);
    Reg vd = wg_desc_plus(k, f->v_desc, stage);
    INS0(e, WGMMA_FENCE);                                       /* O was rescaled, P written, by the threads */
    for (int kk = 0; kk < bn / 16; kk++)
        wg_mma(k, &f->o, vd, &f->pk[4 * kk], smem_desc_at(k, vd, kk * 16 * 128), WG_B_MN, d->dtype,
               kk || !f->carried ? f->yes : f->o_live);
    INS0(e, WGMMA_COMMIT);
    if (f->carried) INS(e, OR_PRED, R(f->o_live), R(f->yes), R(f->yes));
}

/* Masks S_n where needed and turns it into P in place (f32); alpha gets the rows' factors for O. A tile's first block
 * is masked in case it needs it: given n_full (not NULL), only if it does (n >= n_full; a uniform branch). */
static void softmax_s(Kctx *k, WgFwd *f, Acc *s, Reg n, int masked, const Reg *n_full) {
    Emit *e = &k->e;
    if (masked) {
        Reg room[2], n_start = e_reg(e, RC_B32), whole;
        int skip = 0;
        if (n_full) {
            whole = e_reg(e, RC_PRED), skip = e_label(e);
            INS(e, SETP_LT_U32, R(whole), R(n), R(*n_full));
            INSP(e, whole, 0, BRA_UNI, L(skip));
        }
        INS(e, MUL_LO_U32, R(n_start), R(n), I(f->d->tile.bn));
        row_room(k, &f->rb, n_start, room);
        softmax_mask(k, s, room);
        if (n_full) e_place(e, skip);
    }
    softmax_update_deferred(k, s, &f->rows, f->scale_log2, f->alpha);
}

/* P rounded into the registers the next P V reads (only once the previous P V is done with them). */
static void keep_p(Kctx *k, WgFwd *f, Acc *s) {
    Reg *p = pack_a_from_acc(k, s, f->d->dtype);
    for (int i = 0; i < f->d->tile.bn / 4; i++) INS(&k->e, MOV_B32, R(f->pk[i]), R(p[i]));
}

/* FA3's ping-pong between consumer warpgroups: warpgroup w issues its products only after its
 * predecessor issued theirs (named barrier turn[w]: its own 128 threads wait, the predecessor's 128
 * arrive), so one warpgroup's softmax runs under the others' products. Barrier 0 is the CTA's and
 * 1 .. cw the epilogue's, so the turns take 1 + cw on. */
static int pingpong(const WgFwd *f) { return f->cw > 1 && f->d->tile.pingpong; }

static void turn_begin(Kctx *k, WgFwd *f) {
    if (pingpong(f)) INS(&k->e, BAR_SYNC_N, R(f->turn_mine), I(256));
}

static void turn_end(Kctx *k, WgFwd *f) {
    if (pingpong(f)) INS(&k->e, BAR_ARRIVE_N, R(f->turn_next), I(256));
}

/* Key block n >= 1 of one consumer warpgroup, the inner loop of the kernel (FA3's intra-warpgroup
 * overlap): S_n = Q K_n^T and O += P_{n-1} V_{n-1} are in flight together, and the softmax of S_n
 * runs while the tensor cores finish P_{n-1} V_{n-1}. */
static void consumer_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    WgFwd *f = ctx;
    Emit *e = &k->e;
    (void)n_max;
    e_comment(e, "key block n: %s", masked ? "ragged or causal, masked" : "fully visible");
    Acc s;
    Reg k_empty, v_empty;
    turn_begin(k, f);
    issue_s(k, f, &s, &k_empty);                                /* S_n = Q K_n^T */
    acc_scale_rows(k, &f->o, f->alpha);                         /* O rescaled to block n-1's maxima */
    issue_pv(k, f, &v_empty);                                   /* O += P_{n-1} V_{n-1} */
    turn_end(k, f);
    INS(e, WGMMA_WAIT, I(1));                                   /* S_n done, P V still running */
    wg_release(k, k_empty, f->it);
    softmax_s(k, f, &s, n, masked, NULL);
    INS(e, WGMMA_WAIT, I(0));
    wg_release(k, v_empty, f->it_v);
    keep_p(k, f, &s);
}

/* The first block (0, or block-sparse the list's first) before the loop: S and its softmax, masked in case it needs
 * it, or given n_full (not NULL) only if it does; last_pv issues the last block's P V after the loop. */
static void first_block(Kctx *k, WgFwd *f, Reg first, const Reg *n_full) {
    Emit *e = &k->e;
    Acc s;
    Reg k_empty;
    turn_begin(k, f);
    issue_s(k, f, &s, &k_empty);
    turn_end(k, f);
    INS(e, WGMMA_WAIT, I(0));
    wg_release(k, k_empty, f->it);
    softmax_s(k, f, &s, first, 1, n_full);
    keep_p(k, f, &s);
}

static void last_pv(Kctx *k, WgFwd *f) {
    Reg v_empty;
    acc_scale_rows(k, &f->o, f->alpha);
    turn_begin(k, f);
    issue_pv(k, f, &v_empty);
    turn_end(k, f);
    INS(&k->e, WGMMA_WAIT, I(0));
    wg_release(k, v_empty, f->it_v);
}

/* The warpgroup's last TMA store has read its staging: its issuing thread waits, then the warpgroup meets. */
static void store_read(Kctx *k, Reg named_bar) {
    wg_store_wait(k);
    INS(&k->e, BAR_SYNC_N, R(named_bar), I(128));
}

/* A tile's rows and where they go: its first row, head and batch (an epilogue may run after the next tile's problem()) */
typedef struct { Reg m_start, h, b; } TileAt;

/* O rounded into the warpgroup's rows of the O staging slabs, in the layout the TMA store reads,
 * then stored by one thread per warpgroup. */
static void store_o(Kctx *k, WgFwd *f, Reg named_bar, const TileAt *at) {
    const AttnDesc *d = f->d;
    int bm = d->tile.bm;
    /* persistent, the slabs are free once the last tile's store read them (over Q: it did before Q was freed) */
    if (d->tile.persist && !wg_o_over_q(d)) store_read(k, named_bar);
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->o, d->dtype), d->dv, f->warp_row0, k->smem, f->o_off, bm * 128);
    if (d->varlen) {   /* a TMA store would write the next sequence's rows: plain stores of the rows below s_q */
        Reg rows_left = e_reg(&k->e, RC_B32), base = e_reg(&k->e, RC_B64), rs = row_stride_bytes(k, "o");
        INS(&k->e, SUB_U32, R(rows_left), R(f->s_q), R(at->m_start));
        INS(&k->e, MAD_WIDE_U32, R(base), R(at->m_start), R(rs), R(attn_head_base(k, d, "o", at->b, at->h)));
        wg_store_rows_masked(k, named_bar, f->wg, f->o_off, d->dv, bm * 128, base, rs, rows_left);
        return;
    }
    WgStore o = {"o_map", f->o_off, d->dv, NULL};
    if (d->tile.persist) wg_store_group_async(k, named_bar, f->wg, at->m_start, &o, 1, bm * 128, at->h, at->b);
    else wg_store_group(k, named_bar, f->wg, at->m_start, &o, 1, bm * 128, at->h, at->b);
    if (wg_o_over_q(d)) {   /* O over Q: the rows are the next tile's Q once the store read them */
        store_read(k, named_bar);
        wg_release(k, f->q_empty_t, f->tit);
    }
}

/* The LSE rows and O of tile `at` whose rows' stats are `rows` (split-KV: the split's partials, for the combine). */
static void epilogue_at(Kctx *k, WgFwd *f, const TileAt *at, RowStats *rows) {
    Emit *e = &k->e;
    Reg lse[2];
    softmax_finish(k, rows, &f->o, f->scale_log2, lse);
    if (f->d->splitkv) {   /* one head, tokens from m_start */
        splitkv_store(k, &f->o, lse, 1, f->warp_row0, &(PackedRows){.pack = 1, .tok0 = at->m_start, .s_q = f->s_q, .h0 = at->h});
        return;
    }
    Reg rows_left = e_reg(e, RC_B32), row = e_reg(e, RC_B32), lse_base = kc_ptr(k, "lse");
    INS(e, SUB_U32, R(rows_left), R(f->s_q), R(at->m_start));
    INS(e, ADD_U32, R(row), R(attn_stats_row(k, f->d, at->b, at->h)), R(at->m_start));
    INS(e, MAD_WIDE_U32, R(lse_base), R(row), I(4), R(lse_base));
    rows_to_global_f32(k, 1, lse, f->warp_row0, lse_base, rows_left);
    Reg named = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(named), R(f->wg), I(1));                   /* barrier 0 is the CTA's; 1.. one per warpgroup */
    store_o(k, f, named, at);
}

/* The tile's own epilogue (its problem() is the last one run) */
static void epilogue(Kctx *k, WgFwd *f) { epilogue_at(k, f, &(TileAt){f->m_start, f->h, f->b}, &f->rows); }

/* Key blocks 1 .. of the tile (block-sparse: of its list; split-KV: of its split), block 0's P pending. */
static void walk_blocks(Kctx *k, WgFwd *f, Reg n, Reg n_full, Reg n_max) {
    Emit *e = &k->e;
    if (f->d->block_m) sparse_key_loop_prefix(k, consumer_step, f, &f->kl, 1, f->kl_unmasked, n_max);
    else {
        if (f->d->splitkv) INS(e, ADD_U32, R(n), R(f->lo), I(1));
        else INS(e, MOV_B32, R(n), I(1));
        key_loop(k, consumer_step, f, n, n_full, n_max, 0);
        key_loop(k, consumer_step, f, n, n_max, n_max, 1);
    }
}

/* Persistent with two Q buffers: the last tile's last P V and this tile's first S issued in one turn, the last tile's
 * epilogue (from its saved coordinates and rows' stats) under that S, then its softmax. A tile boundary thus costs a
 * warpgroup neither an epilogue nor an S with nothing of its own on the tensor cores. The other order (the softmax
 * under the P V, the epilogue after it) keeps S, or its rounded P, live across the epilogue's shared-memory stores,
 * and ptxas then serialized every wgmma of the kernel (C7518). */
static void carry_block(Kctx *k, WgFwd *f, Reg first, Reg n_full, const TileAt *last, RowStats *last_rows) {
    Emit *e = &k->e;
    Acc s;
    Reg k_empty, v_empty;
    acc_scale_rows(k, &f->o, f->alpha);                         /* the last tile's O to its last block's maxima */
    turn_begin(k, f);
    issue_pv(k, f, &v_empty);                                   /* the last tile's last P V */
    issue_s(k, f, &s, &k_empty);                                /* S_0 of this tile */
    turn_end(k, f);
    INS(e, WGMMA_WAIT, I(1));                                   /* P V done, S running */
    wg_release(k, v_empty, f->it_v);
    epilogue_at(k, f, last, last_rows);
    INS(e, AND_PRED, R(f->o_live), R(f->no), R(f->no));        /* O is stored: this tile's first P V overwrites it */
    INS(e, WGMMA_WAIT, I(0));
    wg_release(k, k_empty, f->it);
    rows_reset(k, &f->rows);
    softmax_s(k, f, &s, first, 1, &n_full);
    keep_p(k, f, &s);
}

/* The last warpgroup's last turn, taken (ping-pong). */
static void last_turn(Kctx *k, WgFwd *f) {
    if (!pingpong(f)) return;
    Reg w0 = e_reg(&k->e, RC_PRED);
    INS(&k->e, SETP_EQ_U32, R(w0), R(f->wg), I(0));
    INSP(&k->e, w0, 0, BAR_SYNC_N, R(f->turn_mine), I(256));
}

/* The smem descriptors of the warpgroup's Q rows and of K and V ring slot 0. */
static void descriptors(Kctx *k, WgFwd *f) {
    Reg wq = e_reg(&k->e, RC_B32);
    INS(&k->e, MUL_LO_U32, R(wq), R(f->wg), I(64 * 128));          /* the warpgroup's 64 rows of each Q slab */
    f->q_desc = wg_desc_plus(k, wg_desc_kmajor(k, f->q_off), wq);
    f->k_desc = wg_desc_kmajor(k, f->k_off);
    f->v_desc = wg_desc_mn(k, f->v_off, f->d->tile.bn * 128);
}

/* Persistent: the next tile from the producer (to label `done` when none is left), its problem and descriptors, and
 * the K ring at the pass that comes with it; returns the pass. */
static Reg take_tile(Kctx *k, WgFwd *f, Reg tiles, Reg over, int done, Reg n_full, Reg n_max) {
    Emit *e = &k->e;
    Reg pass, t = sched_take(k, &f->ts, f->tit, &pass);
    INS(e, SETP_GE_U32, R(over), R(t), R(tiles));
    INSP(e, over, 0, BRA_UNI, L(done));
    consumer_problem(k, f, t, n_full, n_max);
    descriptors(k, f);
    /* the rings' passes from the producer's count, not carried from the last tile: a counter the tile loop carried
     * cost the inner loop its uniform-datapath descriptor arithmetic (ptxas) */
    INS(e, MOV_B32, R(f->it), R(pass));
    return pass;
}

/* The consumers of a persistent CTA with two Q buffers: each tile's first S goes out with the last tile's last P V
 * (carry_block), so a tile with key blocks leaves its last P V and epilogue pending until the next tile's Q has
 * landed; a tile without any stores its zeros at once. The tile is taken at one place, the loop's top: taken at its
 * end as well (two definitions of the tile and its ring pass), the inner loop lost its uniform-datapath descriptor
 * and ring arithmetic (ptxas: 552 SASS instructions a step against 479) and ran 3.5-5 % slower on the H200. */
static void consumer_tiles(Kctx *k, WgFwd *f, Reg n_full, Reg n_max, Reg n) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg tiles = sched_tiles(k, d->tile.bm), zero = kc_imm32(k, 0);
    Reg p = e_reg(e, RC_PRED), pending = e_reg(e, RC_PRED), has = e_reg(e, RC_PRED), carry = e_reg(e, RC_PRED);
    TileAt last = {e_reg(e, RC_B32), e_reg(e, RC_B32), e_reg(e, RC_B32)};
    RowStats last_rows;
    rows_init(k, &last_rows, 1);
    rows_init(k, &f->rows, 1);
    int top = e_label(e), fresh = e_label(e), blocks = e_label(e), walked_all = e_label(e), empty = e_label(e);
    int finished = e_label(e), no_carry = e_label(e), ended = e_label(e);
    INS(e, MOV_B32, R(f->tit), I(0));
    INS(e, SETP_NE_U32, R(pending), R(zero), I(0));             /* no tile before the first */
    INS(e, OR_PRED, R(f->o_live = e_reg(e, RC_PRED)), R(f->yes), R(f->yes));
    f->carried = 1;
    e_place(e, top);
    Reg pass = take_tile(k, f, tiles, p, ended, n_full, n_max);
    Reg q_full, q_parity, at = q_buffer(k, f, 0, &q_full, &f->q_empty_t, &q_parity);
    f->q_desc = wg_desc_plus(k, f->q_desc, at);
    mbar_wait(k, q_full, q_parity, 0);                           /* Q landed */
    INS(e, SETP_NE_U32, R(has), R(walked(k, f, n_max)), I(0));
    Reg first = d->block_m ? f->kl_first : zero;
    INS(e, AND_PRED, R(carry), R(pending), R(has));
    INSP(e, carry, 1, BRA_UNI, L(no_carry));
    carry_block(k, f, first, n_full, &last, &last_rows);
    INS(e, BRA_UNI, L(blocks));
    e_place(e, no_carry);
    INSP(e, pending, 1, BRA_UNI, L(fresh));                      /* a last tile pending, none of its blocks here */
    last_pv(k, f);
    epilogue_at(k, f, &last, &last_rows);
    e_place(e, fresh);
    acc_fill(k, &f->o, 0.0f);
    rows_reset(k, &f->rows);
    INSP(e, has, 1, BRA_UNI, L(walked_all));
    first_block(k, f, first, &n_full);
    e_place(e, blocks);
    INS(e, MOV_B32, R(f->it_v), R(pass));                        /* every earlier P V is done: the V ring is at pass */
    walk_blocks(k, f, n, n_full, n_max);
    e_place(e, walked_all);
    wg_release(k, f->q_empty_t, f->tit);                         /* Q read by the last S; tit moves on */
    INSP(e, has, 1, BRA_UNI, L(empty));
    INS(e, MOV_B32, R(last.m_start), R(f->m_start));             /* pending: its last P V and epilogue */
    INS(e, MOV_B32, R(last.h), R(f->h));
    INS(e, MOV_B32, R(last.b), R(f->b));
    rows_copy(k, &last_rows, &f->rows);
    INS(e, SETP_EQ_U32, R(pending), R(zero), I(0));
    INS(e, BRA_UNI, L(top));
    e_place(e, empty);                                           /* no key block: zeros and +inf now */
    epilogue(k, f);
    INS(e, SETP_NE_U32, R(pending), R(zero), I(0));
    INS(e, BRA_UNI, L(top));
    e_place(e, ended);
    INSP(e, pending, 1, BRA_UNI, L(finished));
    last_pv(k, f);
    epilogue_at(k, f, &last, &last_rows);
    e_place(e, finished);
    last_turn(k, f);
    wg_store_wait(k);   /* the last tile's copy read the slabs before the CTA's shared memory goes */
}

static void consumer(Kctx *k, void *ctx) {
    WgFwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int persist = d->tile.persist;
    if (plan_role_regs(f->p, "consumer")) INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    Reg n_full = e_reg(e, RC_B32), n_max = e_reg(e, RC_B32), n = e_reg(e, RC_B32), zero = kc_imm32(k, 0);
    if (!persist) consumer_problem(k, f, (Reg){0}, n_full, n_max);
    f->wg = e_reg(e, RC_B32);
    f->warp_row0 = e_reg(e, RC_B32);
    Reg w = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(w), R(k->warp), I(wg_consumer_warp0(&d->tile)));
    INS(e, SHR_U32, R(f->wg), R(w), I(2));
    INS(e, MUL_LO_U32, R(f->warp_row0), R(w), I(16));
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    acc_new(k, &f->o, 1, d->dv / 8);
    if (!persist) {
        acc_fill(k, &f->o, 0.0f);
        rows_init(k, &f->rows, 1);
    }
    f->pk = e_regs(e, d->tile.bn / 4);
    for (int i = 0; i < d->tile.bn / 4; i++) f->pk[i] = e_reg(e, RC_B32);
    for (int i = 0; i < 2; i++) f->alpha[i] = e_reg(e, RC_F32);
    if (!persist) descriptors(k, f);
    f->it_v = e_reg(e, RC_B32);
    if (!persist) {   /* persistent: each tile's pass comes with it */
        INS(e, MOV_B32, R(f->it), I(0));
        INS(e, MOV_B32, R(f->it_v), I(0));
    }
    if (pingpong(f)) {                                            /* ping-pong: warpgroup 0 goes first */
        Reg last = e_reg(e, RC_PRED), nx = e_reg(e, RC_B32), wrap = e_reg(e, RC_PRED), first = kc_imm32(k, 1 + f->cw);
        f->turn_mine = e_reg(e, RC_B32), f->turn_next = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(f->turn_mine), R(f->wg), I(1 + f->cw));
        INS(e, ADD_U32, R(nx), R(f->wg), I(1));
        INS(e, SETP_EQ_U32, R(wrap), R(nx), I(f->cw));
        INS(e, SELP_B32, R(nx), I(0), R(nx), R(wrap));
        INS(e, ADD_U32, R(f->turn_next), R(nx), I(1 + f->cw));
        INS(e, SETP_EQ_U32, R(last), R(f->wg), I(f->cw - 1));
        INSP(e, last, 0, BAR_ARRIVE_N, R(first), I(256));
    }
    /* the carried tile boundary; not with three consumer warpgroups (d 64, bm=192: 160 registers each), where the
     * carried tile's state spilled */
    if (persist && wg_q_bufs(&d->tile) == 2 && f->cw <= 2) {
        consumer_tiles(k, f, n_full, n_max, n);
        return;
    }
    int next_tile = 0, finished = 0;
    if (persist) {   /* tiles as the producer hands them out; the turns run on across them (every tile takes as many
                      * per warpgroup) */
        Reg tiles = sched_tiles(k, d->tile.bm), over = e_reg(e, RC_PRED);
        next_tile = e_label(e), finished = e_label(e);
        INS(e, MOV_B32, R(f->tit), I(0));
        e_place(e, next_tile);
        Reg pass = take_tile(k, f, tiles, over, finished, n_full, n_max);
        INS(e, MOV_B32, R(f->it_v), R(pass));
        acc_fill(k, &f->o, 0.0f);
        rows_init(k, &f->rows, 1);
    }
    Reg q_full = f->bar[0], q_parity = zero;
    if (persist) {   /* the tile's Q buffer (two: the descriptor moves to it) */
        Reg at = q_buffer(k, f, 0, &q_full, &f->q_empty_t, &q_parity);
        if (wg_q_bufs(&d->tile) == 2) f->q_desc = wg_desc_plus(k, f->q_desc, at);
    }
    mbar_wait(k, q_full, q_parity, 0);   /* Q landed */
    Reg none = e_reg(e, RC_PRED);
    int empty = e_label(e);
    INS(e, SETP_EQ_U32, R(none), R(walked(k, f, n_max)), I(0));
    INSP(e, none, 0, BRA_UNI, L(empty));
    first_block(k, f, d->block_m ? f->kl_first : d->splitkv ? f->lo : zero, NULL);
    walk_blocks(k, f, n, n_full, n_max);
    if (d->page_size) {   /* the last block's V rows past the sequence zeroed first (zero_v_tail) */
        int skip = e_label(e);
        INSP(e, v_tail(k, f, n_max), 1, BRA_UNI, L(skip));
        mbar_wait(k, f->bar[WG_TAIL(d->tile.stages)], zero, 0);
        e_place(e, skip);
    }
    last_pv(k, f);
    e_place(e, empty);
    if (!persist) {
        last_turn(k, f);
        epilogue(k, f);
        return;
    }
    if (!wg_o_over_q(d)) wg_release(k, f->q_empty_t, f->tit);   /* Q read by the last S: the producer may load the next
                                                               * tile's; tit moves on (O over Q: after the store) */
    epilogue(k, f);
    INS(e, BRA_UNI, L(next_tile));
    e_place(e, finished);
    last_turn(k, f);
    wg_store_wait(k);   /* the last tile's copy read the slabs before the CTA's shared memory goes */
}

void attn_fwd_wg_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    const AttnTile *t = &d->tile;
    WgFwd f = {.d = d, .p = p, .cw = wg_consumers(t), .stages = t->stages, .q_off = plan_region(p, "Q"),
               .k_off = plan_region(p, "K.0"), .v_off = plan_region(p, "V.0"), .o_off = plan_region(p, "O")};
    f.k_stride = t->stages > 1 ? plan_region(p, "K.1") - f.k_off : 0;
    f.v_stride = t->stages > 1 ? plan_region(p, "V.1") - f.v_off : 0;
    int nb = wg_nbars(d), pb = wg_persist_bar(d);
    Opnd counts[WG_MAX_BARS];
    counts[0] = I(1);
    counts[WG_TAIL(t->stages)] = I(1);   /* paged: the producer thread's arrival */
    if (t->persist) {   /* Q empty: every consumer warp; the tile slots: the producer's arrive, every consumer thread */
        counts[pb] = I(4 * f.cw);
        counts[pb + 1] = counts[pb + 2] = I(1);
        counts[pb + 3] = counts[pb + 4] = I(128 * f.cw);
        if (wg_q_bufs(t) == 2) counts[pb + 5] = I(1), counts[pb + 6] = I(4 * f.cw);   /* the second Q's full, empty */
    }
    for (int s = 0; s < t->stages; s++) {
        counts[1 + s] = I(1);                                   /* K full: the producer's expect_tx */
        counts[1 + t->stages + s] = I(4 * f.cw);                 /* K empty: every consumer warp */
        counts[1 + 2 * t->stages + s] = I(1);
        counts[1 + 3 * t->stages + s] = I(4 * f.cw);
    }
    mbar_init(&kc, plan_region(p, "barriers"), nb, counts, f.bar);
    for (int r = 0; r < 4; r++) f.ring[1 + r] = f.bar[1 + r * t->stages];
    f.ring[B_Q] = f.bar[0];
    f.it = e_reg(e, RC_B32);
    if (t->persist) {
        f.q_full[0] = f.bar[0], f.q_empty[0] = f.bar[pb];
        if (wg_q_bufs(t) == 2) f.q_full[1] = f.bar[pb + 5], f.q_empty[1] = f.bar[pb + 6];
        f.ts = (TileSlots){plan_region(p, "tiles"), f.bar[pb + 1], f.bar[pb + 3], .order = sched_ordered(d)};
        f.tit = e_reg(e, RC_B32);
    }
    INS(e, BAR_SYNC, I(0));                                      /* the barriers are initialised */

    Reg is_consumer = e_reg(e, RC_PRED);
    if (wg_consumer_warp0(t)) INS(e, SETP_GE_U32, R(is_consumer), R(kc.warp), I(wg_consumer_warp0(t)));
    else INS(e, SETP_LT_U32, R(is_consumer), R(kc.warp), I(wg_producer_warp(t)));
    int past = varlen_exit(&kc, d, t->bm, d->causal);   /* the grid covers the longest sequence */
    wg_roles(&kc, is_consumer, producer, consumer, &f);
    if (d->varlen) e_place(e, past);
    kctx_finish(&kc, module);
}
