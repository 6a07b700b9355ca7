/* mbarrier objects on the sim (PTX ISA "Parallel Synchronization and
 * Communication Instructions: mbarrier"). An object lives at an 8-byte
 * aligned shared address; the sim keeps its state beside shared memory:
 * expected arrivals per phase, arrivals still pending, the transaction count,
 * and the number of completed phases. A phase completes when its pending
 * arrivals reach zero and its transaction count is zero.
 * Arrivals join the arriving warp's vector clock into the barrier, and a
 * successful wait joins the completed phase's clock into the waiter, so the
 * race checker orders accesses across mbarrier pipelines as it does across
 * bar.sync. try_wait that would fail parks its warp until the barrier's phase
 * changes (the ISA lets try_wait suspend); a CTA whose warps all wait is a
 * deadlock, reported with each barrier's phase and counts. */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

static SimMbar *find(SimCta *c, uint32_t addr)
{
    for (int i = 0; i < c->nmbar; i++)
        if (c->mbar[i].addr == addr) return &c->mbar[i];
    return NULL;
}

/* The barrier operand: an 8-byte aligned shared address of this CTA, or
 * with .shared::cluster (arrive, complete_tx) of any CTA of the cluster. */
static SimCta *bar_addr(SimCta *c, SimWarp *w, const SimInsn *in, int lane, const SimOpnd *o, uint32_t *addr)
{
    uint64_t a = sim_addr(c, w, o, lane);
    int cluster = in->d.nspace && in->d.space[0] == SP_SHARED_CLUSTER;
    if (a - SIM_SHARED_WINDOW < (1ull << 32)) a -= SIM_SHARED_WINDOW, cluster = 1;   /* a generic address */
    SimCta *owner = a < (1ull << 32) ? sim_smem_owner(c, w, lane, in, (uint32_t)a, cluster, addr) : NULL;
    if (c->failed) return NULL;
    if (!owner || *addr % 8 || *addr + 8 > owner->smem_size) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "mbarrier address 0x%llx is not an 8-byte aligned shared address of this CTA%s",
                 (unsigned long long)a, cluster ? " or its cluster" : "");
        return NULL;
    }
    return owner;
}

static SimMbar *live(SimCta *c, SimWarp *w, const SimInsn *in, int lane, uint32_t addr)
{
    SimMbar *b = find(c, addr);
    if (!b) sim_fail(c, sim_warp_id(c, w), lane, in, "mbarrier at shared 0x%x is used before mbarrier.init", addr);
    return b;
}

static void join(uint32_t *into, const uint32_t *from, int n)
{
    for (int k = 0; k < n; k++)
        if (from[k] > into[k]) into[k] = from[k];
}

static void complete_phase(SimCta *c, SimMbar *b)
{
    memcpy(b->done_vc, b->vc, (size_t)c->nwarps * sizeof *b->vc);
    memset(b->vc, 0, (size_t)c->nwarps * sizeof *b->vc);
    b->phase++;
    b->pending = b->expected;
    b->tx = 0;
    for (int i = 0; i < c->nwarps; i++)
        if (c->w[i].parked && c->w[i].mbar_addr == b->addr) {
            c->w[i].parked = 0;
            if (c->w[i].state == WS_MBAR) c->w[i].state = WS_RUN;
        }
}

static void maybe_complete(SimCta *c, SimMbar *b)
{
    if (b->pending == 0 && b->tx == 0) complete_phase(c, b);
}

void sim_mbar_arrive(SimCta *c, SimMbar *b, const uint32_t *vc, uint32_t count)
{
    if (vc) join(b->vc, vc, c->nwarps);
    b->pending -= count < b->pending ? count : b->pending;
    maybe_complete(c, b);
}

void sim_mbar_tx(SimCta *c, SimMbar *b, int64_t bytes)
{
    b->tx += bytes;
    maybe_complete(c, b);
}

SimMbar *sim_mbar_at(SimCta *c, uint32_t addr) { return find(c, addr); }

static void init(SimCta *c, SimWarp *w, const SimInsn *in, int lane, uint32_t addr)
{
    uint32_t count = (uint32_t)sim_read(c, w, &in->o[1], lane);
    if (count < 1 || count > (1u << 20) - 1) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "mbarrier.init count %u (1 to 2^20 - 1)", count);
        return;
    }
    for (int i = 0; i < c->nmbar; i++)
        if (c->mbar[i].addr != addr && c->mbar[i].addr + 8 > addr && addr + 8 > c->mbar[i].addr) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "mbarrier at 0x%x overlaps the one at 0x%x", addr, c->mbar[i].addr);
            return;
        }
    SimMbar *b = find(c, addr);
    if (!b) {
        if (c->nmbar == SIM_MAX_MBARS) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "more than %d mbarriers in one CTA", SIM_MAX_MBARS);
            return;
        }
        b = &c->mbar[c->nmbar++];
    }
    b->addr = addr, b->expected = b->pending = count, b->tx = 0, b->phase = 0, b->init_line = in->line;
    memset(b->vc, 0, sizeof b->vc), memset(b->done_vc, 0, sizeof b->done_vc);
    uint8_t *p = sim_smem_write(c, w, lane, in, c->smem_base + addr, 8);   /* the object's bytes count as written */
    memset(p, 0, 8);
}

static void inval(SimCta *c, uint32_t addr)
{
    SimMbar *b = find(c, addr);
    if (b) *b = c->mbar[--c->nmbar];
}

/* arrive / arrive.expect_tx / expect_tx / complete_tx: the state
 * destination (or _) comes first for the arrives, then [addr], then the count
 * or the transaction bytes (the forms were checked at parse, sim_form.c). */
static void arrive_like(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    int wid = sim_warp_id(c, w);   /* of the issuing CTA, before c becomes the barrier's */
    int op = in->d.op, ai = op == I_MBAR_ARRIVE || op == I_MBAR_ARRIVE_EXPECT_TX;
    uint32_t addr;
    SimCta *owner = bar_addr(c, w, in, lane, &in->o[ai], &addr);
    if (!owner) return;
    SimMbar *b = find(owner, addr);
    if (!b) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "mbarrier at shared 0x%x of CTA rank %d is used before mbarrier.init", addr,
                 owner->rank);
        return;
    }
    /* the race clocks are per CTA: an arrival on a peer's barrier publishes none */
    const uint32_t *vc = owner == c ? w->vc : NULL;
    c = owner;
    uint64_t arg = in->nops > ai + 1 ? sim_read(c, w, &in->o[ai + 1], lane) : 1;
    if (ai) sim_write(w, c->f, &in->o[0], lane, b->phase);   /* the state token: the phase arrived on */
    switch (op) {
    case I_MBAR_ARRIVE:
        if (!arg) { sim_fail(c, wid, lane, in, "mbarrier.arrive count 0"); return; }
        sim_mbar_arrive(c, b, vc, (uint32_t)arg);
        w->vc[wid]++;   /* what the warp does next is not published by this arrival */
        break;
    case I_MBAR_ARRIVE_EXPECT_TX:
        b->tx += (int64_t)(uint32_t)arg;
        sim_mbar_arrive(c, b, vc, 1);
        w->vc[wid]++;
        break;
    case I_MBAR_EXPECT_TX: b->tx += (int64_t)(uint32_t)arg; break;
    default: sim_mbar_tx(c, b, -(int64_t)(uint32_t)arg); break;
    }
}

/* cp.async.mbarrier.arrive: the arrival waits for every cp.async this thread issued so far. Here those copies
 * land at the instruction (the arrival publishes them to whoever waits on the phase) and the arrival follows.
 * Without .noinc the ISA first raises the phase's pending count by one, so the arrival is not one of the
 * expected ones: only the landing remains. */
static void cp_async_arrive(SimCta *c, SimWarp *w, const SimInsn *in, int lane)
{
    uint32_t addr;
    SimCta *owner = bar_addr(c, w, in, lane, &in->o[0], &addr);
    if (owner != c) {
        if (!c->failed) sim_fail(c, sim_warp_id(c, w), lane, in, "cp.async.mbarrier.arrive takes [mbarrier] of its own CTA");
        return;
    }
    SimMbar *b = live(c, w, in, lane, addr);
    if (!b) return;
    sim_async_land_lane(c, w, lane);
    if (!(in->d.flags & F_NOINC)) return;
    sim_mbar_arrive(c, b, w->vc, 1);
    w->vc[sim_warp_id(c, w)]++;
}

/* try_wait / test_wait: p = whether the awaited phase has completed. With
 * .parity the operand is the awaited phase's parity, else the state token an
 * arrive returned. */
static int wait(SimCta *c, SimWarp *w, const SimInsn *in, int lane, int *park)
{
    uint32_t addr;
    if (!bar_addr(c, w, in, lane, &in->o[1], &addr)) return 0;
    SimMbar *b = live(c, w, in, lane, addr);
    if (!b) return 0;
    uint64_t v = sim_read(c, w, &in->o[2], lane);
    int done = (in->d.flags & F_PARITY) ? (b->phase & 1) != (v & 1) : b->phase != (uint32_t)v;
    if (!done && sim_async_land_mbar(c->cl, c, addr) > 0) {
        /* the waiter is here: what signals this barrier lands now, the latest point it may */
        if (c->failed) return 0;
        done = (in->d.flags & F_PARITY) ? (b->phase & 1) != (v & 1) : b->phase != (uint32_t)v;
    }
    if (done) {
        join(w->vc, b->done_vc, c->nwarps);
    } else if (in->d.op == I_MBAR_TRY_WAIT && (!w->parked || w->mbar_addr == addr)) {
        /* the ISA lets try_wait suspend; lanes of this warp parked on another barrier make these spin instead */
        *park = 1;
        w->mbar_addr = addr;
        return 1;
    }
    sim_write(w, c->f, &in->o[0], lane, (uint64_t)done);
    return 1;
}

int sim_mbar(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int park = 0;
    for (int l = 0; l < 32 && !c->failed && !park; l++) {
        if (!(exec >> l & 1)) continue;
        uint32_t addr;
        switch (in->d.op) {
        case I_MBAR_INIT:
            if (bar_addr(c, w, in, l, &in->o[0], &addr)) init(c, w, in, l, addr);
            break;
        case I_MBAR_INVAL:
            if (bar_addr(c, w, in, l, &in->o[0], &addr)) inval(c, addr);
            break;
        case I_MBAR_TRY_WAIT: case I_MBAR_TEST_WAIT: wait(c, w, in, l, &park); break;
        case I_CP_ASYNC_MBAR_ARRIVE: cp_async_arrive(c, w, in, l); break;
        default: arrive_like(c, w, in, l);
        }
    }
    if (park) {
        /* the lanes re-execute the try_wait when the phase changes; lanes of the warp at other PCs go on */
        w->parked |= exec, w->wait_line = in->line;
        if (!(w->live & ~w->parked)) w->state = WS_MBAR;
    }
    return 1;
}

/* For the deadlock report: the barrier a parked warp waits on. */
int sim_mbar_describe(SimCta *c, const SimWarp *w, char *out, size_t cap)
{
    const SimMbar *b = find(c, w->mbar_addr);
    if (!b) return snprintf(out, cap, "an mbarrier at 0x%x", w->mbar_addr);
    return snprintf(out, cap, "the mbarrier at shared 0x%x (initialised at PTX line %d) in phase %u with %u of %u arrivals and %lld transaction bytes pending",
                    b->addr, b->init_line, b->phase, b->pending, b->expected, (long long)b->tx);
}
