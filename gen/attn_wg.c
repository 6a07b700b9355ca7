/* What the wgmma attention kernels share (attn_wg.h). */
#include "attn_wg.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../templates/mbar.h"
#include "../templates/wgmma.h"

/* The slabs of one [rows][cols] tile at shared offset dst, rows from `row` of head `head`. */
void wg_tma_rows(Kctx *k, Reg map, int dst, int rows, int cols, Reg stage_off, Reg head, Reg row, Reg b, Reg bar) {
    Emit *e = &k->e;
    for (int s = 0; s < cols / WG_SLAB_COLS; s++) {
        Reg col = kc_imm32(k, s * WG_SLAB_COLS), a = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(a), R(k->smem), R(stage_off));
        Reg c[4] = {col, head, row, b};
        INS(e, TMA_LOAD_4D, A(a, dst + s * rows * 128), TA(map, 4, c), A(bar, 0));
    }
}

/* page j's rows of each 64-column slab: the box's 16 or 32 rows are whole 8-row groups of the 128-byte swizzle */
static void tma_pages(Kctx *k, Reg map, int dst, int rows, int page, int cols, Reg stage_off, Reg head, const Reg *ids,
                      Reg bar) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B32), row = kc_imm32(k, 0);
    INS(e, ADD_U32, R(a), R(k->smem), R(stage_off));
    for (int j = 0; j < rows / page; j++)
        for (int s = 0; s < cols / WG_SLAB_COLS; s++) {
            Reg c[4] = {kc_imm32(k, s * WG_SLAB_COLS), head, row, ids[j]};
            INS(e, TMA_LOAD_4D, A(a, dst + s * rows * 128 + j * page * 128), TA(map, 4, c), A(bar, 0));
        }
}

WgKeyBlock wg_key_block(Kctx *k, int page_size, int rows, Reg b, Reg row, Reg s_k, Reg tb) {
    WgKeyBlock kb = {.row = row, .tb = tb, .page = page_size};
    if (!page_size) return kb;
    if (page_size >= rows) {   /* the block lies in one page */
        kb.tb = paged_page(k, page_size, b, row);
        return kb;
    }
    if (rows / page_size > WG_MAX_PAGES) {   /* pages of 16 at least (parse_paged), key tiles of 256 at most */
        fprintf(stderr, "ptxgen internal: a key tile of %d rows spans %d pages of %d, more than %d\n", rows, rows / page_size,
                page_size, WG_MAX_PAGES);
        abort();
    }
    Reg in;
    kb.spans = 1;
    for (int j = 0; j < rows / page_size; j++)   /* a walked block starts before s_k: page 0 is the sequence's own */
        kb.ids[j] = paged_sub_page(k, page_size, b, row, j, s_k, j ? kb.ids[0] : kc_imm32(k, 0), &in, NULL);
    return kb;
}

void wg_tma_key_block(Kctx *k, Reg map, int dst, int rows, int cols, Reg stage_off, Reg head, const WgKeyBlock *kb, Reg bar) {
    if (kb->spans) tma_pages(k, map, dst, rows, kb->page, cols, stage_off, head, kb->ids, bar);
    else wg_tma_rows(k, map, dst, rows, cols, stage_off, head, kb->row, kb->tb, bar);
}

void wg_roles(Kctx *k, Reg is_consumer, WgRole producer, WgRole consumer, void *ctx) {
    Emit *e = &k->e;
    int consumers = e_label(e), end = e_label(e);
    INSP(e, is_consumer, 0, BRA_UNI, L(consumers));
    producer(k, ctx);
    INS(e, BRA_UNI, L(end));
    e_place(e, consumers);
    consumer(k, ctx);
    e_place(e, end);
}

void wg_each_consumer(Kctx *k, Reg wg, Reg pred, int n, WgSide side, void *ctx) {
    Emit *e = &k->e;
    int next = e_label(e), end = e_label(e);
    for (int c = 0; c < n - 1; c++) {   /* the last warpgroup falls through to the last copy */
        INS(e, SETP_NE_U32, R(pred), R(wg), I(c));
        INSP(e, pred, 0, BRA_UNI, L(next));
        side(k, ctx, c);
        INS(e, BRA_UNI, L(end));
        e_place(e, next);
        if (c + 2 < n) next = e_label(e);
    }
    side(k, ctx, n - 1);
    e_place(e, end);
}

Reg wg_lead(Kctx *k) {
    Emit *e = &k->e;
    Reg lead = e_reg(e, RC_PRED), wt = e_reg(e, RC_B32);
    INS(e, AND_B32, R(wt), R(k->tid), I(127));
    INS(e, SETP_EQ_U32, R(lead), R(wt), I(0));
    return lead;
}

/* A warpgroup's 64 staged rows (from row wrow of the slabs at shared offset src) to rows from `row`, columns from
 * *col0 (NULL: 0). */
static void tma_store_rows(Kctx *k, Reg map, int src, int cols, const Reg *col0, int slab_bytes, Reg wrow, Reg head,
                           Reg row, Reg b) {
    Emit *e = &k->e;
    for (int s = 0; s < cols / WG_SLAB_COLS; s++) {
        Reg a = e_reg(e, RC_B32), col;
        if (col0) INS(e, ADD_U32, R(col = e_reg(e, RC_B32)), R(*col0), I(s * WG_SLAB_COLS));
        else col = kc_imm32(k, s * WG_SLAB_COLS);
        INS(e, MAD_LO_U32, R(a), R(wrow), I(128), R(k->smem));
        Reg c[4] = {col, head, row, b};
        INS(e, TMA_STORE_4D, TA(map, 4, c), A(a, src + s * slab_bytes));
    }
}

/* The frame of a warpgroup's TMA store: what its threads staged is fenced for the async proxy and the
 * group meets at barrier bar; then only thread 0 goes on (to the returned label's end: store_end). */
static int store_begin(Kctx *k, Reg bar) {
    Emit *e = &k->e;
    INS0(e, FENCE_PROXY_ASYNC_CTA);                              /* the TMA store reads what the threads wrote */
    INS(e, BAR_SYNC_N, R(bar), I(128));
    Reg lead = wg_lead(k);
    int skip = e_label(e);
    INSP(e, lead, 1, BRA, L(skip));
    return skip;
}

static void store_end(Kctx *k, int skip, int wait) {
    Emit *e = &k->e;
    INS0(e, BULK_COMMIT);
    if (wait) INS(e, BULK_WAIT_READ, I(0));                       /* shared memory stays until the copy read it */
    e_place(e, skip);
}

static void store_group(Kctx *k, Reg bar, Reg wg, Reg row0, const WgStore *st, int n, int slab_bytes, Reg head, Reg b,
                        int wait) {
    Emit *e = &k->e;
    int skip = store_begin(k, bar);
    Reg map0 = kc_tmap(k, st[0].map), row = e_reg(e, RC_B32), wrow = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(wrow), R(wg), I(64));
    INS(e, ADD_U32, R(row), R(row0), R(wrow));
    for (int i = 0; i < n; i++)
        tma_store_rows(k, i ? kc_tmap(k, st[i].map) : map0, st[i].src, st[i].cols, st[i].col0, slab_bytes, wrow, head,
                       row, b);
    store_end(k, skip, wait);
}

void wg_store_group(Kctx *k, Reg bar, Reg wg, Reg row0, const WgStore *st, int n, int slab_bytes, Reg head, Reg b) {
    store_group(k, bar, wg, row0, st, n, slab_bytes, head, b, 1);
}

void wg_store_group_async(Kctx *k, Reg bar, Reg wg, Reg row0, const WgStore *st, int n, int slab_bytes, Reg head, Reg b) {
    store_group(k, bar, wg, row0, st, n, slab_bytes, head, b, 0);
}

void wg_store_wait(Kctx *k) {
    Emit *e = &k->e;
    Reg lead = wg_lead(k);
    int skip = e_label(e);
    INSP(e, lead, 1, BRA, L(skip));
    INS(e, BULK_WAIT_READ, I(0));
    e_place(e, skip);
}

void wg_store_cols(Kctx *k, Reg bar, const char *map, Reg src, int nslabs, int slab_bytes, Reg col0, Reg head, Reg row,
                   Reg b) {
    Emit *e = &k->e;
    int skip = store_begin(k, bar);
    Reg m = kc_tmap(k, map);
    for (int s = 0; s < nslabs; s++) {
        Reg col = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(col), R(col0), I(s * WG_SLAB_COLS));
        Reg c[4] = {col, head, row, b};
        INS(e, TMA_STORE_4D, TA(m, 4, c), A(src, s * slab_bytes));
    }
    store_end(k, skip, 1);
}

void wg_store_rows_masked(Kctx *k, Reg bar, Reg wg, int src, int cols, int slab_bytes, Reg base, Reg rs, Reg rows_left) {
    Emit *e = &k->e;
    Reg t = e_reg(e, RC_B32), c = e_reg(e, RC_B32), r0 = e_reg(e, RC_B32), wrow = e_reg(e, RC_B32);
    INS(e, BAR_SYNC_N, R(bar), I(128));                          /* every thread's staged pairs are in */
    INS(e, AND_B32, R(t), R(k->tid), I(127));
    INS(e, AND_B32, R(c), R(t), I(7));                           /* the thread's 16-byte chunk of a row */
    INS(e, SHR_U32, R(r0), R(t), I(3));                          /* and its first row, 16 apart */
    INS(e, MUL_LO_U32, R(wrow), R(wg), I(64));
    for (int i = 0; i < 4; i++) {
        Reg r = e_reg(e, RC_B32), row = e_reg(e, RC_B32), sw = e_reg(e, RC_B32), sa = e_reg(e, RC_B32);
        Reg ok = e_reg(e, RC_PRED), g = e_reg(e, RC_B64), off = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(r), R(r0), I(16 * i));
        INS(e, ADD_U32, R(row), R(wrow), R(r));
        INS(e, SETP_LT_U32, R(ok), R(row), R(rows_left));
        INS(e, AND_B32, R(sw), R(r), I(7));                      /* 128B swizzle: chunk c of row r at c ^ (r & 7) */
        INS(e, XOR_B32, R(sw), R(sw), R(c));
        INS(e, MAD_LO_U32, R(sa), R(row), I(128), R(k->smem));
        INS(e, MAD_LO_U32, R(sa), R(sw), I(16), R(sa));
        INS(e, MAD_WIDE_U32, R(g), R(row), R(rs), R(base));
        INS(e, SHL_B32, R(off), R(c), I(4));
        INS(e, MAD_WIDE_U32, R(g), R(off), I(1), R(g));
        for (int s = 0; s < cols / WG_SLAB_COLS; s++) {
            Reg v[4];
            for (int j = 0; j < 4; j++) v[j] = e_reg(e, RC_B32);
            INSP(e, ok, 0, LD_SHARED_V4_B32, V4(v[0], v[1], v[2], v[3]), A(sa, src + s * slab_bytes));
            INSP(e, ok, 0, ST_GLOBAL_V4_B32, A(g, 2 * WG_SLAB_COLS * s), V4(v[0], v[1], v[2], v[3]));
        }
    }
}


Reg wg_ring_slot(Kctx *k, Reg bar0, Reg twin0, int stages, Reg it, int slot_bytes, Reg *bar, Reg *parity, Reg *twin) {
    Emit *e = &k->e;
    Reg slot = e_reg(e, RC_B32), stage = e_reg(e, RC_B32);
    mbar_stage(k, bar0, it, stages, bar, parity);
    INS(e, SUB_U32, R(slot), R(*bar), R(bar0));      /* 8 bytes per slot */
    *twin = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(*twin), R(twin0), R(slot));
    INS(e, SHR_U32, R(stage), R(slot), I(3));
    INS(e, MUL_LO_U32, R(stage), R(stage), I(slot_bytes));
    return stage;
}

/* Every warp's share of the group's products is done: lane 0 of each frees the slot, and the ring moves on. */
void wg_release(Kctx *k, Reg empty, Reg it) {
    Emit *e = &k->e;
    Reg l0 = e_reg(e, RC_PRED), st = e_reg(e, RC_B64);
    INS(e, SETP_EQ_U32, R(l0), R(k->lane), I(0));
    INSP(e, l0, 0, MBAR_ARRIVE, R(st), A(empty, 0));
    INS(e, ADD_U32, R(it), R(it), I(1));
}

/* A descriptor at a runtime stage offset from a compile-time one. */
Reg wg_desc_plus(Kctx *k, Reg desc, Reg stage) {
    Emit *e = &k->e;
    Reg s = e_reg(e, RC_B32), s64 = e_reg(e, RC_B64), out = e_reg(e, RC_B64);
    INS(e, SHR_U32, R(s), R(stage), I(4));
    INS(e, CVT_U64_U32, R(s64), R(s));
    INS(e, ADD_U64, R(out), R(desc), R(s64));
    return out;
}

/* What the producer keeps after setmaxnreg.dec, and what the consumers take: the rest of the
 * register file, in steps of 8. One consumer warpgroup (256 threads) already starts with 248
 * registers, more than setmaxnreg.inc could raise it to usefully: no setmaxnreg then (0). */
int wg_producer_regs(int cw, int producer) { return producer == 4 && cw > 1 ? WG_PRODUCER_REGS : 0; }
void wg_default_step(AttnDesc *d, int *step, const char *key, int allowed, int fallback, const char *asked,
                     void (*plan)(const AttnDesc *, Plan *)) {
    char asked_key[16];
    snprintf(asked_key, sizeof asked_key, "%s=", key);
    if (asked && strstr(asked, asked_key)) return;
    Plan p = {0};
    if (allowed) plan(d, &p);
    if (!p.ok) *step = fallback;
}

int wg_consumer_regs(int cw, int producer) {
    if (!wg_producer_regs(cw, producer)) {   /* the launch's share of the register file, threads counted in whole
                                               warpgroups (a 288-thread wgmma kernel with 201 registers was refused
                                               launch on the H200) */
        int r = 65536 / ((128 * cw + 32 * producer + 127) / 128 * 128);
        r -= r % 8;
        return r > 255 ? 255 : r;
    }
    int r = (65536 / 128 - WG_PRODUCER_REGS) / cw;
    r -= r % 8;
    return r > 240 ? 240 : r;
}

static const char *hdim_text(int d) { return d == 64 ? "64" : d == 128 ? "128" : d == 192 ? "192" : d == 256 ? "256" : "?"; }

void wg_bshd_map_heads(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                       const char *seq, int box_heads, int rows, const char *const strides[3]) {
    TensorMapSpec m = {.param = param, .tensor = tensor, .dtype = dt, .rank = 4,
                       .dims = {hdim_text(d), heads, seq, "b"}, .strides = {strides[0], strides[1], strides[2]},
                       .box = {WG_SLAB_COLS, box_heads, rows, 1}, .elem_strides = {1, 1, 1, 1}, .swizzle = "128B",
                       .interleave = "none", .oob_fill = "zero"};
    abi_tensor_map(ks, tensor, box_heads == 1 ? "TMA map, box 64 columns x rows of one head, 128B swizzle; the tensor's h, s and b "
                   "strides must be multiples of 8 elements (16 bytes) and its base 16-byte aligned"
                   : "TMA map, box 64 columns x rows x heads (heads innermost), 128B swizzle; the tensor's h, s and b "
                   "strides must be multiples of 8 elements (16 bytes) and its base 16-byte aligned", m);
}

void wg_bshd_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                 const char *seq, int rows, const char *const strides[3]) {
    wg_bshd_map_heads(ks, param, tensor, dt, d, heads, seq, 1, rows, strides);
}

void wg_paged_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, int page_size, int rows) {
    /* expressions need static storage: the page sizes, the two tensors' strides (page, row, head) */
    static const char *const pages[5] = {"16", "32", "64", "128", "256"};
    static const char *const st[2][3] = {{"k_stride_h * 2", "k_stride_s * 2", "k_stride_b * 2"},
                                         {"v_stride_h * 2", "v_stride_s * 2", "v_stride_b * 2"}};
    int v = !strcmp(tensor, "v");
    TensorMapSpec m = {.param = param, .tensor = tensor, .dtype = dt, .rank = 4,
                       .dims = {hdim_text(d), "h_kv", pages[__builtin_ctz((unsigned)page_size) - 4], "num_pages"},
                       .strides = {st[v][0], st[v][1], st[v][2]}, .box = {WG_SLAB_COLS, 1, rows, 1},
                       .elem_strides = {1, 1, 1, 1}, .swizzle = "128B", .interleave = "none", .oob_fill = "zero"};
    abi_tensor_map(ks, tensor, "TMA map over the paged cache, box 64 columns x rows of one head in one page, 128B "
                   "swizzle; the cache's h, s and page strides must be multiples of 8 elements (16 bytes) and its base "
                   "16-byte aligned", m);
}

void wg_packed_map(KernelSpec *ks, const char *param, const char *tensor, const char *dt, int d, const char *heads,
                   const char *total, int rows) {
    /* expressions need static storage: one row per tensor, q k v o */
    static const char *const names[5] = {"q", "k", "v", "o", "do"};
    static const char *const st[5][3] = {
        {"q_stride_h * 2", "q_stride_s * 2", "q_stride_s * 2 * max(total_q, 1)"},
        {"k_stride_h * 2", "k_stride_s * 2", "k_stride_s * 2 * max(total_k, 1)"},
        {"v_stride_h * 2", "v_stride_s * 2", "v_stride_s * 2 * max(total_k, 1)"},
        {"o_stride_h * 2", "o_stride_s * 2", "o_stride_s * 2 * max(total_q, 1)"},
        {"do_stride_h * 2", "do_stride_s * 2", "do_stride_s * 2 * max(total_q, 1)"}};
    static const char *const tot[2] = {"max(total_q, 1)", "max(total_k, 1)"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(names[i], tensor)) continue;
        TensorMapSpec m = {.param = param, .tensor = tensor, .dtype = dt, .rank = 4,
                           .dims = {hdim_text(d), heads, tot[strcmp(total, "total_q") != 0], "1"},
                           .strides = {st[i][0], st[i][1], st[i][2]}, .box = {WG_SLAB_COLS, 1, rows, 1},
                           .elem_strides = {1, 1, 1, 1}, .swizzle = "128B", .interleave = "none", .oob_fill = "zero"};
        abi_tensor_map(ks, tensor, "TMA map over the packed tensor, box 64 columns x rows of one head, 128B swizzle; "
                       "its h and s strides must be multiples of 8 elements (16 bytes) and its base 16-byte aligned", m);
        return;
    }
    fprintf(stderr, "ptxgen internal: no packed map for tensor '%s'\n", tensor);
    abort();
}
