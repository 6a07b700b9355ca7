/* The wgmma unit's own types, shared by its two files: sim_wgmma.c (the four
 * instructions, how a warpgroup's warps meet in one operation, and which
 * registers are in flight) and sim_wgmma_math.c (the operation's arithmetic
 * when it lands). Nothing outside the unit includes this. */
#ifndef PTXGEN_SIM_WGMMA_H
#define PTXGEN_SIM_WGMMA_H
#include "sim.h"
#include "sim_desc.h"

enum { WG_WARPS = 4, WG_THREADS = 128, WG_M = 64, WG_MAX_N = 256, WG_MAX_K = 32 };

/* One wgmma.mma_async of a warpgroup. Its warps reach it one after another
 * (the sim steps warps in turn), so it is collected: each warp adds what is
 * its own (RS: its A fragments) and the op is issued to the async queue when
 * the fourth has. Everything else is the same in every warp (.aligned) and
 * is checked to be. */
typedef struct {
    const SimInsn *in;          /* the instruction; the D registers are its o[0] vector */
    SimCta *cta;
    int wg;                     /* warpgroup index: warps 4wg .. 4wg+3 */
    uint32_t index;             /* how many mma_async each warp issued before this one */
    uint32_t group;             /* the commit group it belongs to (the warps' commit count at issue) */
    uint8_t have;               /* the warps of the group that issued it so far, a bit each */
    int n, k, ebytes;           /* shape m64nNkK; bytes per A/B element (2, 4 for tf32, 1 for fp8) */
    int dtype, atype, btype;    /* IsaType: D .f32 or .f16; A and B .f16, .bf16 or .tf32 (the same), or fp8 each */
    int rs;                     /* A from registers (else from a descriptor) */
    int scale_d;                /* 0: D = A*B, the accumulator is not read */
    int neg_a, neg_b;           /* imm-scale -1 */
    int trans_a, trans_b;       /* imm-trans 1: MN-major operand */
    uint64_t adesc, bdesc;      /* as the warps gave them */
    uint32_t *aaddr, *baddr;    /* CTA-local shared offsets of A[m][k] (SS) and B[n][k] */
    uint32_t areg[WG_THREADS][4]; /* RS: each thread's A fragment registers at issue */
} WgOp;

/* Computes D = A*B (+ D when scale_d) and writes the accumulator registers
 * of the warpgroup's four warps (sim_wgmma_math.c). */
void wg_compute(const WgOp *op);
/* The m64 A tile element (row, k) that RS fragment register reg (0-3), part
 * h of it (16-bit types: its half; fp8: its byte; 0 for tf32) of warpgroup
 * thread t holds, for elements of ebytes bytes. */
void wg_a_frag(int ebytes, int t, int reg, int h, int *row, int *k);
/* Whether a write by warp w into shared word wd is ordered after the wgmma op that last read it (0: a race,
 * reported) */
int sim_wgmma_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, uint32_t wd);

#endif
