/* The tcgen05 unit (sm_100a / sm_103a): dispatch of the U_TMEM and U_UMMA
 * ops, and the issue of tcgen05.mma and tcgen05.commit to the cluster's
 * async queue (sim_async.c), after the PTX ISA's tcgen05 chapter.
 * - tcgen05.mma is issued by one thread. At issue its instruction and
 *   shared-memory descriptors are decoded and checked (sim_desc.c), every
 *   operand element's shared bytes are checked as async-proxy sources (a
 *   generic write with no fence.proxy.async is a note) and held until it
 *   lands, and its D cells become in flight: a tcgen05.ld of them before it
 *   lands is an error naming the mma. It lands (sim_umma_math.c computes D)
 *   at the wait on a later commit's mbarrier, or when nothing else can run;
 *   the queue keeps issue order, so a chain accumulates in order.
 * - tcgen05.commit queues one mbarrier arrive per destination CTA (the
 *   ctaMask with .multicast::cluster): landing it first lands every op
 *   queued before it, which covers the issuing thread's MMAs.
 * - cta_group::2: the pair is ranks 2k and 2k+1 of the cluster; each CTA
 *   holds M/2 rows of A in its own shared memory at the descriptor's offset
 *   and N/2 rows of B (the lower rank the first half), and receives its M/2
 *   rows of D (all N columns) in its own TMEM at the same address.
 * - tcgen05.fence::before/after_thread_sync order nothing the sim reorders.
 * - tcgen05.cp and tcgen05.shift: sim_tcgen05_cp.c, on the same queue. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_tcgen05.h"

int tc_fail(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sim_fail(c, sim_warp_id(c, w), lane, in, "%s", msg);
    return 1;
}

int tc_ctas(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *cta[2])
{
    if (in->d.cta_group != 2) return cta[0] = c, 1;
    int r0 = c->rank & ~1;
    if (r0 + 1 >= c->cl->n) {
        tc_fail(c, w, lane, in, "%s.cta_group::2 needs a CTA pair: rank %d has no peer in a %d-CTA cluster", isa_base_text(in->d.op),
             c->rank, c->cl->n);
        return 0;
    }
    cta[0] = &c->cl->cta[r0], cta[1] = &c->cl->cta[r0 + 1];
    return 2;
}

static void drop_mma(SimAsync *a)
{
    UmmaOp *op = a->payload;
    for (int i = 0; i < 2; i++) free(op->a_addr[i]), free(op->b_addr[i]);
    free(op);
}

/* ---- the cells an MMA writes (D) and reads (A from TMEM) ---- */

typedef void (*CellFn)(Tmem *t, size_t cell);
static void pend_inc(Tmem *t, size_t cell) { t->pend[cell]++; }
static void pend_dec(Tmem *t, size_t cell) { t->pend[cell]--; }
static void held_inc(Tmem *t, size_t cell) { t->held[cell]++; }
static void held_dec(Tmem *t, size_t cell) { t->held[cell]--; }

static void each_cell(const UmmaOp *op, CellFn dfn, CellFn afn)
{
    int rows = op->id.m / op->ncta;
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        for (int r = 0; r < rows; r++) {
            int lane, col;
            for (int n = 0; n < op->id.n; n++) {
                umma_d_cell(op, op->d_lane, op->d_col, op->id.n, r, n, &lane, &col);
                dfn(t, tmem_cell(t, lane, col));
            }
            for (int k = 0; op->a_tmem && k < op->k * op->ebytes / 4; k++) {
                umma_d_cell(op, op->a_lane, op->a_col, op->k * op->ebytes / 4, r, k, &lane, &col);
                afn(t, tmem_cell(t, lane, col));
            }
        }
    }
}

static int land_mma(SimCluster *cl, SimAsync *a)
{
    (void)cl;
    UmmaOp *op = a->payload;
    each_cell(op, pend_dec, held_dec);
    for (int i = 0; i < op->ncta; i++) {
        if (!op->cta[i]->tmem) {
            sim_fail(a->cta, a->warp, a->lane, op->in, "the TMEM of CTA rank %d was freed before the tcgen05.mma landed",
                     op->cta[i]->rank);
            return -1;
        }
        if (umma_compute(op, a, i)) return -1;
    }
    return 0;
}

/* ---- tcgen05.mma issue ---- */

/* The shared offsets of one operand's rows [mn][k] in CTA sc, each element
 * checked as an async source; the span is held while the op is in flight. */
static uint32_t *operand(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *sc, uint64_t desc, int mn_major,
                         int rows, const UmmaOp *op, const char *name, SimRange *span)
{
    SimSmemDesc d;
    char err[256];
    if (sim_umma_sdesc_decode(desc, &d, err, sizeof err) || sim_sdesc_check(&d, err, sizeof err) ||
        sim_sdesc_check_operand(&d, !mn_major, op->ebytes, err, sizeof err)) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "tcgen05.mma %s 0x%016llx: %s", name, (unsigned long long)desc, err);
        return NULL;
    }
    uint32_t *addr = malloc((size_t)rows * (size_t)op->k * sizeof *addr), lo = UINT32_MAX, hi = 0;
    if (!addr) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "out of host memory for a tcgen05.mma");
        return NULL;
    }
    for (int m = 0; m < rows; m++)
        for (int k = 0; k < op->k; k++) {
            uint32_t a = sim_sdesc_elem_addr(&d, !mn_major, op->ebytes, m, k);
            if (a == SIM_SDESC_BAD_ADDR || (uint64_t)a + (uint64_t)op->ebytes > sc->smem_size) {
                sim_fail(c, sim_warp_id(c, w), lane, in,
                         "tcgen05.mma %s 0x%016llx (%s-major, start 0x%x, LBO %u, SBO %u): element (row %d, k %d) %s of CTA rank %d",
                         name, (unsigned long long)desc, mn_major ? "MN" : "K", d.start, d.lbo, d.sbo, m, k,
                         a == SIM_SDESC_BAD_ADDR ? "has no address under the layout" : "lies outside the shared memory",
                         sc->rank);
                free(addr);
                return NULL;
            }
            if (!sim_async_check_src(c, w, lane, in, sc, a, (uint32_t)op->ebytes)) {
                free(addr);
                return NULL;
            }
            addr[m * op->k + k] = a;
            lo = a < lo ? a : lo, hi = a + (uint32_t)op->ebytes > hi ? a + (uint32_t)op->ebytes : hi;
        }
    *span = (SimRange){sc, lo, hi - lo};
    return addr;
}

/* D (and A from TMEM) must lie in allocated columns of every CTA of the op. */
static int cells_allocated(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const UmmaOp *op)
{
    int rows = op->id.m / op->ncta, acols = op->k * op->ebytes / 4;
    for (int i = 0; i < op->ncta; i++) {
        Tmem *t = op->cta[i]->tmem;
        if (!t) return tc_fail(c, w, lane, in, "tcgen05.mma: CTA rank %d has allocated no TMEM", op->cta[i]->rank);
        for (int pass = 0; pass < 1 + op->a_tmem; pass++)
            for (int r = 0; r < rows; r++)
                for (int n = 0; n < (pass ? acols : op->id.n); n++) {
                    int l, k;
                    umma_d_cell(op, pass ? op->a_lane : op->d_lane, pass ? op->a_col : op->d_col, pass ? acols : op->id.n, r, n, &l, &k);
                    if (l >= TMEM_LANES || k >= t->cols || !t->alloc_line[k])
                        return tc_fail(c, w, lane, in, "tcgen05.mma: the %s reaches TMEM lane %d column %d of CTA rank %d, which is %s",
                                    pass ? "A operand" : "D matrix", l, k, op->cta[i]->rank,
                                    l >= TMEM_LANES || k >= t->cols ? "outside the tensor memory" : "not allocated");
                }
    }
    return 0;
}

/* A from TMEM (the TS form), cell by cell: a tcgen05.st into it needs the
 * writer's tcgen05.wait::st first (an error when the MMA's issuing thread
 * is the writer, whose own wait the ISA asks for; a note otherwise, where
 * the ISA also asks for fence::before_thread_sync, a barrier and
 * fence::after_thread_sync, which the sim cannot see apart); a cell an
 * in-flight cp or shift of another thread will write is an error (only the
 * issuing thread's cp/shift -> mma pipeline is ordered without a wait). */
static int a_cells_ready(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const UmmaOp *op)
{
    int rows = op->id.m / op->ncta, acols = op->k * op->ebytes / 4, me = sim_warp_id(c, w) * 32 + lane;
    for (int i = 0; i < op->ncta; i++) {
        SimCta *tc = op->cta[i];
        Tmem *t = tc->tmem;
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < acols; k++) {
                int l, col, writes = 0;
                umma_d_cell(op, op->a_lane, op->a_col, acols, r, k, &l, &col);
                size_t cell = tmem_cell(t, l, col);
                const SimAsync *p = t->pend[cell] ? tc_op_at(tc, l, col, &writes) : NULL;
                if (p && writes && strcmp(p->what, "tcgen05.mma") && (p->cta != c || p->warp != sim_warp_id(c, w) || p->lane != lane))
                    return tc_fail(c, w, lane, in,
                                "tcgen05.mma reads A from TMEM lane %d column %d of CTA rank %d, which the %s at PTX line %d "
                                "(another thread) has not written yet: only a thread's own %s -> mma pipeline needs no "
                                "wait; wait on that op's commit first", l, col, tc->rank, p->what, p->line, p->what);
                int th = t->st_thread[cell];
                if (!t->st_line[cell] || t->st_gen[cell] != t->st_waits[th / 32]) continue;
                if (tc == c && th == me)
                    return tc_fail(c, w, lane, in,
                                "tcgen05.mma reads A from TMEM lane %d column %d, which this thread's tcgen05.st at PTX line %d "
                                "wrote with no tcgen05.wait::st since: the ISA asks for tcgen05.wait::st before an MMA reads it",
                                l, col, t->st_line[cell]);
                sim_note(c, sim_warp_id(c, w), in, "tcgen05.wait::st",
                         "tcgen05.mma reads A from TMEM lane %d column %d of CTA rank %d, which the tcgen05.st at PTX line %d "
                         "(warp %d) wrote with no tcgen05.wait::st since: the ISA asks for wait::st, then "
                         "tcgen05.fence::before_thread_sync, a barrier and fence::after_thread_sync", l, col, tc->rank,
                         t->st_line[cell], th / 32);
                return c->failed;
            }
    }
    return 0;
}

/* Does mma op a write (D: 1) or read (A from TMEM: 2) cell (lane, col) of c? */
/* D's cells in this CTA are not still being read by another warp's
 * tcgen05.ld that no barrier ordered before this issue (a peer CTA's are
 * ordered by its own barriers and mbarriers: the race clocks are per CTA). */
static int d_cells_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const UmmaOp *op)
{
    int rows = op->id.m / op->ncta;
    for (int i = 0; i < op->ncta; i++) {
        if (op->cta[i] != c) continue;
        Tmem *t = c->tmem;
        for (int r = 0; r < rows; r++)
            for (int n = 0; n < op->id.n; n++) {
                int dl, dc;
                umma_d_cell(op, op->d_lane, op->d_col, op->id.n, r, n, &dl, &dc);
                if (!tmem_write_ordered(c, w, lane, in, t, tmem_cell(t, dl, dc), "tcgen05.mma")) return 0;
            }
    }
    return 1;
}

static int mma_covers(const UmmaOp *op, const SimCta *c, int lane, int col)
{
    int rows = op->id.m / op->ncta, acols = op->k * op->ebytes / 4;
    for (int i = 0; i < op->ncta; i++) {
        if (op->cta[i] != c) continue;
        for (int pass = 0; pass < 1 + op->a_tmem; pass++)
            for (int r = 0; r < rows; r++)
                for (int n = 0; n < (pass ? acols : op->id.n); n++) {
                    int l, k;
                    umma_d_cell(op, pass ? op->a_lane : op->d_lane, pass ? op->a_col : op->d_col, pass ? acols : op->id.n, r, n, &l, &k);
                    if (l == lane && k == col) return pass + 1;
                }
    }
    return 0;
}

const SimAsync *tc_op_at(const SimCta *c, int lane, int col, int *writes)
{
    for (int i = 0; i < c->cl->nq; i++) {
        const SimAsync *a = c->cl->q[i];
        int hit = a->land == land_mma ? mma_covers(a->payload, c, lane, col) : tc_cp_covers(a, c, lane, col);
        if (hit > 0) return *writes = hit == 1, a;
    }
    return NULL;
}

/* The form: [d], a_desc | [a_tmem], b_desc, idesc, {disable-output-lane}?, enable_input_d [, scale_input_d]. */
static int mma_form(SimCta *c, SimWarp *w, int lane, const SimInsn *in, UmmaOp *op, int *pred_at)
{
    int at = 4;
    op->ws = !!(in->d.flags & F_WS);
    op->bc_action = ISA_BCOLLECT_ACTION(in->d.bcollect), op->bc_buf = ISA_BCOLLECT_BUF(in->d.bcollect);
    /* .collector::bN only and .cta_group::1 with .ws: emit/isa.c */
    if (op->ws) {   /* [d], a_desc | [a_tmem], b_desc, idesc, enable_input_d [, zero_column_mask_desc] */
        if (in->nops == 6) return tc_fail(c, w, lane, in, "tcgen05.mma.ws: the zero-column mask descriptor is not modelled yet");
        *pred_at = 4;
        return 0;
    }
    if (in->d.kind != KIND_F16 && in->d.kind != KIND_TF32)
        return tc_fail(c, w, lane, in, "tcgen05.mma: only kind::f16 and kind::tf32 are modelled");
    if (in->o[4].kind == SO_VEC) {   /* 4 registers per CTA (the form was checked at parse, sim_form.c) */
        for (int i = 0; i < in->o[4].n; i++) {
            SimOpnd e = sim_vec_elem(c->f, &in->o[4], i);
            op->disable[i] = (uint32_t)sim_read(c, w, &e, lane);
        }
        at = 5;
    }
    *pred_at = at;
    return 0;
}

static int issue_mma(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    UmmaOp *op = calloc(1, sizeof *op);
    if (!op) return tc_fail(c, w, lane, in, "out of host memory for a tcgen05.mma");
    SimAsync *a = NULL;
    int cg = in->d.cta_group ? in->d.cta_group : 1, pat = 0;
    char err[256];
    op->in = in;
    if (mma_form(c, w, lane, in, op, &pat)) goto out;
    int kind = in->d.kind == KIND_TF32 ? UMMA_KIND_TF32 : UMMA_KIND_F16;
    uint32_t idesc = (uint32_t)sim_read(c, w, &in->o[3], lane);
    if (sim_umma_idesc_decode(idesc, kind, cg, op->ws, &op->id, err, sizeof err)) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "tcgen05.mma: %s", err);
        goto out;
    }
    if (op->id.sparse) {
        tc_fail(c, w, lane, in, "tcgen05.mma: sparse A (instruction descriptor bit 2) is not modelled yet");
        goto out;
    }
    op->ebytes = kind == UMMA_KIND_TF32 ? 4 : 2, op->k = 32 / op->ebytes;
    op->enable_d = sim_read(c, w, &in->o[pat], lane) != 0;
    op->scale_d = !op->ws && pat + 1 < in->nops ? (int)sim_read(c, w, &in->o[pat + 1], lane) : 0;
    if (op->scale_d < 0 || op->scale_d > 15) {
        tc_fail(c, w, lane, in, "tcgen05.mma: scale_input_d %d is outside 0..15", op->scale_d);
        goto out;
    }
    uint32_t dt = (uint32_t)sim_addr(c, w, &in->o[0], lane);
    op->d_lane = dt >> 16, op->d_col = dt & 0xFFFF;
    int layout_f = cg == 1 && op->id.m == 64 && !op->ws;
    if (op->d_lane != 0 && !(layout_f && op->d_lane == 16)) {
        tc_fail(c, w, lane, in, "tcgen05.mma: D address lane %u must be 0%s", op->d_lane, layout_f ? " or 16 (M = 64 uses half the lanes)" : "");
        goto out;
    }
    op->a_tmem = in->o[1].kind == SO_ADDR;
    if (op->a_tmem && op->ws && op->id.m != 128) {
        tc_fail(c, w, lane, in, "tcgen05.mma.ws with A in TMEM and M = %d: that A layout is not modelled yet", op->id.m);
        goto out;
    }
    if (op->a_tmem) {
        uint32_t at = (uint32_t)sim_addr(c, w, &in->o[1], lane);
        op->a_lane = at >> 16, op->a_col = at & 0xFFFF;
        if (op->a_lane != op->d_lane) {
            tc_fail(c, w, lane, in, "tcgen05.mma: A in TMEM at lane %u, D at lane %u: the ISA asks for the same lane alignment",
                 op->a_lane, op->d_lane);
            goto out;
        }
    }
    if (!(op->ncta = tc_ctas(c, w, lane, in, op->cta))) goto out;
    if (cells_allocated(c, w, lane, in, op) || (op->a_tmem && a_cells_ready(c, w, lane, in, op)) ||
        !d_cells_ordered(c, w, lane, in, op))
        goto out;
    if (!(a = sim_async_new(c, w, lane, in, "tcgen05.mma"))) goto out;
    uint64_t ad = sim_read(c, w, &in->o[1], lane), bd = sim_read(c, w, &in->o[2], lane);
    for (int i = 0; i < op->ncta; i++) {
        if (!op->a_tmem &&
            !(op->a_addr[i] = operand(c, w, lane, in, op->cta[i], ad, op->id.a_mn_major, op->id.m / cg, op, "a-desc", &a->src[a->nsrc++])))
            goto out;
        if (op->bc_action == BC_USE || op->bc_action == BC_LASTUSE) continue;   /* B comes from the collector buffer */
        if (!(op->b_addr[i] = operand(c, w, lane, in, op->cta[i], bd, op->id.b_mn_major, op->id.n / cg, op, "b-desc", &a->src[a->nsrc++])))
            goto out;
    }
    a->key = tc_key(c), a->land = land_mma, a->drop = drop_mma, a->payload = op;
    each_cell(op, pend_inc, held_inc);
    c->cl->work += (uint64_t)op->id.m * (uint64_t)op->id.n * (uint64_t)op->k / SIM_MACS_PER_STEP;   /* the step limit */
    return sim_async_push(c->cl, a), 1;
out:
    free(a);
    drop_mma(&(SimAsync){.payload = op});
    return 1;
}

/* ---- tcgen05.commit ---- */

typedef struct { uint32_t vc[32]; int same; const SimInsn *in; } Commit;

static int land_commit(SimCluster *cl, SimAsync *a)
{
    (void)cl;
    Commit *k = a->payload;
    SimMbar *b = sim_mbar_at(a->bar_cta, a->bar_addr);
    if (!b) {
        sim_fail(a->cta, a->warp, a->lane, k->in, "the mbarrier at shared 0x%x of CTA rank %d, which the tcgen05.commit "
                 "arrives on, was invalidated before the commit landed", a->bar_addr, a->bar_cta->rank);
        return -1;
    }
    sim_mbar_arrive(a->bar_cta, b, a->bar_cta == a->cta ? k->vc : NULL, 1);
    return 0;
}

static int issue_commit(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    int mc = !!(in->d.flags & F_MULTICAST);   /* [mbar]{, ctaMask}: sim_form.c */
    uint32_t lo;
    SimCta *bc = sim_smem_owner(c, w, lane, in, (uint32_t)sim_addr(c, w, &in->o[0], lane), 1, &lo);
    if (!bc) return 1;
    uint32_t mask = mc ? (uint16_t)sim_read(c, w, &in->o[1], lane) : 1u << bc->rank;
    if (!mask) return tc_fail(c, w, lane, in, "tcgen05.commit: ctaMask 0x0000 names no CTA");
    for (int r = 0; r < 16; r++) {
        if (!(mask >> r & 1)) continue;
        if (r >= c->cl->n)
            return tc_fail(c, w, lane, in, "tcgen05.commit: ctaMask 0x%04x names CTA rank %d; the cluster has %d CTAs", mask, r, c->cl->n);
        SimCta *t = &c->cl->cta[r];
        if (!sim_mbar_at(t, lo))
            return tc_fail(c, w, lane, in, "tcgen05.commit arrives on shared 0x%x of CTA rank %d, which is no initialised mbarrier",
                        lo, r);
        SimAsync *a = sim_async_new(c, w, lane, in, "tcgen05.commit");
        Commit *k = a ? calloc(1, sizeof *k) : NULL;
        if (!k) {
            free(a);
            return c->failed ? 1 : tc_fail(c, w, lane, in, "out of host memory for a tcgen05.commit");
        }
        memcpy(k->vc, w->vc, (size_t)c->nwarps * sizeof *w->vc);
        k->in = in;
        a->bar_cta = t, a->bar_addr = lo, a->key = tc_key(c), a->land = land_commit, a->payload = k;
        if (sim_async_push(c->cl, a)) return 1;
    }
    return 1;
}

int sim_tcgen05(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    switch (in->d.op) {
    case I_TC_FENCE_BEFORE: case I_TC_FENCE_AFTER: return 1;
    case I_TC_MMA: case I_TC_COMMIT: case I_TC_CP: case I_TC_SHIFT: {
        static int (*const issue[])(SimCta *, SimWarp *, const SimInsn *, int) = {issue_mma, issue_commit, tc_issue_cp,
                                                                                 tc_issue_shift};
        int which = in->d.op == I_TC_MMA ? 0 : in->d.op == I_TC_COMMIT ? 1 : in->d.op == I_TC_CP ? 2 : 3;
        if (!tmem_get(c, w, in)) return 1;
        /* issued per thread: each active lane issues its own */
        for (int l = 0; l < 32 && !c->failed; l++)
            if (exec >> l & 1) issue[which](c, w, in, l);
        return 1;
    }
    }
    return tmem_insn(c, w, in, exec);
}
