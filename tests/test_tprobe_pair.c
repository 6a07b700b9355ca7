/* The pair probe: what the CTA-pair sparse-MLA backward plan
 * (docs/design/mla_bwd_tcgen05.md) relies on and no NVIDIA oracle covers.
 * One cta_group::2 MMA of M = 128 (64 rows of A per CTA) and N = 64 over a
 * CTA pair, written with ptxgen's emitter:
 *   - the N split of B: CTA c supplies B rows [32c, 32c + 32) at the same
 *     shared offset, and each CTA's D holds all N columns of its 64 rows;
 *   - Layout B, each CTA's D read back with tcgen05.ld 32x32b by its four
 *     warps: row m, column n at lane m (n < 32) or lane 64 + m (n >= 32),
 *     column n mod 32 (CUTLASS's TMEM traits for M=128 cta_group::2).
 * Every lane stores what it loaded at its (CTA, lane, column); the host maps
 * that back through Layout B and checks all 128 x 64 outputs against float64.
 * No Blackwell GPU exists here: the probe is proven by ptxas (sm_100a,
 * sm_103a) and the sim, which is checked on NVIDIA's oracle kernels.
 * usage: test_tprobe_pair [--seed N] [--ptx] [--arch sm_100a|sm_103a] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch.h"
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "emit.h"
#include "hostdata.h"
#include "probe.h"
#include "target.h"

enum { M = 128, N = 64, K = 64, THREADS = 128, ROWS = M / 2, HALF = N / 2, COLS = N / 2 };
/* shared memory per CTA: A 64 x 64 bf16, B 32 x 64, 128B swizzle; barriers and the TMEM slot */
enum { SM_A = 0, SM_B = 8192, SM_BAR = 12288, SM_MBAR = 12296, SM_SLOT = 12304, SMEM = 12320, TX = 8192 + 4096 };
/* f32 D, bf16 A and B, K-major; N >> 3 at bit 17, M >> 4 at bit 24 */
#define IDESC (0x490u | (uint32_t)(N >> 3) << 17 | (uint32_t)(M >> 4) << 24)

static char *build_ptx(const char *arch) {
    Emit e0 = {0}, *e = &e0;
    Reg tid = e_reg(e, RC_B32), rank = e_reg(e, RC_B32), smem = e_reg(e, RC_B32), warp = e_reg(e, RC_B32);
    Reg lane = e_reg(e, RC_B32), t0 = e_reg(e, RC_PRED), w0 = e_reg(e, RC_PRED), leader = e_reg(e, RC_PRED);
    Reg zero = probe_imm(e, 0), tr = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(tid), SR("%tid.x"));
    INS(e, MOV_B32, R(rank), SR("%cluster_ctarank"));
    INS(e, MOV_U32_SYM, R(smem), SYM("smem"));
    INS(e, SHR_U32, R(warp), R(tid), I(5));
    INS(e, AND_B32, R(lane), R(tid), I(31));
    INS(e, SETP_EQ_U32, R(t0), R(tid), I(0));
    INS(e, SETP_EQ_U32, R(w0), R(warp), I(0));
    INS(e, OR_B32, R(tr), R(tid), R(rank));
    INS(e, SETP_EQ_U32, R(leader), R(tr), I(0));      /* thread 0 of the even CTA issues for the pair */
    Reg bar = e_reg(e, RC_B32), mbar = e_reg(e, RC_B32), slot = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(bar), R(smem), I(SM_BAR));
    INS(e, ADD_U32, R(mbar), R(smem), I(SM_MBAR));
    INS(e, ADD_U32, R(slot), R(smem), I(SM_SLOT));
    int skip = e_label(e), noalloc = e_label(e), loaded = e_label(e), issued = e_label(e), done = e_label(e);
    INSP(e, t0, 1, BRA, L(skip));
    INS(e, MBAR_INIT, A(bar, 0), I(1));
    INS(e, MBAR_INIT, A(mbar, 0), I(1));
    INS0(e, FENCE_MBAR_INIT);
    e_place(e, skip);
    INSP(e, w0, 1, BRA, L(noalloc));
    INS(e, TC_ALLOC_2, A(slot, 0), I(32));
    INS0(e, TC_RELINQUISH_2);
    e_place(e, noalloc);
    probe_pair_sync(e);
    Reg taddr = e_reg(e, RC_B32), tq = e_reg(e, RC_B32);
    INS(e, LD_SHARED_B32, R(taddr), A(slot, 0));
    INS(e, SHL_B32, R(tq), R(warp), I(21));
    INS(e, ADD_U32, R(tq), R(tq), R(taddr));
    /* this CTA's 64 rows of A and its half of B's 64 rows */
    INSP(e, t0, 1, BRA, L(loaded));
    Reg state = e_reg(e, RC_B64), ra = e_reg(e, RC_B32), rb = e_reg(e, RC_B32);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(state), A(bar, 0), I(TX));
    INS(e, SHL_B32, R(ra), R(rank), I(6));
    INS(e, SHL_B32, R(rb), R(rank), I(5));
    probe_tma_load(e, smem, SM_A, probe_param_addr(e, "tmA"), zero, ra, bar, NULL);
    probe_tma_load(e, smem, SM_B, probe_param_addr(e, "tmB"), zero, rb, bar, NULL);
    e_place(e, loaded);
    probe_wait_cluster(e, bar, 0);
    probe_pair_sync(e);
    INSP(e, leader, 1, BRA, L(issued));
    Reg da = probe_sdesc_sw128(e, smem, SM_A), db = probe_sdesc_sw128(e, smem, SM_B), idesc = probe_imm(e, IDESC);
    Reg mask = e_reg(e, RC_B16), first = e_reg(e, RC_PRED), more = e_reg(e, RC_PRED);
    INS(e, SETP_NE_U32, R(first), R(zero), I(0));
    INS(e, SETP_EQ_U32, R(more), R(zero), I(0));
    INS(e, MOV_B16, R(mask), I(3));
    for (int k = 0; k < K / 16; k++) {
        Reg ak = e_reg(e, RC_B64), bk = e_reg(e, RC_B64);
        INS(e, ADD_U64, R(ak), R(da), I(2 * k));
        INS(e, ADD_U64, R(bk), R(db), I(2 * k));
        INS(e, TC_MMA_2_F16_SS, A(taddr, 0), R(ak), R(bk), R(idesc), R(k ? more : first));
    }
    INS(e, TC_COMMIT_2_MC, A(mbar, 0), R(mask));
    e_place(e, issued);
    probe_wait_cluster(e, mbar, 0);
    INS0(e, TC_FENCE_AFTER);
    /* every lane: its 32 columns, stored at out[rank][lane][column] */
    Reg v[COLS], out = e_reg(e, RC_B64), row = e_reg(e, RC_B32), off = e_reg(e, RC_B64);
    for (int i = 0; i < COLS; i++) v[i] = e_reg(e, RC_F32);
    INS(e, TC_LD_32X32B_X32, V(COLS, v), A(tq, 0));
    INS0(e, TC_WAIT_LD);
    INS(e, LD_PARAM_U64, R(out), AS("pO"));
    INS(e, CVTA_GLOBAL, R(out), R(out));
    INS(e, SHL_B32, R(row), R(rank), I(7));
    INS(e, ADD_U32, R(row), R(row), R(tid));
    INS(e, MUL_WIDE_U32, R(off), R(row), I(COLS * 4));
    INS(e, ADD_U64, R(out), R(out), R(off));
    for (int i = 0; i < COLS; i++) INS(e, ST_GLOBAL_F32, A(out, 4 * i), R(v[i]));
    probe_pair_sync(e);
    INSP(e, w0, 1, BRA, L(done));
    INS(e, TC_DEALLOC_2, R(taddr), I(32));
    e_place(e, done);
    INS0(e, RET);
    return probe_module(e, arch, "ptxgen pair probe: cta_group::2 M=128 N=64, B split over the pair, D in Layout B.",
                        "tprobe_pair", "\t.param .align 64 .b8 tmA[128], .param .align 64 .b8 tmB[128], .param .u64 pO",
                        THREADS);
}

int main(int argc, char **argv) {
    ProbeArgs args = {.arch = "sm_100a"};
    if (probe_args(argc, argv, "seed ptx arch", "test_tprobe_pair [--seed N] [--ptx] [--arch sm_100a|sm_103a]", &args))
        return 2;
    char *ptx = build_ptx(args.arch);
    if (args.show) { fputs(ptx, stdout); free(ptx); return 0; }
    printf("pair probe on sim, seed %llu\n", (unsigned long long)args.seed);
    Rng rng;
    rng_seed(&rng, args.seed);
    static uint16_t a[M * K], b[N * K];
    static float o[2 * THREADS * COLS];
    probe_fill_bf16(&rng, a, M * K);
    probe_fill_bf16(&rng, b, N * K);
    char err[4096] = "";
    ProbeDev pd;
    DevPtr da, db, dout = 0;
    uint8_t maps[2][DEV_TMAP_BYTES] __attribute__((aligned(64)));
    int rc = probe_dev_open(&pd, "sim", 1, err, sizeof err) ||
             probe_dev_load(&pd, ptx, "tprobe_pair", "tprobe_pair", SMEM, err, sizeof err) ||
             probe_dev_in(&pd, a, sizeof a, &da, err, sizeof err) || probe_dev_in(&pd, b, sizeof b, &db, err, sizeof err) ||
             probe_dev_out(&pd, sizeof o, &dout, err, sizeof err) ||
             probe_map2d(pd.dev, da, 9, 2, M, K, 64, ROWS, 3, maps[0], err, sizeof err) ||
             probe_map2d(pd.dev, db, 9, 2, N, K, 64, HALF, 3, maps[1], err, sizeof err);
    if (!rc) {
        void *p[3] = {maps[0], maps[1], &dout};
        rc = probe_dev_run(&pd, THREADS, SMEM, p, dout, o, sizeof o, err, sizeof err);
    }
    check(!rc, "pair probe runs", "%s", err);
    if (!rc) {
        /* Layout B: CTA c, lane L, column j holds row 64c + (L % 64) of D, column j + 32 (L / 64) */
        ProbeErr pe = {0};
        for (int c = 0; c < 2; c++)
            for (int l = 0; l < THREADS; l++)
                for (int j = 0; j < COLS; j++) {
                    int m = 64 * c + l % 64, n = j + COLS * (l / 64);
                    double ref = 0;
                    for (int k = 0; k < K; k++) ref += (double)bf16_to_f32(a[m * K + k]) * bf16_to_f32(b[n * K + k]);
                    probe_err_add(&pe, o[(c * THREADS + l) * COLS + j], ref);
                }
        probe_err_check(&pe, "D", "Layout B and the N-split B of an M=128 cta_group::2 MMA match float64", 1e-4);
    }
    probe_dev_close(&pd);
    free(ptx);
    return check_summary();
}
