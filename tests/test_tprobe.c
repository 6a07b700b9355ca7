/* The tcgen05 probe: an sm_100a kernel ptxgen's emitter writes, in the shape
 * the Blackwell attention kernels take (FA4's S -> P -> O through TMEM), run
 * on the sim against a float64 reference. A CTA pair (cta_group::2):
 *   1. one warp of each CTA allocates 256 TMEM columns for the pair and gives
 *      up its permit; the barriers and the TMEM address are published to the
 *      cluster (tcgen05 fences around barrier.cluster);
 *   2. each CTA TMA-loads its 128 rows of A, its half (64 rows) of B and its
 *      half (32 rows) of W, 128B swizzle, on its own mbarrier;
 *   3. one thread of the even CTA issues S = A B^T as four M=256 N=128 SS MMAs
 *      (A and B read from both CTAs' shared memory) and commits to the
 *      mbarrier of both CTAs (multicast);
 *   4. every warp loads its lane quarter of S (tcgen05.ld 32x32b), rounds it
 *      to bf16 pairs and stores P back to TMEM (tcgen05.st), two per column;
 *   5. the even CTA's thread issues O = P W^T as eight TS MMAs (A = P from
 *      TMEM, B = W from both CTAs), commits again; every warp loads its rows
 *      of O and stores them to global memory; the pair frees TMEM.
 * No Blackwell GPU exists here: the probe is proven by ptxas (sm_100a,
 * sm_103a; run_all.sh) and by the sim, whose tcgen05 unit was written
 * independently of it and is itself checked on NVIDIA's oracle kernels.
 * usage: test_tprobe [--seed N] [--ptx] [--arch sm_100a|sm_103a] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "arch.h"
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "emit.h"
#include "hostdata.h"
#include "probe.h"
#include "target.h"

enum { M = 256, K1 = 64, N1 = 128, N2 = 64, THREADS = 128, ROWS = M / 2 };
/* shared memory per CTA: A 128 x 64 bf16, B 64 x 64, W 32 x 128 as two 64-column slabs, all 128B swizzle */
enum { SM_A = 0, SM_B = 16384, SM_W = 24576, SM_BAR = 32768, SM_MBAR = 32776, SM_SLOT = 32784, SMEM = 32800 };
enum { TX = 16384 + 8192 + 8192 };
/* TMEM columns: S (f32, N1), P (bf16 pairs, N1 / 2), O (f32, N2) */
enum { COL_S = 0, COL_P = 128, COL_O = 192, NCOLS = 256 };
/* instruction descriptors: f32 D (bit 4), bf16 A and B (bits 7, 10), K-major, N >> 3 at 17, M >> 4 at 24 */
#define IDESC(m, n) (0x490u | (uint32_t)((n) >> 3) << 17 | (uint32_t)((m) >> 4) << 24)

static Reg add(Emit *e, Reg a, int64_t v)
{
    Reg r = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(r), R(a), I(v));
    return r;
}

static char *build_ptx(const char *arch)
{
    Emit e0 = {0}, *e = &e0;
    Reg tid = e_reg(e, RC_B32), rank = e_reg(e, RC_B32), smem = e_reg(e, RC_B32), warp = e_reg(e, RC_B32);
    Reg lane = e_reg(e, RC_B32), p0 = e_reg(e, RC_PRED), pw0 = e_reg(e, RC_PRED), leader = e_reg(e, RC_PRED);
    Reg zero = probe_imm(e, 0);
    INS(e, MOV_B32, R(tid), SR("%tid.x"));
    INS(e, MOV_B32, R(rank), SR("%cluster_ctarank"));
    INS(e, MOV_U32_SYM, R(smem), SYM("smem"));
    INS(e, SHR_U32, R(warp), R(tid), I(5));
    INS(e, AND_B32, R(lane), R(tid), I(31));
    INS(e, SETP_EQ_U32, R(p0), R(tid), I(0));
    INS(e, SETP_EQ_U32, R(pw0), R(warp), I(0));
    Reg tr = e_reg(e, RC_B32);
    INS(e, OR_B32, R(tr), R(tid), R(rank));          /* leader: thread 0 of the even CTA */
    INS(e, SETP_EQ_U32, R(leader), R(tr), I(0));
    Reg bar = add(e, smem, SM_BAR), mbar = add(e, smem, SM_MBAR), slot = add(e, smem, SM_SLOT);
    /* 1. barriers, TMEM for the pair */
    int skip = e_label(e), noalloc = e_label(e);
    INSP(e, p0, 1, BRA, L(skip));
    INS(e, MBAR_INIT, A(bar, 0), I(1));
    INS(e, MBAR_INIT, A(mbar, 0), I(1));
    INS0(e, FENCE_MBAR_INIT);
    e_place(e, skip);
    INSP(e, pw0, 1, BRA, L(noalloc));
    INS(e, TC_ALLOC_2, A(slot, 0), I(NCOLS));
    INS0(e, TC_RELINQUISH_2);
    e_place(e, noalloc);
    probe_pair_sync(e);
    Reg taddr = e_reg(e, RC_B32), tq = e_reg(e, RC_B32);
    INS(e, LD_SHARED_B32, R(taddr), A(slot, 0));
    INS(e, SHL_B32, R(tq), R(warp), I(21));          /* this warp's lane quarter: lane 32 * warp, in bits 16+ */
    INS(e, ADD_U32, R(tq), R(tq), R(taddr));
    /* 2. this CTA's tiles */
    int loaded = e_label(e);
    INSP(e, p0, 1, BRA, L(loaded));
    Reg state = e_reg(e, RC_B64), mapA = probe_param_addr(e, "tmA"), mapB = probe_param_addr(e, "tmB");
    Reg mapW = probe_param_addr(e, "tmW"), ra = e_reg(e, RC_B32), rb = e_reg(e, RC_B32), rw = e_reg(e, RC_B32);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(state), A(bar, 0), I(TX));
    INS(e, SHL_B32, R(ra), R(rank), I(7));
    INS(e, SHL_B32, R(rb), R(rank), I(6));
    INS(e, SHL_B32, R(rw), R(rank), I(5));
    probe_tma_load(e, smem, SM_A, mapA, zero, ra, bar, NULL);
    probe_tma_load(e, smem, SM_B, mapB, zero, rb, bar, NULL);
    probe_tma_load(e, smem, SM_W, mapW, zero, rw, bar, NULL);
    probe_tma_load(e, smem, SM_W + 4096, mapW, probe_imm(e, 64), rw, bar, NULL);
    e_place(e, loaded);
    probe_wait_cluster(e, bar, 0);
    probe_pair_sync(e);                                  /* both CTAs' tiles are in shared memory */
    /* 3. S = A B^T */
    int issued1 = e_label(e), issued2 = e_label(e);
    Reg mask = e_reg(e, RC_B16), idesc1 = probe_imm(e, IDESC(M, N1)), idesc2 = probe_imm(e, IDESC(M, N2));
    Reg first = e_reg(e, RC_PRED), more = e_reg(e, RC_PRED);
    INS(e, SETP_NE_U32, R(first), R(zero), I(0));    /* false: D = A B, then D += A B */
    INS(e, SETP_EQ_U32, R(more), R(zero), I(0));
    INS(e, MOV_B16, R(mask), I(3));
    INSP(e, leader, 1, BRA, L(issued1));
    Reg da = probe_sdesc_sw128(e, smem, SM_A), db = probe_sdesc_sw128(e, smem, SM_B);
    for (int k = 0; k < K1 / 16; k++) {
        Reg ak = e_reg(e, RC_B64), bk = e_reg(e, RC_B64);
        INS(e, ADD_U64, R(ak), R(da), I(2 * k));     /* +32 bytes along K inside the swizzle atom */
        INS(e, ADD_U64, R(bk), R(db), I(2 * k));
        INS(e, TC_MMA_2_F16_SS, A(taddr, COL_S), R(ak), R(bk), R(idesc1), R(k ? more : first));
    }
    INS(e, TC_COMMIT_2_MC, A(mbar, 0), R(mask));
    e_place(e, issued1);
    probe_wait_cluster(e, mbar, 0);
    INS0(e, TC_FENCE_AFTER);
    /* 4. P = bf16(S), two per column: column COL_P + k/2 holds S[., k] (low half, k even) and S[., k+1] */
    for (int c = 0; c < N1 / 32; c++) {
        Reg s[32], p[16];
        for (int i = 0; i < 32; i++) s[i] = e_reg(e, RC_F32);
        INS(e, TC_LD_32X32B_X32, V(32, s), A(tq, COL_S + 32 * c));
        INS0(e, TC_WAIT_LD);
        for (int i = 0; i < 16; i++) {
            p[i] = e_reg(e, RC_B32);
            INS(e, CVT_BF16X2, R(p[i]), R(s[2 * i + 1]), R(s[2 * i]));   /* the first source is the high half */
        }
        INS(e, TC_ST_32X32B_X16, A(tq, COL_P + 16 * c), V(16, p));
    }
    INS0(e, TC_WAIT_ST);
    probe_pair_sync(e);                                  /* both CTAs' P is in TMEM */
    /* 5. O = P W^T (A from TMEM), then out */
    INSP(e, leader, 1, BRA, L(issued2));
    Reg dw = probe_sdesc_sw128(e, smem, SM_W);
    for (int k = 0; k < N1 / 16; k++) {
        Reg wk = e_reg(e, RC_B64);
        INS(e, ADD_U64, R(wk), R(dw), I(4096 / 16 * (k / 4) + 2 * (k % 4)));
        INS(e, TC_MMA_2_F16_TS, A(taddr, COL_O), A(taddr, COL_P + 8 * k), R(wk), R(idesc2), R(k ? more : first));
    }
    INS(e, TC_COMMIT_2_MC, A(mbar, 0), R(mask));
    e_place(e, issued2);
    probe_wait_cluster(e, mbar, 1);
    INS0(e, TC_FENCE_AFTER);
    Reg out = e_reg(e, RC_B64), row = e_reg(e, RC_B32), off = e_reg(e, RC_B64);
    INS(e, LD_PARAM_U64, R(out), AS("pO"));
    INS(e, CVTA_GLOBAL, R(out), R(out));
    INS(e, SHL_B32, R(row), R(rank), I(7));
    INS(e, MAD_LO_U32, R(row), R(warp), I(32), R(row));
    INS(e, ADD_U32, R(row), R(row), R(lane));
    INS(e, MUL_WIDE_U32, R(off), R(row), I(N2 * 4));
    INS(e, ADD_U64, R(out), R(out), R(off));
    for (int c = 0; c < N2 / 32; c++) {
        Reg o[32];
        for (int i = 0; i < 32; i++) o[i] = e_reg(e, RC_F32);
        INS(e, TC_LD_32X32B_X32, V(32, o), A(tq, COL_O + 32 * c));
        INS0(e, TC_WAIT_LD);
        for (int i = 0; i < 32; i++) INS(e, ST_GLOBAL_F32, A(out, 4 * (32 * c + i)), R(o[i]));
    }
    probe_pair_sync(e);                                  /* the pair is done with TMEM */
    int done = e_label(e);
    INSP(e, pw0, 1, BRA, L(done));
    INS(e, TC_DEALLOC_2, R(taddr), I(NCOLS));
    e_place(e, done);
    INS0(e, RET);

    return probe_module(e, arch, "ptxgen tcgen05 probe: a CTA pair, TMA 128B swizzle, TMEM S -> P (bf16) -> O, SS and TS MMAs.",
                        "tprobe", "\t.param .align 64 .b8 tmA[128], .param .align 64 .b8 tmB[128],\n\t.param .align 64 .b8 tmW[128], .param .u64 pO", THREADS);
}

int main(int argc, char **argv)
{
    ProbeArgs args = {.arch = "sm_100a"};
    if (probe_args(argc, argv, "seed ptx arch", "test_tprobe [--seed N] [--ptx] [--arch sm_100a|sm_103a]", &args)) return 2;
    uint64_t seed = args.seed;
    int show = args.show;
    const char *arch = args.arch;
    char *ptx = build_ptx(arch);
    if (show) { fputs(ptx, stdout); free(ptx); return 0; }
    printf("tprobe on sim, seed %llu\n", (unsigned long long)seed);
    Rng rng;
    rng_seed(&rng, seed);
    static uint16_t a[M * K1], b[N1 * K1], w[N2 * N1];
    static float o[M * N2];
    probe_fill_bf16(&rng, a, M * K1);
    probe_fill_bf16(&rng, b, N1 * K1);
    probe_fill_bf16(&rng, w, N2 * N1);
    char err[4096] = "";
    ProbeDev pd;
    DevPtr da, db, dw, dout = 0;
    uint8_t maps[3][DEV_TMAP_BYTES] __attribute__((aligned(64)));
    /* strict: ptxgen's own kernels are held to the ISA (notes are errors) */
    int rc = probe_dev_open(&pd, "sim", 1, err, sizeof err) ||
             probe_dev_load(&pd, ptx, "tprobe", "tprobe", SMEM, err, sizeof err) ||
             probe_dev_in(&pd, a, sizeof a, &da, err, sizeof err) || probe_dev_in(&pd, b, sizeof b, &db, err, sizeof err) ||
             probe_dev_in(&pd, w, sizeof w, &dw, err, sizeof err) || probe_dev_out(&pd, sizeof o, &dout, err, sizeof err) ||
             probe_map2d(pd.dev, da, 9, 2, M, K1, 64, ROWS, 3, maps[0], err, sizeof err) ||
             probe_map2d(pd.dev, db, 9, 2, N1, K1, 64, N1 / 2, 3, maps[1], err, sizeof err) ||
             probe_map2d(pd.dev, dw, 9, 2, N2, N1, 64, N2 / 2, 3, maps[2], err, sizeof err);
    if (!rc) {
        void *args[4] = {maps[0], maps[1], maps[2], &dout};
        rc = probe_dev_run(&pd, THREADS, SMEM, args, dout, o, sizeof o, err, sizeof err);
    }
    check(!rc, "tprobe runs", "%s", err);
    if (!rc) {
        /* S in float64, P = bf16 of the fp32 S the kernel holds (a rounding tie may differ: the tolerance),
         * O = P W^T */
        static double p[M * N1];
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N1; j++) {
                double s = 0;
                for (int k = 0; k < K1; k++) s += (double)bf16_to_f32(a[i * K1 + k]) * bf16_to_f32(b[j * K1 + k]);
                p[i * N1 + j] = bf16_to_f32(f32_to_bf16((float)s));
            }
        ProbeErr pe = {0};
        for (int i = 0; i < M; i++)
            for (int n = 0; n < N2; n++) {
                double ref = 0;
                for (int j = 0; j < N1; j++) ref += p[i * N1 + j] * bf16_to_f32(w[n * N1 + j]);
                probe_err_add(&pe, o[i * N2 + n], ref);
            }
        probe_err_check(&pe, "O", "tprobe matches the float64 reference", 1e-2);
    }
    probe_dev_close(&pd);
    free(ptx);
    return check_summary();
}
