/* The tensor-core operand descriptors as pure decoders, and where an operand
 * element lives under a descriptor's canonical layout. Sources, per part:
 *   - smem descriptor bits: PTX ISA "tcgen05 Shared Memory Descriptor" and
 *     "wgmma Matrix Descriptor"; the same positions as CUTLASS's
 *     UMMA::SmemDescriptor / GMMA::GmmaDescriptor.
 *   - canonical layouts (what LBO and SBO mean): PTX ISA "Shared Memory Matrix
 *     Layout" / "tcgen05 canonical layouts", written in 16-byte units as
 *     CUTLASS's make_umma_desc / make_gmma_desc comments state them.
 *   - swizzles: cute Swizzle<1,4,3>, <2,4,3>, <3,4,3>, and <2,5,2> for the
 *     128-byte swizzle with 32-byte atoms.
 *   - instruction descriptor: PTX ISA "tcgen05 Instruction descriptor"
 *     (kind::f16, kind::tf32), shapes from "tcgen05 Matrix Shape".
 *   - tcgen05.ld/st fragments: PTX ISA "Matrix fragments for tcgen05.ld/st"
 *     (figures), read through CUTLASS's Copy_Traits<SM100_TMEM_LOAD_*>.
 *   - wgmma fragments: PTX ISA "wgmma register fragments" for m64nNk16. */
#include "sim_desc.h"
#include "device_impl.h"

static unsigned field(uint64_t w, int lo, int bits) { return (unsigned)(w >> lo) & ((1u << bits) - 1); }

/* ---- shared-memory descriptors ---- */

/* The fields both generations share: start 0-13, LBO 16-29, SBO 32-45 (each
 * in 16-byte units), base offset 49-51. */
static void sdesc_common(uint64_t desc, SimSmemDesc *out)
{
    out->start = field(desc, 0, 14) << 4;
    out->lbo = field(desc, 16, 14) << 4;
    out->sbo = field(desc, 32, 14) << 4;
    out->base_offset = (int)field(desc, 49, 3);
    out->lbo_mode = 0;
    out->version = 0;
}

int sim_umma_sdesc_decode(uint64_t desc, SimSmemDesc *out, char *err, size_t errlen)
{
    /* layout type, bits 61-63: 0 none, 1 128B/32B atoms, 2 128B, 4 64B, 6 32B */
    static const int layouts[8] = {SL_INTERLEAVE, SL_SW128_BASE32B, SL_SW128, -1, SL_SW64, -1, SL_SW32, -1};
    unsigned lt = field(desc, 61, 3), version = field(desc, 46, 2);
    if (version != 1)
        return dev_errf(err, errlen, "tcgen05 smem descriptor 0x%016llx: version (bits 46-47) is %u, sm_100 needs 1",
                        (unsigned long long)desc, version);
    if (layouts[lt] < 0)
        return dev_errf(err, errlen, "tcgen05 smem descriptor 0x%016llx: layout type (bits 61-63) %u is reserved",
                        (unsigned long long)desc, lt);
    sdesc_common(desc, out);
    out->version = (int)version;
    out->lbo_mode = (int)field(desc, 52, 1);
    out->layout = (SimSmemLayout)layouts[lt];
    return 0;
}

int sim_wgmma_sdesc_decode(uint64_t desc, SimSmemDesc *out, char *err, size_t errlen)
{
    /* layout type, bits 62-63: 0 interleave, 1 128B, 2 64B, 3 32B; every
     * value is defined, so nothing here can fail */
    static const SimSmemLayout layouts[4] = {SL_INTERLEAVE, SL_SW128, SL_SW64, SL_SW32};
    (void)err, (void)errlen;
    sdesc_common(desc, out);
    out->layout = layouts[field(desc, 62, 2)];
    return 0;
}

int sim_sdesc_atom_bytes(SimSmemLayout l)
{
    switch (l) {
    case SL_INTERLEAVE: return 16;
    case SL_SW32: return 32;
    case SL_SW64: return 64;
    case SL_SW128:
    case SL_SW128_BASE32B: return 128;
    }
    return -1;
}

/* A swizzle as cute's Swizzle<bits, base, shift>: the `bits` address bits from
 * base + shift up are XORed into the `bits` bits from base up. Every layout
 * here takes its row index from bit 7 (base + shift = 7), so a pattern spans
 * 2^bits rows of 128 bytes. */
typedef struct { int bits, base, shift; } Swz;

static Swz layout_swz(SimSmemLayout l)
{
    switch (l) {
    case SL_SW32: return (Swz){1, 4, 3};
    case SL_SW64: return (Swz){2, 4, 3};
    case SL_SW128: return (Swz){3, 4, 3};
    case SL_SW128_BASE32B: return (Swz){2, 5, 2};
    default: return (Swz){0, 4, 3};
    }
}

uint32_t sim_sdesc_swizzle(SimSmemLayout l, uint32_t addr)
{
    Swz s = layout_swz(l);
    uint32_t mask = ((1u << s.bits) - 1) << s.base;
    return addr ^ ((addr >> s.shift) & mask);
}

int sim_sdesc_check(const SimSmemDesc *d, char *err, size_t errlen)
{
    if (sim_sdesc_atom_bytes(d->layout) < 0) return dev_errf(err, errlen, "smem descriptor: unknown layout %d", (int)d->layout);
    if (d->lbo_mode)
        return dev_errf(err, errlen, "smem descriptor: LBO mode 1 (absolute address, sm_103a 48-byte K tiles) is not simulated");
    Swz s = layout_swz(d->layout);
    unsigned rows = 1u << s.bits, phase = (d->start >> 7) & (rows - 1);
    /* the ISA: a start off the pattern's boundary needs base offset = (start >> 7) & 7 */
    if (d->layout != SL_INTERLEAVE && phase != ((unsigned)d->base_offset & (rows - 1)))
        return dev_errf(err, errlen,
                        "smem descriptor: start 0x%x sits in row %u of its %u-row swizzle pattern but base offset is %d",
                        d->start, phase, rows, d->base_offset);
    return 0;
}

int sim_sdesc_check_operand(const SimSmemDesc *d, int k_major, int elem_bytes, char *err, size_t errlen)
{
    if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4)
        return dev_errf(err, errlen, "smem operand: %d-byte elements (1 for fp8, 2 for f16/bf16, 4 for tf32)", elem_bytes);
    if (elem_bytes == 1 && !k_major) return dev_errf(err, errlen, "smem operand: an fp8 operand is K-major");
    int base32 = d->layout == SL_SW128_BASE32B;
    if (base32 && (k_major || elem_bytes != 4))
        return dev_errf(err, errlen, "smem operand: the 128B swizzle with 32-byte atoms is for MN-major tf32 only");
    if (!k_major && elem_bytes == 4 && !base32)
        return dev_errf(err, errlen, "smem operand: an MN-major tf32 operand needs the 128B swizzle with 32-byte atoms");
    return 0;
}

/* Offsets before swizzling, from the canonical layouts in 16-byte units
 * (T = elements per 16 bytes, W = atom width in 16-byte units):
 *   K-major, interleave: ((8,m),(T,2k)):((1,SBO),(1,LBO))  rows 16 B apart,
 *     8-row groups at SBO, 16-byte K chunks at LBO
 *   K-major, swizzled:   ((8,m),(T,2)):((W,SBO),(1,T))     rows W apart,
 *     8-row groups at SBO, K contiguous inside the row; LBO unused
 *   MN-major, interleave: ((T,m),(8,k)):((1,SBO),(1,LBO))  16-byte MN chunks at
 *     SBO, K rows 16 B apart, 8-deep K groups at LBO
 *   MN-major, swizzled:  ((T,W,m),(8,k)):((1,T,LBO),(W,SBO)) MN runs W wide,
 *     atoms along MN at LBO, K rows W apart, 8-deep K groups at SBO (4-deep
 *     for the 32-byte-atom 128B swizzle) */
static int64_t k_major_offset(const SimSmemDesc *d, int eb, int mn, int k)
{
    int64_t kb = (int64_t)k * eb, w = sim_sdesc_atom_bytes(d->layout);
    int64_t group = (int64_t)(mn / 8) * d->sbo;
    if (d->layout == SL_INTERLEAVE) return group + (mn % 8) * 16 + (kb / 16) * d->lbo + kb % 16;
    if (d->layout == SL_SW128_BASE32B || kb >= w) return -1;
    return group + (mn % 8) * w + kb;
}

static int64_t mn_major_offset(const SimSmemDesc *d, int eb, int mn, int k)
{
    int64_t mb = (int64_t)mn * eb, w = sim_sdesc_atom_bytes(d->layout);
    if (d->layout == SL_INTERLEAVE) return (mb / 16) * d->sbo + mb % 16 + (k % 8) * 16 + (int64_t)(k / 8) * d->lbo;
    int depth = d->layout == SL_SW128_BASE32B ? 4 : 8;
    return (mb / w) * d->lbo + mb % w + (k % depth) * w + (int64_t)(k / depth) * d->sbo;
}

uint32_t sim_sdesc_elem_addr(const SimSmemDesc *d, int k_major, int elem_bytes, int mn, int k)
{
    if ((elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4) || mn < 0 || k < 0 || sim_sdesc_atom_bytes(d->layout) < 0)
        return SIM_SDESC_BAD_ADDR;
    int64_t off = k_major ? k_major_offset(d, elem_bytes, mn, k) : mn_major_offset(d, elem_bytes, mn, k);
    int64_t addr = off < 0 ? -1 : (int64_t)d->start + off;
    if (addr < 0 || addr >= (int64_t)SIM_SDESC_BAD_ADDR) return SIM_SDESC_BAD_ADDR;
    return sim_sdesc_swizzle(d->layout, (uint32_t)addr);
}

/* ---- tcgen05 instruction descriptor (kind::f16, kind::tf32) ---- */

static int idesc_types(unsigned a, unsigned b, unsigned dfmt, int kind, SimInstrDesc *out, char *err, size_t errlen)
{
    static const int f16_kind[2] = {UMMA_T_F16, UMMA_T_BF16};
    if (kind == UMMA_KIND_TF32) {
        if (a != 2 || b != 2)
            return dev_errf(err, errlen, "instruction descriptor: kind::tf32 needs A and B format 2 (tf32), got %u and %u",
                            a, b);
        if (dfmt != 1) return dev_errf(err, errlen, "instruction descriptor: kind::tf32 needs D format 1 (f32), got %u", dfmt);
        out->a_type = out->b_type = UMMA_T_TF32;
    } else {
        if (a > 1 || b > 1)
            return dev_errf(err, errlen,
                            "instruction descriptor: kind::f16 takes A/B format 0 (f16) or 1 (bf16), got %u and %u", a, b);
        if (a != b) return dev_errf(err, errlen, "instruction descriptor: A format %u and B format %u differ", a, b);
        if (dfmt > 1) return dev_errf(err, errlen, "instruction descriptor: D format %u (0 f16, 1 f32)", dfmt);
        if (a == 1 && dfmt != 1) return dev_errf(err, errlen, "instruction descriptor: bf16 inputs need an f32 D (format 1)");
        out->a_type = out->b_type = f16_kind[a];
    }
    out->d_type = dfmt ? UMMA_T_F32 : UMMA_T_F16;
    return 0;
}

/* "tcgen05 Matrix Shape", dense kind::f16/tf32: cta_group::1 M 64 (N 8..256
 * step 8) or 128 (N 16..256 step 16); cta_group::2 M 128 or 256, N 16..256
 * step 16. */
static int idesc_shape(int m, int n, int cta_group, int ws, char *err, size_t errlen)
{
    if (ws) {   /* weight-stationary: cta_group::1, M 32/64/128, N 64/128/256 */
        if (cta_group != 1) return dev_errf(err, errlen, "instruction descriptor: .ws takes cta_group::1 only");
        if ((m != 32 && m != 64 && m != 128) || (n != 64 && n != 128 && n != 256))
            return dev_errf(err, errlen, "instruction descriptor: M = %d, N = %d is not a .ws shape (M 32, 64 or 128; N 64, 128 or 256)",
                            m, n);
        return 0;
    }
    int m_ok = cta_group == 1 ? (m == 64 || m == 128) : (m == 128 || m == 256);
    if (!m_ok)
        return dev_errf(err, errlen, "instruction descriptor: M = %d (bits 24-28) is not a cta_group::%d shape (%s)", m,
                        cta_group, cta_group == 1 ? "64 or 128" : "128 or 256");
    int step = cta_group == 1 && m == 64 ? 8 : 16;
    if (n < step || n > 256 || n % step)
        return dev_errf(err, errlen,
                        "instruction descriptor: N = %d (bits 17-22) with M = %d, cta_group::%d: needs %d..256 in steps of %d",
                        n, m, cta_group, step, step);
    return 0;
}

int sim_umma_idesc_decode(uint32_t idesc, int kind, int cta_group, int ws, SimInstrDesc *out, char *err, size_t errlen)
{
    if (kind != UMMA_KIND_F16 && kind != UMMA_KIND_TF32)
        return dev_errf(err, errlen, "instruction descriptor: unknown kind %d", kind);
    if (cta_group != 1 && cta_group != 2) return dev_errf(err, errlen, "instruction descriptor: cta_group::%d", cta_group);
    if (idesc & (1u << 6 | 1u << 23 | 1u << 29))
        return dev_errf(err, errlen, "instruction descriptor 0x%08x: reserved bit 6, 23 or 29 is set", idesc);
    if (field(idesc, 3, 1))
        return dev_errf(err, errlen, "instruction descriptor 0x%08x: saturate (bit 3) is for integer kinds only", idesc);
    SimInstrDesc d = {0};
    d.m = (int)field(idesc, 24, 5) << 4;
    d.n = (int)field(idesc, 17, 6) << 3;
    if (idesc_types(field(idesc, 7, 3), field(idesc, 10, 3), field(idesc, 4, 2), kind, &d, err, errlen)) return -1;
    if (idesc_shape(d.m, d.n, cta_group, ws, err, errlen)) return -1;
    d.sparse = (int)field(idesc, 2, 1);
    d.negate_a = (int)field(idesc, 13, 1);
    d.negate_b = (int)field(idesc, 14, 1);
    d.a_mn_major = (int)field(idesc, 15, 1);
    d.b_mn_major = (int)field(idesc, 16, 1);
    d.max_shift = (int)field(idesc, 30, 2);
    *out = d;
    return 0;
}

/* ---- tcgen05.ld / tcgen05.st data movement shapes ---- */

/* Registers per thread at .x1 and the largest .num, per shape (ISA table
 * "num shapes": every shape stops at 128 registers). */
static const int shape_regs_x1[TM_SHAPES] = {1, 1, 2, 4, 1};

int sim_tmem_shape_regs(int shape, int num)
{
    if (shape < 0 || shape >= TM_SHAPES || num < 1 || num > 128 || (num & (num - 1))) return -1;
    int regs = shape_regs_x1[shape] * num;
    return regs <= 128 ? regs : -1;
}

/* Per thread t with quad g = t/4 and q = t%4 (the mma.sync C-fragment
 * pattern), repeat x = the .num copy a register belongs to:
 *   32x32b:   lane t, column reg
 *   16x64b:   lane g + 8*(t%2), column 2x + (t/2)%2
 *   16x128b:  lane g (+8 for the odd register), column 4x + q
 *   16x256b:  lane g (+8 for registers 2,3 of a four), column 8x + 2q (+1)
 *   16x32bx2: threads 0-15 lane t, column reg; threads 16-31 lane t-16,
 *             column imm_half_off + reg */
void sim_tmem_shape_map(int shape, int num, int thread, int reg, int imm_half_off, int *lane, int *col)
{
    int regs = sim_tmem_shape_regs(shape, num);
    *lane = *col = -1;
    if (regs < 0 || thread < 0 || thread > 31 || reg < 0 || reg >= regs) return;
    int g = thread / 4, q = thread % 4;
    switch (shape) {
    case TM_32X32B: *lane = thread, *col = reg; break;
    case TM_16X64B: *lane = g + 8 * (thread % 2), *col = 2 * reg + (thread / 2) % 2; break;
    case TM_16X128B: *lane = g + 8 * (reg % 2), *col = 4 * (reg / 2) + q; break;
    case TM_16X256B: *lane = g + 8 * ((reg / 2) % 2), *col = 8 * (reg / 4) + 2 * q + reg % 2; break;
    case TM_16X32BX2: *lane = thread % 16, *col = reg + (thread < 16 ? 0 : imm_half_off); break;
    }
}

/* ---- tcgen05.cp lane maps (the table in sim_desc.h) ---- */

int sim_tmem_cp_dims(int cp, int *rows, int *words, int *copies)
{
    static const int dims[CP_SHAPES][3] = {{128, 8, 1}, {4, 8, 1}, {128, 4, 1}, {64, 4, 2}, {64, 4, 2}, {32, 4, 4}};
    if (cp < 0 || cp >= CP_SHAPES) return -1;
    *rows = dims[cp][0], *words = dims[cp][1], *copies = dims[cp][2];
    return 0;
}

int sim_tmem_cp_lane(int cp, int row, int copy)
{
    int rows, words, copies;
    if (sim_tmem_cp_dims(cp, &rows, &words, &copies) || row < 0 || row >= rows || copy < 0 || copy >= copies) return -1;
    switch (cp) {
    case CP_4X256B: return 32 * row;
    case CP_64X128B_02_13: return row + 64 * copy;
    case CP_64X128B_01_23: return 64 * (row / 32) + row % 32 + 32 * copy;
    case CP_32X128B_X4: return row + 32 * copy;
    default: return row;
    }
}

/* ---- wgmma register fragments (m64nNk16) ---- */

/* D: warp w of the warpgroup owns rows 16w..16w+15; inside it the m16n8 C
 * fragment repeats along N every 4 elements: element i -> row g (+8 when
 * i%4 >= 2), column 8*(i/4) + 2q + i%2. */
void sim_wgmma_d_map(int n, int thread, int reg, int *row, int *col)
{
    *row = *col = -1;
    if (n < 8 || n > 256 || n % 8 || thread < 0 || thread > 127 || reg < 0 || reg >= n / 2) return;
    int w = thread / 32, g = thread % 32 / 4, q = thread % 4;
    *row = 16 * w + g + 8 * ((reg / 2) % 2);
    *col = 8 * (reg / 4) + 2 * q + reg % 2;
}

/* A: per warp the mma.m16n8k16 A fragment: register r holds a pair at row g
 * (+8 for odd r), k = 2q + half (+8 for r >= 2). */
void sim_wgmma_a_map(int thread, int reg, int half, int *row, int *k)
{
    *row = *k = -1;
    if (thread < 0 || thread > 127 || reg < 0 || reg > 3 || half < 0 || half > 1) return;
    int w = thread / 32, g = thread % 32 / 4, q = thread % 4;
    *row = 16 * w + g + 8 * (reg % 2);
    *k = 2 * q + half + 8 * (reg / 2);
}
