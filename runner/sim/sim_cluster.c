/* Clusters on the sim (PTX ISA "Cluster of Cooperative Thread Arrays",
 * barrier.cluster, mapa, setmaxnreg, griddepcontrol) and the shared-memory
 * address map they need. A shared address is rank << 24 | offset: a CTA's
 * own variables live at its rank's window, so the same bit arithmetic
 * NVIDIA's kernels do (clearing bit 24 to reach the even CTA of a pair)
 * names the same CTA here. Without a cluster launch every CTA is rank 0 of
 * a cluster of one and addresses are plain offsets. */
#include <string.h>
#include "sim.h"

SimCta *sim_smem_owner(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int cluster_ok, uint32_t *lo)
{
    uint32_t rank = addr >> SIM_RANK_SHIFT;
    *lo = addr & ((1u << SIM_RANK_SHIFT) - 1);
    if ((int)rank == c->rank) return c;
    if (rank >= (uint32_t)c->cl->n) {
        sim_fail(c, w ? sim_warp_id(c, w) : -1, lane, in,
                 "shared address 0x%x names CTA rank %u (bits 24 and up), but the cluster has %d CTA%s", addr, rank,
                 c->cl->n, c->cl->n == 1 ? "" : "s");
        return NULL;
    }
    if (!cluster_ok) {
        sim_fail(c, w ? sim_warp_id(c, w) : -1, lane, in,
                 "a .shared::cta access to 0x%x, which is the memory of CTA rank %u (this CTA is rank %d): "
                 "reaching a peer needs .shared::cluster", addr, rank, c->rank);
        return NULL;
    }
    return &c->cl->cta[rank];
}

/* ---- barrier.cluster ---- */
static void join_cta(SimCta *c)
{
    uint32_t join[32] = {0};
    for (int i = 0; i < c->nwarps; i++)
        for (int k = 0; k < c->nwarps; k++)
            if (c->w[i].vc[k] > join[k]) join[k] = c->w[i].vc[k];
    for (int i = 0; i < c->nwarps; i++)
        if (c->w[i].state != WS_DONE) {
            memcpy(c->w[i].vc, join, (size_t)c->nwarps * sizeof *join);
            c->w[i].vc[i]++;
        }
}

/* The phase completes when every warp of the cluster has arrived or exited. */
void sim_cluster_bar_check(SimCluster *cl)
{
    int need = 0;
    for (int r = 0; r < cl->n; r++)
        for (int i = 0; i < cl->cta[r].nwarps; i++) need += cl->cta[r].w[i].state != WS_DONE || cl->cta[r].w[i].cl_arrived;
    if (!cl->bar_arrived || cl->bar_arrived < need) return;
    cl->bar_phase++, cl->bar_arrived = 0;
    for (int r = 0; r < cl->n; r++) {
        SimCta *c = &cl->cta[r];
        join_cta(c);   /* the barrier orders every warp's earlier shared accesses before every later one */
        for (int i = 0; i < c->nwarps; i++)
            if (c->w[i].state == WS_CLUSTER) c->w[i].state = WS_RUN, c->w[i].cl_arrived = 0;
    }
}

static void cluster_arrive(SimCta *c, SimWarp *w, const SimInsn *in)
{
    if (w->cl_arrived) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "barrier.cluster.arrive twice without a barrier.cluster.wait in between");
        return;
    }
    w->cl_arrived = 1, w->cl_phase = c->cl->bar_phase;
    c->cl->bar_arrived++;
    sim_cluster_bar_check(c->cl);
}

static void cluster_wait(SimCta *c, SimWarp *w, const SimInsn *in)
{
    if (!w->cl_arrived) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "barrier.cluster.wait without a barrier.cluster.arrive before it");
        return;
    }
    if (c->cl->bar_phase != w->cl_phase) { w->cl_arrived = 0; return; }
    w->state = WS_CLUSTER, w->wait_line = in->line;
}

/* ---- cluster launch control's response ---- */
/* clusterlaunchcontrol.query_cancel of a try_cancel response in a .b128 register (two slots): the sim's response
 * (sim_tma.c) has bit 0 set for a cancelled cluster and its first ctaid in bits 32-127; the sim never cancels one. */
static void clc_query(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int32_t r = in->o[1].reg;
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        uint64_t lo = w->r[(size_t)r * 32 + (size_t)l], hi = w->r[(size_t)(r + 1) * 32 + (size_t)l];
        uint32_t id[3] = {(uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)};
        if (in->d.sub == SUB_IS_CANCELED) {
            sim_write(w, c->f, &in->o[0], l, lo & 1);
        } else if (in->d.sub == SUB_CTAID) {
            for (int k = 0; k < 4; k++) {
                SimOpnd e = sim_vec_elem(c->f, &in->o[0], k);
                sim_write(w, c->f, &e, l, k < 3 ? id[k] : 0);
            }
        } else {
            sim_write(w, c->f, &in->o[0], l, id[in->d.sub - SUB_CTAID_X]);
        }
    }
}

/* ---- mapa and getctarank: shared addresses and the CTAs they name ---- */

/* Operand 1 of mapa or getctarank in lane l as a .shared::cluster address: a generic one (no state space written)
 * through the shared window. 0, or -1 having failed the CTA. */
static int shared_opnd(SimCta *c, SimWarp *w, const SimInsn *in, int l, uint64_t *a)
{
    *a = sim_read(c, w, &in->o[1], l);
    if (in->d.nspace) return 0;
    if (*a - SIM_SHARED_WINDOW >= (1ull << 32)) {
        sim_fail(c, sim_warp_id(c, w), l, in, "%s of generic address 0x%llx, which is not shared memory",
                 isa_base_text(in->d.op), (unsigned long long)*a);
        return -1;
    }
    *a -= SIM_SHARED_WINDOW;
    return 0;
}

/* The rank of the CTA whose shared memory a .shared::cluster (or generic) address names: its bits 24 and up. */
static void getctarank(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        uint64_t a;
        if (shared_opnd(c, w, in, l, &a)) return;
        uint64_t rank = (uint32_t)a >> SIM_RANK_SHIFT;
        if (rank >= (uint64_t)c->cl->n) {
            sim_fail(c, sim_warp_id(c, w), l, in, "getctarank of shared address 0x%llx: rank %llu, but the cluster has %d",
                     (unsigned long long)a, (unsigned long long)rank, c->cl->n);
            return;
        }
        sim_write(w, c->f, &in->o[0], l, rank);
    }
}

/* The same variable in another CTA of the cluster. */
static void mapa(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int generic = !in->d.nspace;
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        uint64_t a, rank = sim_read(c, w, &in->o[2], l);
        if (shared_opnd(c, w, in, l, &a)) return;
        if (rank >= (uint64_t)c->cl->n) {
            sim_fail(c, sim_warp_id(c, w), l, in, "mapa to CTA rank %llu; the cluster has %d", (unsigned long long)rank, c->cl->n);
            return;
        }
        uint32_t lo = (uint32_t)a & ((1u << SIM_RANK_SHIFT) - 1);
        if (lo >= c->smem_size) {
            sim_fail(c, sim_warp_id(c, w), l, in, "mapa of shared 0x%x, past the CTA's %u bytes", lo, c->smem_size);
            return;
        }
        uint64_t d = (uint64_t)(rank << SIM_RANK_SHIFT | lo);
        sim_write(w, c->f, &in->o[0], l, generic ? d + SIM_SHARED_WINDOW : d);
    }
}

/* ---- setmaxnreg: registers move between the warpgroups of a CTA ---- */
/* .inc or .dec and the count (24 to 256 in steps of 8) were checked at parse (emit/isa.c, sim_form.c) */
static void setmaxnreg(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int wid = sim_warp_id(c, w), n = (int)in->o[0].imm, inc = in->d.redop == RO_INC;
    if (exec != w->live) {
        sim_fail(c, wid, -1, in, "setmaxnreg is .sync.aligned: every lane of the warp executes it (lanes 0x%08x of live "
                 "0x%08x)", exec, w->live);
        return;
    }
    int cur = c->maxnreg[wid];
    if (inc ? n < cur : n > cur) {
        sim_fail(c, wid, -1, in, "setmaxnreg.%s to %d registers, but the warp holds %d", inc ? "inc" : "dec", n, cur);
        return;
    }
    /* the pool is what the CTA got at launch (every warp's starting count); setmaxnreg only moves it */
    int budget = c->reg_pool, used = 0;
    for (int i = 0; i < c->nwarps; i++) used += 32 * (i == wid ? n : c->maxnreg[i]);
    if (inc && used > budget) {
        /* .inc waits until registers are released; none will be if every warp waits */
        w->state = WS_UNIT, w->wait_line = in->line;
        return;
    }
    c->maxnreg[wid] = n;
    if (!inc)
        for (int i = 0; i < c->nwarps; i++)
            if (c->w[i].state == WS_UNIT) c->w[i].state = WS_RUN;   /* parked .inc warps try again */
}

/* fence.proxy.async orders the generic shared writes the fencing warp has
 * seen before the async proxy's later reads: those bytes lose their generic
 * mark. Seen: its own writes, in this CTA and (.shared::cluster or no space:
 * the generic window) in the peers it wrote through DSMEM, and in this CTA
 * other warps' writes ordered before it by a barrier or an mbarrier wait (the
 * memory model puts the proxy fence anywhere on the causality path from the
 * write to the read: a consumer may fence what a producer's cp.async wrote,
 * whose arrival cannot follow the copies' landing). .global leaves shared
 * memory as it is. */
static void fence_proxy_async(SimCta *c, SimWarp *w, const SimInsn *in)
{
    int wid = sim_warp_id(c, w), sp = in->d.nspace ? in->d.space[0] : SP_NONE;
    if (sp == SP_GLOBAL) return;   /* global accesses are performed in order here: no shared bytes to unmark */
    for (int r = 0; r < c->cl->n; r++) {
        SimCta *o = &c->cl->cta[r];
        if (o != c && sp != SP_SHARED_CLUSTER && sp != SP_NONE) continue;
        for (uint32_t wd = 0; wd < o->smem_size / 4; wd++) {
            int own = o->wwarp[wd] == wid && o->wrank[wd] == c->rank;
            int seen = o == c && o->wrank[wd] == c->rank && o->wclk[wd] <= w->vc[o->wwarp[wd]];
            if (own || seen)
                for (int b = 0; b < 4; b++) o->sflag[wd * 4 + (uint32_t)b] &= (uint8_t)~SM_GENERIC;
        }
    }
}

int sim_cluster(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    switch (in->d.op) {
    case I_CLUSTER_ARRIVE: case I_CLUSTER_WAIT:
        if (exec != w->live) {
            sim_fail(c, sim_warp_id(c, w), -1, in, "%s in divergent code: lanes 0x%08x of live 0x%08x",
                     isa_base_text(in->d.op), exec, w->live);
            return 1;
        }
        if (in->d.op == I_CLUSTER_ARRIVE) cluster_arrive(c, w, in);
        else cluster_wait(c, w, in);
        return 1;
    case I_MAPA: mapa(c, w, in, exec); return 1;
    case I_GETCTARANK: getctarank(c, w, in, exec); return 1;
    case I_CLC_QUERY: clc_query(c, w, in, exec); return 1;
    case I_SETMAXNREG: setmaxnreg(c, w, in, exec); return 1;
    case I_FENCE_PROXY_ASYNC: fence_proxy_async(c, w, in); return 1;
    /* every access is performed in order here and PDL grids do not overlap: memory fences and griddepcontrol have
     * nothing left to order; a dependent's accesses before its wait are noted (sim_pdl_access), and so is a trigger
     * before it (the grid before this one may then run beside this one's dependent too) */
    case I_GRIDDEP:
        if (in->d.sub == SUB_GRIDDEP_WAIT) w->pdl_waited |= exec;
        else sim_pdl_release(c, w, exec, 1);
        return 1;
    case I_FENCE: case I_MEMBAR: case I_FENCE_MBAR_INIT: return 1;
    }
    return 0;
}
