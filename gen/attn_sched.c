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

int sched_order_workspaces(WorkspaceSpec *ws, int bm) {
    ws[0] = (WorkspaceSpec){"tile_classes", "", WS_ZERO_KEPT,
                            "u32 [8]: per class of key-block count, the tiles the key-list kernel filed under it; "
                            "zeroed once, and the main kernel's last tile fetch sets it back to 0 (launches sharing it "
                            "must not overlap)"};
    snprintf(ws[0].bytes, sizeof ws[0].bytes, "%d", 4 * SCHED_CLASSES);
    ws[1] = (WorkspaceSpec){"tile_order", "", 0,
                            "u32 [8, b * h_q * cdiv(s_q, bm)]: per class the tiles filed under it; written by the "
                            "key-list kernel, read by the main kernel's producer (the longest tiles first)"};
    snprintf(ws[1].bytes, sizeof ws[1].bytes, "b * h_q * cdiv(s_q, %d) * %d", bm, 4 * SCHED_CLASSES);
    return 2;
}

void sched_order_abi(KernelSpec *ks, const char *who) {
    abi_workspace(ks, "tile_classes", who);
    abi_workspace(ks, "tile_order", who);
}

/* The tiles' index of (m, h, b): sched_coords backwards */
static Reg tile_index(Kctx *k, Reg m, Reg h, Reg b, Reg mt, Reg hq, int last_first) {
    Emit *e = &k->e;
    Reg t = e_reg(e, RC_B32), mm = m;
    if (last_first) {
        INS(e, SUB_U32, R(mm = e_reg(e, RC_B32)), R(mt), I(1));
        INS(e, SUB_U32, R(mm), R(mm), R(m));
    }
    INS(e, MAD_LO_U32, R(t), R(b), R(hq), R(h));
    INS(e, MAD_LO_U32, R(t), R(t), R(mt), R(mm));
    return t;
}

void sched_order_file(Kctx *k, Reg count, Reg m, Reg h, Reg b, Reg mt, Reg hq, Reg nb, int last_first) {
    Emit *e = &k->e;
    Reg lane0 = e_reg(e, RC_PRED), room = e_reg(e, RC_PRED), q = e_reg(e, RC_B32), tiles = e_reg(e, RC_B32);
    Reg slot = e_reg(e, RC_B32), at = e_reg(e, RC_B64), t = tile_index(k, m, h, b, mt, hq, last_first);
    int skip = e_label(e);
    INS(e, SETP_EQ_U32, R(lane0), R(k->lane), I(0));
    INSP(e, lane0, 1, BRA, L(skip));
    INS(e, ADD_U32, R(q), R(count), I(1));                 /* the class: floor(log2(count + 1)), at most the last */
    INS(e, CLZ_B32, R(q), R(q));
    INS(e, SUB_U32, R(q), I(31), R(q));
    INS(e, MIN_U32, R(q), R(q), I(SCHED_CLASSES - 1));
    INS(e, MAD_WIDE_U32, R(at), R(q), I(4), R(kc_ptr(k, "tile_classes")));
    INS(e, ATOM_GLOBAL_ADD_U32, R(slot), A(at, 0), I(1));
    INS(e, MUL_LO_U32, R(tiles), R(mt), R(hq));
    INS(e, MUL_LO_U32, R(tiles), R(tiles), R(nb));
    /* a class holds at most every tile: more only where this kernel ran again before a main kernel (its counts then
     * no longer sum to tiles, and the main kernel hands out tile i) */
    INS(e, SETP_LT_U32, R(room), R(slot), R(tiles));
    INSP(e, room, 1, BRA, L(skip));
    INS(e, MAD_LO_U32, R(slot), R(q), R(tiles), R(slot));
    INS(e, MAD_WIDE_U32, R(at), R(slot), I(4), R(kc_ptr(k, "tile_order")));
    INS(e, ST_GLOBAL_B32, A(at, 0), R(t));
    e_place(e, skip);
}

Reg sched_order_begin(Kctx *k, const TileSlots *ts, Reg tiles) {
    Emit *e = &k->e;
    Reg c[SCHED_CLASSES], sum = e_reg(e, RC_B32), sa = e_reg(e, RC_B32), ordered = e_reg(e, RC_PRED);
    Reg cls = kc_ptr(k, "tile_classes");
    for (int i = 0; i < SCHED_CLASSES; i++) c[i] = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(sa), R(k->smem), I(ts->slots + SCHED_SLOTS_BYTES));
    INS(e, MOV_B32, R(sum), I(0));
    for (int i = 0; i < SCHED_CLASSES; i += 4) {
        INS(e, LD_GLOBAL_V4_B32, V4(c[i], c[i + 1], c[i + 2], c[i + 3]), A(cls, 4 * i));
        INS(e, ST_SHARED_V4_B32, A(sa, 4 * i), V4(c[i], c[i + 1], c[i + 2], c[i + 3]));
        for (int j = i; j < i + 4; j++) INS(e, ADD_U32, R(sum), R(sum), R(c[j]));
    }
    INS(e, SETP_EQ_U32, R(ordered), R(sum), R(tiles));
    {   /* and only where the tiles differ much: their classes three or more apart (the largest more than 4x the key
         * blocks of the smallest); else the tiles' own order, in which the CTAs running at once walk few heads and
         * share their K and V in L2. On the H200 the order took 3-5 % off 10 % of the blocks with a dense head
         * among sparse ones and 7-8 % off 30 % causal, but made 50 % (classes 4-6) 1.3 % slower, 100 % 2-3 % */
        Reg lo = e_reg(e, RC_B32), hi = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
        INS(e, MOV_B32, R(lo), I(SCHED_CLASSES));
        INS(e, MOV_B32, R(hi), I(0));
        for (int i = 0; i < SCHED_CLASSES; i++) {
            int j = SCHED_CLASSES - 1 - i;
            INS(e, SETP_NE_U32, R(p), R(c[i]), I(0));
            INSP(e, p, 0, MOV_B32, R(hi), I(i));
            INS(e, SETP_NE_U32, R(p), R(c[j]), I(0));
            INSP(e, p, 0, MOV_B32, R(lo), I(j));
        }
        INS(e, ADD_U32, R(lo), R(lo), I(3));
        INS(e, SETP_GE_U32, R(p), R(hi), R(lo));
        INS(e, AND_PRED, R(ordered), R(ordered), R(p));
    }
    /* release: the counts were read before any fetch of this thread, and so before the launch's last fetch, which
     * sets them back to 0 (its fence there: acquire) */
    INS(e, FENCE_ACQ_REL_GPU);
    return ordered;
}

/* Fetch i < tiles in class order from the top: the class it falls in and its place there, then that entry of
 * tile_order. */
static void order_tile(Kctx *k, const TileSlots *ts, Reg tiles, Reg i, Reg tile) {
    Emit *e = &k->e;
    Reg c[4], sa = e_reg(e, RC_B32), rem = e_reg(e, RC_B32), q = e_reg(e, RC_B32), found = e_reg(e, RC_PRED);
    Reg lt = e_reg(e, RC_PRED), at = e_reg(e, RC_B64);
    for (int j = 0; j < 4; j++) c[j] = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(sa), R(k->smem), I(ts->slots + SCHED_SLOTS_BYTES));
    INS(e, MOV_B32, R(rem), R(i));
    INS(e, MOV_B32, R(q), I(SCHED_CLASSES - 1));
    INS(e, SETP_NE_U32, R(found), R(rem), R(rem));           /* false */
    for (int hi = SCHED_CLASSES - 4; hi >= 0; hi -= 4) {
        INS(e, LD_SHARED_V4_B32, V4(c[0], c[1], c[2], c[3]), A(sa, 4 * hi));
        for (int j = 3; j >= 0; j--) {
            if (hi + j == 0) break;                           /* class 0 holds what is left: the counts sum to tiles */
            INS(e, SETP_LT_U32, R(lt), R(rem), R(c[j]));
            INS(e, OR_PRED, R(found), R(found), R(lt));
            INSP(e, found, 1, SUB_U32, R(rem), R(rem), R(c[j]));
            INSP(e, found, 1, SUB_U32, R(q), R(q), I(1));
        }
    }
    INS(e, MAD_LO_U32, R(q), R(q), R(tiles), R(rem));
    INS(e, MAD_WIDE_U32, R(at), R(q), I(4), R(kc_ptr(k, "tile_order")));
    INS(e, LD_GLOBAL_NC_B32, R(tile), A(at, 0));   /* written by the key-list kernel before this one */
}

Reg sched_next(Kctx *k, const TileSlots *ts, Reg tiles, Reg ordered) {
    Emit *e = &k->e;
    Reg ctr = kc_ptr(k, "tile_counter"), old = e_reg(e, RC_B32), last = e_reg(e, RC_B32), is_last = e_reg(e, RC_PRED);
    INS(e, ATOM_GLOBAL_ADD_U32, R(old), A(ctr, 0), I(1));
    INS(e, MOV_B32, R(last), SR("%nctaid.x"));
    INS(e, ADD_U32, R(last), R(last), R(tiles));
    INS(e, SUB_U32, R(last), R(last), I(1));
    INS(e, SETP_EQ_U32, R(is_last), R(old), R(last));
    INSP(e, is_last, 0, ST_GLOBAL_B32, A(ctr, 0), I(0));   /* no atomic follows this one in the launch */
    if (!ts->order) return old;
    Reg tile = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), z = kc_imm32(k, 0), cls = kc_ptr(k, "tile_classes");
    int not_last = e_label(e), done = e_label(e);
    INSP(e, is_last, 1, BRA, L(not_last));
    INS(e, FENCE_ACQ_REL_GPU);   /* acquire: every producer read the counts before a fetch this one follows */
    for (int i = 0; i < SCHED_CLASSES; i += 4) INS(e, ST_GLOBAL_V4_B32, A(cls, 4 * i), V4(z, z, z, z));
    e_place(e, not_last);
    INS(e, MOV_B32, R(tile), R(old));
    INS(e, SETP_LT_U32, R(p), R(old), R(tiles));
    INS(e, AND_PRED, R(p), R(p), R(ordered));
    INSP(e, p, 1, BRA, L(done));
    order_tile(k, ts, tiles, old, tile);
    e_place(e, done);
    return tile;
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
