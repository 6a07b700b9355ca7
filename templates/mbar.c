/* mbarriers (mbar.h). */
#include "mbar.h"

void mbar_init(Kctx *k, int bars, int n, const Opnd *counts, Reg *bar) {
    Emit *e = &k->e;
    Reg t0 = e_reg(e, RC_PRED);
    int skip = e_label(e);
    for (int i = 0; i < n; i++) {
        bar[i] = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(bar[i]), R(k->smem), I(bars + 8 * i));
    }
    INS(e, SETP_EQ_U32, R(t0), R(k->tid), I(0));
    INSP(e, t0, 1, BRA, L(skip));
    for (int i = 0; i < n; i++) INS(e, MBAR_INIT, A(bar[i], 0), counts[i]);
    INS0(e, FENCE_MBAR_INIT);
    e_place(e, skip);
}

void mbar_wait(Kctx *k, Reg bar, Reg parity, int cluster) {
    Emit *e = &k->e;
    int spin = e_label(e);
    Reg ready = e_reg(e, RC_PRED);
    e_place(e, spin);
    if (cluster) INS(e, MBAR_TRY_WAIT_PARITY_CLUSTER, R(ready), A(bar, 0), R(parity));
    else INS(e, MBAR_TRY_WAIT_PARITY, R(ready), A(bar, 0), R(parity));
    INSP(e, ready, 1, BRA, L(spin));
}

void mbar_stage(Kctx *k, Reg bar0, Reg it, int stages, Reg *bar, Reg *parity) {
    Emit *e = &k->e;
    Reg s = e_reg(e, RC_B32);
    *bar = e_reg(e, RC_B32), *parity = e_reg(e, RC_B32);
    if (stages & (stages - 1)) {
        INS(e, REM_U32, R(s), R(it), I(stages));
        INS(e, DIV_U32, R(*parity), R(it), I(stages));
    } else {
        int sh = __builtin_ctz((unsigned)stages);
        INS(e, AND_B32, R(s), R(it), I(stages - 1));
        INS(e, SHR_U32, R(*parity), R(it), I(sh));
    }
    INS(e, AND_B32, R(*parity), R(*parity), I(1));
    INS(e, MAD_LO_U32, R(*bar), R(s), I(8), R(bar0));
}

Reg mbar_parity(Kctx *k, Reg n, int shift, int plus) {
    Emit *e = &k->e;
    Reg p = e_reg(e, RC_B32), x = n;
    if (shift) INS(e, SHR_U32, R(p), R(x), I(shift)), x = p;
    if (plus) INS(e, ADD_U32, R(p), R(x), I(plus)), x = p;
    INS(e, AND_B32, R(p), R(x), I(1));
    return p;
}
