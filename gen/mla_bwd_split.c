/* mla_bwd (mma.sync family): how the work splits over warps and CTAs, read
 * by the plans (mla_bwd_desc.c) and by the kernels that follow them
 * (mla_bwd.c, mla_bwd_rows.c); it calls neither. */
#include "mla_bwd.h"

MlaDkvSplit mla_dkv_split(const AttnTile *t) {
    MlaDkvSplit s = {.mtiles = t->bn / 16};
    s.groups = t->warps / s.mtiles;
    s.nope = MLA_D_V / s.groups, s.rope = (MLA_D_QK - MLA_D_V) / s.groups;
    return s;
}

/* The widest slice (a multiple of 64 dividing 576) whose 256 x cols fp32
 * accumulator fits the arch's shared memory beside the warps' lists: 192
 * columns on 227 KB parts, 64 on sm_80 (576 has no divisor 128) and on 99 KB
 * parts. Fewer slices mean fewer CTAs rescanning every token's indices. */
int mla_reduce_cols(const ArchInfo *a) {
    for (int cols = 192; cols > 64; cols -= 64)
        if (MLA_D_QK % cols == 0 && MLA_REDUCE_SMEM(cols) <= a->smem_block_optin) return cols;
    return 64;
}
