#include "stages.h"
#include <stdio.h>
#include <stdlib.h>

void stages_init(Kctx *k, Stages *s, int stride) {
    *s = (Stages){.stride = stride, .flip = e_reg(&k->e, RC_B32)};
    INS(&k->e, MOV_B32, R(s->flip), I(stride));
}

void stages_track(Stages *s, Reg base) {
    if (s->ntracked == STAGES_MAX_TRACKED) {
        fprintf(stderr, "ptxgen internal: more than %d bases follow the stage\n", STAGES_MAX_TRACKED);
        abort();
    }
    s->tracked[s->ntracked++] = base;
}

Reg stages_other(Kctx *k, const Stages *s) {
    /* flip + stride is 2*stride in stage 0 and 0 in stage 1 */
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(r), R(s->flip), I(s->stride));
    INS(&k->e, SHR_U32, R(r), R(r), I(1));
    return r;
}

void stages_advance(Kctx *k, Stages *s) {
    for (int i = 0; i < s->ntracked; i++) INS(&k->e, ADD_U32, R(s->tracked[i]), R(s->tracked[i]), R(s->flip));
    INS(&k->e, SUB_S32, R(s->flip), I(0), R(s->flip));
}
