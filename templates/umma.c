/* tcgen05 building blocks (umma.h). */
#include "umma.h"
#include "mbar.h"
#include "smem_desc.h"

uint32_t umma_idesc_f16(DType dt, int m, int n, int a_mn, int b_mn) {
    uint32_t ab = dt == DT_BF16 ? 1u : 0u;   /* 0 f16, 1 bf16 */
    return 1u << 4                          /* D: f32 */
           | ab << 7 | ab << 10             /* A, B formats */
           | (uint32_t)a_mn << 15 | (uint32_t)b_mn << 16
           | (uint32_t)(n >> 3) << 17 | (uint32_t)(m >> 4) << 24;
}

/* layout type, bits 61-63: 2 128B, 4 64B, 6 32B swizzle */
static uint64_t layout_bits(int swizzle) {
    return (uint64_t)(swizzle == 128 ? 2 : swizzle == 64 ? 4 : 6) << 61;
}

Reg umma_desc(Kctx *k, int off, UmmaLayout l) {
    return smem_desc(k, off, smem_desc_offsets(l.lbo, l.sbo) | 1ull << 46 | layout_bits(l.swizzle));
}

Reg umma_desc_at(Kctx *k, Reg desc, int bytes) { return smem_desc_at(k, desc, bytes); }

/* cp.async of one 128-byte row r of a slab at slab_addr: 8 x 16 bytes from
 * src, src-size bytes each (16, or 0 for a zero row that reads nothing),
 * chunk c stored at chunk c ^ (r & 7). */
static void row_copy(Kctx *k, Reg slab_addr, Reg r, Reg src, Reg srcsize) {
    Emit *e = &k->e;
    Reg base = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(base), R(r), I(128), R(slab_addr));
    INS(e, AND_B32, R(x), R(r), I(7));
    INS(e, SHL_B32, R(x), R(x), I(4));
    for (int c = 0; c < 8; c++) {
        Reg t = e_reg(e, RC_B32), dst = e_reg(e, RC_B32);
        INS(e, XOR_B32, R(t), R(x), I(16 * c));
        INS(e, ADD_U32, R(dst), R(base), R(t));
        INS(e, CP_ASYNC_CG_16, A(dst, 0), A(src, 16 * c), I(16), R(srcsize));
    }
}

void umma_tile_copy(Kctx *k, Reg tile_addr, int rows, int cols, int threads, Reg src, Reg stride, Reg nrows) {
    Emit *e = &k->e;
    int slabs = cols / UMMA_SLAB_COLS, tasks = rows * slabs;
    for (int p = 0; p < tasks; p += threads) {
        /* task p + tid: row (p + tid) % rows of slab (p + tid) / rows */
        Reg task = e_reg(e, RC_B32), r = e_reg(e, RC_B32), s = e_reg(e, RC_B32), in = e_reg(e, RC_PRED);
        Reg ok = e_reg(e, RC_PRED), row = e_reg(e, RC_B32), sz = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
        int skip = e_label(e);
        INS(e, ADD_U32, R(task), R(k->tid), I(p));
        INS(e, SETP_LT_U32, R(in), R(task), I(tasks));
        INSP(e, in, 1, BRA, L(skip));
        INS(e, REM_U32, R(r), R(task), I(rows));
        INS(e, DIV_U32, R(s), R(task), I(rows));
        INS(e, SETP_LT_U32, R(ok), R(r), R(nrows));
        INS(e, SELP_B32, R(row), R(r), I(0), R(ok));         /* a zero row reads nothing: row 0's address */
        INS(e, SELP_B32, R(sz), I(16), I(0), R(ok));
        INS(e, MAD_WIDE_U32, R(a), R(row), R(stride), R(src));
        INS(e, MAD_WIDE_U32, R(a), R(s), I(128), R(a));      /* the slab's 64 columns in the source row */
        Reg slab = e_reg(e, RC_B32);
        INS(e, MAD_LO_U32, R(slab), R(s), I(rows * 128), R(tile_addr));
        row_copy(k, slab, r, a, sz);
        e_place(e, skip);
    }
}

Opnd umma_mn_row_chunk(Kctx *k, Reg tile_addr, Reg r, int w, int c) {
    Emit *e = &k->e;
    Reg x = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
    /* the swizzle XORs address bits [4, 4 + log2(w/16)) with the bits from 7 up */
    INS(e, MUL_LO_U32, R(x), R(r), I(w / 8));                /* (r * w / 128) << 4 */
    INS(e, AND_B32, R(x), R(x), I(w - 16));
    INS(e, XOR_B32, R(x), R(x), I(16 * c));
    INS(e, MAD_LO_U32, R(a), R(r), I(w), R(tile_addr));
    INS(e, ADD_U32, R(a), R(a), R(x));
    return A(a, 0);
}

Reg umma_prologue(Kctx *k, int bars, int n, const Opnd *counts, Reg *bar, int cols, int pair, Reg *tq) {
    Emit *e = &k->e;
    Reg w0 = e_reg(e, RC_PRED);
    mbar_init(k, bars, n, counts, bar);
    int noalloc = e_label(e);
    INS(e, SETP_EQ_U32, R(w0), R(k->warp), I(0));
    INSP(e, w0, 1, BRA, L(noalloc));
    if (pair) {
        INS(e, TC_ALLOC_2, A(k->smem, bars + 8 * n), I(cols));
        INS0(e, TC_RELINQUISH_2);
    } else {
        INS(e, TC_ALLOC_1, A(k->smem, bars + 8 * n), I(cols));
        INS0(e, TC_RELINQUISH_1);
    }
    e_place(e, noalloc);
    if (pair) umma_pair_sync(k);
    else umma_sync(k);
    Reg taddr = e_reg(e, RC_B32);
    *tq = e_reg(e, RC_B32);
    INS(e, LD_SHARED_B32, R(taddr), A(k->smem, bars + 8 * n));
    umma_lane_quarter(k, taddr, *tq);
    return taddr;
}

void umma_lane_quarter(Kctx *k, Reg taddr, Reg tq) {
    Emit *e = &k->e;
    Reg quarter = e_reg(e, RC_B32);
    INS(e, AND_B32, R(quarter), R(k->warp), I(3));
    INS(e, SHL_B32, R(tq), R(quarter), I(21));               /* lane 32 (w % 4) in bits 16 and up */
    INS(e, ADD_U32, R(tq), R(tq), R(taddr));
}

void umma_epilogue(Kctx *k, Reg taddr, int cols, int pair) {
    Emit *e = &k->e;
    Reg w0 = e_reg(e, RC_PRED);
    int kept = e_label(e);
    if (pair) umma_pair_sync(k);
    else umma_sync(k);
    INS(e, SETP_EQ_U32, R(w0), R(k->warp), I(0));
    INSP(e, w0, 1, BRA, L(kept));
    if (pair) INS(e, TC_DEALLOC_2, R(taddr), I(cols));
    else INS(e, TC_DEALLOC_1, R(taddr), I(cols));
    e_place(e, kept);
}

Reg umma_const_pred(Kctx *k, int v) { return kc_pred(k, v); }

int umma_leader_only(Kctx *k, Reg leader) {
    int past = e_label(&k->e);
    INSP(&k->e, leader, 1, BRA, L(past));
    return past;
}

void umma_sync(Kctx *k) {
    INS0(&k->e, TC_FENCE_BEFORE);
    INS(&k->e, BAR_SYNC, I(0));
    INS0(&k->e, TC_FENCE_AFTER);
}

static void wait_at(Kctx *k, Reg bar, Reg parity, int cluster) {
    mbar_wait(k, bar, parity, cluster);
    INS0(&k->e, TC_FENCE_AFTER);
}

void umma_wait(Kctx *k, Reg bar, Reg parity) { wait_at(k, bar, parity, 0); }
void umma_wait_cluster(Kctx *k, Reg bar, Reg parity) { wait_at(k, bar, parity, 1); }

void umma_pair_sync(Kctx *k) {
    INS0(&k->e, TC_FENCE_BEFORE);
    INS0(&k->e, CLUSTER_ARRIVE);
    INS0(&k->e, CLUSTER_WAIT);
    INS0(&k->e, TC_FENCE_AFTER);
}

void umma_tmem_load(Kctx *k, Reg col, int off, Reg *v, int n) {
    for (int c = 0; c < n; c += 16) INS(&k->e, TC_LD_32X32B_X16, V(16, v + c), A(col, off + c));
    INS0(&k->e, TC_WAIT_LD);
}

void umma_roles6(Kctx *k, const char *name, UmmaRole lanes, UmmaRole issuer, UmmaRole producer, void *ctx) {
    Emit *e = &k->e;
    Reg role = e_reg(e, RC_PRED);
    int not_lanes = e_label(e), not_issuer = e_label(e), done = e_label(e);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(128));
    INSP(e, role, 1, BRA_UNI, L(not_lanes));
    e_comment(e, "role: %s (warps 0-3)", name);
    lanes(k, ctx);
    INS(e, BRA_UNI, L(done));
    e_place(e, not_lanes);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(160));
    INSP(e, role, 1, BRA_UNI, L(not_issuer));
    e_comment(e, "role: MMA issuer (warp 4)");
    issuer(k, ctx);
    INS(e, BRA_UNI, L(done));
    e_place(e, not_issuer);
    e_comment(e, "role: producer (warp 5)");
    producer(k, ctx);
    e_place(e, done);
}
