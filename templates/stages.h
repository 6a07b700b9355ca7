/* Two-stage buffering of the tiles a loop streams: while a step reads stage
 * s, the next step's tiles land in stage 1 - s. Every streamed region has its
 * stage-1 copy at one fixed distance `stride` past its stage-0 copy, so a
 * single register, flip (+stride while stage 0 is current, -stride while
 * stage 1 is), moves every per-lane base that follows the current stage. */
#ifndef PTXGEN_STAGES_H
#define PTXGEN_STAGES_H
#include "kctx.h"

#define STAGES_MAX_TRACKED 8
typedef struct {
    int stride;
    Reg flip;
    Reg tracked[STAGES_MAX_TRACKED];
    int ntracked;
} Stages;

void stages_init(Kctx *k, Stages *s, int stride);
/* base (a shared address into stage 0 now) follows the current stage */
void stages_track(Stages *s, Reg base);
/* Byte offset of the other stage from stage 0: where the next tiles go. */
Reg stages_other(Kctx *k, const Stages *s);
/* The other stage becomes current: every tracked base moves to it. */
void stages_advance(Kctx *k, Stages *s);
#endif
