/* What the tcgen05 attention kernels share (one TMEM lane per thread): a row of TMEM out to global memory, and
 * the hand-over of what the threads stored into TMEM to the MMA-issuing thread. */
#ifndef PTXGEN_ATTN_TC_H
#define PTXGEN_ATTN_TC_H
#include "attn_emit.h"
#include "../templates/umma.h"

/* n (a multiple of 16) fp32 columns of this thread's TMEM lane from col + off, times mul (a register, or none
 * when NULL), rounded to dt into 2n bytes at a (b64), stored where pred holds; where the uniform predicate has
 * is false, zeros, with no TMEM read (nothing was written there). */
void tc_row_out(Kctx *k, Reg col, int off, int n, Reg has, const Reg *mul, DType dt, Reg a, Reg pred);
/* The same in fp32 (4n bytes at a): split-KV's partial rows. */
void tc_row_out_f32(Kctx *k, Reg col, int off, int n, Reg has, const Reg *mul, Reg a, Reg pred);
/* This thread's tcgen05.st are done and ordered before an arrival on the mbarrier at bar (the issuer's wait). */
void tc_stores_arrive(Kctx *k, Reg bar);
#endif
