/* Which global elements one tensor copy moves, and where each lands in the
 * shared-memory image: the tile-mode box, tile::gather4's four rows, and the
 * swizzle of the landing address. Semantics in sim_tmap.h. */
#include <stdio.h>
#include "sim_desc.h"
#include "sim_tmap.h"

/* The driver ignores elementStrides[0] without interleave (the hardware has
 * no stride along dimension 0 there), so dimension 0 then steps by 1. */
static uint32_t step(const SimTmap *t, int i)
{
    return (i == 0 && t->interleave == TMAP_IL_NONE) ? 1 : t->estride[i];
}

/* Elements moved along dimension i: ceil(box / step). */
static uint32_t moved(const SimTmap *t, int i)
{
    uint32_t s = step(t, i);
    return (t->box[i] + s - 1) / s;
}

/* In bounds iff every coordinate lies in [0, dim); only then is gaddr set. */
static int locate(const SimTmap *t, const int64_t *c, uint64_t *gaddr)
{
    uint64_t a = t->gaddr;
    *gaddr = 0;
    for (int i = 0; i < t->rank; i++) {
        if (c[i] < 0 || (uint64_t)c[i] >= t->dim[i]) return 0;
        a += (uint64_t)c[i] * t->stride[i];
    }
    *gaddr = a;
    return 1;
}

static uint64_t box_elems(const SimTmap *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= moved(t, i);
    return n;
}

/* Saturates: 256^5 elements exceed any shared memory, and the TMA unit
 * compares this size with the destination before it walks. */
uint32_t sim_tmap_box_bytes(const SimTmap *t)
{
    uint64_t b = box_elems(t) * (uint64_t)t->elem_bytes;
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/* k counts moved elements per dimension, innermost first: the image's
 * row-major order, so the linear index e is also the image slot. */
int sim_tmap_box_walk(const SimTmap *t, const int32_t *coord, SimTmapVisit fn, void *ctx)
{
    uint32_t k[TMAP_MAX_RANK] = { 0 };
    uint64_t n = t && coord && fn ? box_elems(t) : 0;
    if (!n) return -1;
    for (uint64_t e = 0; e < n; e++) {
        int64_t c[TMAP_MAX_RANK];
        uint64_t ga;
        for (int i = 0; i < t->rank; i++) c[i] = (int64_t)coord[i] + (int64_t)k[i] * step(t, i);
        int in = locate(t, c, &ga);
        int rc = fn(ctx, in, ga, (uint32_t)(e * (uint64_t)t->elem_bytes));
        if (rc) return rc;
        for (int i = 0; i < t->rank && ++k[i] == moved(t, i); i++) k[i] = 0;
    }
    return 0;
}

int sim_tmap_gather4_check(const SimTmap *t, char *err, size_t errlen)
{
    const char *why = !t ? "no tensor map"
                    : t->rank != 2 ? "tile::gather4 needs a 2-D tensor map"
                    : t->interleave != TMAP_IL_NONE ? "tile::gather4 does not take interleaved maps"
                    : t->box[1] != 1 ? "tile::gather4 needs boxDim[1] = 1 (one row per box)" : NULL;
    if (!why) return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s (map: rank %d, interleave %d, boxDim[1] = %u)", why, t ? t->rank : 0,
                 t ? t->interleave : 0, t && t->rank > 1 ? t->box[1] : 0);
    return -1;
}

uint32_t sim_tmap_gather4_bytes(const SimTmap *t) { return 4u * t->box[0] * (uint32_t)t->elem_bytes; }

int sim_tmap_gather4_walk(const SimTmap *t, int32_t col, const int32_t rows[4], SimTmapVisit fn, void *ctx)
{
    if (!rows || !fn || sim_tmap_gather4_check(t, NULL, 0)) return -1;
    for (uint32_t j = 0; j < 4; j++)
        for (uint32_t x = 0; x < t->box[0]; x++) {
            int64_t c[2] = { (int64_t)col + x, rows[j] };
            uint64_t ga;
            int in = locate(t, c, &ga);
            int rc = fn(ctx, in, ga, (j * t->box[0] + x) * (uint32_t)t->elem_bytes);
            if (rc) return rc;
        }
    return 0;
}

/* Address bits [7, 7 + b) select the XOR applied to the 16-byte chunk bits
 * [4, 4 + b), b = 1, 2, 3 for 32B, 64B, 128B. */
uint32_t sim_tmap_swizzle(int swizzle, uint32_t addr)
{
    /* the same XOR of address bits the MMA descriptors read through */
    static const SimSmemLayout kLayout[] = {SL_INTERLEAVE, SL_SW32, SL_SW64, SL_SW128};
    if (swizzle <= TMAP_SW_NONE || swizzle > TMAP_SW_128B) return addr;
    return sim_sdesc_swizzle(kLayout[swizzle], addr);
}
