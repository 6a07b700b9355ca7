/* Plain bulk copies (PTX ISA cp.async.bulk, cp.reduce.async.bulk): size
 * bytes, a multiple of 16, between 16-byte aligned addresses, in three
 * directions:
 *   .shared::cluster/.shared::cta <- .global   mbarrier completion, multicast
 *   .shared::cluster <- .shared::cta            a peer CTA's memory, mbarrier in it
 *   .global <- .shared::cta                     bulk group; cp.reduce reduces
 * The landings are the unit's (sim_tma.c), unswizzled. */
#include <stdlib.h>
#include <string.h>
#include "sim_tma.h"

static int size_opnd(const TmaIssue *x, const SimOpnd *o, uint32_t *size)
{
    uint64_t v = sim_read(x->c, x->w, o, x->lane);
    *size = (uint32_t)v;
    if (!*size || *size % 16 || v > UINT32_MAX) {
        tma_fail(x, "size %llu: a bulk copy moves a non-zero multiple of 16 bytes", (unsigned long long)v);
        return -1;
    }
    return 0;
}

static int aligned16(const TmaIssue *x, uint64_t a, const char *what)
{
    if (!(a % 16)) return 1;
    tma_fail(x, "%s 0x%llx is not 16-byte aligned", what, (unsigned long long)a);
    return 0;
}

/* .global <- .shared::cta, a store or a reduction, in the thread's open bulk group */
static int to_global(const TmaIssue *x)
{
    const SimInsn *in = x->in;
    int reduce = in->d.op == I_REDUCE_BULK;
    /* the ISA: cp.reduce.async.bulk .add.f32 flushes subnormal inputs and results to sign-preserving zero */
    TmaStore st = {.redop = reduce ? in->d.redop : RO_NONE, .type = in->d.ntype ? in->d.type[in->d.ntype - 1] : T_NONE,
                   .ftz = reduce && in->d.redop == RO_ADD};
    if (reduce) {   /* its operation and type were checked when it was decoded; which pairs go: */
        if (!tma_reduce_ok(x, st.redop, st.type)) return -1;
        if ((st.type == T_F16 || st.type == T_BF16) && st.redop == RO_ADD && !(in->d.flags & F_NOFTZ)) {
            tma_fail(x, "cp.reduce.async.bulk .add on f16/bf16 requires .noftz");
            return -1;
        }
    }
    uint64_t ga = sim_addr(x->c, x->w, &in->o[0], x->lane);
    uint32_t size, lo;
    TmaGcache gc = {0};
    if (size_opnd(x, &in->o[2], &size) || !tma_shared_opnd(x, &in->o[1], 0, "the source", &lo) ||
        !aligned16(x, ga, "the destination global") || !aligned16(x, lo, "the source shared") ||
        !tma_gptr(x, &gc, ga, size, reduce ? SIM_ACC_RW : SIM_ACC_W) || tma_store_add(x, &st, ga, 0, size))
        return -1;
    return tma_store_push(x, &st, lo, size, 0, reduce ? "bulk reduce (cp.reduce.async.bulk)" : "bulk store (cp.async.bulk)");
}

/* .shared::cluster/.shared::cta <- .global, or <- .shared::cta of this CTA */
static int to_shared(const TmaIssue *x, int from_shared)
{
    const SimInsn *in = x->in;
    int mc = (in->d.flags & F_MULTICAST) != 0;
    if (in->d.op == I_REDUCE_BULK) {
        tma_fail(x, "cp.reduce.async.bulk into shared memory is not modelled by the sim");
        return -1;
    }
    uint32_t size, slo = 0;
    TmaDests d;
    if (size_opnd(x, &in->o[2], &size) || tma_load_dests(x, &in->o[0], &in->o[3], mc ? &in->o[4] : NULL, 16, &d))
        return -1;
    if ((uint64_t)d.lo + size > d.dst[0]->smem_size) {   /* before the image is built: size may be huge */
        tma_fail(x, "the %u-byte copy to shared 0x%x runs past the CTA's %u bytes of shared memory", size, d.lo,
                 d.dst[0]->smem_size);
        return -1;
    }
    uint8_t *img = malloc(size);
    if (!img) {
        tma_fail(x, "out of host memory for a %u-byte bulk copy", size);
        return -1;
    }
    const uint8_t *src = NULL;
    if (from_shared) {
        /* the source is held, not only read: the copy reads it until it lands */
        if (tma_shared_opnd(x, &in->o[1], 0, "the source", &slo) && aligned16(x, slo, "the source shared") &&
            sim_async_check_src(x->c, x->w, x->lane, in, x->c, slo, size) && !x->c->failed) {
            if (d.dst[0] == x->c)
                tma_fail(x, "a bulk copy from .shared::cta to .shared::cluster must go to another CTA of the cluster");
            else
                src = x->c->smem + slo, d.hold = (SimRange){x->c, slo, size};
        }
    } else {
        TmaGcache gc = {0};
        uint64_t ga = sim_addr(x->c, x->w, &in->o[1], x->lane);
        if (aligned16(x, ga, "the source global") && (src = tma_gptr(x, &gc, ga, size, SIM_ACC_R)))
            tma_count_gmem(x, size, sectors_of(ga, size));
    }
    if (!src || x->c->failed) {
        free(img);
        return -1;
    }
    memcpy(img, src, size);
    return tma_load_push(x, &d, img, size, 0, from_shared ? "bulk copy to a peer (cp.async.bulk)" : "bulk copy (cp.async.bulk)");
}

/* The direction, its completion mechanism and the operands were checked at parse (sim_form.c). */
int tma_bulk(const TmaIssue *x)
{
    const IsaInsn *d = &x->in->d;
    if (d->space[0] == SP_GLOBAL) return to_global(x);
    return to_shared(x, d->space[1] == SP_SHARED);
}
