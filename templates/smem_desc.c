/* Shared-memory matrix descriptors (smem_desc.h). */
#include "smem_desc.h"

Reg smem_desc(Kctx *k, int off, uint64_t fields) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B32), d = e_reg(e, RC_B64);
    INS(e, ADD_U32, R(a), R(k->smem), I(off));
    INS(e, SHR_U32, R(a), R(a), I(4));
    INS(e, AND_B32, R(a), R(a), I(0x3FFF));
    INS(e, CVT_U64_U32, R(d), R(a));
    INS(e, OR_B64, R(d), R(d), I((int64_t)fields));
    return d;
}

Reg smem_desc_at(Kctx *k, Reg desc, int bytes) {
    if (!bytes) return desc;
    Reg d = e_reg(&k->e, RC_B64);
    INS(&k->e, ADD_U64, R(d), R(desc), I(bytes >> 4));   /* the start field counts 16-byte units */
    return d;
}
