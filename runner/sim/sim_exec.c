/* Runs a grid on the sim: CTA by CTA, warp by warp. A warp executes in
 * lockstep: every lane has its own PC and the warp issues the lowest PC among
 * its live lanes, with the lanes standing there as the active mask, so lanes
 * that branched ahead wait at the reconvergence point of structured code.
 * Warps take turns one instruction at a time, so a write one warp makes
 * without a barrier is usually already there when another warp reads: the
 * race checker then names the missing bar.sync. A CTA whose live warps all
 * wait is a deadlock, reported with where each warp stands. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

void sim_fail(SimCta *c, int warp, int lane, const SimInsn *in, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = 1;
    for (int r = 0; c->cl && r < c->cl->n; r++)
        if (&c->cl->cta[r] != c && c->cl->cta[r].failed) return;   /* a peer's error came first */
    char msg[1024], where[384] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in) {
        const char *t = c->mod->lines[in->line - 1];
        while (*t == ' ' || *t == '\t') t++;
        snprintf(where, sizeof where, " at PTX line %d (\"%.200s\")", in->line, t);
    }
    char who[96] = "";
    if (lane >= 0) snprintf(who, sizeof who, ", thread %d (warp %d, lane %d)", warp * 32 + lane, warp, lane);
    else if (warp >= 0) snprintf(who, sizeof who, ", warp %d", warp);
    snprintf(c->sim->err, c->sim->errlen, "sim: %s%s in %s, CTA (%u,%u,%u)%s", msg, where, c->f->name, c->cta[0],
             c->cta[1], c->cta[2], who);
}

static uint64_t sreg(const SimCta *c, const SimWarp *w, int lane, int id)
{
    unsigned t = (unsigned)sim_warp_id(c, w) * 32 + (unsigned)lane;
    switch (id) {
    case SR_TID_X: return t % c->block[0];
    case SR_TID_Y: return t / c->block[0] % c->block[1];
    case SR_TID_Z: return t / (c->block[0] * c->block[1]);
    case SR_NTID_X: case SR_NTID_Y: case SR_NTID_Z: return c->block[id - SR_NTID_X];
    case SR_CTAID_X: case SR_CTAID_Y: case SR_CTAID_Z: return c->cta[id - SR_CTAID_X];
    case SR_NCTAID_X: case SR_NCTAID_Y: case SR_NCTAID_Z: return c->grid[id - SR_NCTAID_X];
    case SR_LANEID: return (uint32_t)lane;
    case SR_WARPID: return (uint32_t)sim_warp_id(c, w);
    case SR_NWARPID: return (uint32_t)c->nwarps;
    case SR_CLUSTER_CTARANK: return (uint32_t)c->rank;
    case SR_CLUSTER_NCTARANK: return (uint32_t)c->cl->n;
    case SR_CLUSTER_CTAID_X: case SR_CLUSTER_CTAID_Y: case SR_CLUSTER_CTAID_Z:
        return c->cta[id - SR_CLUSTER_CTAID_X] % c->cl->dims[id - SR_CLUSTER_CTAID_X];
    case SR_CLUSTER_NCTAID_X: case SR_CLUSTER_NCTAID_Y: case SR_CLUSTER_NCTAID_Z: return c->cl->dims[id - SR_CLUSTER_NCTAID_X];
    case SR_CLUSTERID_X: case SR_CLUSTERID_Y: case SR_CLUSTERID_Z: return c->cl->id[id - SR_CLUSTERID_X];
    case SR_NCLUSTERID_X: case SR_NCLUSTERID_Y: case SR_NCLUSTERID_Z:
        return c->grid[id - SR_NCLUSTERID_X] / c->cl->dims[id - SR_NCLUSTERID_X];
    case SR_IS_EXPLICIT_CLUSTER: return (uint32_t)c->cl->explicit_launch;
    case SR_LANEMASK_EQ: return 1u << lane;
    case SR_LANEMASK_LT: return (1u << lane) - 1;
    case SR_LANEMASK_LE: return (uint32_t)((2ull << lane) - 1);
    case SR_LANEMASK_GT: return ~(uint32_t)((2ull << lane) - 1);
    case SR_LANEMASK_GE: return ~((1u << lane) - 1);
    case SR_DYNAMIC_SMEM_SIZE: return c->smem_size - c->dyn_at;
    case SR_TOTAL_SMEM_SIZE: return c->smem_size;
    /* the clocks count the warp's instructions: they only move forward, which is all a kernel may assume */
    case SR_CLOCK: return (uint32_t)w->steps;
    case SR_CLOCK64: case SR_GLOBALTIMER: return w->steps;
    case SR_NSMID: return (uint32_t)c->sim->nsm;
    }
    return 0;
}

uint64_t sim_read(const SimCta *c, const SimWarp *w, const SimOpnd *o, int lane)
{
    switch (o->kind) {
    case SO_REG: {
        uint64_t v = w->r[(size_t)o->reg * 32 + (size_t)lane];
        return o->neg ? (~v & 1) : v;
    }
    case SO_SREG: return sreg(c, w, lane, (int)o->imm);
    case SO_SINK: case SO_VEC: case SO_ADDR: return 0;
    case SO_SYM: return (uint64_t)o->imm + (o->space == SPACE_SHARED ? c->smem_base : o->space == SPACE_GLOBAL ? c->gvar_base : 0);
    default: return (uint64_t)o->imm;   /* immediates; symbols are their address in their space */
    }
}

uint64_t sim_addr(const SimCta *c, const SimWarp *w, const SimOpnd *o, int lane)
{
    uint64_t sym_base = o->space == SPACE_SHARED ? c->smem_base : o->space == SPACE_GLOBAL ? c->gvar_base : 0;
    return (o->reg >= 0 ? w->r[(size_t)o->reg * 32 + (size_t)lane] : 0) + (uint64_t)o->imm + sym_base;
}

void sim_write(SimWarp *w, const SimFunc *f, const SimOpnd *o, int lane, uint64_t v)
{
    if (o->kind != SO_REG) return;   /* the sink "_" */
    int bits = f->slot_bits[o->reg];
    w->r[(size_t)o->reg * 32 + (size_t)lane] = bits >= 64 ? v : bits == 32 ? (uint32_t)v : bits == 16 ? (uint16_t)v : (v & 1);
}

void sim_reg_name(const SimFunc *f, int slot, char *out, size_t cap)
{
    int base = slot;
    while (base > 0 && !f->slot_name[base]) base--;
    const char *name = f->slot_name[base] ? f->slot_name[base] : "%?";
    int family = base + 1 < f->nslots && !f->slot_name[base + 1];
    if (slot > base || family) snprintf(out, cap, "%s%d", name, slot - base);
    else snprintf(out, cap, "%s", name);
}

SimOpnd sim_vec_elem(const SimFunc *f, const SimOpnd *v, int k)
{
    int32_t slot = f->vec[v->reg + k];
    if (slot <= -2) return f->velem[-2 - slot];   /* a constant or a special register */
    return slot < 0 ? (SimOpnd){.kind = SO_SINK, .reg2 = -1} : (SimOpnd){.kind = SO_REG, .reg = slot, .reg2 = -1};
}

/* ---- barriers ---- */
static void release(SimCta *c, SimBarrier *b)
{
    uint32_t join[32];
    memcpy(join, b->arrived_vc, sizeof join);
    for (int i = 0; i < c->nwarps; i++)
        if (b->waiting >> i & 1)
            for (int k = 0; k < c->nwarps; k++)
                if (c->w[i].vc[k] > join[k]) join[k] = c->w[i].vc[k];
    for (int i = 0; i < c->nwarps; i++)
        if (b->waiting >> i & 1) {
            SimWarp *v = &c->w[i];
            memcpy(v->vc, join, (size_t)c->nwarps * sizeof *join);
            v->vc[i]++;
            v->state = WS_RUN;
            if (v->bar_red) {   /* bar.red: every live lane gets the phase's reduction */
                const SimInsn *in = v->bar_red;
                uint64_t r = (in->d.flags & F_POPC) ? b->red_popc : in->d.redop == RO_AND ? b->red_all : b->red_any;
                for (int l = 0; l < 32; l++)
                    if (v->live >> l & 1) sim_write(v, c->f, &in->o[0], l, r);
                v->bar_red = NULL;
            }
        }
    b->arrived = 0, b->waiting = 0;
    memset(b->arrived_vc, 0, sizeof b->arrived_vc);
}

/* bar.sync (wait) or bar.arrive (count this warp and go on: a producer signalling a consumer); bar.red waits
 * like bar.sync with its destination first and its predicate last, which the phase reduces. */
static void bar_arrive(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, uint32_t active, int wait)
{
    int wid = sim_warp_id(c, w), red = in->d.op == I_BAR_RED;
    const char *what = red ? "bar.red" : wait ? "bar.sync" : "bar.arrive";
    if (exec != w->live || active != w->live) {
        sim_fail(c, wid, -1, in, "%s in divergent code: lanes 0x%08x of live 0x%08x arrive", what, exec, w->live);
        return;
    }
    int nb = in->nops - 2 * red;   /* the barrier's operands: its id and a thread count (bar.arrive's; optional else) */
    uint64_t id = sim_read(c, w, &in->o[red], 0);
    int threads = nb > 1 ? (int)sim_read(c, w, &in->o[red + 1], 0) : c->nwarps * 32;
    if (id >= 16 || threads <= 0 || threads % 32 || threads > c->nwarps * 32) {
        sim_fail(c, wid, -1, in, "bad barrier: id %llu, thread count %d (ids 0-15; counts multiples of 32 up to %d)",
                 (unsigned long long)id, threads, c->nwarps * 32);
        return;
    }
    SimBarrier *b = &c->bar[id];
    if (b->arrived && b->expected != threads / 32) {
        sim_fail(c, wid, -1, in, "barrier %d awaited with %d threads here but %d by the warps already there", (int)id,
                 threads, b->expected * 32);
        return;
    }
    b->expected = threads / 32;
    if (!b->arrived) b->red_popc = 0, b->red_all = 1, b->red_any = 0;
    if (red) {
        for (int l = 0; l < 32; l++)
            if (w->live >> l & 1) {
                uint32_t p = (uint32_t)sim_read(c, w, &in->o[in->nops - 1], l) & 1;
                b->red_popc += p, b->red_all &= p, b->red_any |= p;
            }
        w->bar_red = in;
    }
    b->arrived++;
    if (wait) {
        b->waiting |= 1u << wid;
        w->state = WS_BAR, w->bar_id = (int)id, w->wait_line = in->line;
    } else {
        for (int k = 0; k < c->nwarps; k++)
            if (w->vc[k] > b->arrived_vc[k]) b->arrived_vc[k] = w->vc[k];
        w->vc[wid]++;   /* what it does next is not ordered before the waiters */
    }
    if (b->arrived == b->expected) release(c, b);
}

/* ---- one warp instruction ---- */
static uint32_t guard_mask(const SimWarp *w, const SimInsn *in, uint32_t active)
{
    if (in->guard < 0) return active;
    uint32_t m = 0;
    const uint64_t *p = &w->r[(size_t)in->guard * 32];
    for (int l = 0; l < 32; l++)
        if ((active >> l & 1) && ((p[l] & 1) != in->guard_neg)) m |= 1u << l;
    return m;
}

static void advance(SimWarp *w, uint32_t lanes)
{
    for (int l = 0; l < 32; l++)
        if (lanes >> l & 1) w->pc[l]++;
}

static void branch(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, uint32_t active)
{
    if ((in->d.flags & F_UNI) && exec && exec != active) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "bra.uni taken by lanes 0x%08x of active 0x%08x: the branch is not uniform",
                 exec, active);
        return;
    }
    for (int l = 0; l < 32; l++)
        if (exec >> l & 1) w->pc[l] = (uint32_t)in->o[0].imm;
    advance(w, active & ~exec);
}


static int cta_done(const SimCta *c)
{
    for (int i = 0; i < c->nwarps; i++)
        if (c->w[i].state != WS_DONE) return 0;
    return 1;
}

/* A CTA's shared memory is freed when its last warp exits, so an async op
 * still reading it (a bulk store whose cp.async.bulk.wait_group.read never
 * ran) would read memory the next CTA on the SM may own. */
static void exit_with_reads_held(SimCta *c, SimWarp *w, const SimInsn *in)
{
    for (int i = 0; i < c->cl->nq; i++) {
        const SimAsync *op = c->cl->q[i];
        for (int k = 0; k < op->nsrc; k++)
            if (op->src[k].cta == c) {
                sim_note(c, sim_warp_id(c, w), in, "async read at exit",
                         "the CTA exits while the %s issued at PTX line %d still reads its shared memory: wait for it "
                         "first (cp.async.bulk.wait_group.read for a bulk store)", op->what, op->line);
                return;
            }
    }
}

static void step(SimCta *c, SimWarp *w)
{
    uint32_t pc = UINT32_MAX, active = 0;
    uint32_t ready = w->live & ~w->parked;
    if (!ready) { w->state = WS_MBAR; return; }   /* the lanes left have all parked in try_wait */
    for (int l = 0; l < 32; l++)
        if ((ready >> l & 1) && w->pc[l] <= pc) {
            if (w->pc[l] < pc) pc = w->pc[l], active = 0;
            active |= 1u << l;
        }
    if (pc >= (uint32_t)c->f->ncode) {
        sim_fail(c, sim_warp_id(c, w), -1, NULL, "warp ran past the last instruction without ret");
        return;
    }
    const SimInsn *in = &c->f->code[pc];
    uint32_t exec = guard_mask(w, in, active);
    if (w->wg && exec && sim_wgmma_check_regs(c, w, in, exec)) return;   /* registers an in-flight wgmma owns */
    if (c->tmem && exec && sim_tcgen05_check_regs(c, w, in)) return;   /* registers a tcgen05.ld left in flight */
    c->sim->stats.warp_insns[in->d.cls]++;
    c->sim->stats.lane_insns[in->d.cls] += (uint64_t)__builtin_popcount(exec);
    switch (in->d.op) {
    case I_BRA:   /* its one label: sim_form.c */
        branch(c, w, in, exec, active);
        return;
    case I_TRAP: case I_BRKPT:   /* the kernel aborts: a GPU reports a launch failure (no debugger: brkpt too) */
        if (exec) {
            sim_fail(c, sim_warp_id(c, w), __builtin_ctz(exec), in, "%s executed: the kernel aborts (on a GPU the launch "
                     "fails)", isa_base_text(in->d.op));
            return;
        }
        advance(w, active);
        return;
    case I_NANOSLEEP:   /* suspends the thread for at most the time given: here, for none */
        advance(w, active);
        return;
    case I_RET: case I_EXIT:
        sim_pdl_release(c, w, exec, 0);
        w->live &= ~exec;
        advance(w, active & ~exec);
        if (!w->live) {
            w->state = WS_DONE, w->exit_line = in->line;
            sim_cluster_bar_check(c->cl);   /* an exited warp no longer holds barrier.cluster back */
            if (cta_done(c)) exit_with_reads_held(c, w, in);
        }
        return;
    case I_BAR_SYNC: case I_BARRIER_SYNC: case I_BAR_ARRIVE: case I_BAR_RED:
        advance(w, active);
        if (exec) bar_arrive(c, w, in, exec, active, in->d.op != I_BAR_ARRIVE);   /* guarded off: not executed */
        return;
    }
    if (exec) {
        int done = 0;
        switch (in->d.unit) {
        case U_ALU: done = sim_alu(c, w, in, exec); break;
        case U_MEM: done = sim_mem(c, w, in, exec); break;
        case U_WARP: done = sim_collective(c, w, in, exec); break;
        case U_MBAR: done = sim_mbar(c, w, in, exec); break;
        case U_CLUSTER: done = sim_cluster(c, w, in, exec); break;
        case U_TMA: done = in->d.op == I_FENCE_PROXY_ASYNC ? sim_cluster(c, w, in, exec) : sim_tma(c, w, in, exec); break;
        case U_WGMMA: done = sim_wgmma(c, w, in, exec); break;
        case U_TMEM: case U_UMMA: done = sim_tcgen05(c, w, in, exec); break;
        }
        /* try_wait or a unit parked the warp (or try_wait these lanes): they re-execute the instruction when woken */
        if (w->state == WS_UNIT) return;
        if (w->parked & exec) { advance(w, active & ~exec); return; }
        if (!done) sim_fail(c, sim_warp_id(c, w), -1, in, "the sim has no semantics for %s yet", isa_base_text(in->d.op));
    }
    advance(w, active);
}

static void run_step(SimCta *c, SimWarp *w)
{
    step(c, w);
    w->steps++;
    /* counted per cluster, not per warp: warps run in turn, so a per-warp limit took as many times longer to
     * reach as warps spin (minutes for 32 warps, hours for an MMA loop) */
    if (++c->cl->work > c->sim->max_steps && !c->failed && w->live)
        sim_fail(c, sim_warp_id(c, w), -1, &c->f->code[w->pc[__builtin_ctz(w->live)]],
                 "the cluster's warps executed %llu instructions without finishing (endless loop? an MMA counts one "
                 "per %d multiply-adds; PTXGEN_SIM_MAX_STEPS raises the limit)",
                 (unsigned long long)c->sim->max_steps, SIM_MACS_PER_STEP);
}

static size_t describe_warps(SimCta *c, char *msg, size_t n, size_t cap)
{
    for (int i = 0; i < c->nwarps && n < cap; i++) {
        const SimWarp *w = &c->w[i];
        const char *cta = c->cl->n > 1 ? " of CTA rank " : "";
        char rank[16] = "";
        if (c->cl->n > 1) snprintf(rank, sizeof rank, "%d", c->rank);
        if (w->state == WS_BAR) {
            n += (size_t)snprintf(msg + n, cap - n, " warp %d%s%s waits at bar.sync %d (PTX line %d, %d of %d warps arrived);",
                                  i, cta, rank, w->bar_id, w->wait_line, c->bar[w->bar_id].arrived, c->bar[w->bar_id].expected);
        } else if (w->state == WS_MBAR) {
            char what[256];
            sim_mbar_describe(c, w, what, sizeof what);
            n += (size_t)snprintf(msg + n, cap - n, " warp %d%s%s waits (PTX line %d) on %s;", i, cta, rank, w->wait_line, what);
        } else if (w->state == WS_CLUSTER) {
            n += (size_t)snprintf(msg + n, cap - n, " warp %d%s%s waits in barrier.cluster.wait (PTX line %d, %d warps arrived);",
                                  i, cta, rank, w->wait_line, c->cl->bar_arrived);
        } else if (w->state == WS_UNIT) {
            char tm[256];
            sim_tcgen05_describe(c, tm, sizeof tm);
            n += (size_t)snprintf(msg + n, cap - n, " warp %d%s%s waits for a resource at PTX line %d (\"%.80s\")%s%s;", i, cta,
                                  rank, w->wait_line, c->mod->lines[w->wait_line - 1], tm[0] ? ": " : "", tm);
        } else {
            n += (size_t)snprintf(msg + n, cap - n, " warp %d%s%s exited (PTX line %d);", i, cta, rank, w->exit_line);
        }
    }
    return n;
}

static void report_deadlock(SimCluster *cl, int k)
{
    char msg[4096];
    size_t n = (size_t)snprintf(msg, sizeof msg, "deadlock: no warp can run and nothing is in flight (a barrier that not every warp reaches, or an mbarrier phase that never completes);");
    for (int j = 0; j < k; j++) {
        if (k > 1 && n < sizeof msg)
            n += (size_t)snprintf(msg + n, sizeof msg - n, " [CTA (%u,%u,%u), one of %d co-resident clusters]",
                                  cl[j].cta[0].cta[0], cl[j].cta[0].cta[1], cl[j].cta[0].cta[2], k);
        for (int r = 0; r < cl[j].n; r++) n = describe_warps(&cl[j].cta[r], msg, n, sizeof msg);
    }
    sim_fail(&cl[0].cta[0], -1, -1, NULL, "%s", msg);
}

static int cluster_failed(const SimCluster *cl)
{
    for (int r = 0; r < cl->n; r++)
        if (cl->cta[r].failed) return 1;
    return 0;
}

static int any_failed(const SimCluster *cl, int k)
{
    for (int j = 0; j < k; j++)
        if (cluster_failed(&cl[j])) return 1;
    return 0;
}

/* Runs k co-resident clusters (Sim.ctas_per_sm; 1 by default) together, one
 * instruction per runnable warp in turn. When no warp can run, what is in
 * flight lands (the latest point it may); only then are waiting warps
 * deadlocked. */
static void run_clusters(SimCluster *cl, int k)
{
    for (;;) {
        int ran = 0, done = 0, total = 0, landed = 0;
        for (int j = 0; j < k && !any_failed(cl, k); j++)
            for (int r = 0; r < cl[j].n && !cluster_failed(&cl[j]); r++) {
                SimCta *c = &cl[j].cta[r];
                for (int i = 0; i < c->nwarps && !c->failed; i++) {
                    if (c->w[i].state == WS_RUN) ran = 1, run_step(c, &c->w[i]);
                    done += c->w[i].state == WS_DONE;
                }
                total += c->nwarps;
            }
        if (any_failed(cl, k)) return;
        if (ran && done < total) continue;
        /* first only what a parked waiter waits for: an op whose own barrier nobody waits on stays in
         * flight (a peer told "landed" before it was reads it as such); then everything */
        for (int j = 0; j < k; j++)
            for (int r = 0; r < cl[j].n; r++)
                for (int i = 0; i < cl[j].cta[r].nwarps; i++) {
                    SimWarp *w = &cl[j].cta[r].w[i];
                    int n = w->state == WS_MBAR ? sim_async_land_mbar(&cl[j], &cl[j].cta[r], w->mbar_addr) : 0;
                    if (n < 0) return;
                    landed |= n > 0;
                }
        if (landed) continue;
        for (int j = 0; j < k; j++) {
            if (!cl[j].nq) continue;
            if (sim_async_land_all(&cl[j]) < 0) return;
            landed = 1;
        }
        if (landed) continue;
        if (done == total) break;
        report_deadlock(cl, k);
        return;
    }
    for (int j = 0; j < k; j++)
        for (int r = 0; r < cl[j].n; r++)
            if (sim_tcgen05_exit(&cl[j].cta[r]) || sim_wgmma_exit(&cl[j].cta[r])) return;
}

/* ---- launch ---- */
static void reset_cta(SimCta *c)
{
    size_t words = c->smem_size / 4;
    memset(c->sflag, 0, c->smem_size);
    memset(c->smem, 0xA5, c->smem_size);
    memset(c->wclk, 0, words * sizeof *c->wclk);
    memset(c->wwarp, 0, words);
    memset(c->watomic, 0, words);
    memset(c->wrank, c->rank, words);
    memset(c->rclk, 0, words * (size_t)c->nwarps * sizeof *c->rclk);
    memset(c->gop, 0, words * sizeof *c->gop), memset(c->gclk, 0, words * 4 * sizeof *c->gclk), c->nops = 0;
    memset(c->bar, 0, sizeof c->bar);
    c->nmbar = 0;
    sim_tma_reset(c);
    sim_tcgen05_reset(c);
    c->failed = 0;
    /* registers per thread before any setmaxnreg: an even share of the register file, as ptxas could at most give */
    int share = c->arch->regs_sm / (c->nwarps * 32) / 8 * 8;
    if (share > c->arch->regs_thread) share = c->arch->regs_thread / 8 * 8;
    c->reg_pool = share * 32 * c->nwarps;
    for (int i = 0; i < c->nwarps; i++) {
        SimWarp *w = &c->w[i];
        int lanes = c->nthreads - i * 32 < 32 ? c->nthreads - i * 32 : 32;
        sim_wgmma_free(w);
        /* registers start as all-ones (NaN as f32) so a use before any write shows */
        memset(w->r, 0xFF, (size_t)c->f->nslots * 32 * sizeof *w->r);
        memset(w->pc, 0, sizeof w->pc);
        memset(w->vc, 0, (size_t)c->nwarps * sizeof *w->vc);
        memset(w->committed, 0, sizeof w->committed);
        w->vc[i] = 1;
        w->live = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
        w->state = WS_RUN, w->ncopies = 0, w->steps = 0, w->cl_arrived = 0, w->cl_phase = 0, w->parked = 0;
        w->pdl_waited = 0, w->carry = 0, w->carry_set = 0;
        c->maxnreg[i] = share;
    }
}

static int cta_alloc(SimCta *c)
{
    size_t words = c->smem_size / 4 + 1;
    c->smem = malloc(c->smem_size + 16), c->sflag = malloc(c->smem_size + 16);
    c->wclk = malloc(words * sizeof *c->wclk), c->wwarp = malloc(words), c->wrank = malloc(words), c->watomic = malloc(words), c->wline = malloc(words * sizeof *c->wline);
    c->rclk = malloc(words * (size_t)c->nwarps * sizeof *c->rclk);
    c->gop = malloc(words * sizeof *c->gop), c->gclk = malloc(words * 4 * sizeof *c->gclk), c->gwg = malloc(words);
    c->w = calloc((size_t)c->nwarps, sizeof *c->w);
    if (!c->smem || !c->sflag || !c->wclk || !c->wwarp || !c->wrank || !c->wline || !c->rclk || !c->gop || !c->gclk || !c->gwg || !c->w) return -1;
    for (int i = 0; i < c->nwarps; i++) {
        c->w[i].r = malloc((size_t)(c->f->nslots ? c->f->nslots : 1) * 32 * sizeof *c->w[i].r);
        c->w[i].vc = malloc(32 * sizeof *c->w[i].vc);
        if (!c->w[i].r || !c->w[i].vc) return -1;
    }
    return 0;
}

static void cta_free(SimCta *c)
{
    for (int i = 0; c->w && i < c->nwarps; i++) {
        sim_wgmma_free(&c->w[i]);
        free(c->w[i].r), free(c->w[i].vc), free(c->w[i].copies), free(c->w[i].local);
    }
    sim_tcgen05_reset(c);   /* before the warps: it knows their count */
    free(c->w), free(c->smem), free(c->sflag), free(c->wclk), free(c->wwarp), free(c->wrank), free(c->watomic), free(c->wline), free(c->rclk), free(c->gop), free(c->gclk), free(c->gwg);
    sim_tma_reset(c);
}

static int check_launch(Sim *sim, const SimModule *m, const SimFunc *f, const ArchInfo *arch, const unsigned grid[3],
                        const unsigned block[3], const unsigned cl[3], unsigned dyn_smem)
{
    unsigned long threads = (unsigned long)block[0] * block[1] * block[2], ncl = (unsigned long)cl[0] * cl[1] * cl[2];
    char bad[256] = "";
    if (!arch)
        snprintf(bad, sizeof bad, "the module's .target %s is not in the arch table, so the sim does not know its limits", m->target);
    else if (!grid[0] || !grid[1] || !grid[2] || grid[1] > 65535 || grid[2] > 65535)
        snprintf(bad, sizeof bad, "grid dimensions must be >= 1 (y, z <= 65535)");
    else if ((uint64_t)grid[0] * grid[1] * grid[2] > UINT32_MAX)   /* the CTA count is 32-bit below: it wrapped (to 0 CTAs) */
        snprintf(bad, sizeof bad, "the sim runs at most %u CTAs a launch", UINT32_MAX);
    else if (!threads || threads > 1024) snprintf(bad, sizeof bad, "a CTA holds 1 to 1024 threads");
    else if (f->maxntid && threads > (unsigned long)f->maxntid) snprintf(bad, sizeof bad, "block exceeds the entry's .maxntid");
    else if ((unsigned long)m->static_smem + dyn_smem > (unsigned long)arch->smem_block_optin)
        snprintf(bad, sizeof bad, "shared memory %u B exceeds %s's %d B per CTA", m->static_smem + dyn_smem, arch->name,
                 arch->smem_block_optin);
    else if (!cl[0] || !cl[1] || !cl[2] || ncl > (unsigned long)arch->cluster_max)
        snprintf(bad, sizeof bad, "cluster %ux%ux%u: %s allows 1 to %d CTAs in a cluster", cl[0], cl[1], cl[2], arch->name,
                 arch->cluster_max);
    else if (grid[0] % cl[0] || grid[1] % cl[1] || grid[2] % cl[2])
        snprintf(bad, sizeof bad, "the grid is not a whole number of %ux%ux%u clusters", cl[0], cl[1], cl[2]);
    if (!bad[0]) return 0;
    snprintf(sim->err, sim->errlen, "sim: launch of %s with grid %ux%ux%u block %ux%ux%u cluster %ux%ux%u dyn smem %u: %s",
             f->name, grid[0], grid[1], grid[2], block[0], block[1], block[2], cl[0], cl[1], cl[2], dyn_smem, bad);
    return -1;
}

/* The module's .global block in the Sim's global memory: placed with its initial bytes at the module's first launch,
 * kept (with what kernels wrote to it) for the launches after; 0 when the module has none. */
static int place_globals(Sim *sim, const SimModule *m, uint64_t *base)
{
    *base = 0;
    if (!m->gvar_bytes) return 0;
    for (int i = 0; i < sim->nplaced; i++)
        if (sim->placed[i].m == m) { *base = sim->placed[i].base; return 0; }
    struct SimPlaced *np = realloc(sim->placed, (size_t)(sim->nplaced + 1) * sizeof *np);
    if (!np) { snprintf(sim->err, sim->errlen, "sim: out of host memory"); return -1; }
    sim->placed = np;
    SimBuf *b = sim_heap_alloc(&sim->heap, (size_t)m->gvar_bytes, base, sim->err, sim->errlen);
    if (!b) return -1;
    memcpy(b->data, m->gvar_init, (size_t)m->gvar_bytes);
    sim->placed[sim->nplaced++] = (struct SimPlaced){m, *base};
    return 0;
}

void sim_forget_module(Sim *sim, const SimModule *m)
{
    for (int i = 0; i < sim->nplaced; i++)
        if (sim->placed[i].m == m) {
            sim_heap_remove(&sim->heap, sim->placed[i].base);
            sim->placed[i] = sim->placed[--sim->nplaced];
            return;
        }
}

int sim_launch_raw(Sim *sim, const SimModule *m, const SimFunc *f, const unsigned grid[3], const unsigned block[3],
                   const unsigned cluster[3], unsigned dyn_smem, const uint8_t *params, size_t param_bytes)
{
    static const unsigned one[3] = {1, 1, 1};
    const unsigned *cd = cluster ? cluster : one;
    const ArchInfo *arch = arch_find(m->target);
    if (check_launch(sim, m, f, arch, grid, block, cd, dyn_smem)) return -1;
    if (param_bytes != (size_t)f->param_bytes) {
        snprintf(sim->err, sim->errlen, "sim: %s takes %d bytes of parameters; the launch gives %zu", f->name, f->param_bytes,
                 param_bytes);
        return -1;
    }
    if (sim->ctas_per_sm < 1 || sim->ctas_per_sm > SIM_MAX_CTAS_PER_SM) {
        snprintf(sim->err, sim->errlen, "sim: CTAs per SM (PTXGEN_SIM_CTAS_PER_SM) must be an integer 1..%d", SIM_MAX_CTAS_PER_SM);
        return -1;
    }
    if (sim->nsm < 1 || sim->nsm > SIM_MAX_SMS) {
        snprintf(sim->err, sim->errlen, "sim: SMs (PTXGEN_SIM_SMS) must be an integer 1..%d", SIM_MAX_SMS);
        return -1;
    }
    uint64_t gvar_base;
    if (place_globals(sim, m, &gvar_base)) return -1;
    /* k clusters run together: CTA rank r of each shares one SM (its TMEM columns) with rank r of the others */
    int n = (int)(cd[0] * cd[1] * cd[2]), k = sim->ctas_per_sm, rc = 0;
    unsigned nclusters = grid[0] / cd[0] * (grid[1] / cd[1]) * (grid[2] / cd[2]);
    if ((unsigned)k > nclusters) k = (int)nclusters;   /* a smaller grid has fewer CTAs to co-schedule */
    SimCluster *cl = calloc((size_t)k, sizeof *cl);
    uint8_t *pcopy = malloc(param_bytes + 8);
    if (!cl || !pcopy) rc = -1;
    else if (param_bytes) memcpy(pcopy, params, param_bytes);   /* a kernel without parameters may pass none */
    for (int j = 0; !rc && j < k; j++) {
        cl[j] = (SimCluster){.sim = sim, .n = n, .explicit_launch = cluster != NULL};
        memcpy(cl[j].dims, cd, sizeof cl[j].dims);
        cl[j].cta = calloc((size_t)n, sizeof *cl[j].cta);
        if (!cl[j].cta) rc = -1;
        for (int r = 0; !rc && r < n; r++) {
            SimCta *c = &cl[j].cta[r];
            *c = (SimCta){.sim = sim, .cl = &cl[j], .arch = arch, .rank = r, .smem_base = (uint32_t)r << SIM_RANK_SHIFT,
                          .gvar_base = gvar_base, .mod = m, .f = f, .params = pcopy};
            memcpy(c->grid, grid, sizeof c->grid);
            memcpy(c->block, block, sizeof c->block);
            c->nthreads = (int)(block[0] * block[1] * block[2]);
            c->nwarps = (c->nthreads + 31) / 32;
            c->dyn_at = (uint32_t)((m->static_smem + m->dyn_align - 1) / m->dyn_align * m->dyn_align);
            c->smem_size = (c->dyn_at + dyn_smem + 3) & ~3u;
            rc = cta_alloc(c);
        }
    }
    if (rc) snprintf(sim->err, sim->errlen, "sim: out of host memory");
    for (unsigned id = 0; !rc && id < nclusters; id += (unsigned)k) {
        int active = nclusters - id < (unsigned)k ? (int)(nclusters - id) : k;
        for (int j = 0; j < active; j++) {
            unsigned cid = id + (unsigned)j, nx = grid[0] / cd[0], ny = grid[1] / cd[1];
            SimCluster *c1 = &cl[j];
            c1->id[0] = cid % nx, c1->id[1] = cid / nx % ny, c1->id[2] = cid / (nx * ny);
            c1->bar_phase = 0, c1->bar_arrived = 0, c1->work = 0;
            for (int r = 0; r < n; r++) {
                SimCta *c = &c1->cta[r];
                unsigned lx = (unsigned)r % cd[0], ly = (unsigned)r / cd[0] % cd[1], lz = (unsigned)r / (cd[0] * cd[1]);
                for (int a = 0; a < 3; a++) c->cta[a] = c1->id[a] * cd[a] + (a == 0 ? lx : a == 1 ? ly : lz);
                c->sm_next = &cl[(j + 1) % active].cta[r];
                reset_cta(c);
            }
        }
        run_clusters(cl, active);
        for (int j = 0; j < active; j++)
            sim->stats.ctas += (uint64_t)n, sim->stats.warps += (uint64_t)(n * cl[j].cta[0].nwarps);
        rc = any_failed(cl, active) ? -1 : 0;
    }
    for (int j = 0; cl && j < k; j++) {
        while (cl[j].nq) {   /* after a failure: free what never landed */
            SimAsync *op = cl[j].q[--cl[j].nq];
            if (op->drop) op->drop(op);
            else free(op->payload);
            free(op);
        }
        free(cl[j].q);
        for (int r = 0; cl[j].cta && r < n; r++)
            if (cl[j].cta[r].w || cl[j].cta[r].smem) cta_free(&cl[j].cta[r]);
        free(cl[j].cta);
    }
    free(cl);
    free(pcopy);
    return rc;
}

void sim_init(Sim *sim)
{
    /* 2^29 units: a spin is reported in about 40 s however many warps spin; the heaviest cluster of a sim config
     * in `make test` (the persistent wgmma attn_fwd at s 2000) runs 9.5 M, so valid runs keep 50x room */
    *sim = (Sim){.max_steps = 1ull << 29};
    const char *env = getenv("PTXGEN_SIM_MAX_STEPS");
    if (env && atoll(env) > 0) sim->max_steps = (uint64_t)atoll(env);
    env = getenv("PTXGEN_SIM_STRICT");
    sim->strict = env && atoi(env) > 0;
    env = getenv("PTXGEN_SIM_CTAS_PER_SM");
    sim->ctas_per_sm = 1;
    if (env) {   /* a bad value is refused at launch, naming the variable, not clamped */
        char *end;
        long k = strtol(env, &end, 10);
        sim->ctas_per_sm = *env && !*end && k >= 1 && k <= SIM_MAX_CTAS_PER_SM ? (int)k : -1;
    }
    env = getenv("PTXGEN_SIM_SMS");
    sim->nsm = 1;
    if (env) {   /* refused at launch too */
        char *end;
        long n = strtol(env, &end, 10);
        sim->nsm = *env && !*end && n >= 1 && n <= SIM_MAX_SMS ? (int)n : -1;
    }
}

void sim_fini(Sim *sim)
{
    sim_heap_release(&sim->heap);
    free(sim->placed);
    sim->placed = NULL, sim->nplaced = 0;
    free(sim->notes);
    sim->notes = NULL, sim->notes_len = 0, sim->nnotes = 0;
}

int sim_launch(Sim *sim, const SimModule *m, const SimFunc *f, const unsigned grid[3], const unsigned block[3],
               const unsigned cluster[3], unsigned dyn_smem, void **args)
{
    uint8_t *params = calloc(1, (size_t)f->param_bytes + 8);
    if (!params) {
        snprintf(sim->err, sim->errlen, "sim: out of host memory");
        return -1;
    }
    for (int i = 0; i < f->nparams; i++) {
        if (!args[i]) {   /* a caller's array ends with NULLs (the test harness's does): more parameters than values */
            snprintf(sim->err, sim->errlen, "sim: %s's parameter %s (number %d) has no value in the launch", f->name,
                     f->params[i].name, i + 1);
            free(params);
            return -1;
        }
        memcpy(params + f->params[i].offset, args[i], (size_t)f->params[i].bytes);
    }
    int rc = sim_launch_raw(sim, m, f, grid, block, cluster, dyn_smem, params, (size_t)f->param_bytes);
    free(params);
    return rc;
}
