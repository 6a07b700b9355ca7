/* The wgmma MLA kernels' producer warpgroup, consumer identity and head-tile maps (mla_wg.h). */
#include "mla_wg.h"
#include <stdio.h>
#include "../templates/mbar.h"
#include "../templates/wgmma.h"

void mla_wg_load_tiles(Kctx *k, const MlaWgFeed *f, Reg *state, Reg *zero_reg) {
    Emit *e = &k->e;
    const MlaCta *cta = f->cta;
    e_comment(e, f->ntiles > 1 ? "producer: thread 0 loads the head tiles by TMA; all 128 threads gather the top-k rows"
                               : "producer: thread 0 loads Q by TMA; all 128 threads gather the top-k rows");
    Reg lead = e_reg(e, RC_PRED), st = e_reg(e, RC_B64), zero = kc_imm32(k, 0);
    int loaded = e_label(e), bytes = 0;
    for (int i = 0; i < f->ntiles; i++) bytes += MLA_WG_BM * f->tiles[i].cols * 2;
    INS(e, SETP_EQ_U32, R(lead), R(k->tid), I(0));
    INSP(e, lead, 1, BRA, L(loaded));
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar_in, 0), I(bytes));
    for (int i = 0; i < f->ntiles; i++)
        wg_tma_rows(k, kc_tmap(k, f->tiles[i].map), f->tiles[i].off, MLA_WG_BM, f->tiles[i].cols, zero, cta->h0, cta->t,
                    zero, f->bar_in);
    e_place(e, loaded);
    *state = st, *zero_reg = zero;
}

void mla_wg_producer(Kctx *k, const MlaWgFeed *f) {
    Emit *e = &k->e;
    const MlaCta *cta = f->cta;
    Reg st, zero;
    mla_wg_load_tiles(k, f, &st, &zero);

    MlaSlots sl = {.bn = f->bn, .skv = {f->bn, MLA_D_QK, f->kv_off}, .bias_off = f->bias_off, .rows_off = f->rows_off};
    mla_slots_init_slabs(k, &sl, cta->t, 128);
    int np = sl.g.passes;
    Reg idx[8], n = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), next = e_reg(e, RC_B32);
    for (int i = 0; f->prefetch && i < np; i++) {
        idx[i] = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(idx[i]), R(mla_slot_index_pass(k, &sl, zero, i)));
    }
    INS(e, MOV_B32, R(n), I(0));
    INS(e, MOV_B32, R(f->it), I(0));
    int top = e_label(e), done = e_label(e);
    e_place(e, top);
    INS(e, SETP_LT_U32, R(more), R(n), R(sl.nsteps));
    INSP(e, more, 1, BRA_UNI, L(done));
    Reg empty, full, parity;
    Reg stage = wg_ring_slot(k, f->empty0, f->full0, f->stages, f->it, f->kv_stride, &empty, &parity, &full);
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as freed: the phase before the first */
    if (!f->prefetch)                                /* this step's indices, read under the wait */
        for (int i = 0; i < np; i++) idx[i] = mla_slot_index_pass(k, &sl, n, i);
    mbar_wait(k, empty, parity, 0);
    for (int i = 0; i < np; i++) mla_slot_gather_pass(k, &sl, idx[i], stage, i);
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, ADD_U32, R(next), R(n), I(1));
    for (int i = 0; f->prefetch && i < np; i++)      /* the next step's indices, read under the copies */
        INS(e, MOV_B32, R(idx[i]), R(mla_slot_index_pass(k, &sl, next, i)));
    INS(e, CP_ASYNC_WAIT, I(0));
    INS0(e, FENCE_PROXY_ASYNC_CTA);                  /* wgmma reads through the async proxy what cp.async wrote */
    INS(e, MBAR_ARRIVE, R(st), A(full, 0));
    INS(e, MOV_B32, R(n), R(next));
    INS(e, ADD_U32, R(f->it), R(f->it), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

void mla_wg_roles(Kctx *k, WgRole producer, WgRole consumer, void *ctx) {
    Emit *e = &k->e;
    INS(e, BAR_SYNC, I(0));                          /* the barriers are initialised */
    Reg is_consumer = e_reg(e, RC_PRED);
    INS(e, SETP_GE_U32, R(is_consumer), R(k->warp), I(4));
    wg_roles(k, is_consumer, producer, consumer, ctx);
}

void mla_wg_consumer_id(Kctx *k, Reg *c, Reg *warp_row0) {
    Emit *e = &k->e;
    Reg w = e_reg(e, RC_B32);
    *c = e_reg(e, RC_B32), *warp_row0 = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(w), R(k->warp), I(4));
    INS(e, SHR_U32, R(*c), R(w), I(2));
    INS(e, AND_B32, R(w), R(w), I(3));
    INS(e, MUL_LO_U32, R(*warp_row0), R(w), I(16));
}

void mla_wg_head_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, const char *cols, int bm,
                     const char *const strides[3]) {
    TensorMapSpec m = {.param = param, .tensor = tensor, .dtype = dt, .rank = 4, .dims = {cols, "h_q", "s_q", "1"},
                       .strides = {strides[0], strides[1], strides[2]}, .box = {WG_SLAB_COLS, bm, 1, 1},
                       .elem_strides = {1, 1, 1, 1}, .swizzle = "128B", .interleave = "none", .oob_fill = "zero"};
    abi_tensor_map(ks, tensor, "TMA map, box 64 columns x the CTA's heads of one token, 128B swizzle; the tensor's "
                   "h and s strides must be multiples of 8 elements (16 bytes) and its base 16-byte aligned", m);
}

int mla_wg_check_dims(const AttnDesc *d, const char *kernel, char *err, size_t errlen) {
    if (d->d == MLA_D_QK && d->dv == MLA_D_V) return 0;
    snprintf(err, errlen, "the wgmma %s is built for d_qk=%d, d_v=%d (got %d, %d)", kernel, MLA_D_QK, MLA_D_V, d->d, d->dv);
    return 1;
}
