/* tcgen05.cp and tcgen05.shift on the sim (runner/sim/sim_tcgen05_cp.c)
 * against expectations computed here, independently of the sim's code:
 * - cp: 128 threads copy a random image into shared memory, where the host
 *   laid out a K-major source matrix in the canonical layout under test
 *   (no swizzle: 8-row x 16-byte core matrices, LBO between 16-byte columns,
 *   SBO between 8-row groups; 32/64/128B swizzle: rows of the atom width,
 *   SBO = 8 rows, the XOR of address bits 4-6 by bits 7-9 per the ISA's
 *   swizzle table); every TMEM lane is first filled with markers by
 *   tcgen05.st, thread 0 issues the cp (cta_group::1, at column 8) and a
 *   commit, and every warp reads its quarter back with tcgen05.ld after the
 *   mbarrier wait. Each cell must hold its source word or its marker, with
 *   rows placed in lanes per the table below (from the ISA's tcgen05.cp
 *   multicast text and CUTLASS's SM100_UTCCP_* traits), which also pins
 *   sim_tmem_cp_lane at hand-picked cells.
 * - shift: markers everywhere, then thread 0 issues tcgen05.shift.down at
 *   lane 0 column 0 and (pipelined, no wait) a cp.4x256b at the same
 *   address: lanes 1-31 of columns 0-7 take the rows above them, lanes 0,
 *   32, 64, 96 the cp's rows, everything else keeps its marker.
 * usage: test_sim_tcgen05_cp [--seed N] [--dump DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buf.h"
#include "check.h"
#include "device.h"
#include "hostdata.h"
#include "probe.h"
#include "sim_desc.h"

enum { THREADS = 128, IMG = 16384, COLS = 32, AT_COL = 8, MARK = 0xA5000000u };
enum { LY_NONE, LY_SW32, LY_SW64, LY_SW128 };
static const char *ly_name[] = {"none", "SW32", "SW64", "SW128"};
static const char *cp_text[CP_SHAPES] = {"128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13", "64x128b.warpx2::01_23",
                                         "32x128b.warpx4"};
static const char *dump_dir;   /* --dump: where every probe is written (run_all.sh assembles them) */

/* rows, words and the lanes of each row, as the ISA and CUTLASS state them (written out, not taken from the sim) */
static int cp_rows(int s) { return s == CP_4X256B ? 4 : s == CP_32X128B_X4 ? 32 : s >= CP_64X128B_02_13 ? 64 : 128; }
static int cp_words(int s) { return s == CP_128X256B || s == CP_4X256B ? 8 : 4; }
static int cp_lanes(int s, int r, int *lane)
{
    switch (s) {
    case CP_4X256B: lane[0] = 32 * r; return 1;
    case CP_64X128B_02_13: lane[0] = r, lane[1] = r + 64; return 2;   /* warps 0/2 take rows 0-31, warps 1/3 rows 32-63 */
    case CP_64X128B_01_23: lane[0] = r < 32 ? r : r + 32, lane[1] = lane[0] + 32; return 2;   /* warps 0/1, then 2/3 */
    case CP_32X128B_X4: for (int k = 0; k < 4; k++) lane[k] = r + 32 * k; return 4;
    default: lane[0] = r; return 1;
    }
}

/* byte offset of word j of row r in the source tile (tile at a 1024-byte boundary) */
static uint32_t src_off(int ly, int words, int r, int j)
{
    if (ly == LY_NONE) {
        uint32_t sbo = words == 8 ? 256 : 128, lbo = 128;
        return (uint32_t)(r / 8) * sbo + (uint32_t)(r % 8) * 16 + (uint32_t)(j / 4) * lbo + (uint32_t)(j % 4) * 4;
    }
    uint32_t w = 16u << ly, o = (uint32_t)(r / 8) * 8 * w + (uint32_t)(r % 8) * w + (uint32_t)j * 4;
    uint32_t mask = ly == LY_SW128 ? 7 : ly == LY_SW64 ? 3 : 1;
    return o ^ ((o >> 7 & mask) << 4);
}

static uint64_t desc_hi(int ly, int words)
{
    static const int code[] = {0, 6, 4, 2};
    uint32_t sbo = ly == LY_NONE ? (words == 8 ? 256 : 128) : 8u * (16u << ly), lbo = ly == LY_NONE ? 128 : 16;
    return (uint64_t)code[ly] << 61 | 1ull << 46 | (uint64_t)(sbo >> 4) << 32 | (uint64_t)(lbo >> 4) << 16;
}

/* the probe: image -> smem, markers -> TMEM, thread 0's ops, read back; body: thread 0's lines */
static char *probe(const char *body)
{
    Buf b = {0};
    buf_printf(&b, ".version 8.6\n.target sm_100a\n.address_size 64\n.shared .align 4 .b32 tslot;\n.shared .align 8 .b64 mbar;\n"
                   ".extern .shared .align 1024 .b8 smem[];\n.visible .entry k(.param .u64 img, .param .u64 out)\n"
                   ".maxntid 128, 1, 1\n{\n\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<24>;\n\t.reg .b64 %%rd<12>;\n\t.reg .b32 %%v<%d>;\n"
                   "\tmov.u32 %%r0, %%tid.x;\n\tshr.u32 %%r1, %%r0, 5;\n\tmov.u32 %%r9, smem;\n\tld.param.u64 %%rd0, [img];\n"
                   "\tcvta.to.global.u64 %%rd0, %%rd0;\n\tshl.b32 %%r5, %%r0, 4;\n$copy:\n\tsetp.ge.u32 %%p3, %%r5, %d;\n"
                   "\t@%%p3 bra $copied;\n\tcvt.u64.u32 %%rd1, %%r5;\n\tadd.s64 %%rd2, %%rd0, %%rd1;\n"
                   "\tld.global.v4.b32 {%%r10, %%r11, %%r12, %%r13}, [%%rd2];\n\tadd.u32 %%r6, %%r9, %%r5;\n"
                   "\tst.shared.v4.b32 [%%r6], {%%r10, %%r11, %%r12, %%r13};\n\tadd.u32 %%r5, %%r5, %d;\n\tbra $copy;\n"
                   "$copied:\n\tfence.proxy.async.shared::cta;\n\tsetp.eq.u32 %%p0, %%r1, 0;\n\tsetp.eq.u32 %%p1, %%r0, 0;\n"
                   "\t@!%%p0 bra $alloced;\n\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [tslot], %d;\n$alloced:\n"
                   "\t@%%p1 mbarrier.init.shared::cta.b64 [mbar], 1;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n"
                   "\tld.shared.b32 %%r2, [tslot];\n\tshl.b32 %%r3, %%r1, 21;\n\tadd.u32 %%r4, %%r2, %%r3;\n",
               COLS, IMG, 16 * THREADS, COLS);
    for (int j = 0; j < COLS; j++) buf_printf(&b, "\tshl.b32 %%r7, %%r0, 8;\n\tor.b32 %%v%d, %%r7, 0x%08x;\n", j, MARK | (unsigned)j);
    buf_puts(&b, "\ttcgen05.st.sync.aligned.32x32b.x32.b32 [%r4], {");
    for (int j = 0; j < COLS; j++) buf_printf(&b, "%s%%v%d", j ? ", " : "", j);
    buf_puts(&b, "};\n\ttcgen05.wait::st.sync.aligned;\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n"
                 "\ttcgen05.fence::after_thread_sync;\n\t@!%p1 bra $issued;\n"
                 "\tshr.u32 %r5, %r9, 4;\n\tand.b32 %r5, %r5, 0x3FFF;\n\tcvt.u64.u32 %rd6, %r5;\n");
    buf_puts(&b, body);
    buf_puts(&b, "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar];\n$issued:\n"
                 "\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [mbar], 0;\n\t@!%p2 bra $issued;\n"
                 "\ttcgen05.fence::after_thread_sync;\n\ttcgen05.ld.sync.aligned.32x32b.x32.b32 {");
    for (int j = 0; j < COLS; j++) buf_printf(&b, "%s%%v%d", j ? ", " : "", j);
    buf_printf(&b, "}, [%%r4];\n\ttcgen05.wait::ld.sync.aligned;\n\tld.param.u64 %%rd8, [out];\n\tcvta.to.global.u64 %%rd8, %%rd8;\n"
                   "\tmul.wide.u32 %%rd4, %%r0, %d;\n\tadd.s64 %%rd9, %%rd8, %%rd4;\n", 4 * COLS);
    for (int j = 0; j < COLS; j++) buf_printf(&b, "\tst.global.b32 [%%rd9+%d], %%v%d;\n", 4 * j, j);
    buf_printf(&b, "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n"
                   "\t@%%p0 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %%r2, %d;\n\tret;\n}\n", COLS);
    return buf_take(&b);
}

static int run(const char *ptx, const uint8_t *img, uint32_t *out, char *err, size_t errlen)
{
    Device *dev = NULL;
    DevModule *m = NULL;
    DevFunc *f = NULL;
    DevPtr p[2] = {0};
    size_t sz[2] = {IMG, 4u * THREADS * COLS};
    unsigned grid[3] = {1, 1, 1}, block[3] = {THREADS, 1, 1};
    int rc = dev_open(&dev, "sim", 0, err, errlen) || dev_load_ptx(dev, ptx, NULL, &m, err, errlen) ||
             dev_get_func(m, "k", &f, err, errlen) || dev_set_dyn_smem(f, IMG, err, errlen);
    for (int i = 0; i < 2 && !rc; i++) rc = dev_alloc(dev, &p[i], sz[i], err, errlen);
    rc = rc || dev_upload(dev, p[0], img, IMG, err, errlen);
    void *args[2] = {&p[0], &p[1]};
    rc = rc || dev_launch(f, grid, block, IMG, args, err, errlen) || dev_sync(dev, err, errlen) ||
         dev_download(dev, out, p[1], sz[1], err, errlen);
    char ignore[256];
    for (int i = 0; i < 2; i++)
        if (p[i]) dev_free(dev, p[i], ignore, sizeof ignore);
    if (m) dev_unload(m);
    if (dev) dev_close(dev);
    return rc;
}

static uint32_t marker(int lane, int col) { return (uint32_t)lane << 8 | MARK | (uint32_t)col; }

/* Compares out with want; names the first wrong cell. */
static void compare(const char *name, int rc, const char *err, const uint32_t *out, const uint32_t *want)
{
    int bad = 0, first = -1;
    for (int i = 0; !rc && i < THREADS * COLS; i++)
        if (out[i] != want[i]) bad++, first = first < 0 ? i : first;
    check(!rc && !bad, name, "%s %d cells wrong; first lane %d column %d: got 0x%08x want 0x%08x", rc ? err : "", bad,
          first < 0 ? -1 : first / COLS, first < 0 ? -1 : first % COLS, first < 0 ? 0 : out[first], first < 0 ? 0 : want[first]);
}

static void cp_case(int s, int ly, Rng *r)
{
    int rows = cp_rows(s), words = cp_words(s);
    uint8_t *img = calloc(IMG, 1);
    uint32_t *out = malloc(4u * THREADS * COLS), *want = malloc(4u * THREADS * COLS);
    char body[512], name[128], err[2048] = "";
    snprintf(name, sizeof name, "tcgen05.cp.%s from a %s K-major tile at column %d", cp_text[s], ly_name[ly], AT_COL);
    if (!img || !out || !want) {
        check(0, name, "out of memory");
        return free(img), free(out), free(want);
    }
    for (int l = 0; l < THREADS; l++)
        for (int j = 0; j < COLS; j++) want[l * COLS + j] = marker(l, j);
    for (int row = 0; row < rows; row++)
        for (int j = 0; j < words; j++) {
            uint32_t v = (uint32_t)(rng_u64(r) >> 32), off = src_off(ly, words, row, j);
            memcpy(img + off, &v, 4);
            int lanes[4], n = cp_lanes(s, row, lanes);
            for (int k = 0; k < n; k++) want[lanes[k] * COLS + AT_COL + j] = v;
        }
    snprintf(body, sizeof body, "\tor.b64 %%rd6, %%rd6, 0x%016llx;\n\ttcgen05.cp.cta_group::1.%s [%%r2+%d], %%rd6;\n",
             (unsigned long long)desc_hi(ly, words), cp_text[s], AT_COL);
    char *ptx = probe(body);
    if (dump_dir) probe_dump(dump_dir, "cp", ptx);
    int rc = run(ptx, img, out, err, sizeof err);
    compare(name, rc, err, out, want);
    free(ptx), free(img), free(out), free(want);
}

static void shift_case(Rng *r)
{
    uint8_t *img = calloc(IMG, 1);
    uint32_t *out = malloc(4u * THREADS * COLS), *want = malloc(4u * THREADS * COLS);
    char err[2048] = "";
    if (!img || !out || !want) return free(img), free(out), free(want);
    for (int l = 0; l < THREADS; l++)
        for (int j = 0; j < COLS; j++) want[l * COLS + j] = marker(l, j);
    for (int l = 31; l >= 1; l--)
        for (int j = 0; j < 8; j++) want[l * COLS + j] = marker(l - 1, j);   /* rows 0..30 move down one lane */
    for (int row = 0; row < 4; row++)
        for (int j = 0; j < 8; j++) {
            uint32_t v = (uint32_t)(rng_u64(r) >> 32);
            memcpy(img + src_off(LY_NONE, 8, row, j), &v, 4);
            want[32 * row * COLS + j] = v;
        }
    char body[256];
    snprintf(body, sizeof body, "\ttcgen05.shift.cta_group::1.down [%%r2];\n\tor.b64 %%rd6, %%rd6, 0x%016llx;\n"
                                "\ttcgen05.cp.cta_group::1.4x256b [%%r2], %%rd6;\n", (unsigned long long)desc_hi(LY_NONE, 8));
    char *ptx = probe(body);
    if (dump_dir) probe_dump(dump_dir, "cp", ptx);
    int rc = run(ptx, img, out, err, sizeof err);
    compare("tcgen05.shift.down then (pipelined) cp.4x256b at lane 0", rc, err, out, want);
    free(ptx), free(img), free(out), free(want);
}

/* sim_tmem_cp_lane at cells worked out by hand from the ISA's warp-pair text and CUTLASS's ValIDs */
static void pins(void)
{
    static const int pin[][4] = {   /* shape, row, copy, lane */
        {CP_128X256B, 77, 0, 77},      {CP_4X256B, 3, 0, 96},           {CP_64X128B_02_13, 40, 0, 40},
        {CP_64X128B_02_13, 40, 1, 104}, {CP_64X128B_01_23, 40, 0, 72},  {CP_64X128B_01_23, 40, 1, 104},
        {CP_64X128B_01_23, 5, 1, 37},   {CP_32X128B_X4, 5, 3, 101},     {CP_4X256B, 4, 0, -1},
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
        char name[96];
        int got = sim_tmem_cp_lane(pin[i][0], pin[i][1], pin[i][2]);
        snprintf(name, sizeof name, "cp lane map pin: .%s row %d copy %d", cp_text[pin[i][0]], pin[i][1], pin[i][2]);
        check(got == pin[i][3], name, "got lane %d, want %d", got, pin[i][3]);
    }
}

int main(int argc, char **argv)
{
    ProbeArgs args = {0};
    if (probe_args(argc, argv, "seed dump", "test_sim_tcgen05_cp [--seed N] [--dump DIR]", &args)) return 2;
    uint64_t seed = args.seed;
    dump_dir = args.dump;
    Rng r;
    rng_seed(&r, seed);
    printf("tcgen05.cp / shift on the sim, seed %llu\n", (unsigned long long)seed);
    pins();
    for (int s = 0; s < CP_SHAPES; s++)
        for (int ly = 0; ly < 4; ly++)
            cp_case(s, ly, &r);
    shift_case(&r);
    return check_summary();
}
