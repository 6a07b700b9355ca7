/* mla_bwd (mma.sync family): how the work splits over warps and CTAs, read
 * by the plans (mla_bwd_desc.c) and by the kernels that follow them
 * (mla_bwd.c); it calls neither. */
#include "mla_bwd.h"

MlaDkvSplit mla_dkv_split(const AttnTile *t) {
    MlaDkvSplit s = {.mtiles = t->bn / 16};
    s.groups = t->warps / s.mtiles;
    s.nope = MLA_D_V / s.groups, s.rope = (MLA_D_QK - MLA_D_V) / s.groups;
    return s;
}
