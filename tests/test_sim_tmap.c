/* The sim's tensor maps (runner/sim/sim_tmap.h) and dev_tmap_encode on the
 * sim device. Expected values are worked out by hand in the comments: the
 * oracle launch records' cuTensorMapEncodeTiled arguments
 * (the launch.json files in shared/oracle, copied here as numbers), element counts of
 * boxes that cross the tensor's edges, and where a swizzled element lands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "device.h"
#include "sim_tmap.h"

static const char *named(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *named(const char *fmt, ...)
{
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---- encode arguments as one value, so each error case changes one field ---- */

typedef struct {
    int dtype, rank;
    uint64_t gaddr, dim[5], gstride[4];
    uint32_t box[5], estride[5];
    int interleave, swizzle, l2promo, oobfill;
} Args;

static int encode(const Args *a, uint8_t out[TMAP_BYTES], char *err, size_t n)
{
    return sim_tmap_encode(a->dtype, a->rank, a->gaddr, a->dim, a->gstride, a->box, a->estride, a->interleave,
                           a->swizzle, a->l2promo, a->oobfill, out, err, n);
}

/* encode + decode; 0 on success, the message in err otherwise */
static int roundtrip(const Args *a, SimTmap *t, char *err, size_t n)
{
    uint8_t blob[TMAP_BYTES];
    return encode(a, blob, err, n) || sim_tmap_decode(blob, t, err, n) ? -1 : 0;
}

/* t02_mma_tma id 0: A, f16 128x128 K-major, 64x128 box, 128B swizzle */
static Args t02_a(void)
{
    return (Args){ .dtype = 6, .rank = 2, .gaddr = 0x100000000000ull, .dim = { 128, 128 }, .gstride = { 256 },
                   .box = { 64, 128 }, .estride = { 1, 1 }, .swizzle = 3, .l2promo = 2 };
}

/* ---- 1. oracle records round trip ---- */

typedef struct {
    const char *name;
    int dtype;
    uint64_t gaddr, dim0, dim1, stride1;
    uint32_t box0, box1;
    int swizzle;
    int elem_bytes;        /* 2 for f16 (6), 4 for f32 (7) */
    uint32_t box_bytes;    /* box0 * box1 * elem_bytes */
} Record;

static const Record kRecords[] = {
    { "t02_mma_tma id0", 6, 0x100000000000ull, 128, 128, 256, 64, 128, 3, 2, 16384 },
    { "t02_mma_tma id1", 6, 0x200000000000ull, 128, 256, 256, 64, 256, 3, 2, 32768 },
    { "t02_mma_tma_inter id0", 6, 0x100000000000ull, 128, 128, 256, 8, 128, 0, 2, 2048 },
    { "t02_mma_tma_sw32 id0", 6, 0x100000000000ull, 128, 128, 256, 16, 128, 1, 2, 4096 },
    { "t02_mma_tma_sw64 id1", 6, 0x200000000000ull, 128, 256, 256, 32, 256, 2, 2, 16384 },
    { "t02_mma_tma_mn_sw128 id1", 6, 0x200000000000ull, 256, 128, 512, 64, 8, 3, 2, 1024 },
    { "t02_mma_tma_mn_sw64 id0", 6, 0x100000000000ull, 128, 128, 256, 32, 8, 2, 2, 512 },
    { "t03_multicast_c2x2 id1", 6, 0x200000000000ull, 128, 512, 256, 64, 128, 3, 2, 16384 },
    { "t05_2sm_tma_epi_c2x1 id2 (f32 C)", 7, 0x300000000000ull, 256, 256, 1024, 32, 128, 3, 4, 16384 },
    { "h02_wgmma_tma_nt id0", 6, 0x100000000000ull, 256, 256, 512, 64, 8, 3, 2, 1024 },
};

static void test_record(const Record *r)
{
    Args a = { .dtype = r->dtype, .rank = 2, .gaddr = r->gaddr, .dim = { r->dim0, r->dim1 }, .gstride = { r->stride1 },
               .box = { r->box0, r->box1 }, .estride = { 1, 1 }, .swizzle = r->swizzle, .l2promo = 2 };
    SimTmap t;
    char err[256] = "";
    if (roundtrip(&a, &t, err, sizeof err)) {
        check(0, named("oracle %s round trip", r->name), "%s", err);
        return;
    }
    int ok = t.dtype == r->dtype && t.rank == 2 && t.gaddr == r->gaddr && t.dim[0] == r->dim0 && t.dim[1] == r->dim1 &&
             t.stride[0] == (uint64_t)r->elem_bytes && t.stride[1] == r->stride1 && t.box[0] == r->box0 &&
             t.box[1] == r->box1 && t.estride[0] == 1 && t.estride[1] == 1 && t.interleave == 0 &&
             t.swizzle == r->swizzle && t.l2promo == 2 && t.oobfill == 0 && t.elem_bytes == r->elem_bytes;
    check(ok, named("oracle %s round trip", r->name), "fields differ: dtype %d dims %llu,%llu strides %llu,%llu box %u,%u "
          "swizzle %d elem %d", t.dtype, (unsigned long long)t.dim[0], (unsigned long long)t.dim[1],
          (unsigned long long)t.stride[0], (unsigned long long)t.stride[1], t.box[0], t.box[1], t.swizzle, t.elem_bytes);
    check(sim_tmap_box_bytes(&t) == r->box_bytes, named("oracle %s box bytes %u", r->name, r->box_bytes), "got %u",
          sim_tmap_box_bytes(&t));
}

static void test_records(void)
{
    for (size_t i = 0; i < sizeof kRecords / sizeof kRecords[0]; i++) test_record(&kRecords[i]);
}

/* ---- 2. every validation error ---- */

/* a is refused with a message holding both phrases (argument and value) */
static void refused(const char *name, const Args *a, const char *p1, const char *p2)
{
    uint8_t blob[TMAP_BYTES];
    char err[256] = "";
    int rc = encode(a, blob, err, sizeof err);
    check(rc != 0 && strstr(err, p1) && (!p2 || strstr(err, p2)), named("encode refuses %s", name),
          "rc %d, message '%s' (want '%s'%s%s)", rc, err, p1, p2 ? " and " : "", p2 ? p2 : "");
}

static void accepted(const char *name, const Args *a)
{
    uint8_t blob[TMAP_BYTES];
    char err[256] = "";
    check(encode(a, blob, err, sizeof err) == 0, named("encode accepts %s", name), "%s", err);
}

/* A rank-3 map that interleaved cases start from. */
static Args rank3(void)
{
    return (Args){ .dtype = 6, .rank = 3, .gaddr = 0x10000, .dim = { 8, 4, 4 }, .gstride = { 16, 64 },
                   .box = { 8, 2, 2 }, .estride = { 1, 1, 1 } };
}

static void test_errors_modes(void)
{
    Args a;
    a = t02_a(), a.dtype = 13;
    refused("a packed dtype", &a, "tensorDataType = 13", "not modelled");
    a = t02_a(), a.dtype = 99;
    refused("dtype 99", &a, "tensorDataType = 99", NULL);
    a = t02_a(), a.dtype = -1;
    refused("dtype -1", &a, "tensorDataType = -1", NULL);
    a = t02_a(), a.rank = 0;
    refused("rank 0", &a, "tensorRank = 0", NULL);
    a = t02_a(), a.rank = 6;
    refused("rank 6", &a, "tensorRank = 6", NULL);
    a = t02_a(), a.swizzle = 0, a.interleave = 1;
    refused("interleave at rank 2", &a, "tensorRank = 2", "interleave");
    a = rank3(), a.interleave = 3;
    refused("interleave 3", &a, "interleave = 3", NULL);
    a = rank3(), a.interleave = 2, a.swizzle = 3, a.box[0] = 16;
    refused("interleave 32B without swizzle 32B", &a, "swizzle = 3", "interleave 32B");
    a = t02_a(), a.swizzle = 4;
    refused("swizzle 4 (128B, 32B atoms)", &a, "swizzle = 4", "not modelled");
    a = t02_a(), a.swizzle = 7;
    refused("swizzle 7", &a, "swizzle = 7", NULL);
    a = t02_a(), a.l2promo = 4;
    refused("l2Promotion 4", &a, "l2Promotion = 4", NULL);
    a = t02_a(), a.oobfill = 2;
    refused("oobFill 2", &a, "oobFill = 2", NULL);
    a = t02_a(), a.oobfill = 1, a.dtype = 0, a.swizzle = 0;
    refused("NaN fill of u8", &a, "oobFill = 1", "tensorDataType = 0");
    a = t02_a(), a.oobfill = 1;
    accepted("NaN fill of f16", &a);
}

static void test_errors_global(void)
{
    Args a;
    a = t02_a(), a.gaddr = 0x100000000008ull;
    refused("an 8-byte aligned address", &a, "globalAddress = 0x100000000008", "16-byte");
    a = rank3(), a.interleave = 2, a.swizzle = 1, a.box[0] = 16, a.gaddr = 0x10010, a.gstride[0] = 32;
    a.gstride[1] = 128;
    refused("a 16-byte aligned address with interleave 32B", &a, "globalAddress = 0x10010", "32-byte");
    a.gaddr = 0x10020, a.gstride[0] = 48;
    refused("a stride of 48 with interleave 32B", &a, "globalStrides[0] = 48", "multiple of 32");
    a = t02_a(), a.dim[1] = 0;
    refused("dim 0", &a, "globalDim[1] = 0", NULL);
    a = t02_a(), a.dim[0] = (1ull << 32) + 1;
    refused("dim 2^32 + 1", &a, "globalDim[0] = 4294967297", NULL);
    a = t02_a(), a.dim[0] = 1ull << 32;
    accepted("dim 2^32", &a);
    a = t02_a(), a.gstride[0] = 264;
    refused("stride 264", &a, "globalStrides[0] = 264", "multiple of 16");
    a = t02_a(), a.gstride[0] = 1ull << 40;
    refused("stride 2^40", &a, "globalStrides[0] = 1099511627776", "2^40");
    a = t02_a(), a.gstride[0] = (1ull << 40) - 16;
    accepted("stride 2^40 - 16", &a);
    a = t02_a(), a.rank = 1;
    check(sim_tmap_encode(6, 1, 0x1000, a.dim, NULL, a.box, a.estride, 0, 3, 2, 0, (uint8_t[TMAP_BYTES]){ 0 }, NULL, 0) == 0,
          "encode accepts rank 1 without globalStrides", "refused");
    check(sim_tmap_encode(6, 2, 0x1000, NULL, a.gstride, a.box, a.estride, 0, 3, 2, 0, (uint8_t[TMAP_BYTES]){ 0 }, NULL, 0) != 0,
          "encode refuses a NULL globalDim", "accepted");
    char err[128] = "";
    sim_tmap_encode(6, 2, 0x1000, a.dim, NULL, a.box, a.estride, 0, 3, 2, 0, (uint8_t[TMAP_BYTES]){ 0 }, err, sizeof err);
    check(strstr(err, "globalStrides is NULL") != NULL, "encode refuses rank 2 without globalStrides", "'%s'", err);
}

static void test_errors_box(void)
{
    Args a;
    a = t02_a(), a.box[1] = 0;
    refused("box 0", &a, "boxDim[1] = 0", "1..256");
    a = t02_a(), a.box[1] = 257;
    refused("box 257", &a, "boxDim[1] = 257", NULL);
    a = t02_a(), a.box[1] = 256;
    accepted("box 256", &a);
    a = t02_a(), a.box[0] = 4, a.swizzle = 0;   /* 4 f16 = 8 bytes */
    refused("an 8-byte inner box", &a, "boxDim[0] = 4", "8 bytes");
    a = rank3(), a.interleave = 1, a.box[0] = 4;
    accepted("an 8-byte inner box with interleave 16B", &a);
    a = t02_a(), a.box[0] = 128;                 /* 256 bytes > 128 */
    refused("a 256-byte inner box with 128B swizzle", &a, "boxDim[0] = 128", "128-byte span");
    a = t02_a(), a.box[0] = 32, a.swizzle = 1;   /* 64 bytes > 32 */
    refused("a 64-byte inner box with 32B swizzle", &a, "boxDim[0] = 32", "32-byte span");
    a.swizzle = 2;
    accepted("a 64-byte inner box with 64B swizzle", &a);
    a = t02_a(), a.estride[1] = 0;
    refused("element stride 0", &a, "elementStrides[1] = 0", "1..8");
    a = t02_a(), a.estride[1] = 9;
    refused("element stride 9", &a, "elementStrides[1] = 9", NULL);
    a = t02_a(), a.estride[1] = 8;
    accepted("element stride 8", &a);
}

/* ---- 3. decode refuses what the sim did not write ---- */

static void refused_blob(const char *name, const uint8_t *blob, const char *phrase)
{
    SimTmap t;
    char err[256] = "";
    int rc = sim_tmap_decode(blob, &t, err, sizeof err);
    check(rc != 0 && strstr(err, phrase), named("decode refuses %s", name), "rc %d, '%s' (want '%s')", rc, err, phrase);
}

static void test_decode(void)
{
    uint8_t b[TMAP_BYTES] = { 0 }, good[TMAP_BYTES];
    Args a = t02_a();
    refused_blob("zeros", b, "all 128 bytes are zero");
    /* the oracle's placeholder: 'TMAP', id 1, then the global address */
    memcpy(b, "TMAP", 4), b[4] = 1, b[13] = 0x20;
    refused_blob("NVIDIA's 'TMAP' tag", b, "'TMAP'");
    refused_blob("the tag's id", b, "id 1");
    uint32_t x = 12345;
    for (int i = 0; i < TMAP_BYTES; i++) x = x * 1103515245u + 12345u, b[i] = (uint8_t)(x >> 16);
    refused_blob("pseudo-random bytes", b, "not the sim's magic");
    check(encode(&a, good, NULL, 0) == 0, "encode t02 id0", "refused");
    memcpy(b, good, TMAP_BYTES), b[30] ^= 1;   /* a bit of globalDim[0] */
    refused_blob("a map with one bit flipped", b, "checksum");
    memcpy(b, good, TMAP_BYTES), b[120] = 7;   /* the reserved tail */
    refused_blob("a map with its reserved bytes written", b, "checksum");
    memcpy(b, good, TMAP_BYTES), b[4] = 2;
    refused_blob("another encoding version", b, "version 2");
    SimTmap t;
    check(sim_tmap_decode(good, &t, NULL, 0) == 0, "decode reads what encode wrote", "refused");
}

/* ---- 4. box walks ---- */

typedef struct {
    int visits, oob;
    int ordered;                 /* box_off ran 0, e, 2e, ... */
    int elem;
    uint64_t gaddr_of[64];       /* by visit, 0 when out of bounds */
    uint32_t off_of[64];
    int gaddr_when_oob;          /* an OOB visit passed a non-zero gaddr */
} Tally;

static int tally(void *ctx, int in_bounds, uint64_t gaddr, uint32_t box_off)
{
    Tally *t = ctx;
    if (box_off != (uint32_t)(t->visits * t->elem)) t->ordered = 0;
    if (!in_bounds && gaddr) t->gaddr_when_oob = 1;
    if (t->visits < 64) t->gaddr_of[t->visits] = gaddr, t->off_of[t->visits] = box_off;
    t->oob += !in_bounds;
    t->visits++;
    return 0;
}

static SimTmap decoded(const Args *a)
{
    SimTmap t;
    char err[256] = "";
    if (roundtrip(a, &t, err, sizeof err)) {
        check(0, "test map encodes", "%s", err);
        memset(&t, 0, sizeof t);
    }
    return t;
}

enum { G = 0x10000 };

/* f16 10 x 6 (10 columns, 6 rows), rows 32 bytes apart, 8 x 4 box */
static Tally walk_10x6(int32_t x, int32_t y)
{
    Args a = { .dtype = 6, .rank = 2, .gaddr = G, .dim = { 10, 6 }, .gstride = { 32 }, .box = { 8, 4 },
               .estride = { 1, 1 } };
    SimTmap t = decoded(&a);
    Tally n = { .ordered = 1, .elem = 2 };
    int32_t c[2] = { x, y };
    check(sim_tmap_box_walk(&t, c, tally, &n) == 0, named("walk at (%d, %d) returns 0", x, y), "non-zero");
    return n;
}

static void test_box_walk(void)
{
    /* interior (1, 1): columns 1..8 and rows 1..4 all inside */
    Tally n = walk_10x6(1, 1);
    check(n.visits == 32 && n.oob == 0 && n.ordered, "interior box: 32 elements, none OOB, in image order",
          "visits %d, oob %d, ordered %d", n.visits, n.oob, n.ordered);
    check(n.gaddr_of[0] == G + 32 + 2, "interior box: first element (col 1, row 1) at G + 34", "0x%llx",
          (unsigned long long)n.gaddr_of[0]);
    check(n.gaddr_of[31] == G + 4 * 32 + 8 * 2 && n.off_of[31] == 62,
          "interior box: last element (col 8, row 4) at G + 144, image byte 62", "0x%llx, %u",
          (unsigned long long)n.gaddr_of[31], n.off_of[31]);
    /* (-3, -1): columns -3..4 (5 inside: 0..4), rows -1..2 (3 inside: 0..2): 15 in, 17 out */
    n = walk_10x6(-3, -1);
    check(n.visits == 32 && n.oob == 17 && !n.gaddr_when_oob, "negative corner: 17 of 32 OOB, with gaddr 0",
          "visits %d, oob %d", n.visits, n.oob);
    /* element (0, 0) is box column 3 of box row 1: slot 11, byte 22 */
    check(n.gaddr_of[11] == G && n.off_of[11] == 22 && n.gaddr_of[10] == 0,
          "negative corner: tensor element (0, 0) at image byte 22", "0x%llx at %u",
          (unsigned long long)n.gaddr_of[11], n.off_of[11]);
    /* (6, 4): columns 6..13 (4 inside: 6..9), rows 4..7 (2 inside: 4, 5): 8 in, 24 out */
    n = walk_10x6(6, 4);
    check(n.visits == 32 && n.oob == 24, "past-the-end box: 24 of 32 OOB", "visits %d, oob %d", n.visits, n.oob);
    check(n.gaddr_of[0] == G + 4 * 32 + 6 * 2 && n.gaddr_of[4] == 0 && n.gaddr_of[8] == G + 5 * 32 + 12,
          "past-the-end box: (6,4) at G + 140, (10,4) OOB, (6,5) at G + 172", "0x%llx 0x%llx 0x%llx",
          (unsigned long long)n.gaddr_of[0], (unsigned long long)n.gaddr_of[4], (unsigned long long)n.gaddr_of[8]);
    int32_t c[2] = { 0, 0 };
    check(sim_tmap_box_walk(NULL, c, tally, &n) == -1, "walk without a map returns -1", "did not");
}

static void test_rank3_order(void)
{
    /* f16 8 x 3 x 2, dense: strides 16 and 48 bytes; the whole tensor is the box */
    Args a = { .dtype = 6, .rank = 3, .gaddr = G, .dim = { 8, 3, 2 }, .gstride = { 16, 48 }, .box = { 8, 3, 2 },
               .estride = { 1, 1, 1 } };
    SimTmap t = decoded(&a);
    Tally n = { .ordered = 1, .elem = 2 };
    int32_t c[3] = { 0, 0, 0 };
    sim_tmap_box_walk(&t, c, tally, &n);
    /* image slot 45 = 1*24 + 2*8 + 5: element (5, 2, 1) at 10 + 2*16 + 48 = 90 bytes */
    check(n.visits == 48 && n.gaddr_of[45] == G + 90 && n.off_of[45] == 90,
          "rank 3: innermost dimension first, slot 45 is (5, 2, 1)", "visits %d, 0x%llx",
          n.visits, (unsigned long long)n.gaddr_of[45]);
}

static void test_element_strides(void)
{
    /* f32 16 x 16, rows 64 bytes apart; box 4 x 8 with elementStrides {2, 3}:
     * dimension 0 ignores its 2 (no interleave), dimension 1 moves rows
     * y, y+3, y+6 = ceil(8 / 3) = 3 rows: 4 * 3 * 4 = 48 bytes */
    Args a = { .dtype = 7, .rank = 2, .gaddr = G, .dim = { 16, 16 }, .gstride = { 64 }, .box = { 4, 8 },
               .estride = { 2, 3 } };
    SimTmap t = decoded(&a);
    check(sim_tmap_box_bytes(&t) == 48, "element strides {2, 3}: 48-byte image", "%u", sim_tmap_box_bytes(&t));
    Tally n = { .ordered = 1, .elem = 4 };
    int32_t c[2] = { 0, 10 };
    sim_tmap_box_walk(&t, c, tally, &n);
    /* rows 10 and 13 inside, row 16 out */
    check(n.visits == 12 && n.oob == 4, "element strides at row 10: 12 elements, the 4 of row 16 OOB",
          "visits %d, oob %d", n.visits, n.oob);
    check(n.gaddr_of[5] == G + 13 * 64 + 4 && n.off_of[5] == 20, "element strides: slot 5 is (1, 13)",
          "0x%llx at %u", (unsigned long long)n.gaddr_of[5], n.off_of[5]);
    /* interleaved: dimension 0 does step; f16 8 x 4 x 4, box {8, 2, 2},
     * elementStrides {2, 1, 1}: 4 * 2 * 2 elements, 32 bytes */
    Args b = rank3();
    b.interleave = 1, b.estride[0] = 2;
    t = decoded(&b);
    Tally m = { .ordered = 1, .elem = 2 };
    int32_t d[3] = { 0, 1, 0 };
    sim_tmap_box_walk(&t, d, tally, &m);
    check(sim_tmap_box_bytes(&t) == 32 && m.visits == 16 && m.gaddr_of[1] == G + 16 + 4,
          "interleaved element stride 2 in dimension 0: slot 1 is (2, 1, 0)", "bytes %u visits %d 0x%llx",
          sim_tmap_box_bytes(&t), m.visits, (unsigned long long)m.gaddr_of[1]);
}

/* ---- 5. swizzled images ---- */

typedef struct {
    uint8_t smem[2048];
    uint32_t base;            /* absolute shared address of smem[0] */
    int swizzle;
    uint64_t row_bytes;       /* the tensor's row pitch: recovers (r, c) from gaddr */
} Image;

/* Stores the element's tag r * 256 + c where the swizzled address lands. */
static int place(void *ctx, int in_bounds, uint64_t gaddr, uint32_t box_off)
{
    Image *im = ctx;
    uint32_t at = sim_tmap_swizzle(im->swizzle, im->base + box_off) - im->base;
    uint64_t r = (gaddr - G) / im->row_bytes, c = (gaddr - G) % im->row_bytes / 2;
    if (!in_bounds || at + 2 > sizeof im->smem) return 1;
    im->smem[at] = (uint8_t)c, im->smem[at + 1] = (uint8_t)r;
    return 0;
}

/* An 8-row f16 box as wide as the swizzle span, at a base aligned to the
 * pattern's repeat; want(r, c) is the worked example's byte offset. */
static void test_image(const char *name, int swizzle, uint32_t cols, uint32_t base,
                       uint32_t (*want)(uint32_t r, uint32_t c))
{
    Args a = { .dtype = 6, .rank = 2, .gaddr = G, .dim = { cols, 8 }, .gstride = { cols * 2 }, .box = { cols, 8 },
               .estride = { 1, 1 }, .swizzle = swizzle };
    SimTmap t = decoded(&a);
    Image im = { .base = base, .swizzle = swizzle, .row_bytes = cols * 2 };
    int32_t c0[2] = { 0, 0 };
    int bad = sim_tmap_box_walk(&t, c0, place, &im), where = -1;
    for (uint32_t r = 0; r < 8 && !bad; r++)
        for (uint32_t c = 0; c < cols && !bad; c++) {
            uint32_t at = want(r, c);
            if (im.smem[at] != c || im.smem[at + 1] != r) bad = 1, where = (int)(r * 256 + c);
        }
    check(!bad, named("%s: every element where the worked example puts it", name), "element (%d, %d) misplaced",
          where / 256, where % 256);
}

/* 128B: 16-byte chunk (c*2)/16 of row r moves to chunk ^ (r % 8) */
static uint32_t want128(uint32_t r, uint32_t c) { return r * 128 + (((c * 2) / 16) ^ (r % 8)) * 16 + (c * 2) % 16; }
/* 64B: rows of 64 bytes pair up in 128-byte lines; chunk ^= (r / 2) % 4 */
static uint32_t want64(uint32_t r, uint32_t c) { return r * 64 + (((c * 2) / 16) ^ ((r / 2) % 4)) * 16 + (c * 2) % 16; }
/* 32B: four 32-byte rows per 128-byte line; chunk ^= (r / 4) % 2 */
static uint32_t want32(uint32_t r, uint32_t c) { return r * 32 + (((c * 2) / 16) ^ ((r / 4) % 2)) * 16 + (c * 2) % 16; }

static void test_swizzle(void)
{
    test_image("128B swizzle, 64x8 f16 at 0x2400", TMAP_SW_128B, 64, 0x2400, want128);
    test_image("64B swizzle, 32x8 f16 at 0x2200", TMAP_SW_64B, 32, 0x2200, want64);
    test_image("32B swizzle, 16x8 f16 at 0x2100", TMAP_SW_32B, 16, 0x2100, want32);
    /* spot values: 0x2390 is chunk 1 of the 8th 128-byte row: 1 ^ 7 = 6 */
    check(sim_tmap_swizzle(TMAP_SW_128B, 0x2390) == 0x23E0, "128B: 0x2390 -> 0x23e0", "0x%x",
          sim_tmap_swizzle(TMAP_SW_128B, 0x2390));
    /* 0x1197: bits 7-8 = 3, byte 7 of chunk 1 -> chunk 1 ^ 3 = 2 */
    check(sim_tmap_swizzle(TMAP_SW_64B, 0x1197) == 0x11A7, "64B: 0x1197 -> 0x11a7", "0x%x",
          sim_tmap_swizzle(TMAP_SW_64B, 0x1197));
    check(sim_tmap_swizzle(TMAP_SW_32B, 0x90) == 0x80, "32B: 0x90 -> 0x80", "0x%x", sim_tmap_swizzle(TMAP_SW_32B, 0x90));
    check(sim_tmap_swizzle(TMAP_SW_NONE, 0x2390) == 0x2390 && sim_tmap_swizzle(9, 0x2390) == 0x2390,
          "no swizzle (and an unknown mode) leaves the address", "changed");
    /* absolute bits: a box placed 128 bytes into a 1024-byte block starts on
     * the pattern's second row, so its first chunk moves to chunk 1 */
    check(sim_tmap_swizzle(TMAP_SW_128B, 0x2080) == 0x2090, "128B at an unaligned base uses the absolute row", "0x%x",
          sim_tmap_swizzle(TMAP_SW_128B, 0x2080));
}

/* ---- 6. gather4 ---- */

static void test_gather4(void)
{
    /* f16 32 x 100, rows 64 bytes apart, box 16 x 1 */
    Args a = { .dtype = 6, .rank = 2, .gaddr = G, .dim = { 32, 100 }, .gstride = { 64 }, .box = { 16, 1 },
               .estride = { 1, 1 } };
    SimTmap t = decoded(&a);
    char err[256] = "";
    check(sim_tmap_gather4_check(&t, err, sizeof err) == 0 && sim_tmap_gather4_bytes(&t) == 128,
          "gather4 accepts a 2-D map with one-row boxes; 4 x 16 x 2 = 128 bytes", "%s", err);
    /* rows 5 and 99 inside, -1 and 100 outside; columns 8..23 inside */
    int32_t rows[4] = { 5, -1, 99, 100 };
    Tally n = { .ordered = 1, .elem = 2 };
    check(sim_tmap_gather4_walk(&t, 8, rows, tally, &n) == 0 && n.visits == 64 && n.oob == 32 && n.ordered,
          "gather4: 64 elements, rows -1 and 100 OOB", "visits %d, oob %d", n.visits, n.oob);
    /* image row 2, column 3: tensor (11, 99) at 99*64 + 22, image byte 70 */
    check(n.gaddr_of[35] == G + 99 * 64 + 22 && n.off_of[35] == 70, "gather4: slot 35 is (11, 99)", "0x%llx at %u",
          (unsigned long long)n.gaddr_of[35], n.off_of[35]);
    /* columns 24..39: 8 of each valid row inside */
    Tally m = { .ordered = 1, .elem = 2 };
    sim_tmap_gather4_walk(&t, 24, rows, tally, &m);
    check(m.oob == 64 - 16, "gather4 at column 24: 16 elements inside", "oob %d", m.oob);
    a.box[1] = 2;
    t = decoded(&a);
    check(sim_tmap_gather4_check(&t, err, sizeof err) != 0 && strstr(err, "boxDim[1] = 1") &&
          sim_tmap_gather4_walk(&t, 0, rows, tally, &n) == -1, "gather4 refuses a two-row box", "'%s'", err);
    Args b = rank3();
    t = decoded(&b);
    check(sim_tmap_gather4_check(&t, err, sizeof err) != 0 && strstr(err, "2-D"), "gather4 refuses a 3-D map", "'%s'",
          err);
}

/* ---- 7. dev_tmap_encode on the sim device ---- */

static void test_device(void)
{
    Device *d = NULL;
    DevPtr p = 0;
    char err[256] = "";
    uint8_t blob[DEV_TMAP_BYTES];
    SimTmap t;
    if (dev_open(&d, "sim", 0, err, sizeof err) || dev_alloc(d, &p, 128 * 256, err, sizeof err)) {
        check(0, "sim device opens and allocates", "%s", err);
        dev_close(d);
        return;
    }
    DevTmapDesc m = { .dtype = 6, .rank = 2, .gaddr = p, .dim = { 128, 128 }, .stride = { 256 }, .box = { 64, 128 },
                      .estride = { 1, 1 }, .swizzle = 3, .l2promo = 2 };
    int rc = dev_tmap_encode(d, &m, blob, err, sizeof err);
    check(rc == 0 && sim_tmap_decode(blob, &t, err, sizeof err) == 0 && t.gaddr == p && t.dim[1] == 128 &&
          t.stride[1] == 256 && t.box[0] == 64 && t.swizzle == 3, "dev_tmap_encode on the sim decodes back", "%s", err);
    m.box[0] = 300;
    rc = dev_tmap_encode(d, &m, blob, err, sizeof err);
    check(rc != 0 && strstr(err, "boxDim[0] = 300"), "dev_tmap_encode on the sim names a bad box", "'%s'", err);
    m.box[0] = 64, m.rank = 7;
    rc = dev_tmap_encode(d, &m, blob, err, sizeof err);
    check(rc != 0 && strstr(err, "tensorRank = 7"), "dev_tmap_encode on the sim refuses rank 7", "'%s'", err);
    rc = dev_tmap_encode(d, NULL, blob, err, sizeof err);
    check(rc != 0 && strstr(err, "NULL"), "dev_tmap_encode refuses a NULL description", "'%s'", err);
    dev_free(d, p, err, sizeof err);
    dev_close(d);
}

int main(void)
{
    test_records();
    test_errors_modes();
    test_errors_global();
    test_errors_box();
    test_decode();
    test_box_walk();
    test_rank3_order();
    test_element_strides();
    test_swizzle();
    test_gather4();
    test_device();
    return check_summary();
}
