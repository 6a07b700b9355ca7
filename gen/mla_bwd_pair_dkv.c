/* mla_bwd dkv kernel of the CTA-pair plan (tcgen05, cta_group::1),
 * KV-stationary: the dq kernel left P and dS of every (head, slot) in the
 * `ps` workspace, so dkv needs no kv at all. One CTA per (token t = ctaid.x,
 * column chunk c = ctaid.y, head block z = ctaid.z): the slots are the MMAs' M (128 per step, one TMEM
 * lane and one thread each), the chunk's columns N, and all 128 heads of the
 * block K, so the head contraction happens inside the MMA:
 *
 *   load Q[t, heads, chunk c], dO[t, heads, chunk c]          (resident)
 *   for each block b of 128 slots (up to the token's count):
 *     load P^T, dS^T [slots of b, 128 heads] from ps          (two stages, cp.async)
 *     D = dS^T Q_c (+ P^T dO_c)                               (8 + 8 MMAs, two TMEM buffers)
 *     dkv[idx[t, slot], chunk c] += D[slot]                   (red.global.add.v4, or 64-bit fixed point)
 *
 * Chunks 0-3 are 128 columns of d_v (both terms); chunk 4 is the 64 rope
 * columns (dS^T Q only). The loop is block_loop(); one block's MMAs are
 * issue(), its read-out is read_out(). */
#include "mla_bwd_pair.h"
#include <string.h>

typedef struct {
    const AttnDesc *d;
    int cols, with_do;                    /* this chunk kind's N, and whether P^T dO adds to it */
    int q, dout, st[2][2], bars;          /* shared regions: st[stage][0 dS^T, 1 P^T] */
    Reg t, col0, eff, nblocks, s_kv, idx_row, dkv_base;
    Reg mul;                              /* deterministic: 2^S, dkv's fixed-point scale */
    Reg taddr, tq, bar[2];
    Reg q_mn, do_mn;
} Dkv;

/* Block b's dS^T and P^T tiles [128 heads][128 slots] into stage `stage` (the current cp.async group):
 * ps_row is this (token, head block)'s P plane, the dS plane follows it. */
static void load_block(Kctx *k, Dkv *f, Reg b, int stage, Reg ps_row, Reg stride) {
    Emit *e = &k->e;
    Reg all = kc_imm32(k, PAIR_HEADS);
    for (int w = 0; w < 1 + f->with_do; w++) {
        Reg off = e_reg(e, RC_B32), src = e_reg(e, RC_B64), tile = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(off), R(b), I(PAIR_BLOCK * 2));
        if (w == 0) INS(e, MAD_LO_U32, R(off), R(stride), I(PAIR_HEADS), R(off));
        INS(e, CVT_U64_U32, R(src), R(off));
        INS(e, ADD_U64, R(src), R(src), R(ps_row));
        INS(e, ADD_U32, R(tile), R(k->smem), I(f->st[stage][w]));
        umma_tile_copy(k, tile, PAIR_HEADS, PAIR_BLOCK, PAIR_DKV_THREADS, src, stride, all);
    }
    INS0(e, CP_ASYNC_COMMIT);
}

/* TMEM buffer buf = dS^T Q (+ P^T dO) over the 128 heads 16 at a time: A MN-major (the slots run
 * along the ps rows), B MN-major (the chunk's columns run along the Q and dO rows). Thread 0 only. */
static void issue(Kctx *k, Dkv *f, int stage, int buf) {
    Emit *e = &k->e;
    Reg idesc = kc_imm32(k, umma_idesc_f16(f->d->dtype, PAIR_BLOCK, f->cols, 1, 1));
    Reg yes = e_reg(e, RC_PRED), no = e_reg(e, RC_PRED), z = kc_imm32(k, 0), t0 = e_reg(e, RC_PRED);
    int past = e_label(e);
    INS(e, SETP_EQ_U32, R(t0), R(k->tid), I(0));
    INSP(e, t0, 1, BRA, L(past));
    INS(e, SETP_EQ_U32, R(yes), R(z), I(0));
    INS(e, SETP_NE_U32, R(no), R(z), I(0));
    for (int w = 0; w < 1 + f->with_do; w++) {
        Reg a0 = umma_desc(k, f->st[stage][w], umma_mn128(PAIR_HEADS)), b0 = w ? f->do_mn : f->q_mn;
        for (int kh = 0; kh < PAIR_HEADS / 16; kh++) {
            Reg a = umma_desc_at(k, a0, kh * 16 * 128), b = umma_desc_at(k, b0, kh * 16 * 128);
            INS(e, TC_MMA_1_F16_SS, A(f->taddr, buf * PAIR_DKV_COLS), R(a), R(b), R(idesc), R(w || kh ? yes : no));
        }
    }
    INS(e, TC_COMMIT_1, A(f->bar[buf], 0));
    e_place(e, past);
}

/* Block b's D out of TMEM buffer buf once its commit landed: the thread's slot (its lane), if valid,
 * into its kv row of the fp32 accumulator, or (deterministic) the warp's 32 slots in fixed point. */
static void read_out(Kctx *k, Dkv *f, Reg b, int buf) {
    Emit *e = &k->e;
    Reg slot = e_reg(e, RC_B32), ok, row, dst = e_reg(e, RC_B64), el = e_reg(e, RC_B32), par = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(par), R(b), I(1));                      /* buffer buf completes every other block */
    INS(e, AND_B32, R(par), R(par), I(1));
    umma_wait(k, f->bar[buf], par);
    INS(e, MAD_LO_U32, R(slot), R(b), I(PAIR_BLOCK), R(k->tid));
    row = mla_slot_row(k, f->idx_row, f->eff, f->s_kv, slot, &ok);
    if (f->d->tile.deterministic) {
        mla_dkv_fixed_tmem(k, f->tq, buf * PAIR_DKV_COLS, f->cols, 0, row, f->s_kv, f->dkv_base, f->mul);
        return;
    }
    INS(e, MAD_LO_U32, R(el), R(row), I(f->d->d), R(f->col0));
    INS(e, MAD_WIDE_U32, R(dst), R(el), I(4), R(f->dkv_base));
    for (int c = 0; c < f->cols; c += 32) {
        Reg v[32];
        for (int i = 0; i < 32; i++) v[i] = e_reg(e, RC_F32);
        INS(e, TC_LD_32X32B_X32, V(32, v), A(f->tq, buf * PAIR_DKV_COLS + c));
        INS0(e, TC_WAIT_LD);
        for (int i = 0; i < 8; i++) {
            Opnd o = A(dst, 4 * (c + 4 * i));
            Opnd x = V4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
            INSP(e, ok, 0, RED_GLOBAL_ADD_V4_F32, o, x);
        }
    }
}

/* One step: block b's tiles landed (stage s) and buffer s is free (read out two blocks ago); its
 * MMAs go while block b-1 is read out of the other buffer and block b+1 loads into the other stage. */
static void step(Kctx *k, Dkv *f, Reg b, int s, Reg ps_row, Reg stride) {
    Emit *e = &k->e;
    Reg prev = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), next = e_reg(e, RC_B32), later = e_reg(e, RC_PRED);
    int no_prev = e_label(e), no_next = e_label(e);
    INS(e, CP_ASYNC_WAIT, I(0));
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    umma_sync(k);
    issue(k, f, s, s);
    INS(e, SETP_EQ_U32, R(more), R(b), I(0));
    INSP(e, more, 0, BRA_UNI, L(no_prev));
    INS(e, SUB_U32, R(prev), R(b), I(1));
    read_out(k, f, prev, 1 - s);
    e_place(e, no_prev);
    INS(e, ADD_U32, R(next), R(b), I(1));
    INS(e, SETP_LT_U32, R(later), R(next), R(f->nblocks));
    INSP(e, later, 1, BRA_UNI, L(no_next));
    load_block(k, f, next, 1 - s, ps_row, stride);             /* stage 1-s: block b-1's MMAs are done */
    e_place(e, no_next);
}

/* for (b = 0; b < nblocks; b++) step(b), two blocks a trip (the stage and buffer are b % 2), then the
 * last block's read-out. */
static void block_loop(Kctx *k, Dkv *f, Reg ps_row, Reg stride) {
    Emit *e = &k->e;
    Reg b = e_reg(e, RC_B32), b1 = e_reg(e, RC_B32), go = e_reg(e, RC_PRED), last = e_reg(e, RC_B32), odd = e_reg(e, RC_PRED);
    int top = e_label(e), done = e_label(e), even_out = e_label(e), end = e_label(e);
    INS(e, MOV_B32, R(b), I(0));
    INS(e, SETP_EQ_U32, R(go), R(f->nblocks), I(0));
    INSP(e, go, 0, BRA_UNI, L(end));
    load_block(k, f, b, 0, ps_row, stride);
    e_place(e, top);
    step(k, f, b, 0, ps_row, stride);
    INS(e, ADD_U32, R(b1), R(b), I(1));
    INS(e, SETP_GE_U32, R(go), R(b1), R(f->nblocks));
    INSP(e, go, 0, BRA_UNI, L(done));
    step(k, f, b1, 1, ps_row, stride);
    INS(e, ADD_U32, R(b), R(b), I(2));
    INS(e, SETP_LT_U32, R(go), R(b), R(f->nblocks));
    INSP(e, go, 0, BRA_UNI, L(top));
    e_place(e, done);
    INS(e, SUB_U32, R(last), R(f->nblocks), I(1));
    Reg lo = e_reg(e, RC_B32);
    INS(e, AND_B32, R(lo), R(last), I(1));
    INS(e, SETP_NE_U32, R(odd), R(lo), I(0));
    INSP(e, odd, 1, BRA_UNI, L(even_out));
    read_out(k, f, last, 1);
    INS(e, BRA_UNI, L(end));
    e_place(e, even_out);
    read_out(k, f, last, 0);
    e_place(e, end);
}

/* The CTA's chunk: its Q (and dO) columns resident, then the blocks. */
static void chunk(Kctx *k, Dkv *f, Reg h0, Reg room) {
    Emit *e = &k->e;
    Reg ps_row = e_reg(e, RC_B64), stride = e_reg(e, RC_B32), r = e_reg(e, RC_B32), z = e_reg(e, RC_B32), nz = e_reg(e, RC_B32);
    Reg topk_pad = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(topk_pad), R(kc_u32(k, "topk")), I(PAIR_BLOCK - 1));
    INS(e, AND_B32, R(topk_pad), R(topk_pad), I(-PAIR_BLOCK));
    INS(e, SHL_B32, R(stride), R(topk_pad), I(1));
    INS(e, MOV_B32, R(z), SR("%ctaid.z"));
    INS(e, MOV_B32, R(nz), SR("%nctaid.z"));
    INS(e, MAD_LO_U32, R(r), R(f->t), R(nz), R(z));
    INS(e, MUL_LO_U32, R(r), R(r), I(2 * PAIR_HEADS));         /* ps [s_q, nz, 2, 128, topk_pad]: the P plane */
    INS(e, MUL_WIDE_U32, R(ps_row), R(r), R(stride));
    INS(e, ADD_U64, R(ps_row), R(ps_row), R(kc_ptr(k, "ps")));
    const char *src[2] = {"q", "do"};
    int at[2] = {f->q, f->dout};
    for (int w = 0; w < 1 + f->with_do; w++) {
        Reg tile = e_reg(e, RC_B32), base = tensor_base(k, src[w], 's', f->t, 'h', h0), a = e_reg(e, RC_B64);
        INS(e, MAD_WIDE_U32, R(a), R(f->col0), I(2), R(base));
        INS(e, ADD_U32, R(tile), R(k->smem), I(at[w]));
        umma_tile_copy(k, tile, PAIR_HEADS, f->cols, PAIR_DKV_THREADS, a, stride_bytes(k, src[w], 'h'), room);
    }
    f->q_mn = umma_desc(k, f->q, umma_mn128(PAIR_HEADS));
    f->do_mn = umma_desc(k, f->dout, umma_mn128(PAIR_HEADS));
    block_loop(k, f, ps_row, stride);
}

void mla_bwd_pair_dkv_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    Dkv f = {.d = d, .q = plan_region(p, "Q"), .dout = plan_region(p, "dO"), .bars = plan_region(p, "bars"),
             .st = {{plan_region(p, "dS^T.0"), plan_region(p, "P^T.0")}, {plan_region(p, "dS^T.1"), plan_region(p, "P^T.1")}}};
    Reg c = e_reg(e, RC_B32), h0 = e_reg(e, RC_B32);
    f.t = e_reg(e, RC_B32), f.col0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(c), SR("%ctaid.y"));
    INS(e, MOV_B32, R(f.t), SR("%ctaid.x"));                   /* tokens in x: s_q may pass 65535 */
    INS(e, MOV_B32, R(h0), SR("%ctaid.z"));
    INS(e, MUL_LO_U32, R(h0), R(h0), I(PAIR_HEADS));
    INS(e, MUL_LO_U32, R(f.col0), R(c), I(PAIR_DKV_COLS));
    f.s_kv = kc_u32(k, "s_kv");
    f.idx_row = mla_index_row(k, f.t);
    f.eff = mla_token_slots(k, f.t, kc_u32(k, "topk"));
    f.nblocks = mla_token_steps(k, f.eff, PAIR_BLOCK);
    Reg room = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(room), R(kc_u32(k, "h_q")), R(h0));
    f.dkv_base = kc_ptr(k, d->tile.deterministic ? "dkv_fixed" : "dkv_accum");
    if (d->tile.deterministic) {   /* the accumulator at the chunk's first column, + mla_dkv_fixed_col */
        Reg col = e_reg(e, RC_B32), base = e_reg(e, RC_B64);
        f.mul = mla_dkv_fixed(k).mul;
        INS(e, ADD_U32, R(col), R(f.col0), R(mla_dkv_fixed_col(k)));
        INS(e, MAD_WIDE_U32, R(base), R(col), I(8), R(f.dkv_base));
        f.dkv_base = base;
    }

    e_comment(e, "prologue: barriers, TMEM (two 128-column buffers)");
    Opnd one[2] = {I(1), I(1)};
    f.taddr = umma_prologue(k, f.bars, 2, one, f.bar, plan_tmem_alloc(p), 0, &f.tq);

    /* chunks 0-3: 128 columns of d_v, both terms; chunk 4: the 64 rope columns, dS^T Q only */
    Reg rope = e_reg(e, RC_PRED);
    int nope = e_label(e), joined = e_label(e);
    INS(e, SETP_EQ_U32, R(rope), R(c), I(d->dv / PAIR_DKV_COLS));
    INSP(e, rope, 1, BRA_UNI, L(nope));
    e_comment(e, "the rope chunk");
    f.cols = d->d - d->dv, f.with_do = 0;
    chunk(k, &f, h0, room);
    INS(e, BRA_UNI, L(joined));
    e_place(e, nope);
    e_comment(e, "a chunk of d_v's columns");
    f.cols = PAIR_DKV_COLS, f.with_do = 1;
    chunk(k, &f, h0, room);
    e_place(e, joined);

    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), 0);
    kctx_finish(k, module);
}
