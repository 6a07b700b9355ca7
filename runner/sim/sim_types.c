/* Operand types, checked as the module is parsed (after the forms of
 * sim_form.c): the type each operand of an instruction holds, and whether the
 * register, constant or special register written there is one ptxas takes.
 * The units read registers by slot and constants as bits, so an add.u32 of
 * two .b64 registers, a 1.5 added as an integer or an f32 register fed to an
 * integer compare ran; ptxas refuses each ("Arguments mismatch"), and so does
 * the sim, naming the operand. Float constants are converted here to the type
 * of their operand as ptxas converts them: 0d3FF0000000000000 in an .f32 add
 * is 1.0f (it was read as its low 32 bits, 0).
 *
 * The rules, as ptxas 13.0 takes them (tests/test_sim_types.c holds the sim
 * to ptxas line by line):
 *   - a register of a bit type (.bN) fits any type of N bits; .uN and .sN fit
 *     each other; a float type takes .bN or its own float type; a predicate
 *     only a predicate; .f16x2 registers: fits();
 *   - ld's and st's data and cvt's operands (but bf16 cvts') may be wider
 *     than the type; a vector's elements are of its element's width, of any
 *     type but an integer one where the elements are floats;
 *   - an integer constant fits an integer or bit type, a float constant a
 *     float type (0f also .b32, 0d and decimals also .b64), never the other
 *     way; inside a vector any float constant; constant() converts them;
 *   - a special register is a .u32 (%clock64, %globaltimer: .u64), read only
 *     by mov, cvt and inside vectors: sreg_fits();
 *   - each instruction takes the types types_taken() lists for its modifiers.
 * Instructions outside these tables (barriers, copies, tensor-core
 * instructions, which have forms of their own) are not type-checked. */
#include <stdio.h>
#include <string.h>
#include "dtype.h"
#include "sim.h"

enum { ANY, EXACT, WIDER };   /* unchecked; the operand's type; or a wider register (ld/st data, cvt) */
/* fixed: the instruction fixes the operand's type (a shift amount's .u32), its type modifier does not */
typedef struct { uint8_t type, how, fixed; } Expect;

static int wide_of(int t)
{
    switch (t) {
    case T_U16: return T_U32;
    case T_S16: return T_S32;
    case T_U32: return T_U64;
    case T_S32: return T_S64;
    case T_B16: return T_B32;
    case T_B32: return T_B64;
    }
    return T_NONE;
}

static Expect ex(int type, int how) { return (Expect){(uint8_t)type, (uint8_t)(type == T_NONE ? ANY : how), 0}; }
static Expect fx(int type) { return (Expect){(uint8_t)type, EXACT, 1}; }
/* operand k is of the fixed type f where fixed holds, else of the instruction's type t */
static Expect ex_or(int fixed, int f, int t) { return fixed ? fx(f) : ex(t, EXACT); }

/* What operand k of in holds. */
static Expect expect(const SimInsn *in, int k)
{
    const IsaInsn *d = &in->d;
    int t0 = d->ntype ? d->type[0] : T_NONE, t1 = d->ntype > 1 ? d->type[1] : t0;
    if ((d->flags & F_CACHE_HINT) && k == in->nops - 1) return fx(T_U64);   /* a cache policy: no float */
    switch (d->op) {
    case I_ADD: case I_SUB: case I_ADDC: case I_SUBC: case I_MADC: case I_DIV: case I_REM: case I_MIN: case I_MAX:
    case I_NEG: case I_ABS: case I_AND: case I_OR: case I_XOR: case I_NOT: case I_CNOT: case I_COPYSIGN: case I_EX2:
    case I_LG2: case I_RCP: case I_SQRT: case I_RSQRT: case I_SIN: case I_COS: case I_TANH: case I_SAD: case I_BREV: case I_FMA: case I_CVTA:
        return ex(t0, EXACT);
    case I_MUL: return ex((d->flags & F_WIDE) && k == 0 ? wide_of(t0) : t0, EXACT);
    case I_MAD: return ex((d->flags & F_WIDE) && (k == 0 || k == 3) ? wide_of(t0) : t0, EXACT);
    case I_SHL: case I_SHR: return ex_or(k == 2, T_U32, t0);
    case I_BFE: return ex_or(k >= 2, T_U32, t0);
    case I_BFI: return ex_or(k >= 3, T_U32, t0);
    case I_POPC: case I_CLZ: case I_BFIND: return ex_or(k == 0, T_U32, t0);
    case I_PRMT: return ex(T_B32, EXACT);
    case I_LOP3: return k == 4 ? fx(T_U32) : ex(T_B32, EXACT);   /* the truth table: an integer */
    case I_GETCTARANK: return k == 0 ? fx(T_U32) : ex(t0, EXACT);   /* the type is the address's */
    case I_CLC_QUERY: return fx(k == 1 ? T_B128 : t0);
    case I_SHF: return ex_or(k == 3, T_U32, T_B32);
    case I_TESTP: return ex(k == 0 ? T_PRED : t0, EXACT);
    case I_ISSPACEP: return k == 0 ? fx(T_PRED) : ex(T_U32, WIDER);   /* a 32- or 64-bit integer address */
    case I_SETP: return ex(k == 0 || k == 3 ? T_PRED : t0, EXACT);
    case I_SET: return ex(k == 3 ? T_PRED : k == 0 ? t0 : t1, EXACT);
    case I_SELP: return ex(k == 3 ? T_PRED : t0, EXACT);
    case I_MOV: return ex(t0, EXACT);
    case I_CVT: {   /* a conversion to or from bf16 takes registers of its types' widths only */
        int bf = t0 == T_BF16 || t0 == T_BF16X2 || t1 == T_BF16 || t1 == T_BF16X2;
        return ex(k == 0 ? t0 : t1, bf ? EXACT : WIDER);
    }
    case I_LD: case I_LDU: return ex(k == 0 ? t0 : T_NONE, WIDER);
    case I_ST: return ex(k == 1 ? t0 : T_NONE, WIDER);
    case I_ATOM: return ex(k == 1 ? T_NONE : t0, EXACT);
    case I_RED: return ex(k == 1 ? t0 : T_NONE, EXACT);
    case I_REDUX: return fx(k == 2 ? T_U32 : t0);   /* membermasks take no float */
    case I_SHFL: return ex_or(k == 4, T_U32, T_B32);
    case I_VOTE: return ex_or(k == 2, T_U32, k == 1 ? T_PRED : (d->flags & F_BALLOT) ? T_B32 : T_PRED);
    case I_ACTIVEMASK: return ex(T_B32, EXACT);
    case I_MATCH: return k == 1 ? ex(t0, EXACT) : fx(T_U32);
    case I_DP4A: case I_DP2A:   /* d and c are .u32 where both sources are, else .s32 */
        return k == 1 ? ex(t0, EXACT) : k == 2 ? ex(t1, EXACT) : fx(t0 == T_U32 && t1 == T_U32 ? T_U32 : T_S32);
    case I_FNS: case I_BMSK: case I_MOVMATRIX: return ex(T_B32, EXACT);   /* movmatrix: two b16 a register */
    case I_MUL24: case I_MAD24: return ex(t0, EXACT);
    case I_SZEXT: return ex_or(k == 2, T_U32, t0);   /* the width: an unsigned 32-bit value */
    case I_MAPA: return k == 2 ? fx(T_U32) : ex(t0, EXACT);
    case I_BAR_SYNC: case I_BARRIER_SYNC: case I_BAR_ARRIVE: case I_NANOSLEEP: return fx(T_U32);
    case I_CREATEPOLICY: return fx(k == 0 ? T_U64 : T_F32);
    case I_CP_ASYNC: return k == 3 ? fx(T_U32) : ex(T_NONE, ANY);   /* src-size (or the ignore-src predicate: one()) */
    /* the barriers' states are 64-bit integers (no float register), their counts .u32 */
    case I_MBAR_INIT: case I_MBAR_EXPECT_TX: case I_MBAR_COMPLETE_TX: return k == 1 ? fx(T_U32) : ex(T_NONE, ANY);
    case I_MBAR_ARRIVE: case I_MBAR_ARRIVE_EXPECT_TX: return k == 1 ? ex(T_NONE, ANY) : fx(k == 0 ? T_U64 : T_U32);
    case I_MBAR_TRY_WAIT: case I_MBAR_TEST_WAIT:   /* p, [mbar], a phase's parity or state, a time hint */
        return k == 1 ? ex(T_NONE, ANY) : fx(k == 0 ? T_PRED : k == 2 && !(d->flags & F_PARITY) ? T_U64 : T_U32);
    }
    return ex(T_NONE, ANY);
}

static char kind_of(int t)
{
    if (t == T_PRED) return 'p';
    if (isa_type_is_float(t)) return 'f';
    if (t == T_U8 || t == T_U16 || t == T_U32 || t == T_U64 || t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64 ||
        t == T_U16X2 || t == T_S16X2)
        return 'i';
    return 'b';
}

/* Whether a register declared r fits an operand of type e. ptxas takes an .f16x2 register where the instruction's
 * type is an integer or bit type of 32 bits, but not where the instruction fixes the type nor for another float
 * (it even takes one as a predicate, which the sim does not). */
static int fits(int r, Expect x)
{
    int e = x.type, how = x.how;
    if (r == T_PRED || e == T_PRED) return r == e;
    if (r == T_F16X2 && e != T_F16X2)
        return !x.fixed && kind_of(e) != 'f' && (how == WIDER ? isa_type_bits(e) <= 32 : isa_type_bits(e) == 32);
    int rb = isa_type_bits(r), eb = isa_type_bits(e);
    if (how == WIDER ? rb < eb : rb != eb) return 0;
    switch (kind_of(e)) {
    case 'b': return 1;
    case 'i': return kind_of(r) != 'f';
    default: return kind_of(r) == 'b' || r == e;
    }
}

static const char *type_text(int t)
{
    static const char *const k[T_COUNT] = {
        [T_PRED] = ".pred", [T_B8] = ".b8", [T_B16] = ".b16", [T_B32] = ".b32", [T_B64] = ".b64", [T_B128] = ".b128",
        [T_U8] = ".u8", [T_U16] = ".u16", [T_U32] = ".u32", [T_U64] = ".u64", [T_S8] = ".s8", [T_S16] = ".s16",
        [T_S32] = ".s32", [T_S64] = ".s64", [T_F16] = ".f16", [T_F16X2] = ".f16x2", [T_BF16] = ".bf16",
        [T_U16X2] = ".u16x2", [T_S16X2] = ".s16x2",
        [T_BF16X2] = ".bf16x2", [T_F32] = ".f32", [T_F64] = ".f64", [T_TF32] = ".tf32", [T_E4M3X2] = ".e4m3x2",
        [T_E5M2X2] = ".e5m2x2", [T_E4M3] = ".e4m3", [T_E5M2] = ".e5m2"};
    return t > T_NONE && t < T_COUNT && k[t] ? k[t] : ".?";
}

static double f64_of_bits(uint64_t b)
{
    double x;
    memcpy(&x, &b, 8);
    return x;
}

/* A constant written lit in an operand of type e: 0 with its bits converted to e, or -1. As ptxas 13.0's code
 * computes them on an H200: a 0d or decimal constant in an .f32 operand is rounded to the nearest float, a 0f one
 * in an .f64 operand is its 32 bits zero-extended (a denormal, not the float's value), and in an integer or bit
 * operand a float constant is its own bits (a 0f's 32, a 0d's or a decimal's double's 64), cut to the width. A
 * .b32 takes 0f, a .b64 0d or a decimal float; a vector's element (elem) takes any float constant, but no integer
 * where the elements are floats. */
static int constant(SimOpnd *o, int e, int elem)
{
    int kind = kind_of(e), bits = isa_type_bits(e);
    if (o->lit == LIT_INT) return kind == 'f' ? -1 : 0;
    if (kind == 'p' || (kind == 'i' && !elem)) return -1;
    if (kind == 'b' && !elem && !(bits == 32 && o->lit == LIT_F32) && !(bits == 64 && o->lit != LIT_F32)) return -1;
    if (kind == 'f' && e != T_F32 && e != T_F64 && !elem) return -1;
    uint64_t raw = o->lit == LIT_F32 ? (uint32_t)o->imm : (uint64_t)o->imm;   /* the constant's own bits */
    if (kind == 'f' && bits == 32 && o->lit != LIT_F32) raw = f32_bits((float)f64_of_bits(raw));
    o->imm = (int64_t)(bits >= 64 ? raw : raw & ((1ull << bits) - 1));
    o->lit = bits == 64 ? LIT_F64 : LIT_F32;
    return 0;
}

static int sreg_type(int64_t id) { return id == SR_CLOCK64 || id == SR_GLOBALTIMER ? T_U64 : T_U32; }

/* Where ptxas takes a special register: as mov's source (of its own type or, for %tid, %ntid, %ctaid and %nctaid,
 * whose components were once 16 bits, of a 16-bit one), as the source of a cvt to an integer (any integer type as
 * wide or narrower), and as an element of its width in a source vector; nowhere else. */
static int sreg_fits(const SimInsn *in, int64_t id, int e, int elem)
{
    int t = sreg_type(id), legacy = id >= SR_TID_X && id <= SR_NCTAID_Z, eb = isa_type_bits(e), tb = isa_type_bits(t);
    if (elem) return eb == tb;
    if (kind_of(e) == 'f' || kind_of(e) == 'p') return 0;
    if (in->d.op == I_CVT) return !isa_type_is_float(in->d.type[0]) && eb <= tb;
    if (in->d.op != I_MOV) return 0;
    return (eb == tb && (e == t || kind_of(e) == 'b')) || (legacy && eb == 16);
}

static void what_text(const SimFunc *f, const SimOpnd *o, char *out, size_t n)
{
    char name[64];
    if (o->kind == SO_REG) {
        sim_reg_name(f, o->reg, name, sizeof name);
        snprintf(out, n, "register %s (%s)", name, type_text(f->slot_type[o->reg]));
    } else if (o->kind == SO_SREG) {
        snprintf(out, n, "a special register (%s)", type_text(sreg_type(o->imm)));
    } else {
        snprintf(out, n, "%s constant", o->lit == LIT_INT ? "an integer" : "a float");
    }
}

/* What ptxas asks of a constant beyond its type: bfe's and bfi's position and length, a named barrier's id and
 * thread count, an mbarrier arrival's count, a phase parity and cp.async's src-size take no negative one (an
 * mbarrier's init count and transaction bytes do), bar.sync's and bar.arrive's thread count is a multiple of 32,
 * createpolicy's fraction lies in (0, 1]. */
static int value_ok(const SimInsn *in, int k, const SimOpnd *o)
{
    switch (in->d.op) {
    case I_BFE: return k < 2 || o->imm >= 0;
    case I_BFI: return k < 3 || o->imm >= 0;
    case I_BAR_SYNC: case I_BARRIER_SYNC: case I_BAR_ARRIVE: return o->imm >= 0 && (k == 0 || o->imm % 32 == 0);
    case I_MBAR_ARRIVE: case I_CP_ASYNC: return o->imm >= 0;   /* an arrival count, a src-size */
    case I_MBAR_TRY_WAIT: case I_MBAR_TEST_WAIT: return !(in->d.flags & F_PARITY) || o->imm >= 0;
    case I_CREATEPOLICY: {
        float x;
        uint32_t b = (uint32_t)o->imm;
        memcpy(&x, &b, 4);
        return k == 0 || (x > 0.0f && x <= 1.0f);
    }
    }
    return 1;
}

/* One operand, or one element of a vector (elem): 0, or -1 with why. */
static int one(SimFunc *f, const SimInsn *in, int k, SimOpnd *o, Expect e, int elem, char *why, size_t n)
{
    int ok = 1;
    if (o->kind == SO_REG && !elem) {   /* a vector's registers were checked together: vec_regs() */
        /* cp.async's fourth operand may instead be its ignore-src predicate */
        ok = fits(f->slot_type[o->reg], e) || (in->d.op == I_CP_ASYNC && f->slot_type[o->reg] == T_PRED);
    } else if (o->kind == SO_SREG) {
        ok = sreg_fits(in, o->imm, e.type, elem);
    } else if (o->kind == SO_IMM) {
        ok = !constant(o, e.type, elem) && value_ok(in, k, o);
    }
    if (ok) return 0;
    char what[96];
    what_text(f, o, what, sizeof what);
    snprintf(why, n, "%s operand %d%s is %s; %s takes a %s%s value there", isa_base_text(in->d.op), k + 1,
             elem ? " (an element)" : "", what, isa_base_text(in->d.op), type_text(e.type),
             e.how == WIDER ? " (or wider)" : "");
    return -1;
}

/* A decimal float the table does not type: a double where the instruction's last type is .f64, else a float
 * (createpolicy's fraction). */
static void untyped(const SimInsn *in, SimOpnd *o)
{
    if (o->kind != SO_IMM || o->lit != LIT_DEC) return;
    if (in->d.ntype && in->d.type[in->d.ntype - 1] == T_F64) {
        o->lit = LIT_F64;
    } else {
        o->imm = (int64_t)f32_bits((float)f64_of_bits((uint64_t)o->imm));
        o->lit = LIT_F32;
    }
}

/* ---- the instruction's own type ---- */

#define TS(t) (1u << T_##t)
enum {
    INTS = TS(U16) | TS(U32) | TS(U64) | TS(S16) | TS(S32) | TS(S64), SINTS = TS(S16) | TS(S32) | TS(S64),
    HALVES = TS(F16) | TS(F16X2) | TS(BF16) | TS(BF16X2), F3264 = TS(F32) | TS(F64), FLOATS = HALVES | F3264,
    PAIRS16 = TS(U16X2) | TS(S16X2),
    BITS = TS(B16) | TS(B32) | TS(B64), B3264 = TS(B32) | TS(B64), SMALL = TS(B8) | TS(U8) | TS(S8),
    WIDE32 = TS(U32) | TS(U64) | TS(S32) | TS(S64),
    NONE = 1u << 31,   /* a set that takes no type (T_COUNT < 31) */
};

/* atom's and red's: by operation; .noftz for the half types, a vector only of floats (.v8 of single halves) */
static unsigned atom_types(const IsaInsn *d)
{
    int noftz = (d->flags & F_NOFTZ) != 0, vec = d->vec > 1;
    unsigned halves = d->vec == 8 ? TS(F16) | TS(BF16) : HALVES;
    switch (d->redop) {
    case RO_ADD:
        if (vec) return noftz ? halves : d->vec == 8 ? NONE : TS(F32);
        return noftz ? HALVES : TS(U32) | TS(U64) | TS(S32) | F3264;
    case RO_MIN: case RO_MAX: return vec ? (noftz ? halves : NONE) : noftz ? NONE : WIDE32;
    case RO_INC: case RO_DEC: return TS(U32);
    case RO_AND: case RO_OR: case RO_XOR: case RO_EXCH: return B3264;
    case RO_CAS: return TS(B16) | B3264;
    }
    return 0;
}

/* The types ptxas takes for an arithmetic, logic, move or memory instruction with its modifiers (0: not checked
 * here; cvt's pairs are the ALU's). Rounded add, sub and mul are float ones, .lo/.hi/.wide integer ones. */
static unsigned types_taken(const IsaInsn *d)
{
    int rnd = d->rnd != RND_NONE, half = (d->flags & (F_LO | F_HI | F_WIDE)) != 0, approx = (d->flags & F_APPROX) != 0;
    switch (d->op) {
    case I_ADD: case I_SUB:   /* add (not sub) of packed 16-bit integers, without .sat */
        return (d->flags & F_SAT) ? TS(S32) | TS(F16) | TS(F16X2) | TS(F32) : rnd ? FLOATS
               : INTS | FLOATS | (d->op == I_ADD && !d->cc ? PAIRS16 : 0);
    case I_MUL: case I_MAD:
        if (d->flags & F_WIDE) return TS(U16) | TS(U32) | TS(S16) | TS(S32);
        return half ? INTS : d->op == I_MUL ? FLOATS : F3264;
    case I_FMA: return (d->flags & F_RELU) ? HALVES : (d->flags & F_SAT) ? TS(F16) | TS(F16X2) | TS(F32) : FLOATS;
    case I_DIV: return rnd ? F3264 : approx || (d->flags & F_FULL) ? TS(F32) : INTS;
    case I_REM: case I_SAD: return INTS;
    case I_MUL24: return TS(U32) | TS(S32);
    case I_MAD24: return (d->flags & F_SAT) ? TS(S32) : TS(U32) | TS(S32);   /* .sat: .hi.s32 (.lo.sat: the ALU's) */
    case I_MIN: case I_MAX:   /* .relu: of s32 and s16x2 (and floats) */
        return (d->flags & F_NAN) ? HALVES | TS(F32) : INTS | FLOATS | PAIRS16;
    case I_NEG: case I_ABS: return SINTS | FLOATS;
    case I_AND: case I_OR: case I_XOR: case I_NOT: return BITS | TS(PRED);
    case I_CNOT: return BITS;
    case I_BREV: case I_POPC: case I_CLZ: case I_BFI: return B3264;
    case I_BFIND: case I_BFE: return WIDE32;
    case I_PRMT: return TS(B32);
    case I_COPYSIGN: case I_TESTP: return F3264;
    case I_MOV: return BITS | INTS | F3264 | TS(PRED);
    case I_SELP: return BITS | INTS | F3264;
    case I_SETP:   /* ordered compares of numbers, lo/ls/hi/hs of unsigned ones, the unordered ones of floats */
        switch (d->cmp) {
        case CMP_EQ: case CMP_NE: return BITS | INTS | FLOATS;
        case CMP_LT: case CMP_LE: case CMP_GT: case CMP_GE: return INTS | FLOATS;
        case CMP_LO: case CMP_LS: case CMP_HI: case CMP_HS: return TS(U16) | TS(U32) | TS(U64);
        default: return FLOATS;
        }
    case I_SHL: return BITS;
    case I_SHR: return BITS | INTS;
    case I_EX2: return (d->flags & F_FTZ) ? TS(F32) | TS(BF16) | TS(BF16X2) : TS(F32) | TS(F16) | TS(F16X2);
    case I_RCP: case I_SQRT: return approx ? TS(F32) | ((d->flags & F_FTZ) && d->op == I_RCP ? TS(F64) : 0) : F3264;
    case I_RSQRT: return F3264;
    case I_LG2: case I_SIN: case I_COS: return TS(F32);
    case I_TANH: return TS(F32) | HALVES;
    case I_LD: case I_ST: return BITS | INTS | F3264 | SMALL | TS(B128);
    case I_LDU: return BITS | INTS | F3264 | SMALL;
    case I_REDUX: return d->redop == RO_AND || d->redop == RO_OR || d->redop == RO_XOR ? TS(B32) : TS(U32) | TS(S32);
    case I_ATOM: case I_RED: return atom_types(d);
    }
    return 0;
}

static void set_text(unsigned set, char *out, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    for (int t = T_PRED; t < T_COUNT && at < n; t++)
        if (set >> t & 1) at += (size_t)snprintf(out + at, n - at, "%s%s", at ? " " : "", type_text(t));
}

/* A tensor copy's coordinates ([map, {c0, ...}]): 32-bit registers, constants or special registers (a lone one no
 * float register or constant). */
static int coords_ok(SimFunc *f, const SimInsn *in, int k, const SimOpnd *o, char *why, size_t n)
{
    for (int i = 0; i < o->n; i++) {
        int32_t slot = f->vec[o->reg2 + i];
        if (slot <= -2) {   /* a constant or special register */
            const SimOpnd *v = &f->velem[-2 - slot];
            int ok = v->kind == SO_SREG ? sreg_type(v->imm) == T_U32 : o->n > 1 || v->lit == LIT_INT;
            if (ok) continue;
            snprintf(why, n, "%s operand %d: coordinate %d is %s; coordinates are 32-bit%s", isa_base_text(in->d.op),
                     k + 1, i, v->kind == SO_SREG ? "a 64-bit special register" : "a float constant",
                     o->n > 1 ? "" : " integers");
            return -1;
        }
        if (slot < 0) continue;
        int r = f->slot_type[slot];
        if (r == T_PRED) {
            snprintf(why, n, "%s operand %d: a predicate inside a vector is not modelled", isa_base_text(in->d.op), k + 1);
            return -1;
        }
        if (f->slot_bits[slot] == 32 && (o->n > 1 || kind_of(r) != 'f')) continue;
        char name[64];
        sim_reg_name(f, slot, name, sizeof name);
        snprintf(why, n, "%s operand %d: coordinate %d is register %s (%s); coordinates are 32-bit%s",
                 isa_base_text(in->d.op), k + 1, i, name, type_text(r), o->n > 1 ? "" : " integers");
        return -1;
    }
    return 0;
}

/* A vector's registers as ptxas checks them: all of one width ("Incompatible elements of vector expression"),
 * then their common type (one type; a bit type where a .bN is among them; none for floats mixed with integers)
 * against the element type as a lone register would be (ld's and st's wider too: a .v2.u8 of .b16 registers). */
static int vec_regs(SimFunc *f, const SimInsn *in, int k, const SimOpnd *o, Expect e, char *why, size_t n)
{
    int bits = 0, common = T_NONE, bit = 0, mixed = 0;
    for (int i = 0; i < o->n; i++) {
        int32_t slot = f->vec[o->reg + i];
        if (slot < 0) continue;   /* _, a constant or a special register: one() */
        int r = f->slot_type[slot];
        if (r == T_PRED) {
            snprintf(why, n, "%s operand %d: a predicate inside a vector is not modelled", isa_base_text(in->d.op), k + 1);
            return -1;
        }
        if (bits && f->slot_bits[slot] != bits) {
            snprintf(why, n, "%s operand %d: the vector's registers are of different widths (%d and %d bits)",
                     isa_base_text(in->d.op), k + 1, bits, f->slot_bits[slot]);
            return -1;
        }
        bits = f->slot_bits[slot];
        bit |= kind_of(r) == 'b';
        if (common == T_NONE) common = r;
        else if (common != r) mixed |= kind_of(common) == 'f' || kind_of(r) == 'f' ? 2 : 1;
    }
    if (!bits) return 0;
    if (mixed && !bit) common = mixed & 2 ? T_NONE : common;   /* .u and .s mix as integers */
    else if (mixed) common = bits == 16 ? T_B16 : bits == 32 ? T_B32 : T_B64;
    if (common != T_NONE && fits(common, e)) return 0;
    snprintf(why, n, "%s operand %d: the vector's registers (%d-bit%s%s) do not fit a %s%s element",
             isa_base_text(in->d.op), k + 1, bits, common != T_NONE ? " " : ", floats mixed with integers",
             common != T_NONE ? type_text(common) : "", type_text(e.type), e.how == WIDER ? " (or wider)" : "");
    return -1;
}

/* set.cmp.dtype.stype: stype as setp's type with that compare, and the pairs ptxas 13.0 takes: u32 or s32 of any,
 * f32 of any but the half types, f16 and bf16 of any but the packed pairs (f16 of no bf16), u16 and s16 of f16 and
 * bf16, a packed pair of its own kind */
static int set_types(const IsaInsn *d, char *why, size_t n)
{
    if (d->ntype != 2) return snprintf(why, n, "set needs two types, .dtype.stype"), -1;
    int dt = d->type[0], st = d->type[1];
    IsaInsn as_setp = *d;
    as_setp.op = I_SETP;
    unsigned cmp_ok = types_taken(&as_setp);
    int half = st == T_F16 || st == T_BF16 || st == T_F16X2 || st == T_BF16X2, ok;
    switch (dt) {
    case T_U32: case T_S32: ok = 1; break;
    case T_F32: ok = !half; break;
    case T_F16: case T_BF16: ok = st != T_F16X2 && st != T_BF16X2 && !(dt == T_F16 && st == T_BF16); break;
    case T_U16: case T_S16: ok = st == T_F16 || st == T_BF16; break;
    case T_F16X2: case T_BF16X2: ok = st == dt; break;
    default: ok = 0;
    }
    if (cmp_ok >> st & 1 && ok) return 0;
    snprintf(why, n, "set takes no %s%s here (the compare's type as setp takes it; .u32/.s32 of any, .f32 of no half "
             "type, .f16/.bf16 of no packed pair, .u16/.s16 of .f16 or .bf16, a packed pair of its own kind)",
             type_text(dt), type_text(st));
    return -1;
}

int sim_type_check(SimFunc *f, SimInsn *in, char *why, size_t n)
{
    if (in->d.op == I_SET && set_types(&in->d, why, n)) return -1;
    unsigned taken = in->d.op == I_SET ? 0 : types_taken(&in->d);
    int t0 = in->d.ntype ? in->d.type[0] : T_NONE;
    if (taken && t0 != T_NONE && !(taken >> t0 & 1)) {
        char list[160];
        set_text(taken, list, sizeof list);
        snprintf(why, n, "%s takes no %s here (with these modifiers it takes %s)", isa_base_text(in->d.op), type_text(t0),
                 list[0] ? list : "no type");
        return -1;
    }
    for (int k = 0; k < in->nops; k++) {
        SimOpnd *o = &in->o[k];
        Expect e = expect(in, k);
        if (o->kind == SO_ADDR && o->n && coords_ok(f, in, k, o, why, n)) return -1;
        if (o->kind != SO_VEC) {
            if (e.how == ANY) untyped(in, o);
            else if (one(f, in, k, o, e, 0, why, n)) return -1;
            continue;
        }
        /* a vector: mov's elements split its type; ld/st/atom/red's each are of it */
        int et = e.type;
        if (in->d.op == I_MOV && o->n) {
            int b = isa_type_bits(e.type) / o->n;
            et = b == 16 ? T_B16 : b == 32 ? T_B32 : b == 64 ? T_B64 : T_NONE;
        }
        if (e.how != ANY && et != T_NONE && vec_regs(f, in, k, o, ex(et, e.how), why, n)) return -1;
        for (int i = 0; i < o->n; i++) {
            int32_t slot = f->vec[o->reg + i];
            SimOpnd el = slot <= -2 ? f->velem[-2 - slot] : (SimOpnd){.kind = slot < 0 ? SO_SINK : SO_REG, .reg = slot};
            if (e.how == ANY || et == T_NONE) {
                if (slot <= -2) untyped(in, &f->velem[-2 - slot]);
                continue;
            }
            if (one(f, in, k, &el, ex(et, e.how), 1, why, n)) return -1;
            if (slot <= -2) f->velem[-2 - slot] = el;
        }
    }
    return 0;
}
