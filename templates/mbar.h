/* mbarriers: initialisation by one thread, and the wait on a phase. A
 * pipeline stage's barrier completes once per pass over the ring, so the
 * waiter tracks the pass's parity (mbar_stage). */
#ifndef PTXGEN_MBAR_H
#define PTXGEN_MBAR_H
#include "kctx.h"

/* n mbarriers at shared offset `bars` (8 bytes each; bar[i] gets the i-th's address), initialised by
 * thread 0 with counts[i] (an immediate or a register) and fenced for the cluster. The caller syncs
 * the CTA before anyone uses them. */
void mbar_init(Kctx *k, int bars, int n, const Opnd *counts, Reg *bar);
/* Spins until the barrier at bar completes the phase of parity `parity` (register); cluster: the
 * acquire is at cluster scope (a peer CTA arrives on it). */
void mbar_wait(Kctx *k, Reg bar, Reg parity, int cluster);
/* For pass `it` over a ring of `stages` barriers 8 bytes apart from bar0: the stage's barrier address
 * and the parity of the phase that pass completes. */
void mbar_stage(Kctx *k, Reg bar0, Reg it, int stages, Reg *bar, Reg *parity);
/* The parity of phase (n >> shift) + plus of a barrier that completes once per step n (shift 1: once per two
 * steps, a pair of buffers; plus 1: the phase before, n - 1, whose parity n + 1 shares). */
Reg  mbar_parity(Kctx *k, Reg n, int shift, int plus);
#endif
