/* Shared-memory matrix descriptors, the 64-bit words wgmma (sm_90a) and
 * tcgen05.mma (sm_100a) read their shared operands through. Both put the
 * start address (>> 4, 14 bits) in bits 0-13, LBO (>> 4) in 16-29 and SBO
 * (>> 4) in 32-45; they differ above that (PTX_FACTS 3.7): the caller passes
 * those bits in `fields`. */
#ifndef PTXGEN_SMEM_DESC_H
#define PTXGEN_SMEM_DESC_H
#include "kctx.h"

/* LBO and SBO in bytes, as their fields */
static inline uint64_t smem_desc_offsets(int lbo, int sbo) {
    return (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32;
}
/* The descriptor of an operand starting at byte off of the dynamic shared memory. */
Reg smem_desc(Kctx *k, int off, uint64_t fields);
/* desc moved by `bytes` along its start address (a K step inside an atom, the next atom, the next stage). */
Reg smem_desc_at(Kctx *k, Reg desc, int bytes);
#endif
