/* The tcgen05 unit's own types, shared by its three files: sim_tmem.c (the
 * tensor memory of a CTA: allocation, tcgen05.ld/st, lane quarters, the
 * registers a load leaves in flight), sim_tcgen05.c (dispatch, the issue of
 * tcgen05.mma and tcgen05.commit to the async queue), sim_tcgen05_cp.c
 * (tcgen05.cp and tcgen05.shift) and sim_umma_math.c (what an MMA computes
 * when it lands). Nothing outside the unit includes this. */
#ifndef PTXGEN_SIM_TCGEN05_H
#define PTXGEN_SIM_TCGEN05_H
#include "sim.h"
#include "sim_desc.h"

enum { TMEM_LANES = 128, TMEM_CHUNK = 32 };   /* lanes per CTA; allocation granule in columns */

/* One CTA's tensor memory (SimCta.tmem). Cells are [lane][column] 32-bit
 * words. A cell is poison until an MMA, st or cp writes it after its
 * column's alloc; pend and held count the in-flight async ops (MMAs) that
 * will write the cell (D) or still read it (A from TMEM), so an early ld or
 * a st into an operand is a named error. */
typedef struct {
    int cols;                   /* columns per lane: the arch table's tmem_cols */
    uint32_t *data;
    uint8_t *written;
    uint16_t *pend, *held;
    int32_t *alloc_line;        /* per column: the alloc line holding it, 0 when free */
    int relinquish_line;        /* tcgen05.relinquish_alloc_permit ran here (0: not yet) */
    uint32_t parked;            /* warps parked in alloc until a dealloc frees columns */
    /* tcgen05.ld destinations not yet covered by tcgen05.wait::ld, per warp:
     * a use is a note (NVIDIA's tutorials rely on the value being there) */
    uint8_t **ld_slot;          /* [warp][slot] */
    int32_t *ld_line;           /* [warp]: the ld's line, 0 when nothing is in flight */
    int ld_noted;               /* the note was given: tracking stops (a kernel without waits would repeat it per load) */
    /* tcgen05.st not yet covered by the writer warp's tcgen05.wait::st: a
     * cell's st line (0: none), writing thread (warp * 32 + lane) and the
     * writer warp's wait count then; the st is unwaited while that count
     * is still st_waits[warp]. An MMA reading such a cell as A is checked. */
    int32_t *st_line;
    uint16_t *st_thread;
    uint32_t *st_gen, *st_waits;
    /* the race clock of each cell's last tcgen05.ld: the reading warp, its
     * own clock then and the line (0: not read since alloc). A write (MMA
     * issue, st) from another warp not ordered after that read by a barrier
     * is a race, as for shared memory (the DESIGN's vector clocks). */
    int16_t *rd_warp;
    uint32_t *rd_clk;
    int32_t *rd_line;
    /* tcgen05.mma.ws B collector buffers b0-b3: what a .collector::bN::fill
     * kept (NULL: empty), the B values [n][k] as read, and their shape */
    double *bcol[4];
    int bcol_n[4], bcol_k[4];
} Tmem;

/* The CTA's TMEM, created on first use; NULL after sim_fail (no TMEM on the
 * target, out of memory). */
Tmem *tmem_get(SimCta *c, SimWarp *w, const SimInsn *in);
static inline size_t tmem_cell(const Tmem *t, int lane, int col) { return (size_t)lane * (size_t)t->cols + (size_t)col; }

/* alloc, dealloc, relinquish_alloc_permit, ld, st, wait::ld/st (sim_tmem.c) */
int tmem_insn(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec);
/* Whether warp w's write of a cell (what: "tcgen05.mma", "tcgen05.st", "tcgen05.cp", "tcgen05.shift") is
 * ordered after the cell's last tcgen05.ld by another warp; else a race error. */
int tmem_write_ordered(SimCta *c, SimWarp *w, int lane, const SimInsn *in, Tmem *t, size_t cell, const char *what);
/* Column col of the CTA's TMEM is allocated (and inside it). */
static inline int tmem_col_ok(const Tmem *t, int col) { return col >= 0 && col < t->cols && t->alloc_line[col]; }

/* ---- shared by the issue files (sim_tcgen05.c, sim_tcgen05_cp.c) ---- */
/* sim_fail for the issuing thread; returns 1 so a caller can return it. */
int tc_fail(SimCta *c, SimWarp *w, int lane, const SimInsn *in, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The async-queue key of a CTA's tcgen05 ops (commit lands what is queued before it). */
static inline uint64_t tc_key(const SimCta *c) { return (uint64_t)(uint32_t)c->rank << 32 | 0x20000u; }
/* The CTAs an op of the instruction's cta_group touches (::2: the pair,
 * lower rank first): their count, or 0 after sim_fail. */
int tc_ctas(SimCta *c, SimWarp *w, int lane, const SimInsn *in, SimCta *cta[2]);
/* The in-flight tcgen05 op (mma, cp, shift) that writes (*writes = 1) or
 * reads TMEM cell (lane, col) of c, first in issue order; NULL when none. */
const SimAsync *tc_op_at(const SimCta *c, int lane, int col, int *writes);
/* For tc_op_at: 1 when a is a cp or shift writing the cell, 2 reading it,
 * 0 when it does not touch it, -1 when a is no cp or shift (sim_tcgen05_cp.c). */
int tc_cp_covers(const SimAsync *a, const SimCta *c, int lane, int col);
/* Issue of tcgen05.cp / tcgen05.shift by one thread (sim_tcgen05_cp.c). */
int tc_issue_cp(SimCta *c, SimWarp *w, const SimInsn *in, int lane);
int tc_issue_shift(SimCta *c, SimWarp *w, const SimInsn *in, int lane);

/* One tcgen05.mma: the pair's CTAs (one for cta_group::1), the decoded
 * descriptors and the operand addresses fetched at landing. */
enum { UMMA_MAX_K = 16 };
typedef struct {
    const SimInsn *in;
    SimCta *cta[2];             /* where D lives (cta_group::2: the pair, lower rank first) */
    int ncta;
    SimInstrDesc id;
    int k;                      /* 16 (f16/bf16) or 8 (tf32) */
    int ebytes;                 /* bytes per A/B element */
    int enable_d;               /* enable_input_d: D += A*B, else D = A*B */
    int scale_d;                /* scale_input_d: D is scaled by 2^-scale_d before accumulating */
    uint32_t d_lane, d_col;     /* the D address */
    int a_tmem;                 /* A from TMEM at a_lane/a_col (else from a_addr) */
    uint32_t a_lane, a_col;
    uint32_t *a_addr[2];        /* per CTA: shared offsets of its A rows [m][k] (M/ncta rows) */
    uint32_t *b_addr[2];        /* per CTA: shared offsets of its B rows [n][k] (N/ncta rows) */
    uint32_t disable[8];        /* disable-output-lane bits, 128 per CTA */
    int ws;                     /* tcgen05.mma.ws: Layouts G (M=32) / E (M=64) for D */
    int bc_action, bc_buf;      /* .ws B collector: BC_* (emit/isa.h) and buffer */
} UmmaOp;

/* The TMEM cell of row r (0 .. M/ncta-1, the CTA's own rows) and column n
 * (0 .. width-1) of D (width N) or of A from TMEM (width: its 32-bit words
 * per row) under the ISA's data path layout for the op's M and cta_group. */
void umma_d_cell(const UmmaOp *op, uint32_t base_lane, uint32_t base_col, int width, int r, int n, int *lane, int *col);
/* Computes D for CTA i of the op when it lands (sim_umma_math.c); 0, or -1
 * after sim_fail (accumulating into poison). */
int umma_compute(const UmmaOp *op, const SimAsync *a, int i);
#endif
