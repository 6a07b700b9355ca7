/* The hardware cross-check of the machinery the sm_90a and sm_100a families
 * share, on a kernel ptxgen's emitter writes: a 2-CTA cluster where each CTA
 *   1. initialises an mbarrier and makes it visible to the cluster
 *      (fence.mbarrier_init, barrier.cluster) before its peer multicasts into it;
 *   2. TMA-loads A (its 64 rows, 128B swizzle), W (32B swizzle) and half of B
 *      (64B swizzle), multicasting the B half to both CTAs, all completing on
 *      the mbarrier through expect_tx / complete_tx;
 *   3. computes S = A B^T with wgmma SS (both operands from smem descriptors),
 *      converts S to bf16 in registers and computes O = P W^T with wgmma RS
 *      (A from registers, FA3's P@V shape);
 *   4. writes O into the PEER's shared memory (mapa + st.shared::cluster,
 *      DSMEM), fence.proxy.async, barrier.cluster, and TMA-stores the tile it
 *      received (no swizzle) to the peer's rows of the output.
 * The result is compared with a float64 reference; the same PTX and inputs
 * run on the sim (default) or a GPU (--device cuda), and `xcheck` in the
 * README records that both agree.
 * usage: test_xprobe [--device sim|cuda] [--seed N] [--ptx] [--out FILE] [--compare FILE]
 *   --out writes O (128x64 f32, row-major); --compare checks O against such a
 *   file from the other device (same seed: the same inputs) within 1e-3 of
 *   max |O|: the tensor cores and the sim sum S in different orders, and a
 *   last-bit difference in S can round P to a neighbouring bf16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "emit.h"
#include "arch.h"
#include "hostdata.h"
#include "target.h"
#include "probe.h"

enum { M = 128, N = 64, K = 64, ROWS = 64, THREADS = 128 };
/* shared memory: A 64x64 bf16 (SW128: 8 KB), B 64x64 (two 32-column SW64 chunks), W 64x64 (four 16-column
 * SW32 chunks), the O tile the peer sends (64x64 f32), the mbarrier */
enum { SM_A = 0, SM_B = 8192, SM_W = 16384, SM_O = 24576, SM_BAR = 40960, SMEM = 40968, TX = 3 * 8192 };

/* A K-major wgmma smem descriptor: start >> 4, LBO (unused by swizzled K-major layouts) 1,
 * SBO = 8 rows of the swizzle width, layout 1/2/3 = 128B/64B/32B swizzle in bits 62-63. */
static Reg desc(Emit *e, Reg smem, uint32_t off, int swz_bytes)
{
    Reg a = e_reg(e, RC_B32), d = e_reg(e, RC_B64);
    int layout = swz_bytes == 128 ? 1 : swz_bytes == 64 ? 2 : 3;
    uint64_t hi = (uint64_t)(8 * swz_bytes / 16) << 32 | 1ull << 16 | (uint64_t)layout << 62;
    INS(e, ADD_U32, R(a), R(smem), I(off));
    INS(e, SHR_U32, R(a), R(a), I(4));
    INS(e, AND_B32, R(a), R(a), I(0x3FFF));
    INS(e, CVT_U64_U32, R(d), R(a));
    INS(e, OR_B64, R(d), R(d), I((int64_t)hi));
    return d;
}

static char *build_ptx(void)
{
    Emit e0 = {0}, *e = &e0;
    Reg tid = e_reg(e, RC_B32), rank = e_reg(e, RC_B32), smem = e_reg(e, RC_B32), bar = e_reg(e, RC_B32);
    Reg p0 = e_reg(e, RC_PRED), zero = probe_imm(e, 0);
    INS(e, MOV_B32, R(tid), SR("%tid.x"));
    INS(e, MOV_B32, R(rank), SR("%cluster_ctarank"));
    INS(e, MOV_U32_SYM, R(smem), SYM("smem"));
    INS(e, ADD_U32, R(bar), R(smem), I(SM_BAR));
    INS(e, SETP_EQ_U32, R(p0), R(tid), I(0));
    int skip = e_label(e);
    /* 1. the barrier exists, cluster-wide, before any CTA's TMA may signal it */
    INSP(e, p0, 1, BRA, L(skip));
    INS(e, MBAR_INIT, A(bar, 0), I(1));
    INS0(e, FENCE_MBAR_INIT);
    e_place(e, skip);
    INS0(e, CLUSTER_ARRIVE);
    INS0(e, CLUSTER_WAIT);
    /* 2. thread 0 of each CTA: expect every byte, then the loads */
    int loaded = e_label(e);
    INSP(e, p0, 1, BRA, L(loaded));
    Reg state = e_reg(e, RC_B64), mapA = probe_param_addr(e, "tmA"), mapB = probe_param_addr(e, "tmB"), mapW = probe_param_addr(e, "tmW");
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(state), A(bar, 0), I(TX));
    Reg row = e_reg(e, RC_B32), mask = e_reg(e, RC_B16);
    INS(e, SHL_B32, R(row), R(rank), I(6));
    probe_tma_load(e, smem, SM_A, mapA, zero, row, bar, NULL);
    INS(e, MOV_B16, R(mask), I(3));
    Reg brow = e_reg(e, RC_B32), boff = e_reg(e, RC_B32);
    INS(e, SHL_B32, R(brow), R(rank), I(5));          /* this CTA loads B rows 32r..32r+31 for both */
    INS(e, SHL_B32, R(boff), R(rank), I(11));         /* at 32 rows x 64 B into each chunk */
    for (int c = 0; c < 2; c++) {
        Reg a = e_reg(e, RC_B32), x = probe_imm(e, 32 * c), co[2] = {x, brow};
        INS(e, ADD_U32, R(a), R(smem), R(boff));
        INS(e, ADD_U32, R(a), R(a), I(SM_B + 4096 * c));
        INS(e, TMA_LOAD_2D_MC, A(a, 0), TA(mapB, 2, co), A(bar, 0), R(mask));
    }
    for (int c = 0; c < 4; c++) probe_tma_load(e, smem, SM_W + 2048u * (uint32_t)c, mapW, probe_imm(e, 16 * c), zero, bar, NULL);
    e_place(e, loaded);
    int spin = e_label(e);
    Reg ready = e_reg(e, RC_PRED);
    e_place(e, spin);
    INS(e, MBAR_TRY_WAIT_PARITY, R(ready), A(bar, 0), I(0));
    INSP(e, ready, 1, BRA, L(spin));
    /* 3. S = A B^T (SS), P = bf16(S) in registers, O = P W^T (RS) */
    Reg s[32], o[32], pa[16], first = e_reg(e, RC_PRED), more = e_reg(e, RC_PRED);
    for (int i = 0; i < 32; i++) s[i] = e_reg(e, RC_F32), o[i] = e_reg(e, RC_F32);
    INS(e, SETP_NE_U32, R(first), R(zero), I(0));    /* false: the first k step starts from zero */
    INS(e, SETP_EQ_U32, R(more), R(zero), I(0));
    INS0(e, WGMMA_FENCE);
    for (int kk = 0; kk < 4; kk++) {
        Reg da = desc(e, smem, SM_A + 32u * (uint32_t)kk, 128);
        Reg db = desc(e, smem, SM_B + 4096u * (uint32_t)(kk / 2) + 32u * (uint32_t)(kk % 2), 64);
        INS(e, WGMMA_SS_BF16_N64, V(32, s), R(da), R(db), R(kk ? more : first), I(1), I(1), I(0), I(0));
    }
    INS0(e, WGMMA_COMMIT);
    INS(e, WGMMA_WAIT, I(0));
    for (int j = 0; j < 16; j++) {
        pa[j] = e_reg(e, RC_B32);
        INS(e, CVT_BF16X2, R(pa[j]), R(s[2 * j + 1]), R(s[2 * j]));   /* the first source is the high half */
    }
    INS0(e, WGMMA_FENCE);
    for (int kk = 0; kk < 4; kk++) {
        Reg dw = desc(e, smem, SM_W + 2048u * (uint32_t)kk, 32);
        INS(e, WGMMA_RS_BF16_N64, V(32, o), V(4, &pa[4 * kk]), R(dw), R(kk ? more : first), I(1), I(1), I(0));
    }
    INS0(e, WGMMA_COMMIT);
    INS(e, WGMMA_WAIT, I(0));
    /* 4. O to the peer's staging tile: thread t of warp w holds rows 16w + t/4 (+8), columns 8i + 2(t%4) */
    Reg warp = e_reg(e, RC_B32), lane = e_reg(e, RC_B32), r0 = e_reg(e, RC_B32), c0 = e_reg(e, RC_B32);
    Reg peer = e_reg(e, RC_B32), base = e_reg(e, RC_B32), rbase = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(warp), R(tid), I(5));
    INS(e, AND_B32, R(lane), R(tid), I(31));
    INS(e, SHR_U32, R(r0), R(lane), I(2));
    INS(e, MAD_LO_U32, R(r0), R(warp), I(16), R(r0));
    INS(e, AND_B32, R(c0), R(lane), I(3));
    INS(e, SHL_B32, R(c0), R(c0), I(3));               /* 2 columns x 4 bytes */
    INS(e, MAD_LO_U32, R(base), R(r0), I(256), R(c0));
    INS(e, ADD_U32, R(base), R(base), R(smem));
    INS(e, ADD_U32, R(base), R(base), I(SM_O));
    INS(e, XOR_B32, R(peer), R(rank), I(1));
    INS(e, MAPA_SHARED, R(rbase), R(base), R(peer));
    for (int i = 0; i < 8; i++) {
        INS(e, ST_CLUSTER_V2_F32, A(rbase, 32 * i), V2(o[4 * i], o[4 * i + 1]));
        INS(e, ST_CLUSTER_V2_F32, A(rbase, 32 * i + 8 * 256), V2(o[4 * i + 2], o[4 * i + 3]));
    }
    INS0(e, FENCE_PROXY_ASYNC_CLUSTER);
    INS0(e, CLUSTER_ARRIVE);
    INS0(e, CLUSTER_WAIT);
    int done = e_label(e);
    INSP(e, p0, 1, BRA, L(done));
    Reg mapO = probe_param_addr(e, "tmO"), orow = e_reg(e, RC_B32), src = e_reg(e, RC_B32), co[2] = {zero, orow};
    INS(e, SHL_B32, R(orow), R(peer), I(6));
    INS(e, ADD_U32, R(src), R(smem), I(SM_O));
    INS(e, TMA_STORE_2D, TA(mapO, 2, co), A(src, 0));
    INS0(e, BULK_COMMIT);
    INS(e, BULK_WAIT_READ, I(0));
    e_place(e, done);
    INS0(e, RET);

    return probe_module(e, "sm_90a", "ptxgen cross-check probe: TMA (swizzles 128B/64B/32B/none), mbarrier, 2-CTA cluster with multicast, DSMEM, wgmma SS and RS.",
                        "xprobe", "\t.param .align 64 .b8 tmA[128], .param .align 64 .b8 tmB[128],\n\t.param .align 64 .b8 tmW[128], .param .align 64 .b8 tmO[128]", THREADS);
}

int main(int argc, char **argv)
{
    ProbeArgs args = {.device = "sim"};
    if (probe_args(argc, argv, "seed ptx device out compare",
                   "test_xprobe [--device sim|cuda] [--seed N] [--ptx] [--out FILE] [--compare FILE]", &args))
        return 2;
    const char *kind = args.device, *out_path = args.out, *cmp_path = args.compare;
    uint64_t seed = args.seed;
    int show = args.show;
    char *ptx = build_ptx();
    if (show) { fputs(ptx, stdout); free(ptx); return 0; }
    printf("xprobe on %s, seed %llu\n", kind, (unsigned long long)seed);
    Rng rng;
    rng_seed(&rng, seed);
    static uint16_t a[M * K], b[N * K], w[N * K];
    static float o[M * N];
    probe_fill_bf16(&rng, a, M * K);
    probe_fill_bf16(&rng, b, N * K);
    probe_fill_bf16(&rng, w, N * K);
    char err[4096] = "";
    ProbeDev pd;
    DevPtr da, db, dw, dout = 0;
    uint8_t maps[4][DEV_TMAP_BYTES] __attribute__((aligned(64)));
    int rc = probe_dev_open(&pd, kind, 0, err, sizeof err);
    if (rc && strstr(err, "no CUDA driver")) {
        printf("SKIP xprobe: %s\n0 passed, 0 failed\n", err);
        return 0;
    }
    rc = rc || probe_dev_load(&pd, ptx, "xprobe", "xprobe", SMEM, err, sizeof err) ||
         probe_dev_in(&pd, a, sizeof a, &da, err, sizeof err) || probe_dev_in(&pd, b, sizeof b, &db, err, sizeof err) ||
         probe_dev_in(&pd, w, sizeof w, &dw, err, sizeof err) || probe_dev_out(&pd, sizeof o, &dout, err, sizeof err) ||
         probe_map2d(pd.dev, da, 9, 2, M, K, 64, 64, 3, maps[0], err, sizeof err) ||
         probe_map2d(pd.dev, db, 9, 2, N, K, 32, 32, 2, maps[1], err, sizeof err) ||
         probe_map2d(pd.dev, dw, 9, 2, N, K, 16, 64, 1, maps[2], err, sizeof err) ||
         probe_map2d(pd.dev, dout, 7, 4, M, N, 64, 64, 0, maps[3], err, sizeof err);
    if (!rc) {
        void *args[4] = {maps[0], maps[1], maps[2], maps[3]};
        rc = probe_dev_run(&pd, THREADS, SMEM, args, dout, o, sizeof o, err, sizeof err);
    }
    check(!rc, "xprobe runs", "%s", err);
    if (!rc) {
        /* S in float64, P rounded to bf16 as the kernel does (from its fp32 S: a rounding tie may differ,
         * hence the tolerance), O = P W^T */
        ProbeErr pe = {0};
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double ref = 0;
                for (int k = 0; k < N; k++) {
                    double sik = 0;
                    for (int x = 0; x < K; x++) sik += (double)bf16_to_f32(a[i * K + x]) * bf16_to_f32(b[k * K + x]);
                    ref += (double)bf16_to_f32(f32_to_bf16((float)sik)) * bf16_to_f32(w[j * K + k]);
                }
                probe_err_add(&pe, o[i * N + j], ref);
            }
        probe_err_check(&pe, "O", "xprobe matches the float64 reference", 1e-2);
    }
    if (!rc && out_path) probe_write("xprobe output written", out_path, o, M * N);
    if (!rc && cmp_path) {
        static float other[M * N];
        probe_compare("xprobe agrees with the other device's output", cmp_path, o, other, M * N, 1e-3);
    }
    probe_dev_close(&pd);
    free(ptx);
    return check_summary();
}
