/* Persistent CTAs for attn_fwd (attn_sched.h). */
#include "attn_sched.h"
#include <stdio.h>
#include "attn_wg.h"
#include "../templates/mbar.h"

void sched_abi(KernelSpec *ks, int bm, int persist) {
    abi_sizes(ks, (const char *const[]){"b"}, 1);
    abi_workspace(ks, "tile_counter", "persistent CTAs: the next tile to hand out");
    snprintf(ks->grid[0], sizeof ks->grid[0], "min(cdiv(s_q, %d) * h_q * b, %d)", bm, persist);
    snprintf(ks->grid[1], sizeof ks->grid[1], "1");
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
}

WorkspaceSpec sched_workspace(void) {
    return (WorkspaceSpec){"tile_counter", "4", WS_ZERO_KEPT,
                           "u32: the next tile the persistent CTAs' atomics hand out; zeroed once, and "
                           "every launch leaves it 0 (launches sharing it must not overlap)"};
}

/* cdiv(s_q, bm): the row blocks of one head */
static Reg row_blocks(Kctx *k, int bm) {
    Emit *e = &k->e;
    Reg n = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(n), R(kc_u32(k, "s_q")), I(bm - 1));
    INS(e, DIV_U32, R(n), R(n), I(bm));
    return n;
}

Reg sched_tiles(Kctx *k, int bm) {
    Emit *e = &k->e;
    Reg n = row_blocks(k, bm);
    INS(e, MUL_LO_U32, R(n), R(n), R(kc_u32(k, "h_q")));
    INS(e, MUL_LO_U32, R(n), R(n), R(kc_u32(k, "b")));
    return n;
}

void sched_coords(Kctx *k, Reg t, int bm, int last_first, Reg *m, Reg *h, Reg *b) {
    Emit *e = &k->e;
    Reg mb = row_blocks(k, bm), hb = e_reg(e, RC_B32), hq = kc_u32(k, "h_q");
    *m = e_reg(e, RC_B32), *h = e_reg(e, RC_B32), *b = e_reg(e, RC_B32);
    INS(e, REM_U32, R(*m), R(t), R(mb));
    INS(e, DIV_U32, R(hb), R(t), R(mb));
    INS(e, REM_U32, R(*h), R(hb), R(hq));
    INS(e, DIV_U32, R(*b), R(hb), R(hq));
    if (last_first) {
        INS(e, SUB_U32, R(mb), R(mb), I(1));
        INS(e, SUB_U32, R(*m), R(mb), R(*m));
    }
}

Reg sched_next(Kctx *k, Reg tiles) {
    Emit *e = &k->e;
    Reg ctr = kc_ptr(k, "tile_counter"), old = e_reg(e, RC_B32), last = e_reg(e, RC_B32), is_last = e_reg(e, RC_PRED);
    INS(e, ATOM_GLOBAL_ADD_U32, R(old), A(ctr, 0), I(1));
    INS(e, MOV_B32, R(last), SR("%nctaid.x"));
    INS(e, ADD_U32, R(last), R(last), R(tiles));
    INS(e, SUB_U32, R(last), R(last), I(1));
    INS(e, SETP_EQ_U32, R(is_last), R(old), R(last));
    INSP(e, is_last, 0, ST_GLOBAL_B32, A(ctr, 0), I(0));   /* no atomic follows this one in the launch */
    return old;
}

/* The slot of pass it over the two (a ring of 2 slots of 8 bytes): its address, its full and empty barriers and the
 * parity pass it / 2 completes. */
static Reg slot_of(Kctx *k, const TileSlots *ts, Reg it, Reg *full, Reg *empty, Reg *parity) {
    Reg a = e_reg(&k->e, RC_B32), stage = wg_ring_slot(k, ts->full0, ts->empty0, 2, it, 8, full, parity, empty);
    INS(&k->e, ADD_U32, R(a), R(k->smem), R(stage));
    INS(&k->e, ADD_U32, R(a), R(a), I(ts->slots));
    return a;
}

void sched_publish(Kctx *k, const TileSlots *ts, Reg it, Reg t, Reg w) {
    Emit *e = &k->e;
    Reg full, empty, parity, st = e_reg(e, RC_B64);
    Reg a = slot_of(k, ts, it, &full, &empty, &parity);
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as read: the phase before the first */
    mbar_wait(k, empty, parity, 0);
    INS(e, ST_SHARED_B32, A(a, 0), R(t));
    INS(e, ST_SHARED_B32, A(a, 4), R(w));
    INS(e, MBAR_ARRIVE, R(st), A(full, 0));         /* release: the index is seen by whoever waits on it */
}

Reg sched_take(Kctx *k, const TileSlots *ts, Reg it, Reg *w) {
    Emit *e = &k->e;
    Reg full, empty, parity, t = e_reg(e, RC_B32), st = e_reg(e, RC_B64);
    Reg a = slot_of(k, ts, it, &full, &empty, &parity);
    mbar_wait(k, full, parity, 0);
    *w = e_reg(e, RC_B32);
    INS(e, LD_SHARED_B32, R(t), A(a, 0));
    INS(e, LD_SHARED_B32, R(*w), A(a, 4));
    /* lane 0's copies to all, so that ptxas knows them to be the warp's */
    INS(e, SHFL_IDX, R(t), R(t), I(0), I(31), I(-1));
    INS(e, SHFL_IDX, R(*w), R(*w), I(0), I(31), I(-1));
    /* every thread frees the slot after its own reads: lane 0 for its warp after bar.warp.sync is enough by the
     * memory model, but compute-sanitizer's racecheck reports that as a race */
    INS(e, MBAR_ARRIVE, R(st), A(empty, 0));
    /* the warp converged here: with it ptxas keeps the tile's descriptor and ring arithmetic on the uniform datapath
     * (the causal d128 inner loop: 478 SASS instructions a step, 518 without) */
    INS(e, BAR_WARP_SYNC, I(-1));
    return t;
}
