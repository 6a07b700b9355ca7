/* The asynchronous proxy's queue (sim.h "the asynchronous proxy"): ops in
 * flight per cluster, in issue order, and the shared-memory flags that make
 * an early access to their bytes a named error. Landing is lazy on purpose:
 * an op lands when someone waits for it (its mbarrier, its group) or when
 * nothing else can run, which is the latest point the memory model allows,
 * so a kernel that reads before it waits reads poison and is told why. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"
#include "sim_wgmma.h"

SimAsync *sim_async_new(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const char *what)
{
    SimAsync *op = calloc(1, sizeof *op);
    if (!op) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "out of host memory for an async op");
        return NULL;
    }
    op->what = what, op->cta = c, op->warp = sim_warp_id(c, w), op->lane = lane, op->line = in ? in->line : 0;
    return op;
}

static void drop(SimAsync *op)
{
    if (op->drop) op->drop(op);
    else free(op->payload);
    free(op);
}

static int overlaps(const SimRange *r, const SimCta *c, uint32_t lo, uint32_t bytes)
{
    return r->cta == c && lo < r->lo + r->bytes && r->lo < lo + bytes;
}

const SimAsync *sim_async_covering(const SimCluster *cl, const SimCta *c, uint32_t lo, int dst)
{
    for (int i = 0; i < cl->nq; i++) {
        const SimAsync *op = cl->q[i];
        const SimRange *r = dst ? op->dst : op->src;
        for (int k = 0; k < (dst ? op->ndst : op->nsrc); k++)
            if (overlaps(&r[k], c, lo, 1)) return op;
    }
    return NULL;
}

static void set_flag(SimCta *c, uint32_t lo, uint32_t bytes, uint8_t flag)
{
    for (uint32_t i = 0; i < bytes; i++) c->sflag[lo + i] |= flag;
}

/* Clears flag over a range, then restores it where another queued op still
 * covers the byte (two MMAs may read one operand tile). */
static void clear_flag(SimCluster *cl, SimCta *c, uint32_t lo, uint32_t bytes, uint8_t flag)
{
    for (uint32_t i = 0; i < bytes; i++) c->sflag[lo + i] &= (uint8_t)~flag;
    for (int i = 0; i < cl->nq; i++) {
        SimAsync *op = cl->q[i];
        const SimRange *r = flag == SM_PENDING ? op->dst : op->src;
        for (int k = 0; k < (flag == SM_PENDING ? op->ndst : op->nsrc); k++)
            if (overlaps(&r[k], c, lo, bytes)) {
                uint32_t a = r[k].lo > lo ? r[k].lo : lo, b = r[k].lo + r[k].bytes < lo + bytes ? r[k].lo + r[k].bytes : lo + bytes;
                set_flag(c, a, b - a, flag);
            }
    }
}

void sim_async_mark_landed(SimCta *c, uint32_t lo, uint32_t bytes)
{
    for (uint32_t i = 0; i < bytes; i++) c->sflag[lo + i] = (uint8_t)((c->sflag[lo + i] & SM_HELD) | SM_WRITTEN);
    /* ordered by the mbarrier or wait that let the reader see it, not by a warp's clock */
    for (uint32_t wd = lo / 4; wd <= (lo + bytes - 1) / 4; wd++) c->wclk[wd] = 0, c->wwarp[wd] = 0, c->wline[wd] = 0, c->watomic[wd] = 0;
}

static int range_ok(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *rc, uint32_t lo, uint32_t bytes, const char *what)
{
    if (!bytes || (uint64_t)lo + bytes > rc->smem_size) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "%s of %u bytes at shared 0x%x is outside CTA rank %d's %u bytes", what,
                 bytes, lo, rc->rank, rc->smem_size);
        return 0;
    }
    return 1;
}

int sim_async_check_dst(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *dc, uint32_t lo, uint32_t bytes)
{
    if (!range_ok(c, w, lane, in, dc, lo, bytes, "async write")) return 0;
    for (uint32_t i = 0; i < bytes; i++) {
        uint8_t f = dc->sflag[lo + i];
        if (!(f & (SM_PENDING | SM_HELD))) continue;
        const SimAsync *op = sim_async_covering(c->cl, dc, lo + i, !(f & SM_HELD));
        int thread = -1;
        const SimCopy *cp = op ? NULL : sim_copy_covering(dc, lo + i, &thread);
        sim_fail(c, sim_warp_id(c, w), lane, in,
                 "async write to shared 0x%x of CTA rank %d while the %s at PTX line %d (thread %d) still %s it",
                 lo + i, dc->rank, op ? op->what : "cp.async", op ? op->line : cp ? cp->line : 0,
                 op ? op->warp * 32 + op->lane : thread, (f & SM_HELD) ? "reads" : "writes");
        return 0;
    }
    if (dc != c) return 1;   /* the race clocks are per CTA; a peer's bytes are ordered by its mbarrier */
    int wid = sim_warp_id(c, w);
    for (uint32_t wd = lo / 4; wd <= (lo + bytes - 1) / 4; wd++) {
        int writer = c->wwarp[wd];
        if (writer != wid && c->wclk[wd] > w->vc[writer]) {
            sim_fail(c, wid, lane, in,
                     "shared-memory race: the %s overwrites word 0x%x that warp %d wrote at PTX line %d with no barrier in between",
                     in ? isa_base_text(in->d.op) : "async op", wd * 4, writer, c->wline[wd]);
            return 0;
        }
        const uint32_t *r = &c->rclk[(size_t)wd * (size_t)c->nwarps];
        for (int k = 0; k < c->nwarps; k++)
            if (k != wid && r[k] > w->vc[k]) {
                sim_fail(c, wid, lane, in,
                         "shared-memory race: the %s overwrites word 0x%x that warp %d read with no barrier (or mbarrier wait) in between",
                         in ? isa_base_text(in->d.op) : "async op", wd * 4, k);
                return 0;
            }
        if (!sim_wgmma_write_ordered(c, w, lane, in, wd) || !sim_tma_write_ordered(c, w, lane, in, wd)) return 0;
    }
    return 1;
}

int sim_async_check_src(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *sc, uint32_t lo, uint32_t bytes)
{
    if (!range_ok(c, w, lane, in, sc, lo, bytes, "async read")) return 0;
    int noted = 0;
    for (uint32_t i = 0; i < bytes; i++) {
        uint8_t f = sc->sflag[lo + i];
        if (f & SM_PENDING) {
            const SimAsync *op = sim_async_covering(c->cl, sc, lo + i, 1);
            int thread = -1;
            const SimCopy *cp = op ? NULL : sim_copy_covering(sc, lo + i, &thread);
            sim_fail(c, sim_warp_id(c, w), lane, in,
                     "reads shared 0x%x of CTA rank %d before the %s at PTX line %d (thread %d) has landed there: "
                     "wait on its %s first",
                     lo + i, sc->rank, op ? op->what : "cp.async", op ? op->line : cp ? cp->line : 0,
                     op ? op->warp * 32 + op->lane : thread,
                     op && op->bar_cta ? "mbarrier phase" : op ? "completion" : "cp.async group (cp.async.wait_group)");
            return 0;
        }
        if (!(f & SM_WRITTEN)) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "the async proxy reads shared 0x%x of CTA rank %d that nothing has written",
                     lo + i, sc->rank);
            return 0;
        }
        if ((f & SM_GENERIC) && !noted) {
            noted = 1;
            sim_note(c, sim_warp_id(c, w), in, "fence.proxy.async",
                     "the async proxy reads shared 0x%x, written by the generic proxy (st.shared, cp.async) with no "
                     "fence.proxy.async by its writer in between (or by a thread it reached through a barrier): the "
                     "ISA asks for one", lo + i);
            if (c->failed) return 0;
        }
    }
    if (sc != c) return 1;   /* the race clocks are per CTA, as for destinations */
    /* the issuer's view must include the writes it hands to the async proxy */
    int wid = sim_warp_id(c, w);
    for (uint32_t wd = lo / 4; wd <= (lo + bytes - 1) / 4; wd++) {
        int writer = c->wwarp[wd];
        if (writer != wid && c->wclk[wd] > w->vc[writer]) {
            sim_fail(c, wid, lane, in,
                     "shared-memory race: the %s reads word 0x%x that warp %d wrote at PTX line %d with no barrier "
                     "(or mbarrier wait) in between", in ? isa_base_text(in->d.op) : "async op", wd * 4, writer, c->wline[wd]);
            return 0;
        }
    }
    return 1;
}

int sim_async_push(SimCluster *cl, SimAsync *op)
{
    if (cl->nq == cl->capq) {
        int cap = cl->capq ? 2 * cl->capq : 64;
        SimAsync **q = realloc(cl->q, (size_t)cap * sizeof *q);
        if (!q) {
            sim_fail(op->cta, op->warp, op->lane, NULL, "out of host memory for the async queue");
            drop(op);
            return -1;
        }
        cl->q = q, cl->capq = cap;
    }
    for (int k = 0; k < op->ndst; k++) set_flag(op->dst[k].cta, op->dst[k].lo, op->dst[k].bytes, SM_PENDING);
    for (int k = 0; k < op->nsrc; k++) set_flag(op->src[k].cta, op->src[k].lo, op->src[k].bytes, SM_HELD);
    cl->q[cl->nq++] = op;
    return 0;
}

/* Lands op i: removes it from the queue first (so flags clear), then runs it. */
static int land_at(SimCluster *cl, int i)
{
    SimAsync *op = cl->q[i];
    memmove(&cl->q[i], &cl->q[i + 1], (size_t)(cl->nq - i - 1) * sizeof *cl->q);
    cl->nq--;
    for (int k = 0; k < op->ndst; k++) clear_flag(cl, op->dst[k].cta, op->dst[k].lo, op->dst[k].bytes, SM_PENDING);
    int rc = op->land ? op->land(cl, op) : 0;
    for (int k = 0; k < op->nsrc; k++) clear_flag(cl, op->src[k].cta, op->src[k].lo, op->src[k].bytes, SM_HELD);
    drop(op);
    return rc;
}

/* q[i] is a tcgen05.commit whose thread commits again, to the barrier (bar_cta, bar_addr), before q[last]
 * lands: one thread's commits arrive in issue order (the later one tracks every op the earlier one does), so
 * q[i]'s arrival is not left behind when the later one lands. Left behind, its barrier would count a phase
 * short, and a later wait there could pass on a parity of two phases before. */
static int commit_before(const SimCluster *cl, int i, int last, const SimCta *bar_cta, uint32_t bar_addr)
{
    const SimAsync *a = cl->q[i];
    if (strcmp(a->what, "tcgen05.commit")) return 0;
    for (int j = i + 1; j <= last; j++) {
        const SimAsync *b = cl->q[j];
        if (b->bar_cta == bar_cta && b->bar_addr == bar_addr && !strcmp(b->what, "tcgen05.commit") && b->cta == a->cta &&
            b->warp == a->warp && b->lane == a->lane)
            return 1;
    }
    return 0;
}

int sim_async_land_mbar(SimCluster *cl, SimCta *bar_cta, uint32_t bar_addr)
{
    int last = -1, n = 0;
    for (int i = 0; i < cl->nq; i++)
        if (cl->q[i]->bar_cta == bar_cta && cl->q[i]->bar_addr == bar_addr) last = i;
    /* in issue order up to the last op that completes on this barrier, but not ops that complete on
     * another mbarrier: nothing orders those before this phase (a TMA whose own barrier nobody has
     * waited for is still in flight here), so they land when their barrier is waited; except a
     * tcgen05.commit that a later commit of its thread to this barrier follows (commit_before) */
    for (int i = 0; i <= last;) {
        const SimAsync *op = cl->q[i];
        if (op->bar_cta && (op->bar_cta != bar_cta || op->bar_addr != bar_addr) &&
            !commit_before(cl, i, last, bar_cta, bar_addr)) {
            i++;
            continue;
        }
        if (land_at(cl, i)) return -1;
        last--, n++;
    }
    return n;
}

int sim_async_land_group(SimCluster *cl, uint64_t key, uint32_t below)
{
    int n = 0;
    for (int i = 0; i < cl->nq;)
        if (cl->q[i]->key == key && cl->q[i]->group < below) {
            if (land_at(cl, i)) return -1;
            n++;
        } else {
            i++;
        }
    return n;
}

int sim_async_land_all(SimCluster *cl)
{
    int n = 0;
    while (cl->nq) {
        if (land_at(cl, 0)) return -1;
        n++;
    }
    return n;
}

int sim_async_pending(const SimCluster *cl, uint64_t key)
{
    int n = 0;
    for (int i = 0; i < cl->nq; i++) n += cl->q[i]->key == key;
    return n;
}

void sim_note(SimCta *c, int warp, const SimInsn *in, const char *kind, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    Sim *s = c->sim;
    if (s->strict) {
        sim_fail(c, warp, -1, in, "%s (an error under --strict, which ptxgen's own kernels run in; a note by default)", msg);
        return;
    }
    char head[96];
    snprintf(head, sizeof head, "note [%s] PTX line %d:", kind, in ? in->line : 0);
    if (s->notes && strstr(s->notes, head)) return;   /* once per (kind, line) */
    char line[800];
    int n = snprintf(line, sizeof line, "%s %s\n", head, msg);
    char *p = realloc(s->notes, s->notes_len + (size_t)n + 1);
    if (!p) return;
    memcpy(p + s->notes_len, line, (size_t)n + 1);
    s->notes = p, s->notes_len += (size_t)n, s->nnotes++;
}
