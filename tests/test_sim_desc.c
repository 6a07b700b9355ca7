/* The descriptor decoders and fragment maps of runner/sim/sim_desc.c against
 * words NVIDIA's own kernels build (shared/oracle: t01/t02 sm_100a, h01 sm_90a)
 * and against worked examples: where a TMA copy with the matching swizzle puts
 * an element (written here from the box's rows and 16-byte chunks, not from
 * the descriptor's LBO/SBO), the fragment figures of the PTX ISA, and a few
 * addresses XORed by hand. */
#include <string.h>
#include "check.h"
#include "sim_desc.h"

static char err[256];

/* ---- smem descriptor decoding ---- */

static int sdesc_is(const SimSmemDesc *d, uint32_t start, uint32_t lbo, uint32_t sbo, int version, SimSmemLayout l)
{
    return d->start == start && d->lbo == lbo && d->sbo == sbo && d->version == version && d->layout == l &&
           d->base_offset == 0 && d->lbo_mode == 0;
}

static void umma_sdesc_tests(void)
{
    SimSmemDesc d;
    /* t01: addr>>4 | 0x4000404000010000 (SW128 K-major, LBO 16, SBO 1024), smem at 0x400 */
    int rc = sim_umma_sdesc_decode(0x4000404000010040ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0x400, 16, 1024, 1, SL_SW128), "umma sdesc t01 SW128 K-major word",
          "rc %d start 0x%x lbo %u sbo %u ver %d layout %d", rc, d.start, d.lbo, d.sbo, d.version, (int)d.layout);
    /* t01's K-step: +2 in the low word is +32 bytes */
    rc = sim_umma_sdesc_decode(0x4000404000010042ull, &d, err, sizeof err);
    check(rc == 0 && d.start == 0x420, "umma sdesc K-step +2 -> start +32 B", "start 0x%x", d.start);
    rc = sim_umma_sdesc_decode(0x8000402000010000ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0, 16, 512, 1, SL_SW64), "umma sdesc t02_sw64 word", "rc %d layout %d sbo %u", rc,
          (int)d.layout, d.sbo);
    rc = sim_umma_sdesc_decode(0xC000401000010000ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0, 16, 256, 1, SL_SW32), "umma sdesc t02_sw32 word", "rc %d layout %d sbo %u", rc,
          (int)d.layout, d.sbo);
    rc = sim_umma_sdesc_decode(0x0000400800800000ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0, 2048, 128, 1, SL_INTERLEAVE), "umma sdesc t02_inter word (LBO 2048, SBO 128)",
          "rc %d layout %d lbo %u sbo %u", rc, (int)d.layout, d.lbo, d.sbo);
    rc = sim_umma_sdesc_decode(0x4000408000400000ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0, 1024, 2048, 1, SL_SW128), "umma sdesc t02_mn_sw128 A word (LBO 1024, SBO 2048)",
          "rc %d lbo %u sbo %u", rc, d.lbo, d.sbo);
    rc = sim_umma_sdesc_decode(0x2000400000000000ull, &d, err, sizeof err);
    check(rc == 0 && d.layout == SL_SW128_BASE32B, "umma sdesc layout 1 = 128B with 32-byte atoms", "rc %d layout %d",
          rc, (int)d.layout);
    /* base offset 5 (bits 49-51), LBO mode (bit 52), start field at its top 0x3FFF */
    rc = sim_umma_sdesc_decode(0x401A404000013FFFull, &d, err, sizeof err);
    check(rc == 0 && d.base_offset == 5 && d.lbo_mode == 1 && d.start == 0x3FFF0, "umma sdesc base offset, LBO mode, start",
          "rc %d base %d mode %d start 0x%x", rc, d.base_offset, d.lbo_mode, d.start);
    /* errors: version 0 (a Hopper word), version 2, reserved layouts 3, 5, 7 */
    static const struct { uint64_t w; const char *phrase, *name; } bad[] = {
        {0x4000004000010000ull, "version", "umma sdesc without bit 46 (a wgmma word) refused"},
        {0x4000804000010000ull, "version", "umma sdesc version 2 refused"},
        {0x6000404000010000ull, "layout type", "umma sdesc layout 3 refused"},
        {0xA000404000010000ull, "layout type", "umma sdesc layout 5 refused"},
        {0xE000404000010000ull, "layout type", "umma sdesc layout 7 refused"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        rc = sim_umma_sdesc_decode(bad[i].w, &d, err, sizeof err);
        check(rc == -1 && strstr(err, bad[i].phrase), bad[i].name, "rc %d err '%s'", rc, err);
    }
}

static void wgmma_sdesc_tests(void)
{
    SimSmemDesc d;
    /* h01 TN (K-major): addr>>4 | 0x4000004000010000: 128B swizzle, LBO 16, SBO 1024 */
    int rc = sim_wgmma_sdesc_decode(0x4000004000010c00ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0xc000, 16, 1024, 0, SL_SW128), "wgmma sdesc h01 TN word",
          "rc %d start 0x%x lbo %u sbo %u layout %d", rc, d.start, d.lbo, d.sbo, (int)d.layout);
    /* h01 NT (MN-major): addr>>4 | 0x4000008000000000: LBO 0 (one 64-wide atom), SBO 2048 */
    rc = sim_wgmma_sdesc_decode(0x4000008000000400ull, &d, err, sizeof err);
    check(rc == 0 && sdesc_is(&d, 0x4000, 0, 2048, 0, SL_SW128), "wgmma sdesc h01 NT word", "rc %d lbo %u sbo %u", rc,
          d.lbo, d.sbo);
    rc = sim_wgmma_sdesc_decode(0x8000002000010000ull, &d, err, sizeof err);
    check(rc == 0 && d.layout == SL_SW64, "wgmma sdesc layout 2 = 64B", "layout %d", (int)d.layout);
    rc = sim_wgmma_sdesc_decode(0xC000001000010000ull, &d, err, sizeof err);
    check(rc == 0 && d.layout == SL_SW32, "wgmma sdesc layout 3 = 32B", "layout %d", (int)d.layout);
    rc = sim_wgmma_sdesc_decode(0x0000000800800000ull, &d, err, sizeof err);
    check(rc == 0 && d.layout == SL_INTERLEAVE && d.lbo == 2048 && d.sbo == 128, "wgmma sdesc layout 0 = interleave",
          "layout %d", (int)d.layout);
    rc = sim_wgmma_sdesc_decode(0x0006000000000000ull, &d, err, sizeof err);
    check(rc == 0 && d.base_offset == 3, "wgmma sdesc base offset bits 49-51", "base %d", d.base_offset);
}

/* ---- swizzles and checks ---- */

static void swizzle_tests(void)
{
    /* 0x3A0: bits 7-9 = 7, bits 4-6 = 2 -> 2^7 = 5 -> 0x3D0 */
    check(sim_sdesc_swizzle(SL_SW128, 0x3A0) == 0x3D0, "swizzle 128B 0x3A0 -> 0x3D0", "got 0x%x",
          sim_sdesc_swizzle(SL_SW128, 0x3A0));
    /* 0x1234: bits 7-9 = 4, bits 4-6 = 3 -> 7: 0x1274 */
    check(sim_sdesc_swizzle(SL_SW128, 0x1234) == 0x1274, "swizzle 128B 0x1234 -> 0x1274", "got 0x%x",
          sim_sdesc_swizzle(SL_SW128, 0x1234));
    /* 64B on 0x1A0: bits 7-8 = 3, bits 4-5 = 2 -> 1: 0x190 */
    check(sim_sdesc_swizzle(SL_SW64, 0x1A0) == 0x190, "swizzle 64B 0x1A0 -> 0x190", "got 0x%x",
          sim_sdesc_swizzle(SL_SW64, 0x1A0));
    /* 64B leaves bit 6 alone: 0x1E0 (bits 4-5 = 2, bit 6 set) -> 0x1D0 */
    check(sim_sdesc_swizzle(SL_SW64, 0x1E0) == 0x1D0, "swizzle 64B keeps bit 6", "got 0x%x",
          sim_sdesc_swizzle(SL_SW64, 0x1E0));
    /* 32B on 0x0A0: bit 7 = 1, bit 4 = 0 -> 0x0B0; 0x0B8 -> 0x0A8 */
    check(sim_sdesc_swizzle(SL_SW32, 0x0A0) == 0x0B0 && sim_sdesc_swizzle(SL_SW32, 0x0B8) == 0x0A8,
          "swizzle 32B flips bit 4 on odd 128-byte rows", "got 0x%x 0x%x", sim_sdesc_swizzle(SL_SW32, 0x0A0),
          sim_sdesc_swizzle(SL_SW32, 0x0B8));
    /* 32-byte atoms: 0x184: bits 7-8 = 3, bits 5-6 = 0 -> 3: 0x1E4 */
    check(sim_sdesc_swizzle(SL_SW128_BASE32B, 0x184) == 0x1E4, "swizzle 128B/32B atoms 0x184 -> 0x1E4", "got 0x%x",
          sim_sdesc_swizzle(SL_SW128_BASE32B, 0x184));
    check(sim_sdesc_swizzle(SL_INTERLEAVE, 0x3A0) == 0x3A0, "interleave does not swizzle", "got 0x%x",
          sim_sdesc_swizzle(SL_INTERLEAVE, 0x3A0));
    check(sim_sdesc_atom_bytes(SL_INTERLEAVE) == 16 && sim_sdesc_atom_bytes(SL_SW32) == 32 &&
              sim_sdesc_atom_bytes(SL_SW64) == 64 && sim_sdesc_atom_bytes(SL_SW128) == 128 &&
              sim_sdesc_atom_bytes(SL_SW128_BASE32B) == 128 && sim_sdesc_atom_bytes((SimSmemLayout)9) == -1,
          "atom bytes per layout", "mismatch");
}

static void check_tests(void)
{
    SimSmemDesc d = {.start = 0x4020, .sbo = 1024, .layout = SL_SW128};
    check(sim_sdesc_check(&d, err, sizeof err) == 0, "check: SW128 start +32 B (K-step) is fine", "%s", err);
    d.start = 0x4080;
    check(sim_sdesc_check(&d, err, sizeof err) == -1 && strstr(err, "base offset"),
          "check: SW128 start one row into the pattern with base offset 0 refused", "err '%s'", err);
    d.base_offset = 1;
    check(sim_sdesc_check(&d, err, sizeof err) == 0, "check: ... accepted with base offset 1", "%s", err);
    d = (SimSmemDesc){.start = 0x4200, .layout = SL_SW64, .base_offset = 0};
    check(sim_sdesc_check(&d, err, sizeof err) == 0, "check: SW64 start 512-aligned", "%s", err);
    d.start = 0x4100;
    check(sim_sdesc_check(&d, err, sizeof err) == -1, "check: SW64 start 256 B into its 512 B pattern refused", "ok");
    d = (SimSmemDesc){.start = 0x4080, .layout = SL_INTERLEAVE};
    check(sim_sdesc_check(&d, err, sizeof err) == 0, "check: interleave at any 16-byte start", "%s", err);
    d.lbo_mode = 1;
    check(sim_sdesc_check(&d, err, sizeof err) == -1 && strstr(err, "LBO mode"), "check: LBO mode 1 refused", "'%s'", err);
    d = (SimSmemDesc){.layout = (SimSmemLayout)7};
    check(sim_sdesc_check(&d, err, sizeof err) == -1, "check: unknown layout refused", "ok");

    SimSmemDesc b32 = {.layout = SL_SW128_BASE32B}, sw = {.layout = SL_SW128};
    check(sim_sdesc_check_operand(&b32, 0, 4, err, sizeof err) == 0, "operand: MN-major tf32 with 32-byte atoms", "%s", err);
    check(sim_sdesc_check_operand(&b32, 1, 4, err, sizeof err) == -1, "operand: K-major with 32-byte atoms refused", "ok");
    check(sim_sdesc_check_operand(&b32, 0, 2, err, sizeof err) == -1, "operand: MN-major f16 with 32-byte atoms refused", "ok");
    check(sim_sdesc_check_operand(&sw, 0, 4, err, sizeof err) == -1, "operand: MN-major tf32 with plain 128B refused", "ok");
    check(sim_sdesc_check_operand(&sw, 0, 2, err, sizeof err) == 0 && sim_sdesc_check_operand(&sw, 1, 4, err, sizeof err) == 0,
          "operand: MN-major f16 and K-major tf32 with 128B", "%s", err);
    /* fp8 (wgmma .e4m3/.e5m2): 1-byte elements, K-major only */
    check(sim_sdesc_check_operand(&sw, 1, 1, err, sizeof err) == 0, "operand: K-major 1-byte elements (fp8)", "%s", err);
    check(sim_sdesc_check_operand(&sw, 0, 1, err, sizeof err) == -1, "operand: MN-major 1-byte elements refused", "ok");
    check(sim_sdesc_check_operand(&sw, 1, 3, err, sizeof err) == -1, "operand: 3-byte elements refused", "ok");
}

/* ---- element addresses against where TMA puts the bytes ---- */

/* A 2-D TMA box written at a pattern-aligned base: row r of the box is
 * row_bytes long at base + r*row_bytes; its 16-byte chunk j lands in chunk
 * j ^ (pattern row of r), the pattern row being the 128-byte line index
 * of the row's offset, modulo the rows one pattern spans. */
static uint32_t tma_box_addr(uint32_t base, int row_bytes, int pattern_rows, int r, int byte)
{
    uint32_t row_off = (uint32_t)(r * row_bytes);
    int line = (int)(row_off / 128) % pattern_rows;
    int chunk = byte / 16;
    int swz_bits = pattern_rows - 1;   /* 1, 3, 7: chunk bits the line flips */
    return base + row_off + (uint32_t)(((chunk ^ line) & swz_bits) | (chunk & ~swz_bits)) * 16 + (uint32_t)(byte % 16);
}

/* K-major, one MMA's K at a time: the descriptor starts at base + 32*j for
 * K-step j and must read element (r, c) of the box at c = j*kstep + k. */
static int kmajor_vs_tma(SimSmemLayout l, int sbo, int row_bytes, int pattern_rows, int eb, int rows, char *why)
{
    uint32_t base = 0x8000;
    int kstep = 32 / eb, steps = row_bytes / 32;
    for (int j = 0; j < steps; j++) {
        SimSmemDesc d = {.start = base + 32u * (uint32_t)j, .sbo = (uint32_t)sbo, .lbo = 16, .layout = l};
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < kstep; k++) {
                int c = j * kstep + k;
                uint32_t want = tma_box_addr(base, row_bytes, pattern_rows, r, c * eb);
                uint32_t got = sim_sdesc_elem_addr(&d, 1, eb, r, k);
                if (got != want) {
                    sprintf(why, "step %d row %d k %d: got 0x%x, TMA put it at 0x%x", j, r, k, got, want);
                    return 0;
                }
            }
    }
    return 1;
}

static void kmajor_tests(void)
{
    char why[160] = "";
    check(kmajor_vs_tma(SL_SW128, 1024, 128, 8, 2, 128, why), "elem K-major SW128 f16 = TMA 64-col box, 4 K-steps", "%s",
          why);
    check(kmajor_vs_tma(SL_SW64, 512, 64, 4, 2, 128, why), "elem K-major SW64 f16 = TMA 32-col box, 2 K-steps", "%s", why);
    check(kmajor_vs_tma(SL_SW32, 256, 32, 2, 2, 128, why), "elem K-major SW32 f16 = TMA 16-col box", "%s", why);
    check(kmajor_vs_tma(SL_SW128, 1024, 128, 8, 4, 128, why), "elem K-major SW128 tf32 = TMA 32-col box, 4 K-steps", "%s",
          why);
    check(kmajor_vs_tma(SL_SW64, 512, 64, 4, 4, 64, why), "elem K-major SW64 tf32 = TMA 16-col box", "%s", why);

    /* the t01 word decoded and used directly: row 9, k 5 at smem 0x400:
     * row offset 9*128 = 1152, chunk 0 ^ (9%8=1) = 1, byte 10 -> 0x400+1152+16+10 */
    SimSmemDesc d;
    sim_umma_sdesc_decode(0x4000404000010040ull, &d, err, sizeof err);
    uint32_t a = sim_sdesc_elem_addr(&d, 1, 2, 9, 5);
    check(a == 0x400 + 1152 + 16 + 10, "elem t01 descriptor row 9 k 5", "got 0x%x", a);

    /* t02_inter: 16-byte-wide boxes of 128 rows, one per 8 K columns, 2048 B
     * apart (LBO), rows 16 B apart, 8-row groups 128 B apart (SBO) */
    uint32_t base = 0x2000;
    sim_umma_sdesc_decode(0x0000400800800000ull | (base >> 4), &d, err, sizeof err);
    int ok = 1;
    for (int r = 0; r < 128 && ok; r++)
        for (int k = 0; k < 16 && ok; k++) {
            uint32_t want = base + (uint32_t)(k / 8) * 2048 + (uint32_t)r * 16 + (uint32_t)(k % 8) * 2;
            if (sim_sdesc_elem_addr(&d, 1, 2, r, k) != want) ok = 0, sprintf(why, "row %d k %d", r, k);
        }
    check(ok, "elem K-major interleave = t02_inter's TMA boxes", "%s", why);

    /* out of range: K past a swizzled row, bad element size, negative index */
    SimSmemDesc s = {.start = 0x8000, .sbo = 1024, .layout = SL_SW32};
    check(sim_sdesc_elem_addr(&s, 1, 2, 0, 16) == SIM_SDESC_BAD_ADDR, "elem K-major SW32 k=16 (past the row) is bad",
          "got 0x%x", sim_sdesc_elem_addr(&s, 1, 2, 0, 16));
    check(sim_sdesc_elem_addr(&s, 1, 3, 0, 0) == SIM_SDESC_BAD_ADDR && sim_sdesc_elem_addr(&s, 1, 2, -1, 0) == SIM_SDESC_BAD_ADDR,
          "elem bad element size / negative row", "not bad");
    SimSmemDesc b32 = {.layout = SL_SW128_BASE32B};
    check(sim_sdesc_elem_addr(&b32, 1, 4, 0, 0) == SIM_SDESC_BAD_ADDR, "elem K-major with 32-byte atoms is bad", "not bad");
}

/* MN-major boxes: TMA box of box_mn elements (one swizzle row) x 8 K rows;
 * box (i along MN, g along K) sits at base + g*kgroup_bytes + i*box_bytes. */
static int mnmajor_vs_tma(SimSmemLayout l, uint64_t word, int row_bytes, int pattern_rows, int mn_total, char *why)
{
    uint32_t base = 0x10000;
    SimSmemDesc d;
    if (sim_umma_sdesc_decode(word | (base >> 4), &d, err, sizeof err)) {
        sprintf(why, "decode: %s", err);
        return 0;
    }
    if (d.layout != l) {
        sprintf(why, "layout %d", (int)d.layout);
        return 0;
    }
    int box_mn = row_bytes / 2, box_bytes = row_bytes * 8, kgroup = mn_total / box_mn * box_bytes;
    for (int j = 0; j < 4; j++) {   /* K-steps of 16: two K groups each */
        SimSmemDesc s = d;
        s.start = base + (uint32_t)(j * 2 * kgroup);
        for (int m = 0; m < mn_total; m++)
            for (int k = 0; k < 16; k++) {
                int kk = j * 16 + k;
                uint32_t box = base + (uint32_t)((kk / 8) * kgroup + (m / box_mn) * box_bytes);
                uint32_t want = tma_box_addr(box, row_bytes, pattern_rows, kk % 8, (m % box_mn) * 2);
                uint32_t got = sim_sdesc_elem_addr(&s, 0, 2, m, k);
                if (got != want) {
                    sprintf(why, "step %d m %d k %d: got 0x%x, TMA put it at 0x%x", j, m, k, got, want);
                    return 0;
                }
            }
    }
    return 1;
}

static void mnmajor_tests(void)
{
    char why[160] = "";
    /* t02_mn_sw128: A M-major, boxes of 64 M x 8 K, LBO 1024, SBO 2048 (M = 128);
     * B N-major with N = 256: SBO 4096 */
    check(mnmajor_vs_tma(SL_SW128, 0x4000408000400000ull, 128, 8, 128, why), "elem MN-major SW128 = t02_mn_sw128 A boxes",
          "%s", why);
    check(mnmajor_vs_tma(SL_SW128, 0x4000410000400000ull, 128, 8, 256, why), "elem MN-major SW128 = t02_mn_sw128 B boxes",
          "%s", why);
    /* t02_mn_sw64: boxes of 32 M x 8 K (512 B), LBO 512, SBO 2048 (A) / 4096 (B) */
    check(mnmajor_vs_tma(SL_SW64, 0x8000408000200000ull, 64, 4, 128, why), "elem MN-major SW64 = t02_mn_sw64 A boxes", "%s",
          why);
    check(mnmajor_vs_tma(SL_SW64, 0x8000410000200000ull, 64, 4, 256, why), "elem MN-major SW64 = t02_mn_sw64 B boxes", "%s",
          why);
    /* MN-major 32B (16 f16 per row, 256-byte atoms), LBO 256, SBO 2048 for M = 128 */
    check(mnmajor_vs_tma(SL_SW32, 0xC000408000100000ull, 32, 2, 128, why), "elem MN-major SW32 boxes of 16 x 8", "%s", why);

    /* h01 NT (wgmma, MN-major SW128, SBO 2048): element (m 70, k 11) with the
     * tile ((64,2),(8,8)):((1,512),(64,1024)) in elements: m 70 -> atom 1
     * (+1024 B), m%64 = 6 -> byte 12; k 11 -> group 1 (+2048 B), row 3 (+384 B);
     * chunk 0 ^ 3 = 3 -> 48 + 12. LBO is not used by one m64 MMA, so read m 6
     * of the atom that starts 1024 B later. */
    SimSmemDesc d;
    sim_wgmma_sdesc_decode(0x4000008000000400ull, &d, err, sizeof err);
    d.start += 1024;
    uint32_t a = sim_sdesc_elem_addr(&d, 0, 2, 6, 11);
    check(a == 0x4000 + 1024 + 2048 + 384 + 48 + 12, "elem h01 NT MN-major m 70 k 11", "got 0x%x", a);

    /* MN-major interleave: m 19, k 10, SBO 256, LBO 4096, start 0x1000:
     * MN chunk 2 (+512), m%8 = 3 (+6), K row 2 (+32), K group 1 (+4096) */
    SimSmemDesc in = {.start = 0x1000, .lbo = 4096, .sbo = 256, .layout = SL_INTERLEAVE};
    a = sim_sdesc_elem_addr(&in, 0, 2, 19, 10);
    check(a == 0x1000 + 512 + 6 + 32 + 4096, "elem MN-major interleave m 19 k 10", "got 0x%x", a);

    /* MN-major tf32, 128B with 32-byte atoms: rows of 128 B = 32 tf32, 4-deep K
     * groups at SBO, atoms along MN at LBO. m 45, k 6, start 0x2000, LBO 512,
     * SBO 1024: atom 1 (+512), m%32 = 13 -> byte 52 = 32-byte chunk 1 + 20;
     * K group 1 (+1024), row 2 (+256); chunk 1 ^ 2 = 3 -> 96 + 20 */
    SimSmemDesc b32 = {.start = 0x2000, .lbo = 512, .sbo = 1024, .layout = SL_SW128_BASE32B};
    a = sim_sdesc_elem_addr(&b32, 0, 4, 45, 6);
    check(a == 0x2000 + 512 + 1024 + 256 + 96 + 20, "elem MN-major tf32 32-byte atoms m 45 k 6", "got 0x%x", a);
}

/* ---- instruction descriptor ---- */

static void idesc_tests(void)
{
    SimInstrDesc d;
    int rc = sim_umma_idesc_decode(0x08400010, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.m == 128 && d.n == 256 && d.a_type == UMMA_T_F16 && d.b_type == UMMA_T_F16 &&
              d.d_type == UMMA_T_F32 && !d.a_mn_major && !d.b_mn_major && !d.negate_a && !d.sparse,
          "idesc t01 0x08400010: f16 -> f32, K-major, 128x256", "rc %d m %d n %d '%s'", rc, d.m, d.n, err);
    rc = sim_umma_idesc_decode(0x10400010, UMMA_KIND_F16, 2, 0, &d, err, sizeof err);
    check(rc == 0 && d.m == 256 && d.n == 256, "idesc t04 0x10400010 cta_group::2 M=256", "rc %d m %d '%s'", rc, d.m, err);
    rc = sim_umma_idesc_decode(0x08418010, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.a_mn_major && d.b_mn_major, "idesc t02_mn 0x08418010: A and B MN-major", "rc %d", rc);
    rc = sim_umma_idesc_decode(0x08410010, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && !d.a_mn_major && d.b_mn_major, "idesc B N-major only (bit 16)", "rc %d", rc);
    rc = sim_umma_idesc_decode(0x08100490, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.a_type == UMMA_T_BF16 && d.b_type == UMMA_T_BF16 && d.n == 64, "idesc bf16 M128 N64 0x08100490",
          "rc %d", rc);
    rc = sim_umma_idesc_decode(0x08200000, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.d_type == UMMA_T_F16, "idesc f16 accumulator (D format 0)", "rc %d '%s'", rc, err);
    rc = sim_umma_idesc_decode(0x08106490, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.negate_a && d.negate_b, "idesc negate bits 13/14", "rc %d", rc);
    rc = sim_umma_idesc_decode(0x48400014, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.max_shift == 1 && d.sparse, "idesc max shift (30-31) and sparsity (2)", "rc %d", rc);
    rc = sim_umma_idesc_decode(0x04020010, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.m == 64 && d.n == 8, "idesc M=64 N=8 cta_group::1", "rc %d '%s'", rc, err);
    rc = sim_umma_idesc_decode(0x08040010, UMMA_KIND_F16, 2, 0, &d, err, sizeof err);
    check(rc == 0 && d.m == 128 && d.n == 16, "idesc M=128 N=16 cta_group::2", "rc %d '%s'", rc, err);
    /* tf32: A/B format 2, D f32, M128 N128 */
    rc = sim_umma_idesc_decode(0x08200910, UMMA_KIND_TF32, 1, 0, &d, err, sizeof err);
    check(rc == 0 && d.a_type == UMMA_T_TF32 && d.b_type == UMMA_T_TF32 && d.d_type == UMMA_T_F32 && d.n == 128,
          "idesc kind::tf32 0x08200910", "rc %d '%s'", rc, err);

    /* .ws: M 32/64/128 with N 64/128/256 (CUTLASS's tmem_frg_ws), cta_group::1 only */
    rc = sim_umma_idesc_decode(0x02400490, UMMA_KIND_F16, 1, 1, &d, err, sizeof err);
    check(rc == 0 && d.m == 32 && d.n == 256, "idesc .ws M=32 N=256 0x02400490", "rc %d '%s' M %d N %d", rc, err, d.m, d.n);
    rc = sim_umma_idesc_decode(0x04100490, UMMA_KIND_F16, 1, 1, &d, err, sizeof err);
    check(rc == 0 && d.m == 64 && d.n == 64, "idesc .ws M=64 N=64 0x04100490", "rc %d '%s'", rc, err);
    rc = sim_umma_idesc_decode(0x02400490, UMMA_KIND_F16, 1, 0, &d, err, sizeof err);
    check(rc == -1 && strstr(err, "M = 32"), "idesc M=32 refused without .ws", "rc %d '%s'", rc, err);
    rc = sim_umma_idesc_decode(0x02080490, UMMA_KIND_F16, 1, 1, &d, err, sizeof err);
    check(rc == -1 && strstr(err, "not a .ws shape"), "idesc .ws N=32 refused", "rc %d '%s'", rc, err);
    rc = sim_umma_idesc_decode(0x08400490, UMMA_KIND_F16, 2, 1, &d, err, sizeof err);
    check(rc == -1 && strstr(err, "cta_group::1 only"), "idesc .ws with cta_group::2 refused", "rc %d '%s'", rc, err);

    static const struct { uint32_t w; int kind, cg; const char *phrase, *name; } bad[] = {
        {0x10400010, UMMA_KIND_F16, 1, "M = 256", "idesc M=256 on cta_group::1 refused"},
        {0x04400010, UMMA_KIND_F16, 2, "M = 64", "idesc M=64 on cta_group::2 refused"},
        {0x03400010, UMMA_KIND_F16, 1, "M = 48", "idesc M=48 refused"},
        {0x08020010, UMMA_KIND_F16, 1, "N = 8", "idesc M=128 N=8 refused (steps of 16)"},
        {0x08020010, UMMA_KIND_F16, 2, "N = 8", "idesc cta_group::2 N=8 refused"},
        {0x08000010, UMMA_KIND_F16, 1, "N = 0", "idesc N=0 refused"},
        {0x04420010, UMMA_KIND_F16, 1, "N = 264", "idesc N=264 refused"},
        {0x08200910, UMMA_KIND_F16, 1, "format", "idesc tf32 formats under kind::f16 refused"},
        {0x08400010, UMMA_KIND_TF32, 1, "tf32", "idesc f16 formats under kind::tf32 refused"},
        {0x08200900, UMMA_KIND_TF32, 1, "D format", "idesc kind::tf32 with f16 D refused"},
        {0x08100480, UMMA_KIND_F16, 1, "bf16", "idesc bf16 with f16 D refused"},
        {0x08100410, UMMA_KIND_F16, 1, "differ", "idesc A f16 with B bf16 refused"},
        {0x08100030, UMMA_KIND_F16, 1, "D format", "idesc D format 3 refused"},
        {0x08400018, UMMA_KIND_F16, 1, "saturate", "idesc saturate refused"},
        {0x08400050, UMMA_KIND_F16, 1, "reserved", "idesc reserved bit 6 refused"},
        {0x08C00010, UMMA_KIND_F16, 1, "reserved", "idesc reserved bit 23 refused"},
        {0x28400010, UMMA_KIND_F16, 1, "reserved", "idesc reserved bit 29 refused"},
        {0x08400010, 7, 1, "kind", "idesc unknown kind refused"},
        {0x08400010, UMMA_KIND_F16, 4, "cta_group", "idesc cta_group::4 refused"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        rc = sim_umma_idesc_decode(bad[i].w, bad[i].kind, bad[i].cg, 0, &d, err, sizeof err);
        check(rc == -1 && strstr(err, bad[i].phrase), bad[i].name, "rc %d err '%s'", rc, err);
    }
}

/* ---- tcgen05.ld/st shapes ---- */

static void tmem_regs_tests(void)
{
    static const struct { int shape, num, regs; } t[] = {
        {TM_32X32B, 1, 1},    {TM_32X32B, 128, 128}, {TM_32X32B, 256, -1}, {TM_32X32B, 3, -1},  {TM_32X32B, 0, -1},
        {TM_16X64B, 128, 128}, {TM_16X64B, 2, 2},    {TM_16X32BX2, 128, 128}, {TM_16X128B, 1, 2}, {TM_16X128B, 64, 128},
        {TM_16X128B, 128, -1}, {TM_16X256B, 1, 4},   {TM_16X256B, 32, 128}, {TM_16X256B, 64, -1}, {7, 1, -1},
        {-1, 1, -1},
    };
    int ok = 1;
    char why[96] = "";
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int r = sim_tmem_shape_regs(t[i].shape, t[i].num);
        if (r != t[i].regs) ok = 0, sprintf(why, "shape %d .x%d: %d, want %d", t[i].shape, t[i].num, r, t[i].regs);
    }
    check(ok, "tmem regs per shape and .num", "%s", why);
}

static int map_is(int shape, int num, int t, int r, int imm, int lane, int col)
{
    int l, c;
    sim_tmem_shape_map(shape, num, t, r, imm, &l, &c);
    if (l != lane || c != col) printf("  shape %d .x%d t %d r %d: lane %d col %d, want %d %d\n", shape, num, t, r, l, c, lane, col);
    return l == lane && c == col;
}

/* Every (thread, register) of a shape names a distinct TMEM cell, and
 * together they fill lanes x columns exactly. */
static int tmem_covers(int shape, int num, int imm)
{
    int regs = sim_tmem_shape_regs(shape, num), lanes = shape == TM_32X32B ? 32 : 16;
    int cols = 32 * regs / lanes;
    static unsigned char seen[32][512];
    memset(seen, 0, sizeof seen);
    for (int t = 0; t < 32; t++)
        for (int r = 0; r < regs; r++) {
            int l, c;
            sim_tmem_shape_map(shape, num, t, r, imm, &l, &c);
            if (shape == TM_16X32BX2 && c >= imm) c = c - imm + cols / 2;   /* fold the second half next to the first */
            if (l < 0 || l >= lanes || c < 0 || c >= cols || seen[l][c]++) return 0;
        }
    return 1;
}

static void tmem_map_tests(void)
{
    /* ISA figures: 32x32b: thread t is lane t, register i is column i */
    check(map_is(TM_32X32B, 1, 5, 0, 0, 5, 0) && map_is(TM_32X32B, 4, 17, 3, 0, 17, 3), "tmem 32x32b lane t, column r", "see the lines above");
    /* 16x256b: like the mma m16n8 C fragment; thread 5 = quad 1, q 1 */
    check(map_is(TM_16X256B, 1, 0, 0, 0, 0, 0) && map_is(TM_16X256B, 1, 0, 1, 0, 0, 1) &&
              map_is(TM_16X256B, 1, 0, 2, 0, 8, 0) && map_is(TM_16X256B, 1, 0, 3, 0, 8, 1) &&
              map_is(TM_16X256B, 1, 5, 0, 0, 1, 2) && map_is(TM_16X256B, 1, 5, 3, 0, 9, 3) &&
              map_is(TM_16X256B, 1, 31, 0, 0, 7, 6) && map_is(TM_16X256B, 1, 31, 3, 0, 15, 7),
          "tmem 16x256b.x1 four registers per thread", "see the lines above");
    check(map_is(TM_16X256B, 2, 5, 4, 0, 1, 10) && map_is(TM_16X256B, 2, 5, 7, 0, 9, 11), "tmem 16x256b.x2 repeat +8 columns",
          "see the lines above");
    /* 16x128b: lanes 0-7 from r0, 8-15 from r1; thread 6 = quad 1, q 2 */
    check(map_is(TM_16X128B, 1, 6, 0, 0, 1, 2) && map_is(TM_16X128B, 1, 6, 1, 0, 9, 2) &&
              map_is(TM_16X128B, 2, 6, 2, 0, 1, 6) && map_is(TM_16X128B, 2, 6, 3, 0, 9, 6),
          "tmem 16x128b.x1/.x2", "see the lines above");
    /* 16x64b: a quad covers lanes g and g+8, two columns */
    check(map_is(TM_16X64B, 1, 0, 0, 0, 0, 0) && map_is(TM_16X64B, 1, 1, 0, 0, 8, 0) && map_is(TM_16X64B, 1, 2, 0, 0, 0, 1) &&
              map_is(TM_16X64B, 1, 3, 0, 0, 8, 1) && map_is(TM_16X64B, 1, 4, 0, 0, 1, 0) &&
              map_is(TM_16X64B, 1, 31, 0, 0, 15, 1) && map_is(TM_16X64B, 2, 2, 1, 0, 0, 3),
          "tmem 16x64b.x1/.x2", "see the lines above");
    /* 16x32bx2: threads 16-31 take the same lanes, imm columns further */
    check(map_is(TM_16X32BX2, 1, 3, 0, 16, 3, 0) && map_is(TM_16X32BX2, 1, 19, 0, 16, 3, 16) &&
              map_is(TM_16X32BX2, 4, 20, 2, 4, 4, 6) && map_is(TM_16X32BX2, 4, 2, 3, 4, 2, 3),
          "tmem 16x32bx2 halves at imm", "see the lines above");
    check(map_is(TM_16X256B, 1, 0, 4, 0, -1, -1) && map_is(TM_32X32B, 1, 32, 0, 0, -1, -1) &&
              map_is(TM_16X128B, 128, 0, 0, 0, -1, -1) && map_is(9, 1, 0, 0, 0, -1, -1),
          "tmem map out of range -> -1", "see the lines above");
    int ok = 1;
    for (int s = 0; s < TM_SHAPES; s++)
        for (int num = 1; num <= 128; num *= 2)
            if (sim_tmem_shape_regs(s, num) > 0 && !tmem_covers(s, num, s == TM_16X32BX2 ? 1024 : 0)) {
                printf("  shape %d .x%d does not tile its lanes x columns\n", s, num);
                ok = 0;
            }
    check(ok, "tmem every shape and .num covers its cells once", "see above");
}

/* ---- wgmma fragments ---- */

static int d_is(int n, int t, int r, int row, int col)
{
    int a, b;
    sim_wgmma_d_map(n, t, r, &a, &b);
    if (a != row || b != col) printf("  D n %d t %d r %d: (%d, %d), want (%d, %d)\n", n, t, r, a, b, row, col);
    return a == row && b == col;
}

static int a_is(int t, int r, int h, int row, int k)
{
    int a, b;
    sim_wgmma_a_map(t, r, h, &a, &b);
    if (a != row || b != k) printf("  A t %d r %d h %d: (%d, %d), want (%d, %d)\n", t, r, h, a, b, row, k);
    return a == row && b == k;
}

static void wgmma_tests(void)
{
    /* thread 37 = warp 1, lane 5 (group 1, q 1); thread 127 = warp 3, lane 31 */
    check(d_is(64, 0, 0, 0, 0) && d_is(64, 0, 1, 0, 1) && d_is(64, 0, 2, 8, 0) && d_is(64, 0, 3, 8, 1) &&
              d_is(64, 0, 4, 0, 8) && d_is(64, 37, 0, 17, 2) && d_is(64, 37, 6, 25, 10) && d_is(64, 127, 31, 63, 63),
          "wgmma D m64n64 fragment", "see the lines above");
    check(d_is(256, 95, 127, 47, 255) && d_is(256, 64, 127, 40, 249) && d_is(8, 0, 4, -1, -1) && d_is(12, 0, 0, -1, -1) && d_is(64, 128, 0, -1, -1),
          "wgmma D m64n256 last element, out of range", "see the lines above");
    int ok = 1;
    static unsigned char seen[64][256];
    memset(seen, 0, sizeof seen);
    for (int t = 0; t < 128; t++)
        for (int r = 0; r < 128; r++) {
            int row, col;
            sim_wgmma_d_map(256, t, r, &row, &col);
            if (row < 0 || row >= 64 || col < 0 || col >= 256 || seen[row][col]++) ok = 0;
        }
    check(ok, "wgmma D m64n256 covers every element once", "collision or hole");
    /* thread 45 = warp 1, lane 13 (group 3, q 1) */
    check(a_is(0, 0, 0, 0, 0) && a_is(0, 0, 1, 0, 1) && a_is(0, 1, 0, 8, 0) && a_is(0, 2, 0, 0, 8) && a_is(0, 3, 1, 8, 9) &&
              a_is(45, 0, 0, 19, 2) && a_is(45, 3, 1, 27, 11) && a_is(127, 3, 1, 63, 15),
          "wgmma A m64k16 fragment", "see the lines above");
    check(a_is(0, 4, 0, -1, -1) && a_is(0, 0, 2, -1, -1) && a_is(-1, 0, 0, -1, -1), "wgmma A out of range", "see the lines above");
}

int main(void)
{
    umma_sdesc_tests();
    wgmma_sdesc_tests();
    swizzle_tests();
    check_tests();
    kmajor_tests();
    mnmajor_tests();
    idesc_tests();
    tmem_regs_tests();
    tmem_map_tests();
    wgmma_tests();
    return check_summary();
}
