/* The sim's per-lane arithmetic against a GPU's, on random straight-line PTX.
 *
 * Each seed makes one program (gen below) and its inputs: 64 threads, each loading 16 words of 64 bits (random
 * bits mixed with the edges of every type: NaNs, infinities, subnormals, -0, integer extremes, shift counts past
 * the width) and computing 16 independent chains of 2-6 instructions drawn from the templates below (integer and
 * float arithmetic in every rounding mode, .ftz, .sat, conversions, bit ops, compares and selects), every step's
 * value stored as 64 bits. Only instructions whose result the PTX ISA defines exactly are drawn (no .approx; no
 * integer division by 0), so the sim must give the GPU's bits, but for a NaN's payload and sign, which the ISA
 * leaves open and ptxas moves (nan_blind).
 *
 * tests/fuzz_alu.golden holds, per seed, an FNV-1a hash of each chain's values (every step, 64 threads) as a GPU computed them
 * (written by --device cuda --write on the GPU the file's header names; scripts/device_fuzz_golden.sh runs it in
 * shards on a device). make test reruns every seed there on the
 * sim and compares; a mismatch prints the chain. tests/fuzz_alu.known lists the seeds the sim does not match (by
 * seed, the chains that differ): make test reports them as skipped and fails if one of them starts to match, so
 * that the list only shrinks. It is empty: every seed of the golden file matches.
 *
 *   test_fuzz_alu                                  every seed of the golden file on the sim
 *   test_fuzz_alu --known-out FILE                 write the seeds the sim does not match (tests/fuzz_alu.known)
 *   test_fuzz_alu --device cuda|sim --seeds A-B --write FILE [--raw DIR]
 *                                                  run seeds A..B, write their hashes (and the raw outputs)
 *   test_fuzz_alu --seed S --show                  print seed S's program
 *   test_fuzz_alu --seed 1 --dump DIR              write a few programs for ptxas (make test's probes) */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "check.h"
#include "device.h"
#include "golden_dev.h"
#include "hostdata.h"

enum { THREADS = 64, IN_WORDS = 16, SLOTS = 16, STEPS = 6, WORDS = SLOTS * STEPS, MAX_TEXT = 1 << 17 };
#define GOLDEN "tests/fuzz_alu.golden"
#define KNOWN "tests/fuzz_alu.known"
/* The known list's head: what its seeds are and how to find why each differs */
#define KNOWN_WHY \
    "# For each, read the GPU's per-step values (--raw on the GPU, --raw on the sim) to say why: the sim, or ptxas\n" \
    "# compiling two steps as one whose result is not the PTX's (which the templates avoid where seen: integer abs and\n" \
    "# neg are not fed on, the saturating integer steps take their operands from the inputs).\n"

/* ---- randomness (runner/hostdata.h's generator: the same stream on every host) ---- */
static int pick(Rng *r, int n) { return (int)(rng_u64(r) % (uint64_t)n); }

/* ---- inputs: each 32-bit half an edge of some type, or random ---- */
static uint32_t edge32(Rng *r) {
    static const uint32_t e[] = {
        0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
        0x7F800001, 0x7FBFFFFF, 0x00000001, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x7F7FFFFF,
        0xFF7FFFFF, 0x3F000000, 0x3F800001, 0x4B000000, 0x4B000001, 0x4EFFFFFF, 0x4F000000, 0xCF000000,
        0x4F800000, 0x5F000000, 0xDF000000, 0x3EFFFFFF, 0x3FC00000, 0x40200000, 0xC0200000, 0x33800000,
        0x7FFFFFFF, 0x80000001, 0xFFFFFFFF, 0x00000002, 0x0000001F, 0x00000020, 0x00000021, 0x0000003F,
        0x00000040, 0x000000FF, 0x00007FFF, 0x00008000, 0x0000FFFF, 0x7C007C00, 0xFC00FC00, 0x7E007E01,
        0x00010001, 0x03FF8001, 0x3C00BC00, 0x7BFF3555, 0x7F807F80, 0x7FC0FF81, 0x00018080, 0x3F80C000,
        0x477FE000, 0x477FF000, 0x38800000, 0x387FC000, 0x33000000, 0x43E00000, 0x47600000, 0x3B800000,
        0x3F7FFFFF, 0x007FFFFF, 0x04000400, 0x7E007F7F};
    return e[pick(r, (int)(sizeof e / sizeof e[0]))];
}
static uint64_t edge64(Rng *r) {
    static const uint64_t e[] = {
        0x0000000000000000ull, 0x8000000000000000ull, 0x3FF0000000000000ull, 0xBFF0000000000000ull,
        0x7FF0000000000000ull, 0xFFF0000000000000ull, 0x7FF8000000000000ull, 0x7FF0000000000001ull,
        0x0000000000000001ull, 0x000FFFFFFFFFFFFFull, 0x0010000000000000ull, 0x7FEFFFFFFFFFFFFFull,
        0x3FE0000000000000ull, 0x3FF0000000000001ull, 0x4330000000000000ull, 0x43E0000000000000ull,
        0xC3E0000000000000ull, 0x43F0000000000000ull, 0x41DFFFFFFFC00000ull, 0x41E0000000000000ull,
        0x47EFFFFFE0000000ull, 0x47EFFFFFF0000000ull, 0x36A0000000000000ull, 0x3690000000000000ull,
        0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, 0x0000000000000040ull, 0x000000000000003Full,
        0x3FF8000000000000ull, 0x4004000000000000ull, 0xC004000000000000ull, 0x3FEFFFFFFFFFFFFFull};
    return e[pick(r, (int)(sizeof e / sizeof e[0]))];
}
static uint64_t input_word(Rng *r) {
    switch (pick(r, 6)) {
    case 0: return rng_u64(r);
    case 1: return edge64(r);
    case 2: return (uint64_t)edge32(r) << 32 | edge32(r);
    case 3: return (uint64_t)(rng_u64(r) & 0xFFFFFFFFu) << 32 | edge32(r);
    case 4: return (uint64_t)(int64_t)(int32_t)(pick(r, 161) - 80);   /* small integers, shift counts */
    default: {   /* a float near 1 or a few, or a small integer as a float */
        float f = (float)(pick(r, 2001) - 1000) / (float)(1 << pick(r, 12));
        uint32_t b;
        memcpy(&b, &f, 4);
        return (uint64_t)edge32(r) << 32 | b;
    }
    }
}

/* ---- the program text ---- */
typedef struct { char *p; size_t n; int over; } Txt;
static void put(Txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Txt *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p + t->n, MAX_TEXT - t->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= MAX_TEXT - t->n) t->over = 1;
    else t->n += (size_t)k;
}

/* Register classes: u .b32 (%r), w .b64 (%rd), f .f32 (%f), d .f64 (%fd), h .b16 (%h), p .pred (%p).
 * Values of float formats kept in integer registers have classes of their own, so that a chain hands them only to
 * instructions that read them as floats (a NaN's bits are not defined, see nan_blind, and must not reach an integer
 * result, nor one format's NaN be read as a number of another): H an f16 and b a bf16 in a .b16, U an f16x2 and V
 * a bf16x2 in a .b32, E an e4m3x2 or e5m2x2 in a .b16 (their NaNs are NaNs of both).
 * Operand classes that only draw from the inputs (never the chain's value): y an f32 and z an f64 (copysign's sign:
 * a chain's NaN would give its undefined sign to a number); I a .b32, W a .b64 and J a .b16 integer, the operands of
 * the saturating integer steps (ptxas folds an add or sub into a following add.sat/sub.sat and saturates once, and
 * a float-to-integer cvt into a following cvt.sat, converting once: the GPU's value is then not the two steps'
 * PTX); and the ranged u's: S a shift or field count in 0..63 (past the width included), N a positive divisor, B a
 * field base 0..31, O an fns offset in -32..32. */
typedef struct { const char *fmt; char out; const char *in; } Tmpl;
static const Tmpl kTmpl[] = {
    /* 32-bit integers */
    {"{add|sub}.{u32|s32} $d, $a, $b;", 'u', "uu"},
    {"{add|sub}.sat.s32 $d, $a, $b;", 'u', "II"},
    {"mul.{lo|hi}.{u32|s32} $d, $a, $b;", 'u', "uu"},
    {"mul.wide.{u32|s32} $d, $a, $b;", 'w', "uu"},
    {"mad.{lo|hi}.{u32|s32} $d, $a, $b, $c;", 'u', "uuu"},
    {"mad.wide.{u32|s32} $d, $a, $b, $c;", 'w', "uuw"},
    {"{div|rem}.{u32|s32} $d, $a, $b;", 'u', "uN"},
    {"{min|max}.{u32|s32} $d, $a, $b;", 'u', "uu"},
    {"{min|max}.relu.s32 $d, $a, $b;", 'u', "uu"},
    {"{abs|neg}.s32 $d, $a;", 'u', "u"},
    {"{and|or|xor}.b32 $d, $a, $b;", 'u', "uu"},
    {"not.b32 $d, $a;", 'u', "u"},
    {"shl.b32 $d, $a, $b;", 'u', "uS"},
    {"shr.{b32|u32|s32} $d, $a, $b;", 'u', "uS"},
    {"{brev|popc|clz}.b32 $d, $a;", 'u', "u"},
    {"bfind{|.shiftamt}.{u32|s32} $d, $a;", 'u', "u"},
    {"bfe.{u32|s32} $d, $a, $b, $c;", 'u', "uSS"},
    {"bfi.b32 $d, $a, $b, $c, $e;", 'u', "uuSS"},
    {"prmt.b32 $d, $a, $b, $c;", 'u', "uuu"},
    {"shf.{l|r}.{wrap|clamp}.b32 $d, $a, $b, $c;", 'u', "uuS"},
    {"sad.{u32|s32} $d, $a, $b, $c;", 'u', "uuu"},
    {"dp4a.{u32|s32}.{u32|s32} $d, $a, $b, $c;", 'u', "uuu"},
    {"dp2a.{lo|hi}.{u32|s32}.{u32|s32} $d, $a, $b, $c;", 'u', "uuu"},
    {"fns.b32 $d, $a, $b, $c;", 'u', "uBO"},
    {"setp.{eq|ne|lt|le|gt|ge}.{u32|s32} $d, $a, $b;", 'p', "uu"},
    {"setp.{lo|ls|hi|hs}.u32 $d, $a, $b;", 'p', "uu"},
    {"setp.{lt|ge|ne}.{and|or|xor}.s32 $d, $a, $b, $c;", 'p', "uup"},
    {"selp.b32 $d, $a, $b, $c;", 'u', "uup"},
    {"cvt.{u16|s16|u8|s8}.{u32|s32} $d, $a;", 'h', "u"},
    {"cvt.sat.{u16|s16|u8|s8}.{u32|s32} $d, $a;", 'h', "I"},
    {"cvt.{u32|s32}.{u16|s16|u8|s8} $d, $a;", 'u', "h"},
    {"cvt.{u32|s32}.{u64|s64} $d, $a;", 'u', "w"},
    {"cvt.sat.{u32|s32}.{u64|s64} $d, $a;", 'u', "W"},
    {"cvt.{u64|s64}.{u32|s32} $d, $a;", 'w', "u"},
    {"cvt.{rn|rz|rm|rp}.f32.{u32|s32} $d, $a;", 'f', "u"},
    {"cvt.rn.f64.{u32|s32} $d, $a;", 'd', "u"},
    /* 16-bit integers */
    {"{add|sub|mul.lo|mul.hi}.{u16|s16} $d, $a, $b;", 'h', "hh"},
    {"mad.{lo|hi}.{u16|s16} $d, $a, $b, $c;", 'h', "hhh"},
    {"mul.wide.{u16|s16} $d, $a, $b;", 'u', "hh"},
    {"{min|max}.{u16|s16} $d, $a, $b;", 'h', "hh"},
    {"{abs|neg}.s16 $d, $a;", 'h', "h"},
    {"{and|or|xor}.b16 $d, $a, $b;", 'h', "hh"},
    {"not.b16 $d, $a;", 'h', "h"},
    {"shl.b16 $d, $a, $b;", 'h', "hS"},
    {"shr.{b16|u16|s16} $d, $a, $b;", 'h', "hS"},
    {"setp.{eq|ne|lt|le|gt|ge}.{u16|s16} $d, $a, $b;", 'p', "hh"},
    {"cvt.{u8|s8}.{u16|s16} $d, $a;", 'h', "h"},
    {"cvt.sat.{u8|s8}.{u16|s16} $d, $a;", 'h', "J"},
    {"cvt.{u16|s16}.{u8|s8} $d, $a;", 'h', "h"},
    /* across the warp (every lane takes part) */
    {"shfl.sync.{idx|bfly|down}.b32 $d, $a, $b, {31|15|7199}, -1;", 'u', "uB"},
    {"shfl.sync.up.b32 $d, $a, $b, {0|7168}, -1;", 'u', "uB"},
    {"vote.sync.ballot.b32 $d, $a, -1;", 'u', "p"},
    {"vote.sync.{all|any|uni}.pred $d, $a, -1;", 'p', "p"},
    {"redux.sync.{add|min|max}.{u32|s32} $d, $a, -1;", 'u', "u"},
    {"redux.sync.{and|or|xor}.b32 $d, $a, -1;", 'u', "u"},
    {"match.{any|all}.sync.b32 $d, $a, -1;", 'u', "u"},
    {"match.any.sync.b64 $d, $a, -1;", 'u', "w"},
    /* 64-bit integers */
    {"{add|sub}.{u64|s64} $d, $a, $b;", 'w', "ww"},
    {"mul.{lo|hi}.{u64|s64} $d, $a, $b;", 'w', "ww"},
    {"mad.{lo|hi}.{u64|s64} $d, $a, $b, $c;", 'w', "www"},
    {"{div|rem}.{u64|s64} $d, $a, $b;", 'w', "wN"},
    {"{min|max}.{u64|s64} $d, $a, $b;", 'w', "ww"},
    {"{abs|neg}.s64 $d, $a;", 'w', "w"},
    {"{and|or|xor}.b64 $d, $a, $b;", 'w', "ww"},
    {"not.b64 $d, $a;", 'w', "w"},
    {"shl.b64 $d, $a, $b;", 'w', "wS"},
    {"shr.{b64|u64|s64} $d, $a, $b;", 'w', "wS"},
    {"brev.b64 $d, $a;", 'w', "w"},
    {"{popc|clz}.b64 $d, $a;", 'u', "w"},
    {"bfind{|.shiftamt}.{u64|s64} $d, $a;", 'u', "w"},
    {"bfe.{u64|s64} $d, $a, $b, $c;", 'w', "wSS"},
    {"bfi.b64 $d, $a, $b, $c, $e;", 'w', "wwSS"},
    {"setp.{eq|ne|lt|le|gt|ge}.{u64|s64} $d, $a, $b;", 'p', "ww"},
    {"selp.b64 $d, $a, $b, $c;", 'w', "wwp"},
    {"cvt.{rn|rz|rm|rp}.{f32|f64}.{u64|s64} $d, $a;", 'F', "w"},
    /* f32 */
    {"{add|sub|mul}{|.rn|.rz|.rm|.rp}{|.ftz}{|.sat}.f32 $d, $a, $b;", 'f', "ff"},
    {"{fma|mad}.{rn|rz|rm|rp}{|.ftz}{|.sat}.f32 $d, $a, $b, $c;", 'f', "fff"},
    {"div.{rn|rz|rm|rp}{|.ftz}.f32 $d, $a, $b;", 'f', "ff"},
    {"rcp.{rn|rz|rm|rp}{|.ftz}.f32 $d, $a;", 'f', "f"},
    {"sqrt.{rn|rz|rm|rp}{|.ftz}.f32 $d, $a;", 'f', "f"},
    {"{min|max}{|.ftz}{|.NaN}.f32 $d, $a, $b;", 'f', "ff"},
    {"{abs|neg}{|.ftz}.f32 $d, $a;", 'f', "f"},
    {"copysign.f32 $d, $a, $b;", 'f', "yf"},
    {"testp.{finite|infinite|number|notanumber|normal|subnormal}.f32 $d, $a;", 'p', "f"},
    {"setp.{eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan}{|.ftz}.f32 $d, $a, $b;", 'p', "ff"},
    {"selp.f32 $d, $a, $b, $c;", 'f', "ffp"},
    {"cvt.{rni|rzi|rmi|rpi}{|.ftz}{|.sat}.f32.f32 $d, $a;", 'f', "f"},
    {"cvt{.ftz|.sat|.ftz.sat}.f32.f32 $d, $a;", 'f', "f"},
    {"cvt.{rni|rzi|rmi|rpi}{|.ftz}{|.sat}.{u32|s32}.f32 $d, $a;", 'u', "f"},
    {"cvt.{rni|rzi|rmi|rpi}{|.ftz}.{u64|s64}.f32 $d, $a;", 'w', "f"},
    {"cvt.{rni|rzi|rmi|rpi}{|.ftz}.{u16|s16}.f32 $d, $a;", 'h', "f"},
    {"cvt{|.ftz}.f64.f32 $d, $a;", 'd', "f"},
    {"cvt.{rn|rz|rm|rp}{|.ftz}{|.sat}.f32.f64 $d, $a;", 'f', "d"},
    {"cvt.{rn|rz|rm|rp}{|.sat}.f16.f32 $d, $a;", 'H', "f"},
    {"cvt.{rn|rz}{|.relu}{|.satfinite}.f16.f32 $d, $a;", 'H', "f"},
    {"cvt.{rn|rz}{|.relu}{|.satfinite}.bf16.f32 $d, $a;", 'b', "f"},
    {"cvt.{rm|rp}.bf16.f32 $d, $a;", 'b', "f"},
    {"cvt.{rn|rz|rm|rp}.f16.f64 $d, $a;", 'H', "d"},
    {"cvt.{rn|rz|rm|rp}.bf16.f64 $d, $a;", 'b', "d"},
    {"cvt.{rn|rz|rm|rp}.f16.{u32|s32} $d, $a;", 'H', "u"},
    {"cvt.{rn|rz|rm|rp}.bf16.{u32|s32} $d, $a;", 'b', "u"},
    {"cvt.{rn|rz|rm|rp}.{f16|bf16}.{u64|s64} $d, $a;", 'H', "w"},   /* H or b: chain() reads it off the line */
    {"cvt.{rn|rz}{|.relu}{|.satfinite}.f16x2.f32 $d, $a, $b;", 'U', "ff"},
    {"cvt.{rn|rz}{|.relu}{|.satfinite}.bf16x2.f32 $d, $a, $b;", 'V', "ff"},
    {"cvt.f32.f16 $d, $a;", 'f', "H"},
    {"cvt.f32.bf16 $d, $a;", 'f', "b"},
    {"cvt.rn.satfinite{|.relu}.{e4m3x2|e5m2x2}.f32 $d, $a, $b;", 'E', "ff"},
    {"cvt.rn{|.relu}.f16x2.{e4m3x2|e5m2x2} $d, $a;", 'U', "E"},
    /* f64 */
    {"{add|sub|mul}.{rn|rz|rm|rp}.f64 $d, $a, $b;", 'd', "dd"},
    {"{fma|mad}.{rn|rz|rm|rp}.f64 $d, $a, $b, $c;", 'd', "ddd"},
    {"div.{rn|rz|rm|rp}.f64 $d, $a, $b;", 'd', "dd"},
    {"rcp.{rn|rz|rm|rp}.f64 $d, $a;", 'd', "d"},
    {"sqrt.{rn|rz|rm|rp}.f64 $d, $a;", 'd', "d"},
    {"{min|max}.f64 $d, $a, $b;", 'd', "dd"},
    {"{abs|neg}.f64 $d, $a;", 'd', "d"},
    {"copysign.f64 $d, $a, $b;", 'd', "zd"},
    {"testp.{finite|infinite|number|notanumber|normal|subnormal}.f64 $d, $a;", 'p', "d"},
    {"setp.{eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan}.f64 $d, $a, $b;", 'p', "dd"},
    {"selp.f64 $d, $a, $b, $c;", 'd', "ddp"},
    {"cvt.{rni|rzi|rmi|rpi}.f64.f64 $d, $a;", 'd', "d"},
    {"cvt.{rni|rzi|rmi|rpi}{|.sat}.{u32|s32}.f64 $d, $a;", 'u', "d"},
    {"cvt.{rni|rzi|rmi|rpi}.{u64|s64}.f64 $d, $a;", 'w', "d"},
    /* f16 and bf16, scalar and in pairs */
    {"{add|sub|mul}{|.rn}{|.ftz}{|.sat}.f16 $d, $a, $b;", 'H', "HH"},
    {"fma.rn{|.ftz}{|.sat|.relu}.f16 $d, $a, $b, $c;", 'H', "HHH"},
    {"{add|sub|mul}{|.rn}.bf16 $d, $a, $b;", 'b', "bb"},
    {"fma.rn{|.relu}.bf16 $d, $a, $b, $c;", 'b', "bbb"},
    {"{min|max}{|.ftz}{|.NaN}.f16 $d, $a, $b;", 'H', "HH"},
    {"{min|max}{|.NaN}.bf16 $d, $a, $b;", 'b', "bb"},
    {"{neg|abs}{|.ftz}.f16 $d, $a;", 'H', "H"},
    {"{neg|abs}.bf16 $d, $a;", 'b', "b"},
    {"{add|sub|mul}{|.rn}{|.ftz}{|.sat}.f16x2 $d, $a, $b;", 'U', "UU"},
    {"fma.rn{|.ftz}{|.sat|.relu}.f16x2 $d, $a, $b, $c;", 'U', "UUU"},
    {"{add|sub|mul}{|.rn}.bf16x2 $d, $a, $b;", 'V', "VV"},
    {"fma.rn{|.relu}.bf16x2 $d, $a, $b, $c;", 'V', "VVV"},
    {"{min|max}{|.ftz}{|.NaN}.f16x2 $d, $a, $b;", 'U', "UU"},
    {"{min|max}{|.NaN}.bf16x2 $d, $a, $b;", 'V', "VV"},
    {"setp.{eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan}{|.ftz}.f16 $d, $a, $b;", 'p', "HH"},
    {"setp.{eq|ne|lt|le|gt|ge|equ|neu|ltu|leu|gtu|geu|num|nan}.bf16 $d, $a, $b;", 'p', "bb"},
    {"selp.b16 $d, $a, $b, $c;", 'h', "hhp"},
};
enum { NTMPL = (int)(sizeof kTmpl / sizeof kTmpl[0]) };

typedef struct {
    Rng r;
    Txt t;
    int next[6];     /* the next free register of each class */
    uint8_t *kind;   /* the float format each stored step writes (Prog's) */
} Gen;

/* The formats whose NaNs the hash does not tell apart (nan_blind), K_OTHER for integers and predicates */
enum { K_OTHER, K_F32, K_F64, K_F16, K_BF16, K_F16X2, K_BF16X2, K_E4M3X2, K_E5M2X2 };

/* The format an instruction line writes: cvt's first type, any other instruction's last; setp and testp write a
 * predicate */
static int result_kind(const char *line) {
    static const char *const name[] = {"", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "e4m3x2", "e5m2x2"};
    int cvt = !strncmp(line, "cvt.", 4), kind = K_OTHER;
    if (!strncmp(line, "setp.", 5) || !strncmp(line, "testp.", 6)) return K_OTHER;
    for (const char *p = strchr(line, '.'); p && p < strchr(line, ' '); p = strchr(p + 1, '.')) {
        size_t n = strcspn(p + 1, ". ");
        int k = -1;
        for (int i = 1; i < (int)(sizeof name / sizeof name[0]); i++)
            if (strlen(name[i]) == n && !strncmp(p + 1, name[i], n)) k = i;
        if (k < 0 && strchr("usb", p[1]) && p[2] >= '1' && p[2] <= '9') k = K_OTHER;   /* an integer or bit type */
        if (k < 0) continue;
        kind = k;
        if (cvt) break;
    }
    return kind;
}

/* A NaN's payload and sign are not defined by the ISA, and ptxas moves them (it folds a neg or abs into the next
 * instruction, swaps the operands of an add, mul or fma with two NaNs), so a GPU's NaN bits depend on the compiled
 * code: every NaN of a float result is hashed as one value of its format. */
static uint64_t nan_blind(int kind, uint64_t v) {
    static const struct { int width, ebits, lanes; } f[] = {
        [K_F32] = {32, 8, 1}, [K_F64] = {64, 11, 1}, [K_F16] = {16, 5, 1}, [K_BF16] = {16, 8, 1},
        [K_F16X2] = {16, 5, 2}, [K_BF16X2] = {16, 8, 2}, [K_E4M3X2] = {8, 4, 2}, [K_E5M2X2] = {8, 5, 2}};
    if (kind == K_OTHER) return v;
    for (int l = 0; l < f[kind].lanes; l++) {
        int w = f[kind].width, mb = w - 1 - f[kind].ebits, at = l * w;
        uint64_t x = w == 64 ? v : v >> at & ((1ull << w) - 1), man = x & ((1ull << mb) - 1), lane = w == 64 ? ~0ull : ((1ull << w) - 1) << at;
        uint64_t ones = ((1ull << f[kind].ebits) - 1) << mb;
        int nan = kind == K_E4M3X2 ? (x & 0x7F) == 0x7F : (x & ones) == ones && man;   /* e4m3: S.1111.111 only */
        if (nan) v = (v & ~lane) | (((1ull << (w - 1)) - 1) << at);   /* the positive NaN of all ones */
    }
    return v;
}
/* the register class that holds a value of class c */
static char reg_class(char c) {
    return c == 'U' || c == 'V' || c == 'I' ? 'u' : c == 'H' || c == 'b' || c == 'E' || c == 'J' ? 'h'
         : c == 'y' ? 'f' : c == 'z' ? 'd' : c == 'W' ? 'w' : c;
}
static int cls_index(char c) {
    c = reg_class(c);
    return c == 'u' ? 0 : c == 'w' ? 1 : c == 'f' ? 2 : c == 'd' ? 3 : c == 'h' ? 4 : 5;
}
static const char *cls_prefix(char c) {
    static const char *const p[6] = {"%r", "%rd", "%f", "%fd", "%h", "%p"};
    return p[cls_index(c)];
}
static int fresh(Gen *g, char c) { return g->next[cls_index(c)]++; }

/* A value of class c from input word w (registers %rd16..: the loaded words), into a fresh register. */
static void from_input(Gen *g, char c, char *name, size_t cap) {
    int w = 16 + pick(&g->r, IN_WORDS), hi = pick(&g->r, 2);
    char ranged = c;
    c = reg_class(c);
    if (c == 'w') { snprintf(name, cap, "%%rd%d", w); return; }
    if (c == 'd') {
        int d = fresh(g, 'd');
        put(&g->t, "\tmov.b64 %%fd%d, %%rd%d;\n", d, w);
        snprintf(name, cap, "%%fd%d", d);
        return;
    }
    int u = fresh(g, 'u'), x = fresh(g, 'u');
    put(&g->t, "\tmov.b64 {%%r%d, %%r%d}, %%rd%d;\n", hi ? x : u, hi ? u : x, w);
    switch (c) {
    case 'u': snprintf(name, cap, "%%r%d", u); return;
    case 'f': {
        int f = fresh(g, 'f');
        put(&g->t, "\tmov.b32 %%f%d, %%r%d;\n", f, u);
        snprintf(name, cap, "%%f%d", f);
        return;
    }
    case 'h': {
        int a = fresh(g, 'h'), b = fresh(g, 'h');
        put(&g->t, "\tmov.b32 {%%h%d, %%h%d}, %%r%d;\n", a, b, u);
        snprintf(name, cap, "%%h%d", pick(&g->r, 2) ? a : b);
        return;
    }
    case 'p': {
        int p = fresh(g, 'p'), m = fresh(g, 'u');
        put(&g->t, "\tand.b32 %%r%d, %%r%d, %d;\n", m, u, (int)(1u << pick(&g->r, 32)));   /* bit 31 as INT32_MIN */
        put(&g->t, "\tsetp.ne.b32 %%p%d, %%r%d, 0;\n", p, m);
        snprintf(name, cap, "%%p%d", p);
        return;
    }
    }
    /* a ranged u: S, N, B, O */
    int v = fresh(g, 'u');
    c = ranged;
    if (c == 'S') put(&g->t, "\tand.b32 %%r%d, %%r%d, 63;\n", v, u);
    else if (c == 'B') put(&g->t, "\tand.b32 %%r%d, %%r%d, 31;\n", v, u);
    else if (c == 'N') {
        put(&g->t, "\tand.b32 %%r%d, %%r%d, 2147483647;\n", v, u);
        put(&g->t, "\tor.b32 %%r%d, %%r%d, 1;\n", v, v);
    } else {   /* O */
        put(&g->t, "\tand.b32 %%r%d, %%r%d, 63;\n", v, u);
        put(&g->t, "\tsub.s32 %%r%d, %%r%d, 32;\n", v, v);
    }
    snprintf(name, cap, "%%r%d", v);
}

/* A 64-bit divisor (N of a 64-bit template): positive, nonzero. */
static void divisor64(Gen *g, char *name, size_t cap) {
    int w = 16 + pick(&g->r, IN_WORDS), v = fresh(g, 'w');
    put(&g->t, "\tand.b64 %%rd%d, %%rd%d, 9223372036854775807;\n", v, w);
    put(&g->t, "\tor.b64 %%rd%d, %%rd%d, 1;\n", v, v);
    snprintf(name, cap, "%%rd%d", v);
}

/* fmt with one alternative of each {a|b|...} group, into out */
static void expand(Rng *r, const char *fmt, char *out, size_t cap) {
    size_t n = 0;
    for (const char *s = fmt; *s && n + 1 < cap;) {
        if (*s != '{') { out[n++] = *s++; continue; }
        const char *end = strchr(s, '}');
        int alts = 1;
        for (const char *q = s + 1; q < end; q++) alts += *q == '|';
        int k = pick(r, alts);
        const char *a = s + 1;
        for (; k; a++) k -= *a == '|';
        while (*a != '|' && *a != '}' && n + 1 < cap) out[n++] = *a++;
        s = end + 1;
    }
    out[n] = 0;
}

/* value v of class cls, stored as 64 bits to word k of the thread's outputs */
static void store(Gen *g, const char *v, char cls, int k) {
    int w = fresh(g, 'w'), u = fresh(g, 'u');
    switch (reg_class(cls)) {
    case 'w': case 'd': put(&g->t, "\tmov.b64 %%rd%d, %s;\n", w, v); break;
    case 'u': put(&g->t, "\tcvt.u64.u32 %%rd%d, %s;\n", w, v); break;
    case 'f':
        put(&g->t, "\tmov.b32 %%r%d, %s;\n", u, v);
        put(&g->t, "\tcvt.u64.u32 %%rd%d, %%r%d;\n", w, u);
        break;
    case 'h':
        put(&g->t, "\tcvt.u32.u16 %%r%d, %s;\n", u, v);
        put(&g->t, "\tcvt.u64.u32 %%rd%d, %%r%d;\n", w, u);
        break;
    default:
        put(&g->t, "\tselp.u32 %%r%d, 1, 0, %s;\n", u, v);
        put(&g->t, "\tcvt.u64.u32 %%rd%d, %%r%d;\n", w, u);
    }
    put(&g->t, "\tst.global.u64 [%%rd3+%d], %%rd%d;\n", 8 * k, w);
}

/* One chain: a value of class c from the inputs, 2-6 templates each taking the value so far as an operand where
 * its class fits, the last value stored to slot j. */
static void chain(Gen *g, int j) {
    char cur[16] = "", cls = 0, ops[4][16], line[256];
    int steps = 2 + pick(&g->r, STEPS - 1);
    put(&g->t, "\t// chain %d\n", j);
    for (int s = 0; s < steps; s++) {
        const Tmpl *t = &kTmpl[pick(&g->r, NTMPL)];
        for (int tries = 0; cls && tries < 8 && !strchr(t->in, cls); tries++) t = &kTmpl[pick(&g->r, NTMPL)];   /* one that takes the value */
        int n = (int)strlen(t->in), used = 0;
        for (int i = 0; i < n; i++) {
            char c = t->in[i];
            if (!used && cls && c == cls && pick(&g->r, 4)) { strcpy(ops[i], cur); used = 1; continue; }
            if (c == 'N' && t->out == 'w') divisor64(g, ops[i], sizeof ops[i]);
            else from_input(g, c, ops[i], sizeof ops[i]);
        }
        char oc = t->out;
        char dst[16];
        expand(&g->r, t->fmt, line, sizeof line);
        g->kind[j * STEPS + s] = (uint8_t)result_kind(line);
        if (oc == 'F') oc = strstr(line, ".f64.") ? 'd' : 'f';   /* cvt to f32 or f64 */
        if (oc == 'H' && strstr(line, ".bf16.")) oc = 'b';        /* cvt to f16 or bf16 */
        snprintf(dst, sizeof dst, "%s%d", cls_prefix(oc), fresh(g, oc));
        put(&g->t, "\t");
        for (const char *q = line; *q; q++) {
            if (*q != '$') { put(&g->t, "%c", *q); continue; }
            q++;
            if (*q == 'd') put(&g->t, "%s", dst);
            else put(&g->t, "%s", ops[*q == 'e' ? 3 : *q - 'a']);
        }
        put(&g->t, "\n");
        strcpy(cur, dst);
        cls = oc;
        store(g, cur, cls, j * STEPS + s);   /* every step's value: a wrong one is found where it is made */
        /* an integer abs or neg is stored, not fed on: ptxas folds it into the next step's operand, which then reads
         * abs(INT_MIN) as 2^31 (2^15, 2^63) where the PTX's value is INT_MIN; the next step starts from the inputs */
        if (!strncmp(line, "abs.s", 5) || !strncmp(line, "neg.s", 5)) cls = 0;
    }
}


/* One seed's program: its text (MAX_TEXT bytes), inputs, where chain j's text starts, the format each step writes */
typedef struct {
    char *text;
    uint64_t in[THREADS * IN_WORDS];
    size_t chain_at[SLOTS + 1];
    uint8_t kind[WORDS];
} Prog;

static int gen(uint64_t seed, Prog *p) {
    char *text = p->text;
    size_t *chain_at = p->chain_at;
    memset(p->kind, K_OTHER, sizeof p->kind);
    Gen g = {.t = {text, 0, 0}, .kind = p->kind};
    rng_seed(&g.r, seed);
    for (int i = 0; i < THREADS * IN_WORDS; i++) p->in[i] = input_word(&g.r);
    g.next[0] = 8, g.next[1] = 16 + IN_WORDS, g.next[2] = g.next[3] = g.next[4] = g.next[5] = 1;
    put(&g.t, "// fuzz_alu seed %llu\n.version 8.8\n.target sm_90\n.address_size 64\n\n"
              ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n", (unsigned long long)seed);
    size_t decl = g.t.n;
    put(&g.t, "%-200s\n", "");   /* the register declarations, once their counts are known */
    put(&g.t, "\tld.param.u64 %%rd1, [in];\n\tld.param.u64 %%rd2, [out];\n\tcvta.to.global.u64 %%rd1, %%rd1;\n"
              "\tcvta.to.global.u64 %%rd2, %%rd2;\n\tmov.u32 %%r1, %%tid.x;\n\tmul.wide.u32 %%rd4, %%r1, %d;\n"
              "\tadd.s64 %%rd5, %%rd1, %%rd4;\n\tmul.wide.u32 %%rd4, %%r1, %d;\n\tadd.s64 %%rd3, %%rd2, %%rd4;\n",
        8 * IN_WORDS, 8 * WORDS);
    for (int i = 0; i < IN_WORDS; i++) put(&g.t, "\tld.global.u64 %%rd%d, [%%rd5+%d];\n", 16 + i, 8 * i);
    for (int j = 0; j < SLOTS; j++) {
        chain_at[j] = g.t.n;
        chain(&g, j);
    }
    chain_at[SLOTS] = g.t.n;
    put(&g.t, "\tret;\n}\n");
    if (g.t.over) return -1;
    char regs[201];
    int k = snprintf(regs, sizeof regs, "\t.reg .b32 %%r<%d>;\n\t.reg .b64 %%rd<%d>;\n\t.reg .f32 %%f<%d>;\n\t.reg .f64 %%fd<%d>;"
                     "\n\t.reg .b16 %%h<%d>;\n\t.reg .pred %%p<%d>;", g.next[0], g.next[1], g.next[2], g.next[3], g.next[4], g.next[5]);
    if (k < 0 || k > 200) return -1;
    memcpy(text + decl, regs, (size_t)k);   /* the rest of the padded line stays blank */
    return 0;
}

/* FNV-1a over chain j's words (each step's value, NaNs blind) of every thread */
static uint64_t chain_hash(const Prog *p, const uint64_t *out, int j) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (int t = 0; t < THREADS; t++)
        for (int k = 0; k < STEPS; k++) {
            uint64_t v = nan_blind(p->kind[j * STEPS + k], out[t * WORDS + j * STEPS + k]);
            for (int b = 0; b < 8; b++) h = (h ^ ((v >> (8 * b)) & 0xFF)) * 0x100000001B3ull;
        }
    return h;
}

/* Runs seed s's program on dev; out: THREADS x WORDS words (thread t's step k of chain j at t WORDS + j STEPS + k). */
static int run_seed(Device *dev, uint64_t s, Prog *p, uint64_t *out, char *err, size_t cap) {
    if (gen(s, p)) return snprintf(err, cap, "the program outgrew its buffer"), 1;
    return golden_run(dev, p->text, THREADS, p->in, sizeof p->in, out, 8 * THREADS * WORDS, err, cap);
}

static int parse_range(const char *s, uint64_t *a, uint64_t *b) {
    char *end;
    *a = strtoull(s, &end, 10);
    if (end == s) return -1;
    if (*end == 0) { *b = *a; return 0; }
    if (*end != '-') return -1;
    const char *t = end + 1;
    *b = strtoull(t, &end, 10);
    return end == t || *end || *b < *a ? -1 : 0;
}

/* The golden file against the sim: one check per seed, but for the seeds tests/fuzz_alu.known lists (the sim's
 * open gaps, reported as skipped; one of them that matches fails, so that the list only shrinks). known_out: write
 * the list of every seed that does not match, with why, instead. */
static int against_golden(const char *path, const char *known_path, const char *known_out) {
    FILE *f = fopen(path, "r");
    if (!f) { check(0, "fuzz_alu golden file", "cannot read %s", path); return check_summary(); }
    static unsigned char known[1 << 16];
    FILE *k = known_out ? NULL : fopen(known_path, "r");
    char err[512], line[4096];
    if (!known_out && !k) { check(0, "fuzz_alu known gaps", "cannot read %s", known_path); fclose(f); return check_summary(); }
    while (k && fgets(line, sizeof line, k)) {
        unsigned long long s = strtoull(line, NULL, 10);
        if (line[0] != '#' && s < sizeof known) known[s] = 1;
    }
    if (k) fclose(k);
    FILE *w = known_out ? fopen(known_out, "w") : NULL;
    if (known_out && !w) { fprintf(stderr, "test_fuzz_alu: cannot write %s\n", known_out); fclose(f); return 1; }
    if (w) fprintf(w, "# test_fuzz_alu: the seeds of tests/fuzz_alu.golden the sim does not match, with the chains that differ. make "
                      "test reports\n# them as skipped and fails if one of them matches. Written by test_fuzz_alu --known-out.\n%s",
                   KNOWN_WHY);
    Device *dev = NULL;
    if (dev_open(&dev, "sim", 0, err, sizeof err)) {
        check(0, "fuzz_alu sim", "%s", err);
        fclose(f);
        return check_summary();
    }
    static Prog prog;
    static uint64_t out[THREADS * WORDS];
    prog.text = test_alloc(MAX_TEXT);
    int seeds = 0, skipped = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        unsigned long long s, want[SLOTS];
        char *p = line, *end;
        s = strtoull(p, &end, 10);
        int n = 0;
        for (p = end; n < SLOTS; n++) {
            want[n] = strtoull(p, &end, 16);
            if (end == p) break;
            p = end;
        }
        char name[64];
        snprintf(name, sizeof name, "fuzz_alu seed %llu on the sim", s);
        if (n != SLOTS || s >= sizeof known) { check(0, name, "the golden line is malformed"); continue; }
        seeds++;
        int j = 0, ran = !run_seed(dev, s, &prog, out, err, sizeof err);
        while (ran && j < SLOTS && chain_hash(&prog, out, j) == want[j]) j++;
        int match = ran && j == SLOTS;
        if (w) {
            if (!match && !ran) fprintf(w, "%llu %s\n", s, err);
            else if (!match) {   /* every chain that differs, for the instructions they share */
                fprintf(w, "%llu chains differing from the GPU:", s);
                for (; j < SLOTS; j++)
                    if (chain_hash(&prog, out, j) != want[j]) fprintf(w, " %d", j);
                fprintf(w, "\n");
            }
            continue;
        }
        if (known[s]) {
            skipped++;
            if (match) check(0, name, "matches the GPU but tests/fuzz_alu.known lists it: take it off the list");
            continue;
        }
        if (match) check(1, name, " ");
        else if (!ran) check(0, name, "%s", err);
        else check(0, name, "chain %d differs from the GPU's; its instructions:\n%.*s", j, (int)(prog.chain_at[j + 1] - prog.chain_at[j]),
                      prog.text + prog.chain_at[j]);
    }
    fclose(f);
    if (w) fclose(w);
    if (skipped) printf("SKIP fuzz_alu: %d of %d seeds the sim does not match (tests/fuzz_alu.known says why)\n", skipped, seeds);
    check(seeds >= 1000, "fuzz_alu golden file holds 1000 seeds or more", "it holds %d", seeds);
    dev_close(dev);
    free(prog.text);
    return known_out ? 0 : check_summary();
}

int main(int argc, char **argv) {
    const char *kind = NULL, *seeds = NULL, *write = NULL, *raw = NULL, *dump = NULL, *known_out = NULL;
    uint64_t seed = 0;
    int show = 0, have_seed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) kind = argv[++i];
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = argv[++i];
        else if (!strcmp(argv[i], "--write") && i + 1 < argc) write = argv[++i];
        else if (!strcmp(argv[i], "--raw") && i + 1 < argc) raw = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else if (!strcmp(argv[i], "--known-out") && i + 1 < argc) known_out = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10), have_seed = 1;
        else if (!strcmp(argv[i], "--show")) show = 1;
        else {
            fprintf(stderr, "test_fuzz_alu: unknown argument %s (see the file's head)\n", argv[i]);
            return 2;
        }
    }
    static Prog prog;
    prog.text = test_alloc(MAX_TEXT);
    if (show || dump) {   /* --show: seed's program; --dump: eight programs from seed, for ptxas */
        if (!have_seed) { fprintf(stderr, "test_fuzz_alu: --show and --dump need --seed\n"); return 2; }
        for (int i = 0; i < (dump ? 8 : 1); i++) {
            if (gen(seed + (uint64_t)i, &prog)) { fprintf(stderr, "test_fuzz_alu: the program outgrew its buffer\n"); return 1; }
            if (show) { fputs(prog.text, stdout); continue; }
            char path[1024];
            snprintf(path, sizeof path, "%s/fuzz_alu_%llu.ptx", dump, (unsigned long long)(seed + (uint64_t)i));
            FILE *f = fopen(path, "w");
            if (!f || fputs(prog.text, f) < 0 || fclose(f)) { fprintf(stderr, "test_fuzz_alu: cannot write %s\n", path); return 1; }
        }
        free(prog.text);
        return 0;
    }
    if (!seeds) { free(prog.text); return against_golden(GOLDEN, KNOWN, known_out); }
    uint64_t a, b;
    if (parse_range(seeds, &a, &b) || !write || !kind) {
        fprintf(stderr, "test_fuzz_alu: --seeds A-B needs --device and --write FILE\n");
        return 2;
    }
    char err[512], what[160];
    FILE *f = NULL;
    snprintf(what, sizeof what, "seed, then per chain the FNV-1a hash of its %d threads' 64-bit values (a float's NaNs as one)", THREADS);
    Device *dev = golden_open("test_fuzz_alu", kind, write, what, &f);
    if (!dev) return 1;
    if (raw) mkdir(raw, 0755);
    int failed = 0;
    uint64_t out[THREADS * WORDS];
    for (uint64_t s = a; s <= b; s++) {
        if (run_seed(dev, s, &prog, out, err, sizeof err)) {
            fprintf(stderr, "seed %llu: %s\n", (unsigned long long)s, err);
            failed++;
            continue;
        }
        fprintf(f, "%llu", (unsigned long long)s);
        for (int j = 0; j < SLOTS; j++) fprintf(f, " %016llx", (unsigned long long)chain_hash(&prog, out, j));
        fprintf(f, "\n");
        if (raw) {
            char path[1024];
            for (int k = 0; k < 2; k++) {   /* S.bin: the outputs (thread-major), S.in.bin: the inputs */
                snprintf(path, sizeof path, k ? "%s/%llu.in.bin" : "%s/%llu.bin", raw, (unsigned long long)s);
                FILE *r = fopen(path, "wb");
                if (!r || fwrite(k ? prog.in : out, k ? sizeof prog.in : sizeof out, 1, r) != 1 || fclose(r)) {
                    fprintf(stderr, "cannot write %s\n", path);
                    return 1;
                }
            }
        }
    }
    fclose(f);
    dev_close(dev);
    free(prog.text);
    printf("%llu seeds, %d failed to run\n", (unsigned long long)(b - a + 1), failed);
    return failed != 0;
}
