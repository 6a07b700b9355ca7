/* Tensor memory (sm_100a / sm_103a), after the PTX ISA's "Tensor Memory" and
 * tcgen05 data-movement sections:
 * - 128 lanes x tmem_cols (arch table: 512) columns of 32 bits per CTA,
 *   allocated in power-of-two column counts from 32 up by one warp
 *   (tcgen05.alloc writes the address lane << 16 | column to shared memory).
 *   With no room the warp blocks until a dealloc frees columns: the sim
 *   parks it (WS_UNIT), so an alloc that never fits shows in the deadlock
 *   report with its line. cta_group::2 is executed by a warp of each CTA of
 *   the pair, each allocating in its own TMEM, so it is modelled per CTA.
 * - A freshly allocated column is poison: reading a cell that no MMA, st or
 *   cp wrote is an error. relinquish_alloc_permit makes a later alloc an
 *   error; columns still allocated when the CTA exits are an error (NVIDIA's
 *   tutorials dealloc before they exit).
 * - tcgen05.ld/st move a warp's registers to and from 32 TMEM lanes: warp w
 *   may reach lanes 32*(w%4) .. +31 only (its lane quarter). Shapes map a
 *   thread's registers to cells with sim_tmem_shape_map (sim_desc.c).
 *   .pack::16b/.unpack::16b are refused: which columns they pair is not
 *   known here.
 * - Loaded registers stay in flight until tcgen05.wait::ld. NVIDIA's
 *   tutorials never wait (they order with mbarriers and bar.sync) and the
 *   value is there at once in the sim, so a use before the wait is a note. */
#include <stdlib.h>
#include <string.h>
#include "sim_tcgen05.h"

static void tmem_free(Tmem *t, int nwarps)
{
    if (!t) return;
    for (int i = 0; t->ld_slot && i < nwarps; i++) free(t->ld_slot[i]);
    free(t->ld_slot), free(t->ld_line);
    free(t->st_line), free(t->st_thread), free(t->st_gen), free(t->st_waits);
    free(t->rd_warp), free(t->rd_clk), free(t->rd_line);
    for (int i = 0; i < 4; i++) free(t->bcol[i]);
    free(t->data), free(t->written), free(t->pend), free(t->held), free(t->alloc_line), free(t);
}

void sim_tcgen05_reset(SimCta *c)
{
    tmem_free(c->tmem, c->nwarps);
    c->tmem = NULL;
}

Tmem *tmem_get(SimCta *c, SimWarp *w, const SimInsn *in)
{
    if (c->tmem) return c->tmem;
    int wid = w ? sim_warp_id(c, w) : -1;
    if (c->arch->tmem_cols <= 0) {
        sim_fail(c, wid, -1, in, "target %s has no tensor memory (tcgen05 needs sm_100a or sm_103a)", c->arch->name);
        return NULL;
    }
    Tmem *t = calloc(1, sizeof *t);
    size_t cells = (size_t)TMEM_LANES * (size_t)c->arch->tmem_cols, slots = (size_t)(c->f->nslots ? c->f->nslots : 1);
    if (t) {
        t->cols = c->arch->tmem_cols;
        t->data = malloc(cells * sizeof *t->data), t->written = calloc(cells, 1);
        t->pend = calloc(cells, sizeof *t->pend), t->held = calloc(cells, sizeof *t->held);
        t->alloc_line = calloc((size_t)t->cols, sizeof *t->alloc_line);
        t->st_line = calloc(cells, sizeof *t->st_line), t->st_thread = calloc(cells, sizeof *t->st_thread);
        t->st_gen = calloc(cells, sizeof *t->st_gen), t->st_waits = calloc((size_t)c->nwarps, sizeof *t->st_waits);
        t->rd_warp = calloc(cells, sizeof *t->rd_warp), t->rd_clk = calloc(cells, sizeof *t->rd_clk);
        t->rd_line = calloc(cells, sizeof *t->rd_line);
        t->ld_slot = calloc((size_t)c->nwarps, sizeof *t->ld_slot), t->ld_line = calloc((size_t)c->nwarps, sizeof *t->ld_line);
        for (int i = 0; t->ld_slot && i < c->nwarps; i++)
            if (!(t->ld_slot[i] = calloc(slots, 1))) t->ld_line = NULL;
    }
    if (!t || !t->data || !t->written || !t->pend || !t->held || !t->alloc_line || !t->ld_slot || !t->ld_line ||
        !t->st_line || !t->st_thread || !t->st_gen || !t->st_waits || !t->rd_warp || !t->rd_clk || !t->rd_line) {
        tmem_free(t, c->nwarps);
        sim_fail(c, wid, -1, in, "out of host memory for the tensor memory");
        return NULL;
    }
    c->tmem = t;
    return t;
}

/* ---- allocation ---- */

static uint32_t count_opnd(SimCta *c, SimWarp *w, const SimInsn *in, int i, int lane)
{
    return (uint32_t)sim_read(c, w, &in->o[i], lane);
}

static int cols_ok(SimCta *c, SimWarp *w, const SimInsn *in, Tmem *t, uint32_t n)
{
    if (n < TMEM_CHUNK || n > (uint32_t)t->cols || (n & (n - 1))) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "%s of %u columns: the count must be a power of 2 from %d to %d",
                 isa_base_text(in->d.op), n, TMEM_CHUNK, t->cols);
        return 0;
    }
    return 1;
}

/* Wakes the warps parked in alloc: they try again. */
/* Wakes the warps parked in alloc on c's SM (c and its co-resident CTAs): they try again. */
static void wake(SimCta *c)
{
    SimCta *p = c;
    do {
        Tmem *t = p->tmem;
        for (int i = 0; t && i < p->nwarps; i++)
            if (t->parked >> i & 1 && p->w[i].state == WS_UNIT) p->w[i].state = WS_RUN;
        if (t) t->parked = 0;
        p = p->sm_next ? p->sm_next : c;
    } while (p != c);
}

/* The CTA holding TMEM column col of c's SM (c or a co-resident CTA), or NULL when it is free. */
static const SimCta *col_holder(const SimCta *c, int col)
{
    const SimCta *p = c;
    do {
        const Tmem *t = p->tmem;
        if (t && col < t->cols && t->alloc_line[col]) return p;
        p = p->sm_next ? p->sm_next : c;
    } while (p != c);
    return NULL;
}

void sim_tcgen05_describe(const SimCta *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    const SimCta *p = c;
    do {
        const Tmem *t = p->tmem;
        int held = 0;
        for (int k = 0; t && k < t->cols; k++) held += t->alloc_line[k] != 0;
        if (held && n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%sCTA (%u,%u,%u) holds %d TMEM columns", n ? ", " : "", p->cta[0], p->cta[1],
                                  p->cta[2], held);
        p = p->sm_next ? p->sm_next : c;
    } while (p != c);
}

static int do_alloc(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    Tmem *t = tmem_get(c, w, in);
    if (!t) return 1;
    uint32_t n = count_opnd(c, w, in, 1, lane);
    if (!cols_ok(c, w, in, t, n)) return 1;
    if (t->relinquish_line) {
        sim_fail(c, sim_warp_id(c, w), lane, in,
                 "tcgen05.alloc after tcgen05.relinquish_alloc_permit at PTX line %d: the CTA gave up its right to allocate",
                 t->relinquish_line);
        return 1;
    }
    for (int start = 0; start + (int)n <= t->cols; start += (int)n) {
        int free_run = 1;
        for (int k = start; k < start + (int)n && free_run; k++) free_run = !col_holder(c, k);   /* this SM's columns */
        if (!free_run) continue;
        uint8_t *p = sim_smem_write(c, w, lane, in, (uint32_t)sim_addr(c, w, &in->o[0], lane), 4);
        if (c->failed) return 1;
        memcpy(p, &(uint32_t){(uint32_t)start}, 4);
        for (int k = start; k < start + (int)n; k++) {
            t->alloc_line[k] = in->line;
            for (int l = 0; l < TMEM_LANES; l++) t->written[tmem_cell(t, l, k)] = 0;
        }
        return 1;
    }
    /* blocks until a dealloc (here or in a co-resident CTA) frees columns (the hardware's behaviour) */
    w->state = WS_UNIT, w->wait_line = in->line;
    t->parked |= 1u << sim_warp_id(c, w);
    return 1;
}

static int do_dealloc(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    Tmem *t = tmem_get(c, w, in);
    if (!t) return 1;
    uint32_t taddr = count_opnd(c, w, in, 0, lane), n = count_opnd(c, w, in, 1, lane), col = taddr & 0xFFFF;
    if (!cols_ok(c, w, in, t, n)) return 1;
    if (taddr >> 16 || col + n > (uint32_t)t->cols) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "tcgen05.dealloc of address 0x%08x: lane must be 0 and columns %u..%u inside %d",
                 taddr, col, col + n - 1, t->cols);
        return 1;
    }
    for (uint32_t k = col; k < col + n; k++) {
        if (!t->alloc_line[k]) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "tcgen05.dealloc of columns %u..%u: column %u is not allocated", col,
                     col + n - 1, k);
            return 1;
        }
        for (int l = 0; l < TMEM_LANES; l++)
            if (t->pend[tmem_cell(t, l, (int)k)] || t->held[tmem_cell(t, l, (int)k)]) {
                int writes;
                const SimAsync *op = tc_op_at(c, l, (int)k, &writes);
                sim_fail(c, sim_warp_id(c, w), lane, in,
                         "tcgen05.dealloc of column %u while the %s at PTX line %d still uses it: wait on its commit first",
                         k, op ? op->what : "tcgen05 op", op ? op->line : 0);
                return 1;
            }
    }
    for (uint32_t k = col; k < col + n; k++) t->alloc_line[k] = 0;
    wake(c);
    return 1;
}

int sim_tcgen05_exit(SimCta *c)
{
    Tmem *t = c->tmem;
    int rc = 0;
    for (int k = 0; t && k < t->cols; k++) {
        if (!t->alloc_line[k]) continue;
        int end = k;
        while (end + 1 < t->cols && t->alloc_line[end + 1] == t->alloc_line[k]) end++;
        sim_fail(c, -1, -1, NULL,
                 "the CTA exits with TMEM columns %d..%d still allocated (tcgen05.alloc at PTX line %d): tcgen05.dealloc "
                 "them before the CTA exits", k, end, t->alloc_line[k]);
        rc = -1;
        break;
    }
    sim_tcgen05_reset(c);
    return rc;
}

/* ---- ld / st ---- */

/* The cell thread `thread`'s element e of an ld/st reaches, after
 * the lane-quarter and allocation checks; -1 after sim_fail. */
static long cell_of(SimCta *c, SimWarp *w, const SimInsn *in, Tmem *t, int shape, uint32_t taddr, int half, int thread, int e)
{
    int dl, dc, wid = sim_warp_id(c, w), q = wid % 4;
    sim_tmem_shape_map(shape, in->d.num, thread, e, half, &dl, &dc);
    int lane = (int)(taddr >> 16) + dl, col = (int)(taddr & 0xFFFF) + dc;
    if (lane < 32 * q || lane > 32 * q + 31) {
        sim_fail(c, wid, thread, in,
                 "%s reaches TMEM lane %d (address 0x%08x): warp %d may access lanes %d..%d only (its lane quarter, warp id %% 4 = %d)",
                 isa_base_text(in->d.op), lane, taddr, wid, 32 * q, 32 * q + 31, q);
        return -1;
    }
    if (col >= t->cols || !t->alloc_line[col]) {
        sim_fail(c, wid, thread, in, "%s reaches TMEM column %d (address 0x%08x), which is not allocated", isa_base_text(in->d.op),
                 col, taddr);
        return -1;
    }
    return (long)tmem_cell(t, lane, col);
}

static int ld_cell_ok(SimCta *c, SimWarp *w, const SimInsn *in, Tmem *t, long cell, int thread)
{
    int lane = (int)(cell / t->cols), col = (int)(cell % t->cols);
    if (t->pend[cell]) {
        int writes;
        const SimAsync *op = tc_op_at(c, lane, col, &writes);
        sim_fail(c, sim_warp_id(c, w), thread, in,
                 "tcgen05.ld reads TMEM lane %d column %d before the %s at PTX line %d has landed there: wait on "
                 "the mbarrier phase of its tcgen05.commit first", lane, col, op ? op->what : "tcgen05 op", op ? op->line : 0);
        return 0;
    }
    if (!t->written[cell]) {
        sim_fail(c, sim_warp_id(c, w), thread, in,
                 "tcgen05.ld reads TMEM lane %d column %d that nothing (mma, st, cp) has written since its alloc", lane, col);
        return 0;
    }
    return 1;
}

int tmem_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, Tmem *t, size_t cell, const char *what)
{
    int wid = sim_warp_id(c, w), reader = t->rd_warp[cell];
    if (!t->rd_line[cell] || reader == wid || t->rd_clk[cell] <= w->vc[reader]) return 1;
    sim_fail(c, wid, lane, in,
             "TMEM race: the %s overwrites lane %d column %d that warp %d read at PTX line %d with no barrier in between "
             "(tcgen05.fence::before_thread_sync, bar.sync, tcgen05.fence::after_thread_sync)",
             what, (int)(cell / (size_t)t->cols), (int)(cell % (size_t)t->cols), reader, t->rd_line[cell]);
    return 0;
}

static int st_cell_ok(SimCta *c, SimWarp *w, const SimInsn *in, Tmem *t, long cell, int thread)
{
    if (!tmem_write_ordered(c, w, thread, in, t, (size_t)cell, "tcgen05.st")) return 0;
    if (!t->pend[cell] && !t->held[cell]) return 1;
    int col = (int)(cell % t->cols), lane = (int)(cell / t->cols), writes = 0;
    const SimAsync *op = tc_op_at(c, lane, col, &writes);
    sim_fail(c, sim_warp_id(c, w), thread, in,
             "tcgen05.st writes TMEM lane %d column %d while the %s at PTX line %d still %s it: wait on its commit first",
             lane, col, op ? op->what : "tcgen05 op", op ? op->line : 0, writes ? "writes" : "reads");
    return 0;
}

/* ld (st 0) or st (st 1): the shape's registers of each thread (their count and kinds were checked when the
 * module was parsed, sim_form.c). */
static int ldst(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, int st)
{
    Tmem *t = tmem_get(c, w, in);
    if (!t) return 1;
    int wid = sim_warp_id(c, w), shape = in->d.tmshape - TS_32X32B, x2 = in->d.tmshape == TS_16X32BX2;
    int nregs = sim_tmem_shape_regs(shape, in->d.num);
    const SimOpnd *ao = &in->o[st ? 0 : 1], *vo = &in->o[st ? 1 + x2 : 0], *ho = x2 ? &in->o[st ? 1 : 2] : NULL;
    /* a packed register holds 16-bit halves of two columns, and as many registers as unpacked (ptxas): which
     * two columns each shape pairs is not known here, so the form is refused rather than guessed */
    if (in->d.flags & (F_PACK16 | F_UNPACK16)) {
        sim_fail(c, wid, -1, in, "%s .%s is not modelled by the sim", isa_base_text(in->d.op), st ? "unpack::16b" : "pack::16b");
        return 1;
    }
    if (exec != w->live) {
        sim_fail(c, wid, -1, in, "%s is .sync.aligned: every live thread of the warp executes it (mask 0x%08x of 0x%08x)",
                 isa_base_text(in->d.op), exec, w->live);
        return 1;
    }
    int half = ho ? (int)ho->imm : 0;
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        uint32_t taddr = (uint32_t)sim_addr(c, w, ao, l);
        for (int r = 0; r < nregs; r++) {
            SimOpnd ro = sim_vec_elem(c->f, vo, r);
            long cell = cell_of(c, w, in, t, shape, taddr, half, l, r);
            if (cell < 0) return 1;
            if (st) {
                if (!st_cell_ok(c, w, in, t, cell, l)) return 1;
                t->data[cell] = (uint32_t)sim_read(c, w, &ro, l);
                t->written[cell] = 1;
                t->st_line[cell] = in->line, t->st_thread[cell] = (uint16_t)(wid * 32 + l), t->st_gen[cell] = t->st_waits[wid];
            } else {
                if (!ld_cell_ok(c, w, in, t, cell, l)) return 1;
                t->rd_warp[cell] = (int16_t)wid, t->rd_clk[cell] = w->vc[wid], t->rd_line[cell] = in->line;
                sim_write(w, c->f, &ro, l, t->data[cell]);
                if (ro.kind == SO_REG && !t->ld_noted) t->ld_slot[wid][ro.reg] = 1;
            }
        }
    }
    if (!st && !t->ld_noted) t->ld_line[wid] = in->line;
    return 1;
}

/* tcgen05.wait::ld: the warp's loads are complete. */
static void wait_ld(SimCta *c, Tmem *t, int wid)
{
    if (!t->ld_line[wid]) return;
    memset(t->ld_slot[wid], 0, (size_t)(c->f->nslots ? c->f->nslots : 1));
    t->ld_line[wid] = 0;
}

static int slot_in_flight(const Tmem *t, int wid, int slot) { return slot >= 0 && t->ld_slot[wid][slot]; }

int sim_tcgen05_check_regs(SimCta *c, SimWarp *w, const SimInsn *in)
{
    Tmem *t = c->tmem;
    int wid = sim_warp_id(c, w);
    if (!t || !t->ld_line[wid] || in->d.unit == U_TMEM) return 0;
    int hit = -1;
    for (int i = 0; i < in->nops && hit < 0; i++) {
        const SimOpnd *o = &in->o[i];
        if (o->kind == SO_REG && (slot_in_flight(t, wid, o->reg) || slot_in_flight(t, wid, o->reg2))) hit = o->reg;
        if (o->kind == SO_VEC)
            for (int k = 0; k < o->n && hit < 0; k++)
                if (slot_in_flight(t, wid, c->f->vec[o->reg + k])) hit = c->f->vec[o->reg + k];
        if (o->kind == SO_ADDR && slot_in_flight(t, wid, o->reg)) hit = o->reg;
    }
    if (hit < 0) return 0;
    sim_note(c, wid, in, "tcgen05.wait::ld",
             "uses a register loaded by the tcgen05.ld at PTX line %d with no tcgen05.wait::ld in between: the ISA asks for "
             "one (the sim has the value at once)", t->ld_line[wid]);
    for (int i = 0; i < c->nwarps; i++) wait_ld(c, t, i);
    t->ld_noted = 1;   /* one note per CTA is enough */
    return c->failed;
}

int tmem_insn(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int lane = __builtin_ctz(exec);
    switch (in->d.op) {
    case I_TC_ALLOC: return do_alloc(c, w, in, lane);
    case I_TC_DEALLOC: return do_dealloc(c, w, in, lane);
    case I_TC_RELINQUISH: {
        Tmem *t = tmem_get(c, w, in);
        if (t && !t->relinquish_line) t->relinquish_line = in->line;
        return 1;
    }
    case I_TC_LD: return ldst(c, w, in, exec, 0);
    case I_TC_ST: return ldst(c, w, in, exec, 1);
    case I_TC_WAIT_LD: {
        Tmem *t = tmem_get(c, w, in);
        if (t) wait_ld(c, t, sim_warp_id(c, w));
        return 1;
    }
    case I_TC_WAIT_ST: {   /* a st lands at once in the sim; the wait retires the warp's sts for the TS check */
        Tmem *t = tmem_get(c, w, in);
        if (t) t->st_waits[sim_warp_id(c, w)]++;
        return 1;
    }
    }
    return 0;
}
