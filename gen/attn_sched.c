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
                            "zeroed once, and the order kernel sets it back to 0 (launches sharing it must not overlap)"};
    snprintf(ws[0].bytes, sizeof ws[0].bytes, "%d", 4 * SCHED_CLASSES);
    ws[1] = (WorkspaceSpec){"tile_order", "", 0,
                            "u32 [2, b * h_q * cdiv(s_q, bm)]: each tile's class (the key-list kernel), then the tiles "
                            "longest first (the order kernel), which the main kernel's producer hands out"};
    snprintf(ws[1].bytes, sizeof ws[1].bytes, "b * h_q * cdiv(s_q, %d) * 8", bm);
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
    Reg lane0 = e_reg(e, RC_PRED), q = e_reg(e, RC_B32), old = e_reg(e, RC_B32), at = e_reg(e, RC_B64);
    Reg t = tile_index(k, m, h, b, mt, hq, last_first);
    int skip = e_label(e);
    (void)nb;
    INS(e, SETP_EQ_U32, R(lane0), R(k->lane), I(0));
    INSP(e, lane0, 1, BRA, L(skip));
    INS(e, ADD_U32, R(q), R(count), I(1));                 /* the class: floor(log2(count + 1)), at most the last */
    INS(e, CLZ_B32, R(q), R(q));
    INS(e, SUB_U32, R(q), I(31), R(q));
    INS(e, MIN_U32, R(q), R(q), I(SCHED_CLASSES - 1));
    INS(e, MAD_WIDE_U32, R(at), R(q), I(4), R(kc_ptr(k, "tile_classes")));
    INS(e, ATOM_GLOBAL_ADD_U32, R(old), A(at, 0), I(1));
    INS(e, MAD_WIDE_U32, R(at), R(t), I(4), R(kc_ptr(k, "tile_order")));
    INS(e, ST_GLOBAL_B32, A(at, 0), R(q));
    e_place(e, skip);
}

#define ORDER_WARPS 32   /* the order kernel's one CTA: a tile a thread per chunk of 1024 */

void sched_order_plan(const AttnDesc *d, int bm, Plan *p) {
    *p = (Plan){.threads = 32 * ORDER_WARPS, .regs_est = 40};
    plan_add_region(p, "counts", ORDER_WARPS * SCHED_CLASSES * 4, 16, "per warp and class: its tiles in the chunk");
    plan_add_region(p, "starts", ORDER_WARPS * SCHED_CLASSES * 4, 16, "per warp and class: where they go");
    plan_add_region(p, "whole", 4, 4, "whether the class counts sum to the tiles");
    char what[96];
    snprintf(what, sizeof what, "block-sparse tile order (query tiles of %d rows, the longest first)", bm);
    plan_finish(p, d->arch, what);
}

/* x's inclusive prefix sum over the lanes, in every lane */
static void warp_scan(Kctx *k, Reg x) {
    Emit *e = &k->e;
    Reg y = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    for (int dl = 1; dl < 32; dl *= 2) {
        INS(e, SHFL_UP, R(y), R(x), I(dl), I(0), I(-1));
        INS(e, SETP_GE_U32, R(p), R(k->lane), I(dl));
        INSP(e, p, 0, ADD_U32, R(x), R(x), R(y));
    }
}

/* Every tile, 1024 a chunk in their own order: its class's place so far, plus its warp's tiles of that class before
 * it (warp 0 scans each class's counts over the warps), plus its lanes' before it (a ballot per class). */
static void place_tiles(Kctx *k, const Plan *pl, Reg tiles, Reg run[SCHED_CLASSES]) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e), scan = e_label(e);
    Reg base = e_reg(e, RC_B32), t = e_reg(e, RC_B32), q = e_reg(e, RC_B32), valid = e_reg(e, RC_PRED);
    Reg mine = e_reg(e, RC_B32), wc = e_reg(e, RC_B32), bal = e_reg(e, RC_B32), pj = e_reg(e, RC_PRED);
    Reg lj = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B32), v = e_reg(e, RC_B32);
    Reg at = e_reg(e, RC_B64), lt = e_reg(e, RC_B32), ord = kc_ptr(k, "tile_order");
    Reg counts = e_reg(e, RC_B32), starts = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(counts), R(k->smem), I(plan_region(pl, "counts")));
    INS(e, ADD_U32, R(starts), R(k->smem), I(plan_region(pl, "starts")));
    INS(e, MOV_B32, R(base), I(0));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(base), R(tiles));
    INSP(e, p, 0, BRA_UNI, L(done));
    INS(e, ADD_U32, R(t), R(base), R(k->tid));
    INS(e, SETP_LT_U32, R(valid), R(t), R(tiles));
    INS(e, MOV_B32, R(q), I(SCHED_CLASSES));                     /* past the tiles: no class */
    INS(e, MAD_WIDE_U32, R(at), R(t), I(4), R(ord));
    INSP(e, valid, 0, LD_GLOBAL_NC_B32, R(q), A(at, 0));
    INS(e, MOV_B32, R(mine), I(0));
    INS(e, MOV_B32, R(wc), I(0));
    for (int j = 0; j < SCHED_CLASSES; j++) {
        INS(e, SETP_EQ_U32, R(pj), R(q), I(j));
        INS(e, VOTE_BALLOT, R(bal), R(pj), IX(0xffffffffu));
        INS(e, SELP_B32, R(mine), R(bal), R(mine), R(pj));
        INS(e, SETP_EQ_U32, R(lj), R(k->lane), I(j));
        INS(e, POPC_B32, R(bal), R(bal));
        INS(e, SELP_B32, R(wc), R(bal), R(wc), R(lj));
    }
    INS(e, SETP_LT_U32, R(p), R(k->lane), I(SCHED_CLASSES));
    INS(e, MAD_LO_U32, R(a), R(k->warp), I(SCHED_CLASSES), R(k->lane));
    INS(e, SHL_B32, R(a), R(a), I(2));
    INS(e, ADD_U32, R(a), R(a), R(counts));
    INSP(e, p, 0, ST_SHARED_B32, A(a, 0), R(wc));
    INS(e, BAR_SYNC, I(0));
    INS(e, SETP_NE_U32, R(p), R(k->warp), I(0));
    INSP(e, p, 0, BRA_UNI, L(scan));
    for (int j = 0; j < SCHED_CLASSES; j++) {                    /* warp 0: lane w scans warp w's count of class j */
        INS(e, MAD_LO_U32, R(a), R(k->lane), I(SCHED_CLASSES * 4), R(counts));
        INS(e, LD_SHARED_B32, R(v), A(a, 4 * j));
        INS(e, MOV_B32, R(wc), R(v));
        warp_scan(k, wc);
        INS(e, SUB_U32, R(v), R(wc), R(v));
        INS(e, ADD_U32, R(v), R(v), R(run[j]));
        INS(e, SUB_U32, R(a), R(a), R(counts));
        INS(e, ADD_U32, R(a), R(a), R(starts));
        INS(e, ST_SHARED_B32, A(a, 4 * j), R(v));
        INS(e, SHFL_IDX, R(wc), R(wc), I(31), I(31), I(-1));
        INS(e, ADD_U32, R(run[j]), R(run[j]), R(wc));
    }
    e_place(e, scan);
    INS(e, BAR_SYNC, I(0));
    INS(e, MOV_B32, R(lt), SR("%lanemask_lt"));
    INS(e, AND_B32, R(mine), R(mine), R(lt));
    INS(e, POPC_B32, R(mine), R(mine));
    INS(e, MIN_U32, R(q), R(q), I(SCHED_CLASSES - 1));            /* (past the tiles: read, not used) */
    INS(e, MAD_LO_U32, R(a), R(k->warp), I(SCHED_CLASSES), R(q));
    INS(e, SHL_B32, R(a), R(a), I(2));
    INS(e, ADD_U32, R(a), R(a), R(starts));
    INS(e, LD_SHARED_B32, R(v), A(a, 0));
    INS(e, ADD_U32, R(v), R(v), R(mine));
    INS(e, ADD_U32, R(v), R(v), R(tiles));
    INS(e, MAD_WIDE_U32, R(at), R(v), I(4), R(ord));
    INSP(e, valid, 0, ST_GLOBAL_B32, A(at, 0), R(t));
    INS(e, ADD_U32, R(base), R(base), I(32 * ORDER_WARPS));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

/* The tiles in their own order (the counts do not sum to them) */
static void place_identity(Kctx *k, Reg tiles) {
    Emit *e = &k->e;
    int top = e_label(e), done = e_label(e);
    Reg t = e_reg(e, RC_B32), i = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), at = e_reg(e, RC_B64);
    INS(e, MOV_B32, R(t), R(k->tid));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(t), R(tiles));
    INSP(e, p, 0, BRA, L(done));
    INS(e, ADD_U32, R(i), R(t), R(tiles));
    INS(e, MAD_WIDE_U32, R(at), R(i), I(4), R(kc_ptr(k, "tile_order")));
    INS(e, ST_GLOBAL_B32, A(at, 0), R(t));
    INS(e, ADD_U32, R(t), R(t), I(32 * ORDER_WARPS));
    INS(e, BRA, L(top));
    e_place(e, done);
}

static void emit_order(Kctx *k, const Plan *pl, int bm) {
    Emit *e = &k->e;
    Reg tiles = sched_tiles(k, bm), run[SCHED_CLASSES], c = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
    Reg y = e_reg(e, RC_B32), src = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED);
    Reg whole = e_reg(e, RC_B32), flag = e_reg(e, RC_B32), at = e_reg(e, RC_B64), cls = kc_ptr(k, "tile_classes");
    int identity = e_label(e), end = e_label(e);
    INS(e, ADD_U32, R(flag), R(k->smem), I(plan_region(pl, "whole")));
    /* every warp: lane j < 8 takes class j's count; the places before it are the classes above it */
    INS(e, SETP_LT_U32, R(mine), R(k->lane), I(SCHED_CLASSES));
    INS(e, MOV_B32, R(c), I(0));
    INS(e, MAD_WIDE_U32, R(at), R(k->lane), I(4), R(cls));
    INSP(e, mine, 0, LD_GLOBAL_B32, R(c), A(at, 0));
    INS(e, MOV_B32, R(x), R(c));
    for (int dl = 1; dl < SCHED_CLASSES; dl *= 2) {              /* x: the count of classes lane .. 7 */
        INS(e, ADD_U32, R(src), R(k->lane), I(dl));
        INS(e, SHFL_IDX, R(y), R(x), R(src), I(31), I(-1));
        INS(e, SETP_LT_U32, R(p), R(src), I(SCHED_CLASSES));
        INSP(e, p, 0, ADD_U32, R(x), R(x), R(y));
    }
    INS(e, SHFL_IDX, R(whole), R(x), I(0), I(31), I(-1));
    INS(e, SUB_U32, R(x), R(x), R(c));
    for (int j = 0; j < SCHED_CLASSES; j++) {
        run[j] = e_reg(e, RC_B32);
        INS(e, SHFL_IDX, R(run[j]), R(x), I(j), I(31), I(-1));
    }
    INS(e, BAR_SYNC, I(0));                                       /* every thread read the counts */
    INS(e, SETP_EQ_U32, R(p), R(k->tid), I(0));
    INSP(e, p, 0, ST_SHARED_B32, A(flag, 0), R(whole));
    INS(e, SETP_LT_U32, R(p), R(k->tid), I(SCHED_CLASSES));      /* set back to 0 for the next launch */
    INSP(e, p, 0, ST_GLOBAL_B32, A(at, 0), I(0));
    INS(e, SETP_NE_U32, R(p), R(whole), R(tiles));
    INSP(e, p, 0, BRA_UNI, L(identity));
    place_tiles(k, pl, tiles, run);
    INS(e, BRA_UNI, L(end));
    e_place(e, identity);
    place_identity(k, tiles);
    e_place(e, end);
}

void sched_order_build(const AttnDesc *d, int bm, KernelSpec *ks, Buf *module) {
    static const char *const sizes[] = {"s_q", "h_q", "b"};
    Plan pl;
    sched_order_plan(d, bm, &pl);
    *ks = (KernelSpec){.block = {32 * ORDER_WARPS, 1, 1}, .dyn_smem = (unsigned)pl.smem_bytes};
    snprintf(ks->entry, sizeof ks->entry, "attn_sparse_tile_order_bm%d", bm);
    sched_order_abi(ks, "the tiles' classes read, their order written here; the counts set back to 0");
    abi_sizes(ks, sizes, 3);
    for (int i = 0; i < 3; i++) snprintf(ks->grid[i], sizeof ks->grid[i], "1");
    Kctx kc;
    kctx_begin(&kc, ks);
    emit_order(&kc, &pl, bm);
    kctx_finish(&kc, module);
}

Reg sched_next(Kctx *k, const TileSlots *ts, Reg tiles) {
    Emit *e = &k->e;
    Reg ctr = kc_ptr(k, "tile_counter"), old = e_reg(e, RC_B32), last = e_reg(e, RC_B32), is_last = e_reg(e, RC_PRED);
    INS(e, ATOM_GLOBAL_ADD_U32, R(old), A(ctr, 0), I(1));
    INS(e, MOV_B32, R(last), SR("%nctaid.x"));
    INS(e, ADD_U32, R(last), R(last), R(tiles));
    INS(e, SUB_U32, R(last), R(last), I(1));
    INS(e, SETP_EQ_U32, R(is_last), R(old), R(last));
    INSP(e, is_last, 0, ST_GLOBAL_B32, A(ctr, 0), I(0));   /* no atomic follows this one in the launch */
    if (!ts->order) return old;
    Reg tile = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), i = e_reg(e, RC_B32), at = e_reg(e, RC_B64);
    INS(e, MOV_B32, R(tile), R(old));
    INS(e, SETP_LT_U32, R(in), R(old), R(tiles));
    INS(e, ADD_U32, R(i), R(old), R(tiles));
    INS(e, MAD_WIDE_U32, R(at), R(i), I(4), R(kc_ptr(k, "tile_order")));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(tile), A(at, 0));   /* written by the order kernel before this one */
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
