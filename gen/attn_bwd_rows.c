/* The row-wise kernels of attn_bwd: one CTA per 64 query rows of one head,
 * cpr threads per row (d/8, or its largest power-of-two divisor: 8 at d 192,
 * so that a row's sum is a butterfly), each owning cpt 16-byte chunks of it,
 * cpr apart.
 *   pre:      delta[b, h, i] = sum_c dO[i, c] * O[i, c];  dq_accum rows = 0
 *   convert:  dQ[i, :] = scale * dq_accum[b, h, i, :], rounded to the dtype */
#include "attn_bwd.h"
#include <stdio.h>

typedef struct {
    const AttnDesc *d;
    int cpr, rpp, cpt;   /* threads per row, rows per pass, chunks per thread */
    Reg col, row0;       /* this thread's 16-byte chunk and first row */
    Reg b, h, m0, srow;  /* batch, head, first row of the CTA, stats_row(b, h) */
    Reg s_q;             /* the rows (padded: the parameter; varlen: the sequence's) */
    int done;            /* varlen: the label past the end, for a CTA past its sequence's rows */
} RowCta;

/* The CTA's rows: s_q, and (varlen) the exit of a CTA whose rows start past its sequence's, rounded up to whole
 * blocks of `block` rows (the stats blocks' padding rows are written as 0 by the CTA that holds them). */
static void row_lengths(Kctx *k, const AttnDesc *d, RowCta *rc, int block) {
    attn_lengths(k, d, rc->b, &rc->s_q, NULL);
    if (!d->varlen) return;
    Reg past = e_reg(&k->e, RC_PRED), first = e_reg(&k->e, RC_B32), end = e_reg(&k->e, RC_B32);
    INS(&k->e, MUL_LO_U32, R(first), R(rc->m0), I(BWD_ROWS_PER_CTA));
    INS(&k->e, ADD_U32, R(end), R(rc->s_q), I(block - 1));
    INS(&k->e, DIV_U32, R(end), R(end), I(block));
    INS(&k->e, MUL_LO_U32, R(end), R(end), I(block));
    INS(&k->e, SETP_GE_U32, R(past), R(first), R(end));
    INSP(&k->e, past, 0, BRA_UNI, L(rc->done = e_label(&k->e)));
}

static void row_cta(Kctx *k, const AttnDesc *d, RowCta *rc) {
    Emit *e = &k->e;
    rc->d = d;
    rc->cpr = (d->d / 8) & -(d->d / 8);   /* the lowest set bit: d/8 itself when a power of two */
    rc->cpt = d->d / 8 / rc->cpr;
    rc->rpp = BWD_ROW_THREADS / rc->cpr;
    rc->col = e_reg(e, RC_B32), rc->row0 = e_reg(e, RC_B32), rc->m0 = e_reg(e, RC_B32);
    INS(e, REM_U32, R(rc->col), R(k->tid), I(rc->cpr));
    INS(e, DIV_U32, R(rc->row0), R(k->tid), I(rc->cpr));
    cta_coords(k, &rc->b, &rc->h);
    INS(e, MOV_B32, R(rc->m0), SR("%ctaid.x"));
    INS(e, MAD_LO_U32, R(rc->row0), R(rc->m0), I(BWD_ROWS_PER_CTA), R(rc->row0));
    rc->srow = attn_stats_row(k, d, rc->b, rc->h);
}

/* base + row * stride + 16 * col for a strided [b, s, h, d] tensor: the thread's chunk 0; chunk j is 16 cpr j
 * bytes on */
static Reg chunk_addr(Kctx *k, const RowCta *rc, const char *t, Reg row) {
    Emit *e = &k->e;
    Reg base = attn_head_base(k, rc->d, t, rc->b, rc->h), a = e_reg(e, RC_B64), off = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(off), R(rc->col), I(16));
    INS(e, MAD_WIDE_U32, R(a), R(row), R(row_stride_bytes(k, t)), R(base));
    INS(e, MAD_WIDE_U32, R(a), R(off), I(1), R(a));
    return a;
}

/* a + bytes (the same register at 0) */
static Reg plus(Kctx *k, Reg a, int bytes) {
    if (!bytes) return a;
    Reg b = e_reg(&k->e, RC_B64);
    INS(&k->e, ADD_U64, R(b), R(a), I(bytes));
    return b;
}

/* one row of pre: rows past s_q read the last row (in bounds) and store nothing */
/* Row `row`'s lse and delta (0 past s_q) into its block of the stats workspace: block row / B of
 * cdiv(s_q, B), at (b h_q + h) blocks on; lse at row % B, delta B floats later. The grid's last CTA may run past the
 * blocks' rows (whole CTAs of 64 rows; B 80), whose rows store nothing. */
/* With sems (> 0: per block), the block's first row also zeroes the block's dQ semaphores (dq_sem at
 * ((b h_q + h) blocks + block) sems on). */
static void stats_row_out(Kctx *k, const RowCta *rc, int blk_rows, Reg row, Reg in_range, Reg srow, Reg delta, int sems) {
    Emit *e = &k->e;
    Reg nblk = e_reg(e, RC_B32), idx = e_reg(e, RC_B32), t = e_reg(e, RC_B32), lse = e_reg(e, RC_F32);
    Reg dl = e_reg(e, RC_F32), a = e_reg(e, RC_B64), g = e_reg(e, RC_B64), lead = e_reg(e, RC_PRED);
    Reg end = e_reg(e, RC_B32), w = e_reg(e, RC_B32), in_blocks = e_reg(e, RC_PRED);
    INS(e, ADD_U32, R(nblk), R(kc_u32(k, "s_q")), I(blk_rows - 1));
    INS(e, DIV_U32, R(nblk), R(nblk), I(blk_rows));
    INS(e, MUL_LO_U32, R(end), R(nblk), I(blk_rows));
    INS(e, SETP_LT_U32, R(in_blocks), R(row), R(end));
    INS(e, MAD_LO_U32, R(idx), R(rc->b), R(kc_u32(k, "h_q")), R(rc->h));
    INS(e, DIV_U32, R(t), R(row), I(blk_rows));
    INS(e, REM_U32, R(w), R(row), I(blk_rows));
    INS(e, MAD_LO_U32, R(idx), R(idx), R(nblk), R(t));
    INS(e, SETP_EQ_U32, R(lead), R(rc->col), I(0));
    INS(e, AND_PRED, R(lead), R(lead), R(in_blocks));
    if (sems) {
        Reg first = e_reg(e, RC_PRED), sa = e_reg(e, RC_B64);
        INS(e, SETP_EQ_U32, R(first), R(w), I(0));
        INS(e, AND_PRED, R(first), R(first), R(lead));
        INS(e, MAD_WIDE_U32, R(sa), R(idx), I(4 * sems), R(kc_ptr(k, "dq_sem")));
        for (int j = 0; j < sems; j++) INSP(e, first, 0, ST_GLOBAL_B32, A(sa, 4 * j), R(kc_imm32(k, 0)));
    }
    INS(e, MAD_LO_U32, R(idx), R(idx), I(2 * blk_rows), R(w));
    INS(e, MAD_WIDE_U32, R(a), R(idx), I(4), R(kc_ptr(k, "stats")));
    INS(e, MOV_F32, R(lse), FI(0.0f));
    INS(e, MAD_WIDE_U32, R(g), R(srow), I(4), R(kc_ptr(k, "lse")));
    INSP(e, in_range, 0, LD_GLOBAL_F32, R(lse), A(g, 0));
    INS(e, SELP_F32, R(dl), R(delta), FI(0.0f), R(in_range));
    INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(lse));
    INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 4 * blk_rows), R(dl));
}

static void pre_row(Kctx *k, const AttnDesc *d, const RowCta *rc, int pass, Reg s_q, const BwdFeed *fd) {
    Emit *e = &k->e;
    Reg row = e_reg(e, RC_B32), rc_row = e_reg(e, RC_B32), last = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    Reg lead = e_reg(e, RC_PRED), srow = e_reg(e, RC_B32), a = e_reg(e, RC_B64), lim = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(row), R(rc->row0), I(pass * rc->rpp));
    INS(e, SETP_LT_U32, R(p), R(row), R(s_q));
    INS(e, SUB_U32, R(last), R(s_q), I(1));
    INS(e, MIN_U32, R(rc_row), R(row), R(last));
    Reg o[4], g[4], ao = chunk_addr(k, rc, "o", rc_row), ag = {0}, sum = {0};
    for (int j = 0; j < rc->cpt; j++) {
        ld16_global(k, o, plus(k, ao, 16 * rc->cpr * j));
        if (!j) ag = chunk_addr(k, rc, "do", rc_row);
        ld16_global(k, g, plus(k, ag, 16 * rc->cpr * j));
        Reg part = dot8_packed(k, d->dtype, o, g);
        if (j) INS(e, ADD_F32, R(sum), R(sum), R(part));
        else sum = part;
    }
    for (int m = 1; m < rc->cpr; m <<= 1) {
        Reg t = e_reg(e, RC_F32);
        INS(e, SHFL_BFLY, R(t), R(sum), I(m), I(31), I(-1));
        INS(e, ADD_F32, R(sum), R(sum), R(t));
    }
    INS(e, ADD_U32, R(srow), R(rc->srow), R(row));
    if (bwd_delta_ws(d, fd)) {
        /* one thread of the row stores delta: rows below s_q for column 0, none for the others */
        INS(e, SETP_EQ_U32, R(lead), R(rc->col), I(0));
        INS(e, SELP_B32, R(lim), R(s_q), I(0), R(lead));
        INS(e, SETP_LT_U32, R(lead), R(row), R(lim));
        INS(e, MAD_WIDE_U32, R(a), R(srow), I(4), R(kc_ptr(k, "delta")));
        INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(sum));
    }
    if (fd->stats_block)
        stats_row_out(k, rc, fd->stats_block, row, p, srow, sum, bwd_dq_sems(d, fd) ? bwd_sem_parts(fd) : 0);
    if (bwd_dq_kernel(d, fd)) return;
    /* this thread's 2 x 16 bytes of the row's d fp32 values */
    Reg z = kc_imm32(k, 0), acc = e_reg(e, RC_B64), off = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(off), R(rc->col), I(32));
    INS(e, MAD_WIDE_U32, R(acc), R(srow), I(4 * d->d), R(kc_ptr(k, "dq_accum")));
    INS(e, MAD_WIDE_U32, R(acc), R(off), I(1), R(acc));
    for (int c = 0; c < rc->cpt; c++)
        for (int j = 0; j < 2; j++) INSP(e, p, 0, ST_GLOBAL_V4_B32, A(acc, 32 * rc->cpr * c + 16 * j), V4(z, z, z, z));
}

void bwd_pre_emit(const AttnDesc *d, const BwdFeed *fd, const KernelSpec *ks, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    RowCta rc;
    row_cta(&kc, d, &rc);
    row_lengths(&kc, d, &rc, fd->stats_block > BWD_ROWS_PER_CTA ? fd->stats_block : BWD_ROWS_PER_CTA);
    for (int pass = 0; pass < BWD_ROWS_PER_CTA / rc.rpp; pass++) pre_row(&kc, d, &rc, pass, rc.s_q, fd);
    if (d->varlen) e_place(&kc.e, rc.done);
    kctx_finish(&kc, module);
}

static void convert_row(Kctx *k, const AttnDesc *d, const RowCta *rc, int pass, Reg s_q, Reg scale) {
    Emit *e = &k->e;
    Reg row = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), srow = e_reg(e, RC_B32), acc = e_reg(e, RC_B64);
    Reg off = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(row), R(rc->row0), I(pass * rc->rpp));
    INS(e, SETP_LT_U32, R(p), R(row), R(s_q));
    int skip = e_label(e);
    INSP(e, p, 1, BRA, L(skip));
    INS(e, ADD_U32, R(srow), R(rc->srow), R(row));
    INS(e, MUL_LO_U32, R(off), R(rc->col), I(32));
    INS(e, MAD_WIDE_U32, R(acc), R(srow), I(4 * d->d), R(kc_ptr(k, "dq_accum")));
    INS(e, MAD_WIDE_U32, R(acc), R(off), I(1), R(acc));
    Reg dq = {0};
    for (int c = 0; c < rc->cpt; c++) {
        Reg f[8], out[4];
        for (int i = 0; i < 8; i++) f[i] = e_reg(e, RC_F32);
        INS(e, LD_GLOBAL_V4_B32, V4(f[0], f[1], f[2], f[3]), A(acc, 32 * rc->cpr * c));
        INS(e, LD_GLOBAL_V4_B32, V4(f[4], f[5], f[6], f[7]), A(acc, 32 * rc->cpr * c + 16));
        for (int i = 0; i < 8; i++) INS(e, MUL_F32, R(f[i]), R(f[i]), R(scale));
        f32x8_pack(k, d->dtype, f, out);
        if (!c) dq = chunk_addr(k, rc, "dq", row);
        INS(e, ST_GLOBAL_V4_B32, A(dq, 16 * rc->cpr * c), V4(out[0], out[1], out[2], out[3]));
    }
    e_place(e, skip);
}

void bwd_convert_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    RowCta rc;
    row_cta(&kc, d, &rc);
    row_lengths(&kc, d, &rc, BWD_ROWS_PER_CTA);
    Reg scale = kc_f32(&kc, "softmax_scale");
    for (int pass = 0; pass < BWD_ROWS_PER_CTA / rc.rpp; pass++) convert_row(&kc, d, &rc, pass, rc.s_q, scale);
    if (d->varlen) e_place(&kc.e, rc.done);
    kctx_finish(&kc, module);
}

static void row_grid(KernelSpec *ks) {
    ks->block[0] = BWD_ROW_THREADS, ks->block[1] = ks->block[2] = 1;
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_q, %d)", BWD_ROWS_PER_CTA);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_q");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

static const char *const row_sizes[] = {"s_q", "h_q"};

void bwd_pre_spec(const AttnDesc *d, const BwdFeed *fd, KernelSpec *ks) {
    int stats_block = fd->stats_block;
    *ks = (KernelSpec){.pdl = sparse_follows(d)};   /* pre reads no list, but main waits on pre alone */
    bwd_entry(ks, d, "pre", 0);
    attn_tensor(ks, d, "o", PR_IN, "forward output");
    attn_tensor(ks, d, "do", PR_IN, "gradient of the output");
    if (bwd_delta_ws(d, fd)) abi_workspace(ks, "delta", "rowsum(dO * O), written here");
    if (!bwd_dq_kernel(d, fd)) abi_workspace(ks, "dq_accum", "fp32 dQ accumulator, zeroed here");
    if (stats_block) {
        attn_tensor(ks, d, "lse", PR_IN, ATTN_LSE_MEANING);
        abi_workspace(ks, "stats", "per block of query rows its lse, then its delta (0 past s_q), written here");
    }
    if (bwd_dq_sems(d, fd)) abi_workspace(ks, "dq_sem", "the main kernel's dQ semaphores, zeroed here");
    if (d->varlen) abi_varlen(ks);
    abi_sizes(ks, row_sizes, 2);
    row_grid(ks);
    if (stats_block)   /* whole blocks, so that the rows past s_q of the last one are written too */
        snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(cdiv(s_q, %d) * %d, %d)", stats_block, stats_block, BWD_ROWS_PER_CTA);
}

void bwd_convert_spec(const AttnDesc *d, KernelSpec *ks) {
    *ks = (KernelSpec){0};
    bwd_entry(ks, d, "dq_convert", 0);
    abi_workspace(ks, "dq_accum", "fp32 dQ accumulator, read here");
    attn_tensor(ks, d, "dq", PR_OUT, "gradient of the queries");
    if (d->varlen) abi_varlen(ks);
    abi_sizes(ks, row_sizes, 2);
    abi_scale(ks, ATTN_SCALE_MEANING);
    row_grid(ks);
}

void bwd_rows_plan(const AttnDesc *d, Plan *p, const char *what) {
    *p = (Plan){.threads = BWD_ROW_THREADS, .regs_est = 40};
    char name[96];
    snprintf(name, sizeof name, "attn_bwd %s d=%d (%d rows per CTA)", what, d->d, BWD_ROWS_PER_CTA);
    plan_finish(p, d->arch, name);
}
