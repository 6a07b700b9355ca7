/* Memory on the sim, with the checks a GPU does not make:
 * - global: every access inside one registered buffer, naturally aligned;
 * - shared: inside the CTA's window, aligned, never reading a byte nothing
 *   wrote, never touching bytes a cp.async is still filling, and no two warps
 *   touching a word (one of them writing) without a barrier ordering them;
 * - cp.async: the data lands at the issuing thread's wait_group, not before;
 *   until then its destination is marked in flight and any access is an error.
 * Races use vector clocks (one entry per warp, joined at barriers), so named
 * barriers and, later, mbarrier phases order accesses the same way. */
#include <stdlib.h>
#include <string.h>
#include "dtype.h"
#include "sim.h"
#include "sim_wgmma.h"

void sim_pdl_access(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimBuf *b, uint64_t p, int bytes, int kind)
{
    uint8_t *acc = b->acc + (p - b->base), seen = 0;
    if (c->sim->pdl && !(w->pdl_waited >> lane & 1))   /* every caller names its lane, 0..31 */
        for (int i = 0; i < bytes; i++) seen |= acc[i];
    /* a read meets an earlier grid's writes; a write its writes, or its reads (marked only where that grid
     * triggered its dependent early: sim_heap_next_grid) */
    int hit = (kind & SIM_ACC_R && seen & SIM_ACC_PW) || (kind & SIM_ACC_W && seen & (SIM_ACC_PR | SIM_ACC_PW));
    if (hit)
        sim_note(c, sim_warp_id(c, w), in, "pdl", "thread %d %s global memory at 0x%llx before griddepcontrol.wait in a "
                 "grid launched as a programmatic dependent, bytes a grid before it %s, which on a GPU may still run "
                 "beside it", sim_warp_id(c, w) * 32 + lane, kind == SIM_ACC_R ? "reads" : "writes",
                 (unsigned long long)p, seen & SIM_ACC_PW ? "writes" : "reads");
    for (int i = 0; i < bytes; i++) acc[i] |= (uint8_t)kind;
    b->live |= 1;
}

/* kind: SIM_ACC_R a load, SIM_ACC_W a store, both a reduction */
uint8_t *sim_gmem(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint64_t addr, int bytes, int kind)
{
    const char *what = kind == SIM_ACC_R ? "load" : "store";
    if (addr % (uint64_t)bytes) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "misaligned %d-byte global %s at 0x%llx", bytes, what, (unsigned long long)addr);
        return c->scratch;
    }
    SimBuf *b = sim_heap_find(&c->sim->heap, addr, (size_t)bytes);
    if (b) {
        sim_pdl_access(c, w, lane, in, b, addr, bytes, kind);
        return b->data + (addr - b->base);
    }
    char where[160];
    sim_heap_describe(&c->sim->heap, addr, where, sizeof where);
    sim_fail(c, sim_warp_id(c, w), lane, in, "out-of-bounds global %s of %d bytes at 0x%llx (%s)", what, bytes,
             (unsigned long long)addr, where);
    return c->scratch;
}

/* ---- shared memory checker ---- */
static int smem_in_range(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes, const char *what)
{
    if ((uint64_t)addr + (uint64_t)bytes > c->smem_size) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "out-of-bounds shared %s of %d bytes at 0x%x (the CTA has %u bytes)", what,
                 bytes, addr, c->smem_size);
        return 0;
    }
    if (addr % (uint32_t)bytes) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "misaligned %d-byte shared %s at 0x%x", bytes, what, addr);
        return 0;
    }
    return 1;
}

/* The in-flight copy covering addr, and the thread that issued it. */
const SimCopy *sim_copy_covering(const SimCta *c, uint32_t addr, int *thread)
{
    for (int i = 0; i < c->nwarps; i++)
        for (int k = 0; k < c->w[i].ncopies; k++)
            if (addr - c->w[i].copies[k].dst < 16) {
                *thread = i * 32 + (int)c->w[i].copies[k].lane;
                return &c->w[i].copies[k];
            }
    return NULL;
}

static int not_in_flight(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes, const char *what)
{
    for (int i = 0; i < bytes; i++) {
        uint8_t fl = c->sflag[addr + (uint32_t)i];
        int held = (fl & SM_HELD) && *what == 'w';   /* an in-flight reader blocks writes only */
        if (!(fl & SM_PENDING) && !held) continue;
        int thread = -1;
        const SimCopy *cp = (fl & SM_PENDING) ? sim_copy_covering(c, addr + (uint32_t)i, &thread) : NULL;
        if (cp) {
            sim_fail(c, sim_warp_id(c, w), lane, in,
                     "%s shared memory at 0x%x while the cp.async at PTX line %d (thread %d) is still filling it: "
                     "missing cp.async.wait_group (or it waits on too few groups), or the mbarrier wait a "
                     "cp.async.mbarrier.arrive signals",
                     what, addr + (uint32_t)i, cp->line, thread);
            return 0;
        }
        const SimAsync *op = sim_async_covering(c->cl, c, addr + (uint32_t)i, !held);
        if (!op) {   /* the op landed meanwhile: the flag is stale */
            c->sflag[addr + (uint32_t)i] &= (uint8_t)~(held ? SM_HELD : SM_PENDING);
            continue;
        }
        if (held)
            sim_fail(c, sim_warp_id(c, w), lane, in,
                     "overwrites shared memory at 0x%x that the in-flight %s at PTX line %d (thread %d) still reads: "
                     "wait for its completion (%s) before reusing the buffer",
                     addr + (uint32_t)i, op->what, op->line, op->warp * 32 + op->lane,
                     op->bar_cta || !strncmp(op->what, "tcgen05", 7) ? "the mbarrier its commit signals" : "its wait_group");
        else
            sim_fail(c, sim_warp_id(c, w), lane, in,
                     "%s shared memory at 0x%x before the %s at PTX line %d (thread %d) has landed there: "
                     "wait on its %s first",
                     what, addr + (uint32_t)i, op->what, op->line, op->warp * 32 + op->lane,
                     op->bar_cta ? "mbarrier phase" : "group");
        return 0;
    }
    return 1;
}

static int ordered_after_write(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t word, const char *what)
{
    int wid = sim_warp_id(c, w), writer = c->wwarp[word];
    if (writer == wid || c->wclk[word] <= w->vc[writer]) return 1;
    sim_fail(c, wid, lane, in,
             "shared-memory race: %s word 0x%x that warp %d wrote at PTX line %d with no barrier in between "
             "(missing bar.sync)", what, word * 4, writer, c->wline[word]);
    return 0;
}

/* A warp other than w's that read the word with no order to w since, or -1 */
static int unordered_reader(SimCta *c, SimWarp *w, uint32_t word)
{
    int wid = sim_warp_id(c, w);
    const uint32_t *r = &c->rclk[(size_t)word * (size_t)c->nwarps];
    for (int k = 0; k < c->nwarps; k++)
        if (k != wid && r[k] > w->vc[k]) return k;
    return -1;
}

static int ordered_after_reads(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t word)
{
    int k = unordered_reader(c, w, word);
    if (k < 0) return 1;
    sim_fail(c, sim_warp_id(c, w), lane, in,
             "shared-memory race: overwrites word 0x%x that warp %d read with no barrier in between "
             "(missing bar.sync before the buffer is reused)", word * 4, k);
    return 0;
}

/* A plain read and an atomic of another warp on one word with no barrier between them, in either order: what a CAS
 * loop does (its first guess is a plain read, which the CAS then checks: the headers' atomicAdd of
 * __nv_bfloat162 on sm_80, atomics on doubles by CAS), and a race anywhere else. Foreign PTX gets a note; under
 * --strict (ptxgen's own kernels) it is an error, as any other unordered access. */
static void note_atomic_race(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t word, int other, const char *what)
{
    sim_note(c, sim_warp_id(c, w), in, "plain access racing an atomic",
             "shared-memory race: %s word 0x%x that warp %d %s with no barrier in between (a CAS loop's first guess "
             "may; any other access needs a bar.sync)", what, word * 4, other,
             !strcmp(what, "reads") ? "last changed by an atomic" : "read");
}

/* Whether an instruction may reach a peer CTA's shared memory: .shared::cluster
 * and generic addresses may, .shared (::cta) may not. */
static int cluster_ok(const SimInsn *in)
{
    return in && (!in->d.nspace || in->d.space[0] == SP_SHARED_CLUSTER);
}

/* DSMEM: a peer's bytes must be written and not in flight; the race
 * clocks are per CTA, so ordering across CTAs is left to the cluster
 * barrier and mbarriers the kernel uses. */
static uint8_t *remote(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *o, uint32_t lo, int bytes, int store)
{
    if ((uint64_t)lo + (uint64_t)bytes > o->smem_size || lo % (uint32_t)bytes) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "%s shared::cluster access of %d bytes at 0x%x of CTA rank %d (it has %u bytes)",
                 lo % (uint32_t)bytes ? "misaligned" : "out-of-bounds", bytes, lo, o->rank, o->smem_size);
        return c->scratch;
    }
    for (int i = 0; i < bytes; i++) {
        uint8_t fl = o->sflag[lo + (uint32_t)i];
        if ((fl & SM_PENDING) || (store && (fl & SM_HELD)) || (!store && !(fl & SM_WRITTEN))) {
            const SimAsync *op = sim_async_covering(c->cl, o, lo + (uint32_t)i, !(fl & SM_HELD) || !store);
            sim_fail(c, sim_warp_id(c, w), lane, in, "%s shared 0x%x of CTA rank %d, which %s%s%s", store ? "writes" : "reads",
                     lo + (uint32_t)i, o->rank,
                     !(fl & (SM_PENDING | SM_HELD)) ? "nothing has written" : (fl & SM_PENDING) ? "is still in flight from the " : "is still read by the ",
                     op ? op->what : "", op ? " (wait for it first)" : "");
            return c->scratch;
        }
    }
    if (store) {
        for (int i = 0; i < bytes; i++) o->sflag[lo + (uint32_t)i] |= SM_WRITTEN | SM_GENERIC;
        /* clock 0: the peer's warps are ordered after it by the cluster barrier, not by this CTA's clocks;
         * writer and rank: so the writer's fence.proxy.async finds its DSMEM writes */
        for (uint32_t wd = lo / 4; wd <= (lo + (uint32_t)bytes - 1) / 4; wd++)
            o->wclk[wd] = 0, o->wwarp[wd] = (uint8_t)sim_warp_id(c, w), o->wrank[wd] = (uint8_t)c->rank, o->wline[wd] = in->line,
            o->watomic[wd] = 0;
    }
    return o->smem + lo;
}

uint8_t *sim_smem_read(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes)
{
    uint32_t lo;
    SimCta *o = sim_smem_owner(c, w, lane, in, addr, cluster_ok(in), &lo);
    if (!o) return c->scratch;
    if (o != c) return remote(c, w, lane, in, o, lo, bytes, 0);
    addr = lo;
    if (!smem_in_range(c, w, lane, in, addr, bytes, "load") || !not_in_flight(c, w, lane, in, addr, bytes, "reads"))
        return c->scratch;
    for (int i = 0; i < bytes; i++)
        if (!(c->sflag[addr + (uint32_t)i] & SM_WRITTEN)) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "reads shared memory at 0x%x that nothing has written (if another warp writes it later, a bar.sync is missing)",
                     addr + (uint32_t)i);
            return c->scratch;
        }
    int wid = sim_warp_id(c, w);
    for (uint32_t wd = addr / 4; wd <= (addr + (uint32_t)bytes - 1) / 4; wd++) {
        int writer = c->wwarp[wd];
        if (c->watomic[wd] && writer != wid && c->wclk[wd] > w->vc[writer])
            note_atomic_race(c, w, in, wd, writer, "reads");
        else if (!ordered_after_write(c, w, lane, in, wd, "reads")) return c->scratch;
        c->rclk[(size_t)wd * (size_t)c->nwarps + (size_t)wid] = w->vc[wid];
    }
    return c->smem + addr;
}

/* The checks of a write, without performing it: cp.async runs them at issue. An atomic (red/atom) needs no
 * order against the atomics before it on the same word, only against plain writes; against plain reads it is
 * note_atomic_race's case. */
static int smem_write_ok_as(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes, int atomic)
{
    if (!smem_in_range(c, w, lane, in, addr, bytes, "store") || !not_in_flight(c, w, lane, in, addr, bytes, "writes"))
        return 0;
    for (uint32_t wd = addr / 4; wd <= (addr + (uint32_t)bytes - 1) / 4; wd++) {
        int reader = atomic ? unordered_reader(c, w, wd) : -1;
        if (reader >= 0) note_atomic_race(c, w, in, wd, reader, "overwrites");
        if (!((atomic && c->watomic[wd]) || ordered_after_write(c, w, lane, in, wd, "overwrites")) ||
            (reader < 0 && !ordered_after_reads(c, w, lane, in, wd)) ||
            !sim_wgmma_write_ordered(c, w, lane, in, wd) || !sim_tma_write_ordered(c, w, lane, in, wd))
            return 0;
    }
    return 1;
}

static int smem_write_ok(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes)
{
    return smem_write_ok_as(c, w, lane, in, addr, bytes, 0);
}

static void smem_mark_written(SimCta *c, SimWarp *w, uint32_t addr, int bytes, int line, int atomic)
{
    int wid = sim_warp_id(c, w);
    for (int i = 0; i < bytes; i++) c->sflag[addr + (uint32_t)i] = SM_WRITTEN | SM_GENERIC;
    for (uint32_t wd = addr / 4; wd <= (addr + (uint32_t)bytes - 1) / 4; wd++)
        c->wclk[wd] = w->vc[wid], c->wwarp[wd] = (uint8_t)wid, c->wrank[wd] = (uint8_t)c->rank, c->wline[wd] = line,
        c->watomic[wd] = (uint8_t)atomic;
}

/* A store (or, atomic, red/atom's read-modify-write of bytes something wrote, which races with plain accesses
 * but not with other atomics) to shared memory: the bytes to write, or scratch after a reported fault. */
static uint8_t *smem_store(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes, int atomic)
{
    uint32_t lo;
    SimCta *o = sim_smem_owner(c, w, lane, in, addr, cluster_ok(in), &lo);
    if (!o) return c->scratch;
    if (o != c) return remote(c, w, lane, in, o, lo, bytes, 1);
    addr = lo;
    if (!smem_write_ok_as(c, w, lane, in, addr, bytes, atomic)) return c->scratch;
    for (int i = 0; atomic && i < bytes; i++)
        if (!(c->sflag[addr + (uint32_t)i] & SM_WRITTEN)) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "red/atom on shared memory at 0x%x that nothing has written",
                     addr + (uint32_t)i);
            return c->scratch;
        }
    smem_mark_written(c, w, addr, bytes, in->line, atomic);
    return c->smem + addr;
}

uint8_t *sim_smem_write(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t addr, int bytes)
{
    return smem_store(c, w, lane, in, addr, bytes, 0);
}

/* ---- cp.async ---- */
/* The bytes a cp.async reads from global memory: all, or src-size; an ignore-src predicate that holds reads none
 * (the rest of the copy is zero-filled). */
static uint32_t cp_async_src_bytes(SimCta *c, SimWarp *w, const SimInsn *in, int lane, int size)
{
    int sized = in->nops > 3 + ((in->d.flags & F_CACHE_HINT) != 0);   /* .L2::cache_hint: the policy comes last */
    if (!sized) return (uint32_t)size;
    const SimOpnd *o = &in->o[3];
    uint64_t v = sim_read(c, w, o, lane);
    if (o->kind == SO_REG && c->f->slot_bits[o->reg] == 1) return v & 1 ? 0 : (uint32_t)size;
    return (uint32_t)v;
}

static void cp_async_issue(SimCta *c, SimWarp *w, const SimInsn *in, int lane, uint32_t dst, uint64_t src, int size)
{
    if (!sim_smem_owner(c, w, lane, in, dst, 0, &dst)) return;
    uint32_t n = cp_async_src_bytes(c, w, in, lane, size);
    if (n > (uint32_t)size) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "cp.async src-size %u exceeds the %d-byte copy", n, size);
        return;
    }
    if (dst % (uint32_t)size) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "cp.async shared address 0x%x is not %d-byte aligned", dst, size);
        return;
    }
    if (src % (uint64_t)size) { sim_gmem(c, w, lane, in, src, size, SIM_ACC_R); return; }   /* reports the misalignment */
    SimCopy cp = {.lane = (uint32_t)lane, .dst = dst, .group = w->committed[lane], .line = in->line, .size = (uint8_t)size};
    if (n) memcpy(cp.data, sim_gmem(c, w, lane, in, src, (int)n, SIM_ACC_R), n);   /* bytes past n are zero-filled */
    if (c->failed || !smem_write_ok(c, w, lane, in, dst, size)) return;
    for (int i = 0; i < size; i++) c->sflag[dst + (uint32_t)i] |= SM_PENDING;
    if (w->ncopies == w->capcopies) {
        int cap = w->capcopies ? 2 * w->capcopies : 256;
        SimCopy *more = realloc(w->copies, (size_t)cap * sizeof *w->copies);
        if (!more) { sim_fail(c, sim_warp_id(c, w), lane, in, "the sim ran out of host memory for cp.async copies"); return; }
        w->copies = more, w->capcopies = cap;
    }
    w->copies[w->ncopies++] = cp;
}

/* Lands every copy of this lane whose group is below done_below. */
static void land_below(SimCta *c, SimWarp *w, int lane, uint32_t done_below)
{
    int k = 0;
    for (int i = 0; i < w->ncopies; i++) {
        SimCopy *cp = &w->copies[i];
        if (cp->lane == (uint32_t)lane && cp->group < done_below) {
            memcpy(c->smem + cp->dst, cp->data, cp->size);
            smem_mark_written(c, w, cp->dst, cp->size, cp->line, 0);
        } else {
            w->copies[k++] = *cp;
        }
    }
    w->ncopies = k;
}

void sim_async_wait(SimCta *c, SimWarp *w, int lane, uint32_t keep_groups)
{
    land_below(c, w, lane, w->committed[lane] > keep_groups ? w->committed[lane] - keep_groups : 0);
}

void sim_async_land_lane(SimCta *c, SimWarp *w, int lane) { land_below(c, w, lane, w->committed[lane] + 1); }

/* ---- instructions ---- */
void sim_count_smem(SimCta *c, const uint32_t *addr, uint32_t exec, int width)
{
    int phases, wf = sim_smem_wavefronts(addr, exec, width, width == 16 ? 8 : width == 8 ? 16 : 32, &phases);
    c->sim->stats.smem_requests++;
    c->sim->stats.smem_wavefronts += (uint64_t)wf;
    c->sim->stats.smem_ideal += (uint64_t)phases;
}

static void count_gmem(SimCta *c, const uint64_t *addr, uint32_t exec, int width)
{
    c->sim->stats.gmem_requests++;
    c->sim->stats.gmem_sectors += (uint64_t)sim_gmem_sectors(addr, exec, width);
    c->sim->stats.gmem_bytes += (uint64_t)width * (uint64_t)__builtin_popcount(exec);
}

/* Element bytes of an ld/st/red/atom: its (last) type's width. */
static int elem_width(const SimInsn *in)
{
    int t = in->d.ntype ? in->d.type[in->d.ntype - 1] : T_NONE;
    return isa_type_bits(t) / 8;
}

/* A generic address resolves to shared memory, the parameter block or global memory. */
static int resolve_space(const SimInsn *in, uint64_t *addr)
{
    int sp = in->d.nspace ? in->d.space[0] : SP_NONE;
    if (sp == SP_SHARED_CLUSTER) return SP_SHARED;   /* the address says which CTA */
    if (sp != SP_NONE) return sp;
    if (*addr - SIM_SHARED_WINDOW < (1ull << 32)) { *addr -= SIM_SHARED_WINDOW; return SP_SHARED; }
    if (*addr - SIM_PARAM_WINDOW < (1ull << 32)) { *addr -= SIM_PARAM_WINDOW; return SP_PARAM; }
    if (*addr - SIM_LOCAL_WINDOW < (1ull << 32)) { *addr -= SIM_LOCAL_WINDOW; return SP_LOCAL; }
    return SP_GLOBAL;
}

/* The lane's own local memory at local address off: inside the function's frame, naturally aligned, and
 * (for a load) written before by that lane. */
static uint8_t *local_bytes(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint64_t off, int bytes, int store)
{
    size_t frame = (size_t)c->f->local_bytes;
    if (off > frame || (uint64_t)bytes > frame - off || off % (uint64_t)bytes) {   /* no wrap past 2^64 */
        sim_fail(c, sim_warp_id(c, w), lane, in, "%s local access of %d bytes at %llu (the function's frame has %zu bytes)",
                 off % (uint64_t)bytes ? "misaligned" : "out-of-bounds", bytes, (unsigned long long)off, frame);
        return c->scratch;
    }
    if (!w->local && !(w->local = calloc(64, frame))) {
        sim_fail(c, sim_warp_id(c, w), lane, in, "the sim ran out of host memory for local memory");
        return c->scratch;
    }
    uint8_t *p = w->local + (size_t)lane * frame + off, *written = p + 32 * frame;
    for (int i = 0; i < bytes; i++) {
        if (store) written[i] = 1;
        else if (!written[i]) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "reads local memory at %llu that this thread has not written",
                     (unsigned long long)off + (unsigned long long)i);
            return c->scratch;
        }
    }
    return p;
}

static uint8_t *param_bytes(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint64_t off, int bytes, int store)
{
    if (store || off > (uint64_t)c->f->param_bytes || (uint64_t)bytes > (uint64_t)c->f->param_bytes - off) {   /* no wrap */
        sim_fail(c, sim_warp_id(c, w), lane, in, store ? "a store into the kernel's parameters" : "a load outside the parameter block (%d bytes at offset %llu of %d)",
                 bytes, (unsigned long long)off, c->f->param_bytes);
        return c->scratch;
    }
    return (uint8_t *)c->params + off;
}

static uint64_t load_elem(const uint8_t *p, int width, int sign)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t)width);
    if (sign && width < 8 && (v >> (8 * width - 1) & 1)) v |= ~0ull << (8 * width);
    return v;
}

/* f16/bf16 elements reduce through f32: its 24 bits round the exact sum of
 * two halves once more than twice the half's 11 (or bf16's 8) bits plus two,
 * so rounding again to the half is as if rounded once. */
static uint64_t half_apply(int t, int redop, uint64_t old, uint64_t v)
{
    float a = t == T_F16 ? fp16_to_f32((uint16_t)old) : bf16_to_f32((uint16_t)old);
    float b = t == T_F16 ? fp16_to_f32((uint16_t)v) : bf16_to_f32((uint16_t)v);
    float r = redop == RO_ADD ? a + b : redop == RO_MIN ? (b < a ? b : a) : (b > a ? b : a);
    if (redop != RO_ADD && a != a) r = b;   /* min/max return the other operand for one NaN */
    return t == T_F16 ? f32_to_fp16(r) : f32_to_bf16(r);
}

uint64_t sim_red_apply(int t, int redop, uint64_t old, uint64_t v, uint64_t v2, int width)
{
    int sg = isa_type_is_signed(t);
    uint64_t m = width >= 8 ? ~0ull : (1ull << (8 * width)) - 1;
    int64_t so = (int64_t)load_elem((uint8_t *)&old, width, 1), sv = (int64_t)load_elem((uint8_t *)&v, width, 1);
    int half_op = redop == RO_ADD || redop == RO_MIN || redop == RO_MAX;
    if ((t == T_F16 || t == T_BF16) && half_op) return half_apply(t, redop, old, v);
    if ((t == T_F16X2 || t == T_BF16X2) && half_op) {   /* each half on its own (nvcc's atomicAdd of __half2) */
        int e = t == T_F16X2 ? T_F16 : T_BF16;
        uint64_t lo = half_apply(e, redop, old & 0xFFFF, v & 0xFFFF);
        uint64_t hi = half_apply(e, redop, old >> 16 & 0xFFFF, v >> 16 & 0xFFFF);
        return (lo & 0xFFFF) | (hi & 0xFFFF) << 16;
    }
    switch (redop) {
    case RO_ADD:
        if (t == T_F32) { float a, b; uint32_t o32 = (uint32_t)old, v32 = (uint32_t)v; memcpy(&a, &o32, 4); memcpy(&b, &v32, 4); a += b; memcpy(&o32, &a, 4); return o32; }
        if (t == T_F64) { double a, b; memcpy(&a, &old, 8); memcpy(&b, &v, 8); a += b; uint64_t r; memcpy(&r, &a, 8); return r; }
        return (old + v) & m;
    case RO_MIN: return sg ? (uint64_t)(so < sv ? so : sv) & m : (old & m) < (v & m) ? old : v;
    case RO_MAX: return sg ? (uint64_t)(so > sv ? so : sv) & m : (old & m) > (v & m) ? old : v;
    case RO_INC: return (old & m) >= (v & m) ? 0 : old + 1;
    case RO_DEC: return ((old & m) == 0 || (old & m) > (v & m)) ? v : old - 1;
    case RO_AND: return old & v;
    case RO_OR: return old | v;
    case RO_XOR: return old ^ v;
    case RO_EXCH: return v;
    case RO_CAS: return (old & m) == (v & m) ? v2 : old;
    }
    return old;
}

/* Atomics are trivially atomic here: CTAs run one after another and a warp's
 * lanes in lane order. The old value of atom goes to its destination; a
 * vector red adds each element on its own (as the hardware promises). */
static void atomic(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int is_atom = in->d.op == I_ATOM, width = elem_width(in);
    const SimOpnd *ao = &in->o[is_atom], *vo = &in->o[is_atom + 1], *d = &in->o[0];
    int n = vo->kind == SO_VEC ? vo->n : 1;
    uint64_t ga[32];
    uint32_t sa[32];
    if (!width || width > 8) {   /* the operands were checked at parse (sim_form.c) */
        sim_fail(c, sim_warp_id(c, w), -1, in, "%s of %d-bit elements is not modelled by the sim", isa_base_text(in->d.op),
                 isa_type_bits(in->d.type[in->d.ntype - 1]));
        return;
    }
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        uint64_t a = sim_addr(c, w, ao, l);
        int sp = resolve_space(in, &a);
        ga[l] = a, sa[l] = (uint32_t)a;
        uint8_t *p = sp == SP_SHARED ? smem_store(c, w, l, in, (uint32_t)a, width * n, 1)
                   : sp == SP_GLOBAL ? sim_gmem(c, w, l, in, a, width * n, SIM_ACC_RW) : NULL;
        if (!p) { sim_fail(c, sim_warp_id(c, w), l, in, "red/atom on this state space is not modelled"); return; }
        for (int k = 0; k < n && !c->failed; k++) {
            SimOpnd e = vo->kind == SO_VEC ? sim_vec_elem(c->f, vo, k) : *vo;
            uint64_t old = load_elem(p + width * k, width, 0), v = sim_read(c, w, &e, l);
            uint64_t v2 = in->d.redop == RO_CAS ? sim_read(c, w, &in->o[is_atom + 2], l) : 0;
            uint64_t nv = sim_red_apply(in->d.type[in->d.ntype - 1], in->d.redop, old, v, v2, width);
            memcpy(p + width * k, &nv, (size_t)width);
            if (!is_atom) continue;   /* atom returns the old value (a vector atom each element's) */
            SimOpnd de = d->kind == SO_VEC ? sim_vec_elem(c->f, d, k) : *d;
            sim_write(w, c->f, &de, l, old);
        }
    }
    if (in->d.nspace && in->d.space[0] == SP_SHARED) sim_count_smem(c, sa, exec, width * n);
    else count_gmem(c, ga, exec, width * n);
}

/* ld/st of any state space, one register or a vector of them. */
static void transfer(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, int store)
{
    const SimOpnd *ao = &in->o[store ? 0 : 1], *vo = &in->o[store ? 1 : 0];
    int n = vo->kind == SO_VEC ? vo->n : 1, ew = elem_width(in), width = ew * n;
    int t = in->d.ntype ? in->d.type[in->d.ntype - 1] : T_NONE, sign = isa_type_is_signed(t);
    uint32_t sa[32];
    uint64_t ga[32];
    int shared = 0, param = 0, local = 0;
    /* the operands were checked at parse (sim_form.c, sim_types.c; an L2 policy last is only a hint); a .b128
     * element goes to or from a .b128 register, its two slots (a wider element once overran the 8 bytes it was read
     * into) */
    int wide = ew == 16 && n == 1 && vo->kind == SO_REG && c->f->slot_bits[vo->reg] == 128;
    if (!ew || (ew > 8 && !wide)) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "%s of %d-byte elements is not modelled by the sim", store ? "st" : "ld",
                 ew);
        return;
    }
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        uint64_t a = sim_addr(c, w, ao, l);
        int sp = ao->space == SPACE_PARAM ? SP_PARAM : resolve_space(in, &a);
        if (in->d.op == I_LDU && sp != SP_GLOBAL) {   /* the PTX ISA: ldu's address is a global one */
            sim_fail(c, sim_warp_id(c, w), l, in, "ldu of an address outside global memory");
            return;
        }
        sa[l] = (uint32_t)a, ga[l] = a;
        shared = sp == SP_SHARED, param = sp == SP_PARAM, local = sp == SP_LOCAL;
        uint8_t *p;
        if (sp == SP_SHARED) p = store ? sim_smem_write(c, w, l, in, (uint32_t)a, width) : sim_smem_read(c, w, l, in, (uint32_t)a, width);
        else if (sp == SP_PARAM) p = param_bytes(c, w, l, in, a, width, store);
        /* .const: the module's variables, which the sim keeps in global memory (PTX has no store to them) */
        else if (sp == SP_GLOBAL || (sp == SP_CONST && !store)) p = sim_gmem(c, w, l, in, a, width, store ? SIM_ACC_W : SIM_ACC_R);
        else if (sp == SP_LOCAL) p = local_bytes(c, w, l, in, a, width, store);
        else { sim_fail(c, sim_warp_id(c, w), l, in, "this state space is not modelled"); return; }
        for (int h = 0; wide && h < 2; h++) {   /* the low 8 bytes in the first slot */
            uint64_t *r = &w->r[(size_t)(vo->reg + h) * 32 + (size_t)l];
            if (store) memcpy(p + 8 * h, r, 8);
            else memcpy(r, p + 8 * h, 8);
        }
        for (int k = 0; k < n && !c->failed && !wide; k++) {
            SimOpnd e = vo->kind == SO_VEC ? sim_vec_elem(c->f, vo, k) : *vo;
            if (store) {
                uint64_t v = sim_read(c, w, &e, l);
                memcpy(p + ew * k, &v, (size_t)ew);
            } else {
                sim_write(w, c->f, &e, l, load_elem(p + ew * k, ew, sign));
            }
        }
    }
    if (param || local) return;   /* the constant bank, the thread's stack: not memory requests worth counting */
    if (shared) sim_count_smem(c, sa, exec, width);
    else count_gmem(c, ga, exec, width);
}

static void cp_async(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t sa[32];
    uint64_t ga[32];
    int size = (int)in->o[2].imm;   /* a constant 4, 8 or 16 (sim_form.c) */
    for (int l = 0; l < 32 && !c->failed; l++)
        if (exec >> l & 1) {
            sa[l] = (uint32_t)sim_addr(c, w, &in->o[0], l), ga[l] = sim_addr(c, w, &in->o[1], l);
            cp_async_issue(c, w, in, l, sa[l], ga[l], size);
        }
    sim_count_smem(c, sa, exec, size);
    count_gmem(c, ga, exec, size);
}

int sim_mem(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    switch (in->d.op) {
    case I_LD: case I_LDU: transfer(c, w, in, exec, 0); return 1;
    case I_ST: transfer(c, w, in, exec, 1); return 1;
    case I_RED: case I_ATOM: atomic(c, w, in, exec); return 1;
    case I_CP_ASYNC: cp_async(c, w, in, exec); return 1;
    case I_PREFETCH: return 1;   /* only a hint: not even a bad address faults */
    case I_CP_ASYNC_COMMIT: case I_CP_ASYNC_WAIT: case I_CP_ASYNC_WAIT_ALL: {
        int wait_n = in->d.op == I_CP_ASYNC_WAIT;   /* wait_group N: its one constant */
        /* wait_all is commit_group then wait_group 0 (PTX ISA): the copies not yet committed are waited for too */
        if (in->d.op != I_CP_ASYNC_WAIT)
            for (int l = 0; l < 32; l++) w->committed[l] += exec >> l & 1;
        for (int l = 0; l < 32 && in->d.op != I_CP_ASYNC_COMMIT; l++)
            if (exec >> l & 1) sim_async_wait(c, w, l, wait_n ? (uint32_t)in->o[0].imm : 0);
        return 1;
    }
    }
    return 0;
}
