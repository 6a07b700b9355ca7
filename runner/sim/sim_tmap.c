/* The sim's tensor maps: validation with the driver's rules, the 128-byte
 * encoding and its decoder. The walks over a box live in sim_tmap_walk.c. */
#include <stdio.h>
#include <string.h>
#include "device_impl.h"
#include "sim_tmap.h"

/* Byte layout of the encoding, little-endian whatever the host. The magic and
 * version let decode refuse blobs it did not write; the checksum catches a
 * kernel or harness that overwrote part of a map it did write. */
enum {
    OFF_MAGIC = 0,       /* "SimT" */
    OFF_VERSION = 4,
    OFF_DTYPE = 5, OFF_RANK = 6, OFF_INTERLEAVE = 7, OFF_SWIZZLE = 8, OFF_L2 = 9, OFF_OOB = 10,
    OFF_SUM = 12,        /* u32 FNV-1a of all 128 bytes with this field zero */
    OFF_GADDR = 16,      /* u64 */
    OFF_DIM = 24,        /* 5 x u64 */
    OFF_STRIDE = 64,     /* 4 x u64: byte strides of dims 1..4 */
    OFF_BOX = 96,        /* 5 x u16 */
    OFF_ESTRIDE = 106,   /* 5 x u8; bytes 111..127 stay zero */
    TMAP_VERSION = 1
};
static const uint8_t kMagic[4] = { 'S', 'i', 'm', 'T' };

enum { DTYPE_COUNT = 13, FIRST_FLOAT_DTYPE = 6, PACKED_DTYPE_END = 16 };
static const int kElemBytes[DTYPE_COUNT] = { 1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4 };

/* ---- validation: one set of rules for encode and decode ---- */

static int check_modes(const SimTmap *t, char *err, size_t errlen)
{
    if (t->dtype >= DTYPE_COUNT && t->dtype < PACKED_DTYPE_END)
        return dev_errf(err, errlen, "tensor map: tensorDataType = %d (a packed sub-byte type) is not modelled by the sim",
                        t->dtype);
    if (t->dtype < 0 || t->dtype >= DTYPE_COUNT)
        return dev_errf(err, errlen, "tensor map: tensorDataType = %d is not a CUtensorMapDataType (0..15)", t->dtype);
    if (t->interleave < TMAP_IL_NONE || t->interleave > TMAP_IL_32B)
        return dev_errf(err, errlen, "tensor map: interleave = %d is not 0 (none), 1 (16B) or 2 (32B)", t->interleave);
    if (t->swizzle > TMAP_SW_128B && t->swizzle <= 6)
        return dev_errf(err, errlen, "tensor map: swizzle = %d (a 128B mode with 32B/64B atoms) is not modelled by the sim",
                        t->swizzle);
    if (t->swizzle < TMAP_SW_NONE || t->swizzle > TMAP_SW_128B)
        return dev_errf(err, errlen, "tensor map: swizzle = %d is not a CUtensorMapSwizzle (0..6)", t->swizzle);
    if (t->interleave == TMAP_IL_32B && t->swizzle != TMAP_SW_32B)
        return dev_errf(err, errlen, "tensor map: interleave 32B needs swizzle 1 (32B), got swizzle = %d", t->swizzle);
    if (t->l2promo < 0 || t->l2promo > 3)
        return dev_errf(err, errlen, "tensor map: l2Promotion = %d is not 0..3 (none, 64B, 128B, 256B)", t->l2promo);
    if (t->oobfill != 0 && t->oobfill != 1)
        return dev_errf(err, errlen, "tensor map: oobFill = %d is not 0 (zero) or 1 (NaN)", t->oobfill);
    if (t->oobfill == 1 && t->dtype < FIRST_FLOAT_DTYPE)
        return dev_errf(err, errlen, "tensor map: oobFill = 1 (NaN) needs a floating-point type, got tensorDataType = %d",
                        t->dtype);
    return 0;
}

static int check_rank(const SimTmap *t, char *err, size_t errlen)
{
    if (t->rank < 1 || t->rank > TMAP_MAX_RANK)
        return dev_errf(err, errlen, "tensor map: tensorRank = %d is outside 1..%d", t->rank, TMAP_MAX_RANK);
    if (t->interleave != TMAP_IL_NONE && t->rank < 3)
        return dev_errf(err, errlen, "tensor map: tensorRank = %d with interleave %d; interleaved maps need rank 3..5",
                        t->rank, t->interleave);
    return 0;
}

/* 32-byte interleave raises both alignments from 16 to 32 bytes. */
static uint64_t global_align(const SimTmap *t) { return t->interleave == TMAP_IL_32B ? 32 : 16; }

static int check_global(const SimTmap *t, char *err, size_t errlen)
{
    uint64_t align = global_align(t);
    if (t->gaddr % align)
        return dev_errf(err, errlen, "tensor map: globalAddress = 0x%llx is not %llu-byte aligned",
                        (unsigned long long)t->gaddr, (unsigned long long)align);
    for (int i = 0; i < t->rank; i++)
        if (t->dim[i] < 1 || t->dim[i] > (1ull << 32))
            return dev_errf(err, errlen, "tensor map: globalDim[%d] = %llu is outside 1..2^32", i,
                            (unsigned long long)t->dim[i]);
    for (int i = 1; i < t->rank; i++) {
        if (t->stride[i] % align)
            return dev_errf(err, errlen, "tensor map: globalStrides[%d] = %llu is not a multiple of %llu", i - 1,
                            (unsigned long long)t->stride[i], (unsigned long long)align);
        if (t->stride[i] >= (1ull << 40))
            return dev_errf(err, errlen, "tensor map: globalStrides[%d] = %llu is not below 2^40", i - 1,
                            (unsigned long long)t->stride[i]);
    }
    return 0;
}

static int check_box(const SimTmap *t, char *err, size_t errlen)
{
    static const uint32_t kSpan[] = { 0, 32, 64, 128 };
    uint32_t inner = t->box[0] * (uint32_t)t->elem_bytes;
    for (int i = 0; i < t->rank; i++) {
        if (t->box[i] < 1 || t->box[i] > 256)
            return dev_errf(err, errlen, "tensor map: boxDim[%d] = %u is outside 1..256", i, t->box[i]);
        if (t->estride[i] < 1 || t->estride[i] > 8)
            return dev_errf(err, errlen, "tensor map: elementStrides[%d] = %u is outside 1..8", i, t->estride[i]);
    }
    if (t->interleave != TMAP_IL_NONE) return 0;
    if (inner % 16)
        return dev_errf(err, errlen, "tensor map: boxDim[0] = %u spans %u bytes, not a multiple of 16", t->box[0], inner);
    if (t->swizzle != TMAP_SW_NONE && inner > kSpan[t->swizzle])
        return dev_errf(err, errlen, "tensor map: boxDim[0] = %u spans %u bytes, more than swizzle %d's %u-byte span",
                        t->box[0], inner, t->swizzle, kSpan[t->swizzle]);
    return 0;
}

/* Order matters: the box rules read elem_bytes and swizzle, checked first. */
static int check_map(const SimTmap *t, char *err, size_t errlen)
{
    if (check_modes(t, err, errlen) || check_rank(t, err, errlen)) return -1;
    return (check_global(t, err, errlen) || check_box(t, err, errlen)) ? -1 : 0;
}

/* ---- bytes ---- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t checksum(const uint8_t b[TMAP_BYTES])
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < TMAP_BYTES; i++) {
        int in_sum = i >= OFF_SUM && i < OFF_SUM + 4;
        h = (h ^ (in_sum ? 0 : b[i])) * 16777619u;
    }
    return h;
}

static void serialize(const SimTmap *t, uint8_t out[TMAP_BYTES])
{
    memset(out, 0, TMAP_BYTES);
    memcpy(out + OFF_MAGIC, kMagic, sizeof kMagic);
    out[OFF_VERSION] = TMAP_VERSION;
    out[OFF_DTYPE] = (uint8_t)t->dtype, out[OFF_RANK] = (uint8_t)t->rank;
    out[OFF_INTERLEAVE] = (uint8_t)t->interleave, out[OFF_SWIZZLE] = (uint8_t)t->swizzle;
    out[OFF_L2] = (uint8_t)t->l2promo, out[OFF_OOB] = (uint8_t)t->oobfill;
    put_le(out + OFF_GADDR, t->gaddr, 8);
    for (int i = 0; i < t->rank; i++) {
        put_le(out + OFF_DIM + 8 * i, t->dim[i], 8);
        put_le(out + OFF_BOX + 2 * i, t->box[i], 2);
        out[OFF_ESTRIDE + i] = (uint8_t)t->estride[i];
        if (i) put_le(out + OFF_STRIDE + 8 * (i - 1), t->stride[i], 8);
    }
    put_le(out + OFF_SUM, checksum(out), 4);
}

/* Fields are read at their full stored width so that an out-of-range value
 * survives to check_map (a u8 rank of 200 stays 200). */
static void deserialize(const uint8_t in[TMAP_BYTES], SimTmap *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = in[OFF_DTYPE], t->rank = in[OFF_RANK];
    t->interleave = in[OFF_INTERLEAVE], t->swizzle = in[OFF_SWIZZLE];
    t->l2promo = in[OFF_L2], t->oobfill = in[OFF_OOB];
    t->elem_bytes = t->dtype < DTYPE_COUNT ? kElemBytes[t->dtype] : 0;
    t->gaddr = get_le(in + OFF_GADDR, 8);
    for (int i = 0; i < TMAP_MAX_RANK && i < t->rank; i++) {
        t->dim[i] = get_le(in + OFF_DIM + 8 * i, 8);
        t->box[i] = (uint32_t)get_le(in + OFF_BOX + 2 * i, 2);
        t->estride[i] = in[OFF_ESTRIDE + i];
        t->stride[i] = i ? get_le(in + OFF_STRIDE + 8 * (i - 1), 8) : (uint64_t)t->elem_bytes;
    }
}

/* ---- public ---- */

static int check_arrays(int rank, const uint64_t *dim, const uint64_t *gstrides, const uint32_t *box,
                        const uint32_t *estride, char *err, size_t errlen)
{
    const char *missing = !dim ? "globalDim" : !box ? "boxDim" : !estride ? "elementStrides"
                        : (!gstrides && rank > 1) ? "globalStrides" : NULL;
    if (missing) return dev_errf(err, errlen, "tensor map: %s is NULL", missing);
    return 0;
}

int sim_tmap_encode(int dtype, int rank, uint64_t gaddr, const uint64_t *dim, const uint64_t *gstrides_bytes,
                    const uint32_t *box, const uint32_t *estride, int interleave, int swizzle, int l2promo,
                    int oobfill, uint8_t out[TMAP_BYTES], char *err, size_t errlen)
{
    SimTmap t = { .dtype = dtype, .rank = rank, .gaddr = gaddr, .interleave = interleave, .swizzle = swizzle,
                  .l2promo = l2promo, .oobfill = oobfill };
    if (!out) return dev_errf(err, errlen, "tensor map: no output buffer");
    if (check_modes(&t, err, errlen) || check_rank(&t, err, errlen) ||
        check_arrays(rank, dim, gstrides_bytes, box, estride, err, errlen))
        return -1;
    t.elem_bytes = kElemBytes[dtype];
    for (int i = 0; i < rank; i++) {
        t.dim[i] = dim[i], t.box[i] = box[i], t.estride[i] = estride[i];
        t.stride[i] = i ? gstrides_bytes[i - 1] : (uint64_t)t.elem_bytes;
    }
    if (check_map(&t, err, errlen)) return -1;
    serialize(&t, out);
    return 0;
}

static int refuse_foreign(const uint8_t in[TMAP_BYTES], char *err, size_t errlen)
{
    static const uint8_t kZero[TMAP_BYTES];
    if (!memcmp(in, kZero, TMAP_BYTES))
        return dev_errf(err, errlen, "tensor map: all 128 bytes are zero (never encoded?)");
    if (!memcmp(in, "TMAP", 4))
        return dev_errf(err, errlen, "tensor map: bytes 0..3 are 'TMAP', the launch record's placeholder tag "
                        "(id %u); encode its tensormap_encodes entry with the sim first", (unsigned)get_le(in + 4, 4));
    return dev_errf(err, errlen, "tensor map: bytes 0..3 are %02x %02x %02x %02x, not the sim's magic 'SimT': "
                    "the sim did not encode this map", in[0], in[1], in[2], in[3]);
}

int sim_tmap_decode(const uint8_t in[TMAP_BYTES], SimTmap *t, char *err, size_t errlen)
{
    uint32_t want, got;
    if (!in || !t) return dev_errf(err, errlen, "tensor map: NULL argument to decode");
    if (memcmp(in + OFF_MAGIC, kMagic, sizeof kMagic)) return refuse_foreign(in, err, errlen);
    if (in[OFF_VERSION] != TMAP_VERSION)
        return dev_errf(err, errlen, "tensor map: encoding version %u, this sim reads version %d", in[OFF_VERSION],
                        TMAP_VERSION);
    want = (uint32_t)get_le(in + OFF_SUM, 4), got = checksum(in);
    if (want != got)
        return dev_errf(err, errlen, "tensor map: checksum 0x%08x does not match its bytes (0x%08x): "
                        "the map was modified after encoding", want, got);
    deserialize(in, t);
    return check_map(t, err, errlen);
}
