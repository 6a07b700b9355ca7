/* tcgen05.cp (shared memory -> TMEM) and tcgen05.shift (rows of TMEM down
 * by one), after the PTX ISA's tcgen05.cp, tcgen05.shift, "Data Movement
 * Shape" and "Implicitly pipelined tcgen05 instructions" sections.
 * - Both are issued by one thread and go on the cluster's async queue
 *   behind the thread's earlier MMAs, so cp -> mma, shift -> mma and
 *   mma -> shift run in issue order without a wait, and a later commit
 *   covers them. Until one lands its destination cells are in flight (a
 *   tcgen05.ld of them is the same named error as for an MMA's D) and a
 *   cp's shared source bytes are held (a write is an error naming it).
 * - cp: the descriptor (sim_desc.c decodes and checks it: version bit 46,
 *   layout, the swizzle's row phase against base_offset) names a K-major
 *   matrix in the canonical layout; row r's 32-bit word j is the tf32
 *   element (r, j) of that layout (sim_sdesc_elem_addr). Rows land in the
 *   lanes sim_tmem_cp_lane names (multicast for the warpx2/warpx4 forms).
 *   cta_group::2 copies into each CTA of the pair from that CTA's own
 *   shared memory at the same offsets. The decompressing forms (.b8x16
 *   with .b6x16_p32 / .b4x16_p64) are refused by name.
 * - shift (the ISA's implicit .31x256b shape): in the 32 lanes from the
 *   address's lane (a multiple of 32) and the 8 columns (256 bits) from its
 *   column, rows 0..30 move down one lane; row 0 keeps its value (the ISA
 *   does not say it changes).
 * - A cp or shift may not write cells another in-flight op still writes or
 *   reads, except where the ISA pipelines the pair for the same thread
 *   (shift -> cp.4x256b, mma -> shift). */
#include <stdlib.h>
#include <string.h>
#include "sim_tcgen05.h"

/* One cp or shift. src[i][r * words + j]: CTA i's shared offset of row r's word j (cp only). */
typedef struct {
    const SimInsn *in;
    SimCta *cta[2];
    int ncta, shift;
    int cp, rows, words, copies;    /* cp: sim_tmem_cp_dims; shift: 32 rows (31 move) of 8 words */
    uint32_t lane, col;             /* the TMEM address */
    uint32_t *src[2];
} CpOp;

static void drop_cp(SimAsync *a)
{
    CpOp *op = a->payload;
    free(op->src[0]), free(op->src[1]), free(op);
}

/* The cells of an op: calls fn(t, cell, writes) for each destination
 * (writes 1) and, for a shift, each source (writes 0). */
typedef void (*CpCellFn)(Tmem *t, size_t cell, int writes);
static void each_cp_cell(const CpOp *op, CpCellFn fn)
{
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        for (int r = 0; r < op->rows; r++)
            for (int k = 0; k < op->copies; k++)
                for (int j = 0; j < op->words; j++) {
                    int l = (int)op->lane + (op->shift ? r : sim_tmem_cp_lane(op->cp, r, k)), col = (int)op->col + j;
                    if (!op->shift || r > 0) fn(t, tmem_cell(t, l, col), 1);
                    if (op->shift && r < op->rows - 1) fn(t, tmem_cell(t, l, col), 0);
                }
    }
}

static void mark_issue(Tmem *t, size_t cell, int writes) { writes ? t->pend[cell]++ : t->held[cell]++; }
static void mark_land(Tmem *t, size_t cell, int writes) { writes ? t->pend[cell]-- : t->held[cell]--; }

static int land_cp(SimCluster *cl, SimAsync *a);
static int land_shift(SimCluster *cl, SimAsync *a);

int tc_cp_covers(const SimAsync *a, const SimCta *c, int lane, int col)
{
    if (a->land != land_cp && a->land != land_shift) return -1;
    const CpOp *op = a->payload;
    int in_cta = 0;
    for (int i = 0; i < op->ncta; i++) in_cta |= op->cta[i] == c;
    int dl = lane - (int)op->lane, dc = col - (int)op->col;
    if (!in_cta || dc < 0 || dc >= op->words) return 0;
    if (op->shift) return dl >= 1 && dl < op->rows ? 1 : dl == 0 ? 2 : 0;
    for (int r = 0; r < op->rows; r++)
        for (int k = 0; k < op->copies; k++)
            if (sim_tmem_cp_lane(op->cp, r, k) == dl) return 1;
    return 0;
}

static int cta_tmem_gone(const SimAsync *a, const CpOp *op)
{
    for (int i = 0; i < op->ncta; i++)
        if (!op->cta[i]->tmem) {
            sim_fail(a->cta, a->warp, a->lane, op->in, "the TMEM of CTA rank %d was freed before the %s landed", op->cta[i]->rank,
                     a->what);
            return 1;
        }
    return 0;
}

/* What a landing cp or shift starts with: its TMEM still there, its cells no longer in flight. NULL after sim_fail. */
static CpOp *landing(SimAsync *a)
{
    CpOp *op = a->payload;
    if (cta_tmem_gone(a, op)) return NULL;
    each_cp_cell(op, mark_land);
    return op;
}

static int land_cp(SimCluster *cl, SimAsync *a)
{
    (void)cl;
    CpOp *op = landing(a);
    if (!op) return -1;
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        for (int r = 0; r < op->rows; r++)
            for (int j = 0; j < op->words; j++) {
                uint32_t v = sim_mma_load(op->cta[i]->smem, op->src[i][r * op->words + j], 4);
                for (int k = 0; k < op->copies; k++) {
                    size_t cell = tmem_cell(t, (int)op->lane + sim_tmem_cp_lane(op->cp, r, k), (int)op->col + j);
                    t->data[cell] = v, t->written[cell] = 1, t->st_line[cell] = 0;
                }
            }
    }
    return 0;
}

static int land_shift(SimCluster *cl, SimAsync *a)
{
    (void)cl;
    CpOp *op = landing(a);
    if (!op) return -1;
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        for (int r = op->rows - 1; r > 0; r--)   /* bottom up: each row takes the one above it */
            for (int j = 0; j < op->words; j++) {
                size_t to = tmem_cell(t, (int)op->lane + r, (int)op->col + j), from = tmem_cell(t, (int)op->lane + r - 1, (int)op->col + j);
                t->data[to] = t->data[from], t->written[to] = t->written[from], t->st_line[to] = 0;
            }
    }
    return 0;
}

/* The shape of a cp from its qualifiers; -1 after sim_fail. */
static int cp_shape(SimCta *c, SimWarp *w, int lane, const SimInsn *in)
{
    uint64_t mc = in->d.flags & (F_WARPX2_02_13 | F_WARPX2_01_23 | F_WARPX4);
    if (in->d.flags & F_DECOMPRESS)
        return tc_fail(c, w, lane, in, "tcgen05.cp with decompression (.b8x16 from .b6x16_p32 or .b4x16_p64) is not modelled by the sim"), -1;
    switch (in->d.tmshape) {
    case TS_128X256B: if (!mc) return CP_128X256B; break;
    case TS_4X256B: if (!mc) return CP_4X256B; break;
    case TS_128X128B: if (!mc) return CP_128X128B; break;
    case TS_64X128B:
        if (mc == F_WARPX2_02_13) return CP_64X128B_02_13;
        if (mc == F_WARPX2_01_23) return CP_64X128B_01_23;
        break;
    case TS_32X128B: if (mc == F_WARPX4) return CP_32X128B_X4; break;
    }
    return tc_fail(c, w, lane, in, "tcgen05.cp: the shape must be .128x256b, .4x256b or .128x128b, .64x128b with "
                   ".warpx2::02_13 or ::01_23, or .32x128b with .warpx4"), -1;
}

/* Every cell of the op in allocated TMEM, none that another warp read with no
 * barrier since (the race clocks, as for an MMA's D), and none that an
 * in-flight op uses unless the ISA pipelines the pair for this thread. */
static int cells_free(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const CpOp *op, const char *name)
{
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        if (!t) return tc_fail(c, w, lane, in, "%s: CTA rank %d has allocated no TMEM", name, op->cta[i]->rank);
        for (int r = 0; r < op->rows; r++)
            for (int k = 0; k < op->copies; k++)
                for (int j = 0; j < op->words; j++) {
                    int l = (int)op->lane + (op->shift ? r : sim_tmem_cp_lane(op->cp, r, k)), col = (int)op->col + j;
                    if (l >= TMEM_LANES || !tmem_col_ok(t, col))
                        return tc_fail(c, w, lane, in, "%s reaches TMEM lane %d column %d of CTA rank %d, which is %s", name, l, col,
                                       op->cta[i]->rank, l >= TMEM_LANES || col >= t->cols ? "outside the tensor memory" : "not allocated");
                    size_t cell = tmem_cell(t, l, col);
                    if (op->cta[i] == c && !tmem_write_ordered(c, w, lane, in, t, cell, name)) return 1;
                    if (!t->pend[cell] && !t->held[cell]) continue;
                    int writes = 0;
                    const SimAsync *p = tc_op_at(op->cta[i], l, col, &writes);
                    int own = p && p->cta == c && p->warp == sim_warp_id(c, w) && p->lane == lane;
                    int piped = own && (op->shift ? !strcmp(p->what, "tcgen05.mma")
                                                  : op->cp == CP_4X256B && !strcmp(p->what, "tcgen05.shift"));
                    if (!piped)
                        return tc_fail(c, w, lane, in,
                                       "%s touches TMEM lane %d column %d of CTA rank %d while the %s at PTX line %d still %s it: "
                                       "the ISA orders only mma -> shift and shift -> cp.4x256b of one thread; wait on its commit first",
                                       name, l, col, op->cta[i]->rank, p ? p->what : "tcgen05 op", p ? p->line : 0,
                                       writes ? "writes" : "reads");
                }
    }
    return 0;
}

/* The shared offsets of CTA sc's source rows, each checked as an async source; the span is held. */
static uint32_t *cp_source(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *sc, uint64_t desc, const CpOp *op,
                           SimRange *span)
{
    SimSmemDesc d;
    char err[256];
    if (sim_umma_sdesc_decode(desc, &d, err, sizeof err) || sim_sdesc_check(&d, err, sizeof err)) {
        tc_fail(c, w, lane, in, "tcgen05.cp s-desc 0x%016llx: %s", (unsigned long long)desc, err);
        return NULL;
    }
    uint32_t *addr = malloc((size_t)op->rows * (size_t)op->words * sizeof *addr), lo = UINT32_MAX, hi = 0;
    if (!addr) {
        tc_fail(c, w, lane, in, "out of host memory for a tcgen05.cp");
        return NULL;
    }
    for (int r = 0; r < op->rows; r++)
        for (int j = 0; j < op->words; j++) {
            uint32_t a = sim_sdesc_elem_addr(&d, 1, 4, r, j);
            if (a == SIM_SDESC_BAD_ADDR || (uint64_t)a + 4 > sc->smem_size) {
                tc_fail(c, w, lane, in, "tcgen05.cp s-desc 0x%016llx (start 0x%x, LBO %u, SBO %u): row %d word %d %s of CTA rank %d",
                        (unsigned long long)desc, d.start, d.lbo, d.sbo, r, j,
                        a == SIM_SDESC_BAD_ADDR ? "has no address under the layout" : "lies outside the shared memory", sc->rank);
                free(addr);
                return NULL;
            }
            if (!sim_async_check_src(c, w, lane, in, sc, a, 4)) {
                free(addr);
                return NULL;
            }
            addr[r * op->words + j] = a;
            lo = a < lo ? a : lo, hi = a + 4 > hi ? a + 4 : hi;
        }
    *span = (SimRange){sc, lo, hi - lo};
    return addr;
}

/* Shared by cp and shift: the op, its CTAs and address ([taddr] first: sim_form.c); NULL after sim_fail. */
static CpOp *new_op(SimCta *c, SimWarp *w, int lane, const SimInsn *in)
{
    CpOp *op = calloc(1, sizeof *op);
    if (!op) {
        tc_fail(c, w, lane, in, "out of host memory for a %s", isa_base_text(in->d.op));
        return NULL;
    }
    uint32_t taddr = (uint32_t)sim_addr(c, w, &in->o[0], lane);
    op->in = in, op->lane = taddr >> 16, op->col = taddr & 0xFFFF;
    if (!(op->ncta = tc_ctas(c, w, lane, in, op->cta))) {
        free(op);
        return NULL;
    }
    return op;
}

static int queue(SimCta *c, CpOp *op, SimAsync *a)
{
    a->key = tc_key(c), a->land = op->shift ? land_shift : land_cp, a->drop = drop_cp, a->payload = op;
    each_cp_cell(op, mark_issue);
    sim_async_push(c->cl, a);
    return 1;
}

int tc_issue_cp(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    int shape = cp_shape(c, w, lane, in);
    CpOp *op = shape < 0 ? NULL : new_op(c, w, lane, in);
    if (!op) return 1;
    op->cp = shape;
    sim_tmem_cp_dims(shape, &op->rows, &op->words, &op->copies);
    SimAsync *a = NULL;
    if (cells_free(c, w, lane, in, op, "tcgen05.cp") || !(a = sim_async_new(c, w, lane, in, "tcgen05.cp"))) goto out;
    uint64_t desc = sim_read(c, w, &in->o[1], lane);
    for (int i = 0; i < op->ncta; i++)
        if (!(op->src[i] = cp_source(c, w, lane, in, op->cta[i], desc, op, &a->src[a->nsrc++]))) goto out;
    return queue(c, op, a);
out:
    free(a);
    drop_cp(&(SimAsync){.payload = op});
    return 1;
}

int tc_issue_shift(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    CpOp *op = new_op(c, w, lane, in);   /* .down: emit/isa.c */
    if (!op) return 1;
    op->shift = 1, op->rows = 32, op->words = 8, op->copies = 1;
    SimAsync *a = NULL;
    if (op->lane % 32) {
        tc_fail(c, w, lane, in, "tcgen05.shift: the address's lane %u is not a multiple of 32, as the ISA asks", op->lane);
        goto out;
    }
    if (cells_free(c, w, lane, in, op, "tcgen05.shift") || !(a = sim_async_new(c, w, lane, in, "tcgen05.shift"))) goto out;
    return queue(c, op, a);
out:
    free(a);
    drop_cp(&(SimAsync){.payload = op});
    return 1;
}
