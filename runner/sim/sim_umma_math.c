/* What a tcgen05.mma computes when it lands: D = A*B (+ D), A (M x K) from
 * shared memory or TMEM, B (N x K, "column-major" B[n][k]) from shared
 * memory, D (M x N, f32 or f16) in TMEM, after the PTX ISA's tcgen05.mma and
 * "Data Path Layout Organization" sections. Precision as in the wgmma unit
 * (sim_wgmma_math.c): exact products, one K-step summed in double and
 * rounded once to D's type; the ISA leaves order and internal width open.
 * Layouts of D in TMEM (row r of the CTA's own M/ncta rows, column n):
 *   cta_group::1 M=128 (Layout D), cta_group::2 M=256 (Layout A): lane r.
 *   cta_group::1 M=64 (Layout F, half the data path): lanes 0-15 of each
 *     32-lane quarter, row r at lane 32*(r/16) + r%16 (+16 when D's address
 *     names lane 16).
 *   cta_group::2 M=128 (Layout B): 64 rows a CTA, the column halves folded
 *     over the two 64-lane halves: columns n < N/2 at lane r, the rest at
 *     lane 64 + r, column n - N/2. (Not covered by NVIDIA's oracle kernels.)
 * An f16 D element sits in the low half of its 32-bit cell. A from TMEM
 * (the TS form) uses D's lane layout with K packed along the columns: two
 * 16-bit elements, or one tf32, per cell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dtype.h"
#include "sim_tcgen05.h"

void umma_d_cell(const UmmaOp *op, uint32_t base_lane, uint32_t base_col, int width, int r, int n, int *lane, int *col)
{
    int l = r, c = n;
    if (op->ws && op->id.m == 32) l = r + 32 * (n / (width / 4)), c = n % (width / 4);        /* Layout G */
    else if (op->ws && op->id.m == 64) l = r + 64 * (n / (width / 2)), c = n % (width / 2);   /* Layout E */
    else if (op->ws) { /* M = 128: Layout D, row r in lane r */ }
    else if (op->ncta == 1 && op->id.m == 64) l = 32 * (r / 16) + r % 16;
    if (op->ncta == 2 && op->id.m == 128) l = r + 64 * (n / (width / 2)), c = n % (width / 2);
    *lane = (int)base_lane + l, *col = (int)base_col + c;
}

static int isa_type(int umma_type) { return umma_type == UMMA_T_F16 ? T_F16 : umma_type == UMMA_T_BF16 ? T_BF16 : T_TF32; }

/* CTA i's A rows [r][k] as doubles (negated when the descriptor says). */
static void fetch_a(const UmmaOp *op, int i, double *a)
{
    int rows = op->id.m / op->ncta, type = isa_type(op->id.a_type);
    double s = op->id.negate_a ? -1 : 1;
    const Tmem *t = op->cta[i]->tmem;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < op->k; k++) {
            uint32_t bits;
            if (op->a_tmem) {
                int lane, col, per = 4 / op->ebytes;
                umma_d_cell(op, op->a_lane, op->a_col, op->k / per, r, k / per, &lane, &col);
                bits = t->data[tmem_cell(t, lane, col)] >> (16 * (k % per) * (per - 1));
            } else {
                bits = sim_mma_load(op->cta[i]->smem, op->a_addr[i][r * op->k + k], op->ebytes);
            }
            a[r * op->k + k] = s * sim_mma_elem(type, op->ebytes == 2 ? bits & 0xFFFF : bits);
        }
}

/* All N rows of B [n][k] as read (before negation): with cta_group::2 the
 * lower rank holds n < N/2; a .ws MMA that uses a collector buffer reads
 * the copy its fill kept instead. 0, or -1 after sim_fail. */
static int fetch_b(const UmmaOp *op, const SimAsync *a, double *b)
{
    Tmem *t = op->cta[0]->tmem;
    int nk = op->id.n * op->k, act = op->bc_action, buf = op->bc_buf;
    if (act == BC_USE || act == BC_LASTUSE) {
        if (!t->bcol[buf] || t->bcol_n[buf] != op->id.n || t->bcol_k[buf] != op->k) {
            if (t->bcol[buf])
                sim_fail(a->cta, a->warp, a->lane, op->in, "tcgen05.mma.ws .collector::b%d::%s: the buffer holds a %dx%d B, this MMA's "
                         "is %dx%d", buf, act == BC_USE ? "use" : "lastuse", t->bcol_n[buf], t->bcol_k[buf], op->id.n, op->k);
            else
                sim_fail(a->cta, a->warp, a->lane, op->in, "tcgen05.mma.ws .collector::b%d::%s: no .collector::b%d::fill has filled "
                         "the buffer (or a lastuse or discard emptied it)", buf, act == BC_USE ? "use" : "lastuse", buf);
            return -1;
        }
        memcpy(b, t->bcol[buf], sizeof *b * (size_t)nk);
        if (act == BC_LASTUSE) free(t->bcol[buf]), t->bcol[buf] = NULL;
        return 0;
    }
    int per = op->id.n / op->ncta, type = isa_type(op->id.b_type);
    for (int n = 0; n < op->id.n; n++) {
        const SimCta *c = op->cta[n / per];
        const uint32_t *addr = op->b_addr[n / per] + (size_t)(n % per) * (size_t)op->k;
        for (int k = 0; k < op->k; k++) b[n * op->k + k] = sim_mma_elem(type, sim_mma_load(c->smem, addr[k], op->ebytes));
    }
    if (act == BC_FILL || act == BC_DISCARD) free(t->bcol[buf]), t->bcol[buf] = NULL;
    if (act == BC_FILL) {
        if (!(t->bcol[buf] = malloc(sizeof *b * (size_t)nk))) {
            sim_fail(a->cta, a->warp, a->lane, op->in, "out of host memory for a collector buffer");
            return -1;
        }
        memcpy(t->bcol[buf], b, sizeof *b * (size_t)nk);
        t->bcol_n[buf] = op->id.n, t->bcol_k[buf] = op->k;
    }
    return 0;
}

int umma_compute(const UmmaOp *op, const SimAsync *a, int i)
{
    static const int max_rows = TMEM_LANES, max_n = 256;
    double *av = malloc(sizeof(double) * (size_t)(max_rows + max_n) * UMMA_MAX_K), *bv = av + max_rows * UMMA_MAX_K;
    if (!av) {
        sim_fail(a->cta, a->warp, a->lane, op->in, "out of host memory for a tcgen05.mma");
        return -1;
    }
    fetch_a(op, i, av);
    if (fetch_b(op, a, bv)) {   /* per CTA of the op; collectors (.ws) come with cta_group::1 only */
        free(av);
        return -1;
    }
    for (int n = 0, nk = op->id.n * op->k; op->id.negate_b && n < nk; n++) bv[n] = -bv[n];
    Tmem *t = op->cta[i]->tmem;
    int rows = op->id.m / op->ncta, f32 = op->id.d_type == UMMA_T_F32;
    double scale = ldexp(1.0, -op->scale_d);
    for (int r = 0; r < rows; r++)
        for (int n = 0; n < op->id.n; n++) {
            int lane, col;
            umma_d_cell(op, op->d_lane, op->d_col, op->id.n, r, n, &lane, &col);
            if (op->disable[4 * i + lane / 32] >> (lane % 32) & 1) continue;   /* disable-output-lane */
            size_t cell = tmem_cell(t, lane, col);
            double acc = 0;
            if (op->enable_d) {
                if (!t->written[cell]) {
                    sim_fail(a->cta, a->warp, a->lane, op->in,
                             "tcgen05.mma accumulates (enable_input_d true) into TMEM lane %d column %d of CTA rank %d that "
                             "nothing has written: the first MMA of a chain passes false", lane, col, op->cta[i]->rank);
                    free(av);
                    return -1;
                }
                acc = scale * (f32 ? bits_f32(t->data[cell]) : fp16_to_f32((uint16_t)t->data[cell]));
            }
            const double *ar = &av[r * op->k], *br = &bv[n * op->k];
            for (int k = 0; k < op->k; k++) acc += ar[k] * br[k];
            t->data[cell] = f32 ? f32_bits((float)acc) : f32_to_fp16((float)acc);
            t->written[cell] = 1;
        }
    free(av);
    return 0;
}
