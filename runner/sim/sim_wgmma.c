/* The wgmma unit (sm_90a): wgmma.fence, wgmma.mma_async (A from a shared-
 * memory descriptor or from registers; B from a descriptor), commit_group
 * and wait_group, after the PTX ISA's "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate" chapter.
 * - A warpgroup is four consecutive warps (warp id / 4); every thread of it
 *   executes each of these instructions (.sync.aligned). The sim steps warps
 *   in turn, so the i-th mma_async of each warp is collected into one op; it
 *   is issued to the async queue (sim_async.c) when the fourth warp reaches
 *   it, which is when the hardware can start it (so a warp that writes its
 *   share of an operand just before its own mma_async is not flagged), and
 *   lands at a wait_group of the warpgroup (or when nothing else can run),
 *   computing D then (sim_wgmma_math.c). It is not queued earlier because
 *   the queue lands in issue order (an mbarrier wait lands everything queued
 *   before the op it needs) and a half-issued op cannot land.
 * - Until a warp has waited for an op's group, the op's accumulator and A
 *   registers are in flight for that warp: touching them is an error (the
 *   ISA: undefined behaviour), except a later mma_async naming the same
 *   accumulators, which chains. Its shared-memory operands are held: a write
 *   into them before the wait is an error naming the op. After it, they count
 *   as read by each warp of the warpgroup at that warp's own wait_group, so a
 *   write by another warp that no barrier orders after that wait is a race
 *   (the other warpgroup may still be in its products when the hardware runs
 *   ahead of the sim's interleaving).
 * - wgmma.fence must separate a register access from a later mma_async that
 *   uses the register: a missing fence is a note (an error when strict). */
#include <stdlib.h>
#include <string.h>
#include "sim_wgmma.h"

/* Per-warp state (SimWarp.wg). Register slots the warp gave an mma_async are
 * recorded with 1 + the op's commit group (0: none); a slot is in flight for
 * this warp while that group is not below the warp's own wait watermark, no
 * matter which warp's wait landed the op. The warpgroup's ops still being
 * collected live in its first warp's state. */
/* Bytes an op reads, held for a warp of its warpgroup until that warp's wait_group covers the op's group:
 * only then are they read for that warp, and a write by another warp must be ordered after that wait. */
typedef struct { uint32_t lo, bytes, group, op; } WgRead;

typedef struct {
    int nslots;
    uint32_t *dgrp, *agrp;      /* per slot: 1 + group of the latest op using it as D / as RS A */
    int32_t *line;              /* per slot: that op's PTX line */
    uint32_t *touch;            /* per slot: fences + 1 when another instruction accessed it since that fence */
    int32_t *touch_line;
    uint32_t maxgrp;            /* 1 + the newest group this warp has an op in */
    uint32_t waited;            /* groups below this one are complete for this warp */
    uint32_t fences, issued, committed;
    int parked;                 /* in wait_group until other warps issue an op */
    WgOp **parts;               /* first warp of a warpgroup: ops not yet issued by all four warps */
    int nparts, capparts;
    WgRead *reads;              /* shared bytes its issued ops read, until this warp waits for their group */
    int nreads, capreads;
} WgWarp;

/* Half-issued ops a warpgroup may hold: warps run in near lockstep, so more
 * means a warp skips its mma_asyncs in a loop (and memory would grow). */
enum { WG_MAX_PARTS = 256 };

static uint64_t group_key(const SimCta *c, int wg) { return (uint64_t)(uint32_t)c->rank << 32 | (0x10000u + (unsigned)wg); }

static void op_free(WgOp *op)
{
    if (!op) return;
    free(op->aaddr), free(op->baddr), free(op);
}

void sim_wgmma_free(SimWarp *w)
{
    WgWarp *s = w->wg;
    if (!s) return;
    for (int i = 0; i < s->nparts; i++) op_free(s->parts[i]);
    free(s->parts), free(s->reads), free(s->dgrp), free(s->agrp), free(s->line), free(s->touch), free(s->touch_line), free(s);
    w->wg = NULL;
}

static WgWarp *state(SimCta *c, SimWarp *w)
{
    if (w->wg) return w->wg;
    size_t n = (size_t)(c->f->nslots ? c->f->nslots : 1);
    WgWarp *s = calloc(1, sizeof *s);
    if (s) {
        s->nslots = (int)n;
        s->dgrp = calloc(n, sizeof *s->dgrp), s->agrp = calloc(n, sizeof *s->agrp), s->line = calloc(n, sizeof *s->line);
        s->touch = calloc(n, sizeof *s->touch), s->touch_line = calloc(n, sizeof *s->touch_line);
    }
    w->wg = s;
    if (!s || !s->dgrp || !s->agrp || !s->line || !s->touch || !s->touch_line) {
        sim_wgmma_free(w);
        sim_fail(c, sim_warp_id(c, w), -1, NULL, "out of host memory for the wgmma unit");
        return NULL;
    }
    return s;
}

static void warp_list(unsigned mask, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < WG_WARPS && n < cap; i++)
        if (mask >> i & 1) n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? ", " : "", i);
}

/* ---- registers in flight ---- */

/* Instructions whose first operand is read, not written. */
static int first_is_source(const SimInsn *in)
{
    return in->d.op == I_BAR_SYNC || in->d.op == I_BARRIER_SYNC || in->d.op == I_BAR_ARRIVE || in->d.op == I_TC_DEALLOC;
}

static int check_slot(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in, int slot, int write)
{
    if (slot < 0) return 0;
    if (s->maxgrp > s->waited && (s->dgrp[slot] > s->waited || s->agrp[slot] > s->waited)) {
        char name[64];
        sim_reg_name(c->f, slot, name, sizeof name);
        sim_fail(c, sim_warp_id(c, w), -1, in,
                 "wgmma %s register %s %s before wgmma.wait_group: the wgmma.mma_async at PTX line %d still %s it",
                 s->dgrp[slot] > s->waited ? "accumulator" : "A-fragment", name, write ? "written" : "read",
                 s->line[slot], s->dgrp[slot] > s->waited ? "writes" : "reads");
        return 1;
    }
    s->touch[slot] = s->fences + 1, s->touch_line[slot] = in->line;
    return 0;
}

/* A warp that leaves while its warpgroup holds an mma_async it has not
 * issued never will: its mates would wait for it forever. */
static int exits_owing(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int wid = sim_warp_id(c, w), wg = wid / WG_WARPS, me = wid % WG_WARPS;
    const WgWarp *g = c->w[WG_WARPS * wg].wg;
    if ((w->live & ~exec) || !g) return 0;
    for (int i = 0; i < g->nparts; i++)
        if (!(g->parts[i]->have >> me & 1)) {
            char who[32];
            warp_list(g->parts[i]->have, who, sizeof who);
            sim_fail(c, wid, -1, in,
                     "the warp exits without issuing the wgmma.mma_async at PTX line %d that warp(s) %s of its warpgroup "
                     "issued: every warp of a warpgroup executes each wgmma.mma_async (.aligned)",
                     g->parts[i]->in->line, who);
            return 1;
        }
    return 0;
}

int sim_wgmma_check_regs(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    WgWarp *s = w->wg;
    if (!s || in->d.unit == U_WGMMA) return 0;   /* mma_async checks its own operands */
    if (in->d.op == I_RET || in->d.op == I_EXIT) return exits_owing(c, w, in, exec);
    const SimFunc *f = c->f;
    for (int i = 0; i < in->nops; i++) {
        const SimOpnd *o = &in->o[i];
        int write = i == 0 && !first_is_source(in), bad = 0;
        switch (o->kind) {
        case SO_REG:
            bad = check_slot(c, w, s, in, o->reg, write) || (o->reg2 >= 0 && check_slot(c, w, s, in, o->reg2, write));
            break;
        case SO_VEC:
            for (int k = 0; k < o->n && !bad; k++) bad = check_slot(c, w, s, in, f->vec[o->reg + k], write);
            break;
        case SO_ADDR:
            bad = o->reg >= 0 && check_slot(c, w, s, in, o->reg, 0);
            for (int k = 0; k < o->n && !bad; k++) bad = check_slot(c, w, s, in, f->vec[o->reg2 + k], 0);
            break;
        }
        if (bad) return 1;
    }
    return 0;
}

/* ---- the form of an mma_async ---- */

static int bad(SimCta *c, SimWarp *w, const SimInsn *in, const char *msg)
{
    sim_fail(c, sim_warp_id(c, w), -1, in, "%s", msg);
    return -1;
}

/* Every register of vector operand o is a 32-bit register, not the sink. */
static int vec_regs(const SimFunc *f, const SimInsn *in, const SimOpnd *o, int n, const char *what, char *msg, size_t cap)
{
    char name[64];
    if (o->kind != SO_VEC || o->n != n) {
        snprintf(msg, cap, "wgmma.mma_async m64n%dk%d: %s is a vector of %d registers", in->d.n, in->d.k, what, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int slot = f->vec[o->reg + i];
        if (slot < 0) {
            snprintf(msg, cap, "wgmma.mma_async: element %d of the %s is %s", i, what,
                     slot == -1 ? "the sink _" : "no register (a constant or special register)");
            return -1;
        }
        if (f->slot_bits[slot] != 32) {
            sim_reg_name(f, slot, name, sizeof name);
            snprintf(msg, cap, "wgmma.mma_async: %s register %s is %d bits; it must be a 32-bit register", what, name,
                     f->slot_bits[slot]);
            return -1;
        }
    }
    return 0;
}

static int imm_operand(const SimInsn *in, int i, int lo, int hi, int step, const char *what, int *out, char *msg, size_t cap)
{
    const SimOpnd *o = &in->o[i];
    if (o->kind != SO_IMM || o->imm < lo || o->imm > hi || (o->imm - lo) % step) {
        snprintf(msg, cap, "wgmma.mma_async: %s (operand %d) must be the constant %d or %d", what, i + 1, lo, hi);
        return -1;
    }
    *out = (int)o->imm;
    return 0;
}

/* Types, shape, operand count and kinds: what the instruction text fixes,
 * checked when the module is parsed (sim_wgmma_form) and read here at issue.
 * The sim runs the .f16, .bf16, .tf32 and FP8 (.e4m3, .e5m2, A and B each)
 * variants (integer and b1 types are refused by name). -1 with msg when not. */
static int decode_form(const SimFunc *f, const SimInsn *in, WgOp *op, char *msg, size_t cap)
{
    const IsaInsn *d = &in->d;
    if (d->ntype != 3) return snprintf(msg, cap, "wgmma.mma_async names three types: .dtype.atype.btype"), -1;
    int dt = d->type[0], at = d->type[1], bt = d->type[2];
    int fp8 = (at == T_E4M3 || at == T_E5M2) && (bt == T_E4M3 || bt == T_E5M2);
    if (at != bt && !fp8)
        return snprintf(msg, cap, "wgmma.mma_async: .atype and .btype differ (only the FP8 variants mix types)"), -1;
    if (at != T_F16 && at != T_BF16 && at != T_TF32 && !fp8)
        return snprintf(msg, cap, "wgmma.mma_async: the sim runs .f16, .bf16, .tf32, .e4m3 and .e5m2 inputs (not integer or .b1)"), -1;
    if (dt != T_F32 && !(dt == T_F16 && (at == T_F16 || fp8)))
        return snprintf(msg, cap, "wgmma.mma_async: .f16 and FP8 inputs take an .f16 or .f32 accumulator, .bf16 and .tf32 an .f32 one"), -1;
    int tf32 = at == T_TF32, k = tf32 ? 8 : fp8 ? 32 : 16, notrans = tf32 || fp8;   /* tf32 and FP8: K-major only */
    const char *tname = tf32 ? "tf32" : fp8 ? "e4m3/e5m2" : at == T_BF16 ? "bf16" : "f16";
    if (d->m != 64 || d->n < 8 || d->n > 256 || d->n % 8 || d->k != k)
        return snprintf(msg, cap, "wgmma.mma_async: shape m%dn%dk%d; .%s takes m64nNk%d with N = 8 .. 256 in steps of 8",
                        d->m, d->n, d->k, tname, k), -1;
    op->rs = in->nops > 1 && in->o[1].kind == SO_VEC;
    int want = notrans ? 6 : op->rs ? 7 : 8;
    if (in->nops != want)
        return snprintf(msg, cap, "wgmma.mma_async %s .%s takes %d operands (d, %s, b-desc, scale-d, imm-scale-a, imm-scale-b%s), not %d",
                        op->rs ? "with A in registers" : "with A in shared memory", tname, want,
                        op->rs ? "a" : "a-desc", notrans ? "" : op->rs ? ", imm-trans-b" : ", imm-trans-a, imm-trans-b", in->nops), -1;
    op->n = d->n, op->k = k, op->ebytes = tf32 ? 4 : fp8 ? 1 : 2, op->dtype = dt, op->atype = at, op->btype = bt;
    if (vec_regs(f, in, &in->o[0], dt == T_F32 ? d->n / 2 : d->n / 4, "accumulator", msg, cap)) return -1;
    if (op->rs && vec_regs(f, in, &in->o[1], 4, "A fragment", msg, cap)) return -1;
    for (int i = op->rs ? 2 : 1; i <= 2; i++)
        if (in->o[i].kind != SO_REG && in->o[i].kind != SO_IMM)
            return snprintf(msg, cap, "wgmma.mma_async: a matrix descriptor is a 64-bit register"), -1;
    const SimOpnd *sd = &in->o[3];
    if (!(sd->kind == SO_IMM && (sd->imm == 0 || sd->imm == 1)) && !(sd->kind == SO_REG && f->slot_bits[sd->reg] == 1))
        return snprintf(msg, cap, "wgmma.mma_async: scale-d (operand 4) is a predicate or the constant 0 or 1"), -1;
    int sa, sb;
    if (imm_operand(in, 4, -1, 1, 2, "imm-scale-a", &sa, msg, cap) || imm_operand(in, 5, -1, 1, 2, "imm-scale-b", &sb, msg, cap))
        return -1;
    op->neg_a = sa < 0, op->neg_b = sb < 0;
    if (!notrans && !op->rs && imm_operand(in, 6, 0, 1, 1, "imm-trans-a", &op->trans_a, msg, cap)) return -1;
    if (!notrans && imm_operand(in, op->rs ? 6 : 7, 0, 1, 1, "imm-trans-b", &op->trans_b, msg, cap)) return -1;
    return 0;
}

int sim_wgmma_form(const SimFunc *f, const SimInsn *in, char *why, size_t n)
{
    WgOp op = {0};
    return decode_form(f, in, &op, why, n);
}

/* The value every lane of the warp gives for operand i, or an error naming
 * the lane that differs (descriptors and scale-d are per warpgroup). */
static int uniform(SimCta *c, SimWarp *w, const SimInsn *in, int i, const char *what, uint64_t *out)
{
    uint64_t v = sim_read(c, w, &in->o[i], 0);
    for (int l = 1; l < 32; l++)
        if (sim_read(c, w, &in->o[i], l) != v) {
            char msg[256];
            snprintf(msg, sizeof msg, "wgmma.mma_async: %s is 0x%llx in lane %d but 0x%llx in lane 0: it must be the same in every thread of the warpgroup",
                     what, (unsigned long long)sim_read(c, w, &in->o[i], l), l, (unsigned long long)v);
            return bad(c, w, in, msg);
        }
    *out = in->o[i].kind == SO_REG && c->f->slot_bits[in->o[i].reg] == 1 ? v & 1 : v;
    return 0;
}

/* Decodes operand A (b 0) or B (b 1)'s descriptor and lists the shared
 * offset of each element [mn][k]; an error names the field or element. */
static int operand_addrs(SimCta *c, SimWarp *w, const SimInsn *in, WgOp *op, int b)
{
    uint64_t desc = b ? op->bdesc : op->adesc;
    int k_major = !(b ? op->trans_b : op->trans_a), rows = b ? op->n : WG_M;
    const char *name = b ? "b-desc" : "a-desc";
    SimSmemDesc d;
    char err[256], msg[512];
    if (sim_wgmma_sdesc_decode(desc, &d, err, sizeof err) || sim_sdesc_check(&d, err, sizeof err) ||
        sim_sdesc_check_operand(&d, k_major, op->ebytes, err, sizeof err)) {
        snprintf(msg, sizeof msg, "wgmma.mma_async %s 0x%016llx: %s", name, (unsigned long long)desc, err);
        return bad(c, w, in, msg);
    }
    uint32_t *addr = malloc((size_t)rows * (size_t)op->k * sizeof *addr);
    if (!addr) return bad(c, w, in, "out of host memory for the wgmma unit");
    if (b) op->baddr = addr;
    else op->aaddr = addr;
    for (int m = 0; m < rows; m++)
        for (int k = 0; k < op->k; k++) {
            uint32_t a = sim_sdesc_elem_addr(&d, k_major, op->ebytes, m, k);
            if (a == SIM_SDESC_BAD_ADDR || (uint64_t)a + (uint64_t)op->ebytes > c->smem_size) {
                snprintf(msg, sizeof msg,
                         "wgmma.mma_async %s 0x%016llx (%s-major, start 0x%x, LBO %u, SBO %u): element (%s %d, k %d) %s",
                         name, (unsigned long long)desc, k_major ? "K" : "MN", d.start, d.lbo, d.sbo, b ? "n" : "m", m, k,
                         a == SIM_SDESC_BAD_ADDR ? "has no address under the descriptor's layout" : "lies outside the CTA's shared memory");
                if (a != SIM_SDESC_BAD_ADDR)
                    snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (offset 0x%x, %u bytes)", a, c->smem_size);
                return bad(c, w, in, msg);
            }
            addr[m * op->k + k] = a;
        }
    return 0;
}

/* ---- collecting an op from the warpgroup's warps ---- */

/* The bytes from the lowest to past the highest element address: what the
 * op holds against writes while it is in flight. */
static SimRange span(SimCta *c, const uint32_t *addr, int count, int ebytes)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int i = 0; i < count; i++) {
        if (addr[i] < lo) lo = addr[i];
        if (addr[i] + (uint32_t)ebytes > hi) hi = addr[i] + (uint32_t)ebytes;
    }
    return (SimRange){c, lo, hi - lo};
}

static void remove_part(WgWarp *g, const WgOp *op)
{
    for (int i = 0; i < g->nparts; i++)
        if (g->parts[i] == op) {
            memmove(&g->parts[i], &g->parts[i + 1], (size_t)(g->nparts - i - 1) * sizeof *g->parts);
            g->nparts--;
            return;
        }
}

static int land(SimCluster *cl, SimAsync *a)
{
    (void)cl;
    wg_compute(a->payload);
    return 0;
}

static void drop(SimAsync *a) { op_free(a->payload); }

/* The first warp to reach an mma_async: decode it and list its operands'
 * addresses. */
static WgOp *new_op(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in, WgWarp *g, int wg)
{
    WgOp *op = calloc(1, sizeof *op);
    if (!op) {
        bad(c, w, in, "out of host memory for the wgmma unit");
        return NULL;
    }
    op->in = in, op->cta = c, op->wg = wg, op->index = s->issued, op->group = s->committed;
    uint64_t sd = 0;
    decode_form(c->f, in, op, NULL, 0);   /* checked when the module was parsed: here it fills op */
    if ((!op->rs && uniform(c, w, in, 1, "a-desc", &op->adesc)) ||
        uniform(c, w, in, 2, "b-desc", &op->bdesc) || uniform(c, w, in, 3, "scale-d", &sd) ||
        (!op->rs && operand_addrs(c, w, in, op, 0)) || operand_addrs(c, w, in, op, 1)) {
        op_free(op);
        return NULL;
    }
    op->scale_d = (int)sd;
    if (g->nparts == WG_MAX_PARTS) {
        char msg[256];
        snprintf(msg, sizeof msg, "wgmma.mma_async: this warp is %d wgmma.mma_async ahead of another warp of its warpgroup, "
                                  "which has not issued the one at PTX line %d: .aligned asks every warp to execute each",
                 WG_MAX_PARTS, g->parts[0]->in->line);
        op_free(op);
        bad(c, w, in, msg);
        return NULL;
    }
    if (g->nparts == g->capparts) {
        int cap = g->capparts ? 2 * g->capparts : 8;
        WgOp **p = realloc(g->parts, (size_t)cap * sizeof *p);
        if (!p) {
            op_free(op);
            bad(c, w, in, "out of host memory for the wgmma unit");
            return NULL;
        }
        g->parts = p, g->capparts = cap;
    }
    g->parts[g->nparts++] = op;
    return op;
}

/* A later warp's part of an op: the same instruction, in the same commit
 * group, with the same descriptors and scale-d (.aligned). */
static int join_op(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in, WgOp *op)
{
    char msg[400], who[32];
    int first = __builtin_ctz(op->have);
    warp_list(op->have, who, sizeof who);
    if (op->in != in) {
        snprintf(msg, sizeof msg,
                 "wgmma.mma_async number %u of this warp is this one, but warp(s) %s of its warpgroup issued the one at "
                 "PTX line %d as theirs: every warp of a warpgroup executes the same wgmma.mma_async in order (.aligned)",
                 op->index + 1, who, op->in->line);
        return bad(c, w, in, msg);
    }
    if (op->group != s->committed) {
        snprintf(msg, sizeof msg,
                 "this warp issues wgmma.mma_async number %u in commit group %u, warp(s) %s of its warpgroup in group %u: "
                 "the warps of a warpgroup execute the same wgmma.commit_group (.aligned)",
                 op->index + 1, s->committed, who, op->group);
        return bad(c, w, in, msg);
    }
    uint64_t ad = 0, bd, sd;
    if ((!op->rs && uniform(c, w, in, 1, "a-desc", &ad)) || uniform(c, w, in, 2, "b-desc", &bd) ||
        uniform(c, w, in, 3, "scale-d", &sd))
        return -1;
    const char *diff = !op->rs && ad != op->adesc ? "a-desc" : bd != op->bdesc ? "b-desc" : sd != (uint64_t)op->scale_d ? "scale-d" : NULL;
    if (diff) {
        snprintf(msg, sizeof msg, "wgmma.mma_async: %s 0x%llx differs from warp %d's 0x%llx: it must be the same in every warp of the warpgroup",
                 diff, (unsigned long long)(*diff == 'a' ? ad : *diff == 'b' ? bd : sd), first,
                 (unsigned long long)(*diff == 'a' ? op->adesc : *diff == 'b' ? op->bdesc : (uint64_t)op->scale_d));
        return bad(c, w, in, msg);
    }
    return 0;
}

/* The warp's registers: operands it reads must not be in flight as an
 * accumulator (nor as another op's A, except as this op's A); accumulators
 * may chain but must not be an in-flight A; both want a wgmma.fence after
 * the warp's last other access. Then they are this op's until its group is
 * waited for. */
static int take_regs(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in, WgOp *op)
{
    const SimFunc *f = c->f;
    char name[64];
    for (int i = 0; i < in->nops; i++) {
        const SimOpnd *o = &in->o[i];
        int acc = i == 0, afrag = i == 1 && op->rs;
        for (int k = 0; k < (o->kind == SO_VEC ? o->n : o->kind == SO_REG); k++) {
            int slot = o->kind == SO_VEC ? f->vec[o->reg + k] : o->reg;
            int d_busy = s->dgrp[slot] > s->waited, a_busy = s->agrp[slot] > s->waited;
            if ((!acc && d_busy) || (!acc && !afrag && a_busy) || (acc && a_busy)) {
                sim_reg_name(f, slot, name, sizeof name);
                sim_fail(c, sim_warp_id(c, w), -1, in,
                         "wgmma %s register %s %s before wgmma.wait_group: the wgmma.mma_async at PTX line %d still %s it",
                         d_busy ? "accumulator" : "A-fragment", name, acc ? "written" : "read", s->line[slot],
                         d_busy ? "writes" : "reads");
                return -1;
            }
            if (!acc && !afrag) continue;
            if (s->touch[slot] == s->fences + 1) {
                sim_reg_name(f, slot, name, sizeof name);
                sim_note(c, sim_warp_id(c, w), in, "wgmma.fence",
                         "wgmma.mma_async uses %s as its %s, which PTX line %d accessed after this warp's last wgmma.fence: "
                         "the ISA asks for a wgmma.fence in between", name, acc ? "accumulator" : "A fragment",
                         s->touch_line[slot]);
                if (c->failed) return -1;
            }
            if (acc) s->dgrp[slot] = op->group + 1;
            else s->agrp[slot] = op->group + 1;
            s->line[slot] = in->line;
        }
    }
    if (op->group + 1 > s->maxgrp) s->maxgrp = op->group + 1;
    return 0;
}

/* The runs of bytes the op reads, checked as the async proxy's sources:
 * written, not in flight, fenced after generic writes. */
static int check_sources(SimCta *c, SimWarp *w, const SimInsn *in, const WgOp *op, const uint32_t *addr, int count)
{
    SimRange r = span(c, addr, count, op->ebytes);
    uint8_t *used = calloc(r.bytes, 1);
    if (!used) return bad(c, w, in, "out of host memory for the wgmma unit");
    for (int i = 0; i < count; i++) memset(used + (addr[i] - r.lo), 1, (size_t)op->ebytes);
    int ok = 1;
    for (uint32_t b = 0; ok && b < r.bytes;) {
        uint32_t e = b;
        while (e < r.bytes && used[e]) e++;
        if (e > b) ok = sim_async_check_src(c, w, -1, in, c, r.lo + b, e - b);
        b = e + 1;
    }
    free(used);
    return ok ? 0 : -1;
}

/* The sources as the warpgroup sees them. The op starts once all four warps
 * issued it, each after its own earlier writes, so its view of shared memory
 * is the join of their clocks (NVIDIA's h01 feeds wgmma from each warp's
 * cp.async with no bar.sync in between). The issuing warp carries that view
 * through the queue's checks and gets its own back: the op orders nothing
 * between the warps themselves. */
static int check_operands(SimCta *c, SimWarp *w, const SimInsn *in, const WgOp *op)
{
    uint32_t own[32];
    memcpy(own, w->vc, (size_t)c->nwarps * sizeof *own);
    for (int i = 0; i < WG_WARPS; i++)
        for (int k = 0; k < c->nwarps; k++)
            if (c->w[WG_WARPS * op->wg + i].vc[k] > w->vc[k]) w->vc[k] = c->w[WG_WARPS * op->wg + i].vc[k];
    int rc = (!op->rs && check_sources(c, w, in, op, op->aaddr, WG_M * op->k)) ||
             check_sources(c, w, in, op, op->baddr, op->n * op->k);
    memcpy(w->vc, own, (size_t)c->nwarps * sizeof *own);
    return rc;
}

static int keep_read(SimCta *c, SimWarp *o, const SimInsn *in, SimRange r, uint32_t group, uint32_t serial)
{
    WgWarp *os = state(c, o);
    if (!os) return -1;
    if (os->nreads == os->capreads) {
        int cap = os->capreads ? 2 * os->capreads : 16;
        WgRead *n = realloc(os->reads, (size_t)cap * sizeof *n);
        if (!n) return bad(c, o, in, "out of host memory for the wgmma unit");
        os->reads = n, os->capreads = cap;
    }
    os->reads[os->nreads++] = (WgRead){r.lo, r.bytes, group, serial};
    return 0;
}

/* The warp has waited for the groups below `below`: their ops are complete for it, at its clock now. A write
 * by another warp into bytes such an op read must be ordered after the wait of some warp of the warpgroup
 * (sim_wgmma_write_ordered); the words keep the latest op's clocks. */
static void reads_done(SimCta *c, SimWarp *w, WgWarp *s, uint32_t below)
{
    int wid = sim_warp_id(c, w), n = 0;
    for (int i = 0; i < s->nreads; i++) {
        WgRead r = s->reads[i];
        if (r.group >= below) {
            s->reads[n++] = r;
            continue;
        }
        for (uint32_t wd = r.lo / 4; r.bytes && wd <= (r.lo + r.bytes - 1) / 4; wd++) {
            if (c->gop[wd] > r.op) continue;   /* a newer op read it since: its record stands */
            if (c->gop[wd] < r.op)
                c->gop[wd] = r.op, c->gwg[wd] = (uint8_t)(wid / WG_WARPS), memset(&c->gclk[(size_t)wd * 4], 0, 4 * sizeof *c->gclk);
            c->gclk[(size_t)wd * 4 + (size_t)(wid % WG_WARPS)] = w->vc[wid];
        }
    }
    s->nreads = n;
}

int sim_wgmma_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t wd)
{
    if (!c->gop[wd]) return 1;
    int wid = sim_warp_id(c, w), wg = c->gwg[wd], waited = 0;
    for (int i = 0; i < WG_WARPS; i++) {
        uint32_t t = c->gclk[(size_t)wd * 4 + (size_t)i];
        int k = WG_WARPS * wg + i;
        if (!t) continue;
        waited = 1;
        if (k == wid || t <= w->vc[k]) return 1;
    }
    if (!waited) return 1;   /* not waited by anyone yet: the op's held bytes catch writes while it is in flight */
    sim_fail(c, wid, lane, in,
             "shared-memory race: overwrites word 0x%x that a wgmma.mma_async of warpgroup %d read, with no barrier "
             "(or mbarrier wait) after that warpgroup's wgmma.wait_group in between", wd * 4, wg);
    return 0;
}

/* The fourth warp has issued op, so the hardware may start it: its shared
 * sources are checked and held from now on, and the warps of the warpgroup
 * parked in wait_group try again. */
static void issue(SimCta *c, SimWarp *w, const SimInsn *in, WgWarp *g, WgOp *op)
{
    remove_part(g, op);
    SimAsync *a = NULL;
    if (check_operands(c, w, in, op) || !(a = sim_async_new(c, &c->w[WG_WARPS * op->wg], 0, in, "wgmma.mma_async"))) {
        op_free(op);
        return;
    }
    a->key = group_key(c, op->wg), a->group = op->group, a->land = land, a->drop = drop, a->payload = op;
    a->src[a->nsrc++] = span(c, op->baddr, op->n * op->k, op->ebytes);
    if (!op->rs) a->src[a->nsrc++] = span(c, op->aaddr, WG_M * op->k, op->ebytes);
    for (int i = 0; i < WG_WARPS; i++)
        for (int k = 0; k < a->nsrc; k++)
            if (keep_read(c, &c->w[WG_WARPS * op->wg + i], in, a->src[k], op->group, c->nops + 1)) return;
    c->nops++;
    c->cl->work += (uint64_t)WG_M * (uint64_t)op->n * (uint64_t)op->k / SIM_MACS_PER_STEP;   /* the step limit */
    if (sim_async_push(c->cl, a)) return;
    for (int i = 0; i < WG_WARPS; i++) {
        SimWarp *o = &c->w[WG_WARPS * op->wg + i];
        WgWarp *os = o->wg;
        if (os && os->parked && o->state == WS_UNIT) os->parked = 0, o->state = WS_RUN;
    }
}

static void mma_async(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in)
{
    int wid = sim_warp_id(c, w), wg = wid / WG_WARPS, me = wid % WG_WARPS;
    WgWarp *g = state(c, &c->w[WG_WARPS * wg]);
    if (!g) return;
    WgOp *op = NULL;
    for (int i = 0; i < g->nparts && !op; i++)
        if (g->parts[i]->index == s->issued) op = g->parts[i];
    if (!op) op = new_op(c, w, s, in, g, wg);
    else if (join_op(c, w, s, in, op)) return;
    if (!op) return;
    if (!s->fences)
        sim_note(c, wid, in, "wgmma.fence", "wgmma.mma_async before any wgmma.fence of this warp: the ISA asks for one "
                                            "before the first wgmma.mma_async");
    if (c->failed || take_regs(c, w, s, in, op)) return;
    if (op->rs)
        for (int l = 0; l < 32; l++)
            for (int r = 0; r < 4; r++)
                op->areg[me * 32 + l][r] = (uint32_t)w->r[(size_t)c->f->vec[in->o[1].reg + r] * 32 + (size_t)l];
    op->have |= (uint8_t)(1u << me);
    s->issued++;
    if (op->have == (1u << WG_WARPS) - 1) issue(c, w, in, g, op);
}

/* wait_group N: the warp's groups older than its N newest land. An op of
 * such a group that other warps of the warpgroup have not issued yet parks
 * the warp until they do; one this warp never issued is an error. */
static void wait_group(SimCta *c, SimWarp *w, WgWarp *s, const SimInsn *in)
{
    int wid = sim_warp_id(c, w), wg = wid / WG_WARPS, me = wid % WG_WARPS;
    uint64_t keep = (uint64_t)in->o[0].imm;   /* a constant >= 0: sim_form.c */
    uint32_t below = s->committed > keep ? s->committed - (uint32_t)keep : 0;
    WgWarp *g = state(c, &c->w[WG_WARPS * wg]);
    if (!g) return;
    char msg[512], who[32], missing[32];
    for (int i = 0; i < g->nparts; i++) {
        WgOp *op = g->parts[i];
        if (op->group >= below) continue;
        warp_list(op->have, who, sizeof who);
        if (!(op->have >> me & 1)) {
            snprintf(msg, sizeof msg,
                     "wgmma.wait_group waits for commit group %u, which holds the wgmma.mma_async at PTX line %d that "
                     "warp(s) %s of this warpgroup issued and this warp did not: every warp of a warpgroup executes each "
                     "wgmma.mma_async (.aligned)", op->group, op->in->line, who);
            bad(c, w, in, msg);
            return;
        }
        for (int k = 0; k < WG_WARPS; k++)
            if (!(op->have >> k & 1) && c->w[WG_WARPS * wg + k].state == WS_DONE) {
                warp_list((1u << WG_WARPS) - 1 - op->have, missing, sizeof missing);
                snprintf(msg, sizeof msg,
                         "wgmma.wait_group waits for the wgmma.mma_async at PTX line %d, which warp(s) %s of the warpgroup "
                         "issued but warp %d exited without (PTX line %d): every warp of a warpgroup executes each "
                         "wgmma.mma_async (.aligned)", op->in->line, who, WG_WARPS * wg + k, c->w[WG_WARPS * wg + k].exit_line);
                bad(c, w, in, msg);
                return;
            }
        s->parked = 1, w->state = WS_UNIT, w->wait_line = in->line;
        return;
    }
    s->parked = 0;
    if (sim_async_land_group(c->cl, group_key(c, wg), below) < 0) return;
    reads_done(c, w, s, below);
    if (below > s->waited) s->waited = below;
}

/* .sync.aligned: every thread of the warpgroup, all four warps present. */
static int aligned(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int wid = sim_warp_id(c, w), wg = wid / WG_WARPS;
    char msg[256];
    if (!(c->arch->families & FAM_WGMMA)) {
        snprintf(msg, sizeof msg, "%s needs a target with wgmma (sm_90a); the module's .target is %s",
                 isa_base_text(in->d.op), c->arch->name);
        return bad(c, w, in, msg);
    }
    if (exec != w->live || w->live != 0xFFFFFFFFu) {
        snprintf(msg, sizeof msg, "%s is .sync.aligned: every thread of the warpgroup executes it, but lanes 0x%08x of "
                                  "this warp's 0x%08x do (live 0x%08x)",
                 isa_base_text(in->d.op), exec, 0xFFFFFFFFu, w->live);
        return bad(c, w, in, msg);
    }
    if ((wg + 1) * WG_THREADS > c->nthreads) {
        snprintf(msg, sizeof msg, "%s: warp %d is in warpgroup %d, which this %d-thread CTA leaves incomplete (a warpgroup is 128 threads)",
                 isa_base_text(in->d.op), wid, wg, c->nthreads);
        return bad(c, w, in, msg);
    }
    return 0;
}

int sim_wgmma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    if (aligned(c, w, in, exec)) return 1;
    WgWarp *s = state(c, w);
    if (!s) return 1;
    switch (in->d.op) {
    case I_WGMMA_FENCE: s->fences++; return 1;
    case I_WGMMA_MMA: mma_async(c, w, s, in); return 1;
    case I_WGMMA_COMMIT: s->committed++; return 1;
    case I_WGMMA_WAIT: wait_group(c, w, s, in); return 1;
    }
    return 0;
}

int sim_wgmma_exit(SimCta *c)
{
    for (int i = 0; i < c->nwarps; i += WG_WARPS) {
        WgWarp *g = c->w[i].wg;
        if (!g || !g->nparts) continue;
        const WgOp *op = g->parts[0];
        char who[32], missing[32];
        warp_list(op->have, who, sizeof who);
        warp_list((1u << WG_WARPS) - 1 - op->have, missing, sizeof missing);
        sim_fail(c, -1, -1, op->in,
                 "the wgmma.mma_async at PTX line %d was issued by warp(s) %s of warpgroup %d and never by warp(s) %s: "
                 "every warp of a warpgroup executes each wgmma.mma_async (.aligned)",
                 op->in->line, who, i / WG_WARPS, missing);
        return -1;
    }
    return 0;
}
