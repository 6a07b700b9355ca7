/* Mnemonic -> IsaInsn. The base is the longest dotted prefix found in
 * isa.def ("cp.async.bulk.tensor" before "cp.async"); every remaining
 * component must be a modifier this file knows and one the instruction takes
 * (isa.def's need and allow columns), and the modifiers it needs must be
 * there, so PTX outside the vocabulary, or that ptxas refuses, is refused by
 * name instead of being half understood (a rounding on a load, a shfl
 * without its mode). */
#include "isa.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *text;
    uint8_t unit, cls, arch_a;
    uint16_t sm, ptx;
    uint32_t need, allow;     /* MK_ kinds */
    uint64_t fneed, fallow;   /* F_ flags */
    uint32_t types;           /* TY() bits, 0: any */
} BaseInfo;
static const BaseInfo kBase[I_COUNT] = {
#define ISA(id, text, unit, cls, sm, a, ptx, need, allow, fneed, fallow, types) \
    [I_##id] = {text, unit, cls, a, sm, ptx, need, allow, fneed, fallow, types},
#include "isa.def"
#undef ISA
};

/* M_HINT: a hint that changes no result, its val the MK_ kind it is of */
typedef enum {
    M_TYPE, M_SPACE, M_CMP, M_RND, M_REDOP, M_VEC, M_FLAG, M_HINT, M_CACHEOP, M_TMSHAPE, M_KIND, M_CTAGROUP, M_BCOLLECT,
    M_SUB, M_CC
} ModCat;
typedef struct { const char *text; uint8_t cat; uint64_t val; } Mod;
static const Mod kMods[] = {
    {"pred", M_TYPE, T_PRED}, {"b8", M_TYPE, T_B8}, {"b16", M_TYPE, T_B16}, {"b32", M_TYPE, T_B32},
    {"b64", M_TYPE, T_B64}, {"b128", M_TYPE, T_B128}, {"u8", M_TYPE, T_U8}, {"u16", M_TYPE, T_U16},
    {"u32", M_TYPE, T_U32}, {"u64", M_TYPE, T_U64}, {"s8", M_TYPE, T_S8}, {"s16", M_TYPE, T_S16},
    {"s32", M_TYPE, T_S32}, {"s64", M_TYPE, T_S64}, {"f16", M_TYPE, T_F16}, {"f16x2", M_TYPE, T_F16X2},
    {"bf16", M_TYPE, T_BF16}, {"bf16x2", M_TYPE, T_BF16X2}, {"f32", M_TYPE, T_F32}, {"f64", M_TYPE, T_F64},
    {"tf32", M_TYPE, T_TF32}, {"e4m3x2", M_TYPE, T_E4M3X2}, {"e5m2x2", M_TYPE, T_E5M2X2}, {"e4m3", M_TYPE, T_E4M3},
    {"e5m2", M_TYPE, T_E5M2}, {"u16x2", M_TYPE, T_U16X2}, {"s16x2", M_TYPE, T_S16X2},
    {"global", M_SPACE, SP_GLOBAL}, {"shared", M_SPACE, SP_SHARED}, {"shared::cta", M_SPACE, SP_SHARED},
    {"shared::cluster", M_SPACE, SP_SHARED_CLUSTER}, {"param", M_SPACE, SP_PARAM}, {"param::entry", M_SPACE, SP_PARAM},
    {"local", M_SPACE, SP_LOCAL}, {"const", M_SPACE, SP_CONST},
    {"eq", M_CMP, CMP_EQ}, {"ne", M_CMP, CMP_NE}, {"lt", M_CMP, CMP_LT}, {"le", M_CMP, CMP_LE},
    {"gt", M_CMP, CMP_GT}, {"ge", M_CMP, CMP_GE}, {"lo", M_CMP, CMP_LO}, {"ls", M_CMP, CMP_LS},
    {"hi", M_CMP, CMP_HI}, {"hs", M_CMP, CMP_HS}, {"equ", M_CMP, CMP_EQU}, {"neu", M_CMP, CMP_NEU},
    {"ltu", M_CMP, CMP_LTU}, {"leu", M_CMP, CMP_LEU}, {"gtu", M_CMP, CMP_GTU}, {"geu", M_CMP, CMP_GEU},
    {"num", M_CMP, CMP_NUM}, {"nan", M_CMP, CMP_NAN}, {"finite", M_CMP, CMP_FINITE}, {"infinite", M_CMP, CMP_INFINITE},
    {"number", M_CMP, CMP_NUMBER}, {"notanumber", M_CMP, CMP_NOTANUMBER}, {"normal", M_CMP, CMP_NORMAL},
    {"subnormal", M_CMP, CMP_SUBNORMAL},
    {"rn", M_RND, RND_RN}, {"rna", M_RND, RND_RNA}, {"rz", M_RND, RND_RZ}, {"rm", M_RND, RND_RM}, {"rp", M_RND, RND_RP},
    {"rni", M_RND, RND_RNI}, {"rzi", M_RND, RND_RZI}, {"rmi", M_RND, RND_RMI}, {"rpi", M_RND, RND_RPI},
    {"add", M_REDOP, RO_ADD}, {"min", M_REDOP, RO_MIN}, {"max", M_REDOP, RO_MAX}, {"inc", M_REDOP, RO_INC},
    {"dec", M_REDOP, RO_DEC}, {"and", M_REDOP, RO_AND}, {"or", M_REDOP, RO_OR}, {"xor", M_REDOP, RO_XOR},
    {"exch", M_REDOP, RO_EXCH}, {"cas", M_REDOP, RO_CAS},
    {"v2", M_VEC, 2}, {"v4", M_VEC, 4}, {"v8", M_VEC, 8},
    {"wide", M_FLAG, F_WIDE}, {"ftz", M_FLAG, F_FTZ}, {"noftz", M_FLAG, F_NOFTZ}, {"sat", M_FLAG, F_SAT}, {"approx", M_FLAG, F_APPROX},
    {"full", M_FLAG, F_FULL}, {"uni", M_FLAG, F_UNI}, {"sync", M_FLAG, F_SYNC}, {"aligned", M_FLAG, F_ALIGNED},
    {"trans", M_FLAG, F_TRANS}, {"nc", M_FLAG, F_NC}, {"volatile", M_FLAG, F_VOLATILE},
    {"relaxed", M_FLAG, F_RELAXED}, {"acquire", M_FLAG, F_ACQUIRE}, {"release", M_FLAG, F_RELEASE},
    {"acq_rel", M_FLAG, F_ACQ_REL}, {"sc", M_FLAG, F_SC}, {"weak", M_FLAG, F_WEAK}, {"cta", M_FLAG, F_SCOPE_CTA},
    {"cluster", M_FLAG, F_SCOPE_CLUSTER}, {"gpu", M_FLAG, F_SCOPE_GPU}, {"sys", M_FLAG, F_SCOPE_SYS},
    {"to", M_FLAG, F_TO}, {"L2::cache_hint", M_FLAG, F_CACHE_HINT},
    {"mbarrier::complete_tx::bytes", M_FLAG, F_COMPLETE_TX}, {"bulk_group", M_FLAG, F_BULK_GROUP},
    {"multicast::cluster", M_FLAG, F_MULTICAST}, {"multicast::cluster::all", M_FLAG, F_MULTICAST},
    {"is_canceled", M_SUB, SUB_IS_CANCELED}, {"get_first_ctaid", M_SUB, SUB_CTAID},
    {"get_first_ctaid::x", M_SUB, SUB_CTAID_X}, {"get_first_ctaid::y", M_SUB, SUB_CTAID_Y},
    {"get_first_ctaid::z", M_SUB, SUB_CTAID_Z}, {"expect_tx", M_FLAG, F_EXPECT_TX}, {"parity", M_FLAG, F_PARITY},
    {"read", M_FLAG, F_READ}, {"tile", M_FLAG, F_TILE}, {"tile::gather4", M_FLAG, F_GATHER4},
    {"im2col", M_FLAG, F_IM2COL}, {"ws", M_FLAG, F_WS}, {"pack::16b", M_FLAG, F_PACK16},
    {"unpack::16b", M_FLAG, F_UNPACK16}, {"mbarrier::arrive::one", M_FLAG, F_ARRIVE_ONE},
    {"bfly", M_FLAG, F_BFLY}, {"idx", M_FLAG, F_IDX}, {"up", M_FLAG, F_UP}, {"down", M_FLAG, F_DOWN},
    {"ballot", M_FLAG, F_BALLOT}, {"all", M_FLAG, F_ALL}, {"any", M_FLAG, F_ANY}, {"row", M_FLAG, F_ROW},
    {"col", M_FLAG, F_COL}, {"async", M_FLAG, F_ASYNC}, {"collector::a::fill", M_FLAG, F_COLLECTOR},
    {"collector::a::use", M_FLAG, F_COLLECTOR}, {"collector::a::lastuse", M_FLAG, F_COLLECTOR},
    {"collector::a::discard", M_FLAG, F_COLLECTOR}, {"warpx2::02_13", M_FLAG, F_WARPX2_02_13},
    {"warpx2::01_23", M_FLAG, F_WARPX2_01_23}, {"b8x16", M_FLAG, F_DECOMPRESS},
    {"b6x16_p32", M_FLAG, F_DECOMPRESS}, {"b4x16_p64", M_FLAG, F_DECOMPRESS}, {"warpx4", M_FLAG, F_WARPX4}, {"noinc", M_FLAG, F_NOINC},
    {"popc", M_FLAG, F_POPC}, {"satfinite", M_FLAG, F_SATFINITE}, {"relu", M_FLAG, F_RELU}, {"NaN", M_FLAG, F_NAN}, {"shiftamt", M_FLAG, F_SHIFTAMT}, {"gl", M_FLAG, F_SCOPE_GPU}, {"l", M_FLAG, F_SHF_L}, {"r", M_FLAG, F_SHF_R}, {"clamp", M_FLAG, F_CLAMP}, {"wrap", M_FLAG, F_WRAP},
    {"32x32b", M_TMSHAPE, TS_32X32B}, {"16x64b", M_TMSHAPE, TS_16X64B}, {"16x128b", M_TMSHAPE, TS_16X128B},
    {"16x256b", M_TMSHAPE, TS_16X256B}, {"16x32bx2", M_TMSHAPE, TS_16X32BX2}, {"128x256b", M_TMSHAPE, TS_128X256B},
    {"4x256b", M_TMSHAPE, TS_4X256B}, {"128x128b", M_TMSHAPE, TS_128X128B}, {"64x128b", M_TMSHAPE, TS_64X128B},
    {"32x128b", M_TMSHAPE, TS_32X128B},
    {"kind::f16", M_KIND, KIND_F16}, {"kind::tf32", M_KIND, KIND_TF32}, {"kind::f8f6f4", M_KIND, KIND_F8F6F4},
    {"kind::i8", M_KIND, KIND_I8}, {"cta_group::1", M_CTAGROUP, 1}, {"cta_group::2", M_CTAGROUP, 2},
    /* tcgen05.mma.ws's B collector buffers: ISA_BCOLLECT(action, buffer) */
    {"collector::b0::fill", M_BCOLLECT, ISA_BCOLLECT(BC_FILL, 0)}, {"collector::b1::fill", M_BCOLLECT, ISA_BCOLLECT(BC_FILL, 1)},
    {"collector::b2::fill", M_BCOLLECT, ISA_BCOLLECT(BC_FILL, 2)}, {"collector::b3::fill", M_BCOLLECT, ISA_BCOLLECT(BC_FILL, 3)},
    {"collector::b0::use", M_BCOLLECT, ISA_BCOLLECT(BC_USE, 0)}, {"collector::b1::use", M_BCOLLECT, ISA_BCOLLECT(BC_USE, 1)},
    {"collector::b2::use", M_BCOLLECT, ISA_BCOLLECT(BC_USE, 2)}, {"collector::b3::use", M_BCOLLECT, ISA_BCOLLECT(BC_USE, 3)},
    {"collector::b0::lastuse", M_BCOLLECT, ISA_BCOLLECT(BC_LASTUSE, 0)}, {"collector::b1::lastuse", M_BCOLLECT, ISA_BCOLLECT(BC_LASTUSE, 1)},
    {"collector::b2::lastuse", M_BCOLLECT, ISA_BCOLLECT(BC_LASTUSE, 2)}, {"collector::b3::lastuse", M_BCOLLECT, ISA_BCOLLECT(BC_LASTUSE, 3)},
    {"collector::b0::discard", M_BCOLLECT, ISA_BCOLLECT(BC_DISCARD, 0)}, {"collector::b1::discard", M_BCOLLECT, ISA_BCOLLECT(BC_DISCARD, 1)},
    {"collector::b2::discard", M_BCOLLECT, ISA_BCOLLECT(BC_DISCARD, 2)}, {"collector::b3::discard", M_BCOLLECT, ISA_BCOLLECT(BC_DISCARD, 3)},
    /* hints with no effect on results (cache operators are kept: cp.async.cg copies 16 bytes) */
    {"ca", M_CACHEOP, CO_CA}, {"cg", M_CACHEOP, CO_CG}, {"cs", M_CACHEOP, CO_CS}, {"lu", M_CACHEOP, CO_LU},
    {"cv", M_CACHEOP, CO_CV}, {"wb", M_CACHEOP, CO_WB}, {"wt", M_CACHEOP, CO_WT},
    {"cc", M_CC, 1},
    {"L2::64B", M_HINT, MK_PREFSIZE}, {"L2::128B", M_HINT, MK_PREFSIZE}, {"L2::256B", M_HINT, MK_PREFSIZE},
    {"L1::evict_normal", M_HINT, MK_L1EVICT}, {"L1::evict_first", M_HINT, MK_L1EVICT},
    {"L1::evict_last", M_HINT, MK_L1EVICT}, {"L1::evict_unchanged", M_HINT, MK_L1EVICT},
    {"L1::no_allocate", M_HINT, MK_L1EVICT},
    /* griddepcontrol's two forms: the sim runs grids one after another, so both are no-ops */
    {"launch_dependents", M_HINT, MK_GRIDDEP}, {"wait", M_HINT, MK_GRIDDEP},
    {"L2::evict_normal", M_HINT, MK_L2EVICT}, {"L2::evict_first", M_HINT, MK_L2EVICT},
    {"L2::evict_last", M_HINT, MK_L2EVICT}, {"L2::evict_unchanged", M_HINT, MK_L2EVICT},
    {"fractional", M_HINT, MK_POLICY},   /* createpolicy's: only a hint */
    {"L1", M_HINT, MK_LEVEL}, {"L2", M_HINT, MK_LEVEL},   /* prefetch's cache level */
};

static int errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The isa.def entry that is the longest dotted prefix of mn, or -1. */
static int find_base(const char *mn)
{
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < I_COUNT; i++) {
        size_t n = strlen(kBase[i].text);
        if (n > best_len && !strncmp(mn, kBase[i].text, n) && (mn[n] == '.' || !mn[n])) best = i, best_len = n;
    }
    return best;
}

/* Shapes spelled as numbers: mMnNkK (mma, wgmma), mMnN (ldmatrix), xN, .Nd; their MK_ kind, or 0 for none. */
static uint32_t numeric_mod(const char *t, IsaInsn *in)
{
    char *end;
    if (t[0] == 'x' && t[1] >= '1' && t[1] <= '9') {
        long v = strtol(t + 1, &end, 10);
        if (*end || v > 512) return 0;
        in->num = (uint16_t)v;
        return MK_NUM;
    }
    if (t[0] >= '1' && t[0] <= '5' && t[1] == 'd' && !t[2]) { in->dim = (uint8_t)(t[0] - '0'); return MK_DIM; }
    unsigned m = 0, n = 0, k = 0;
    int used = 0;
    if (sscanf(t, "m%un%uk%u%n", &m, &n, &k, &used) == 3 && !t[used]) {
        in->m = (uint16_t)m, in->n = (uint16_t)n, in->k = (uint16_t)k;
        return MK_SHAPE;
    }
    if (sscanf(t, "m%un%u%n", &m, &n, &used) == 2 && !t[used]) { in->m = (uint16_t)m, in->n = (uint16_t)n; return MK_SHAPE; }
    return 0;
}

static const uint32_t kSpaceKind[] = {[SP_GLOBAL] = MK_GLOBAL, [SP_SHARED] = MK_SHARED, [SP_SHARED_CLUSTER] = MK_CLUSTER,
                                      [SP_PARAM] = MK_PARAM, [SP_LOCAL] = MK_LOCAL, [SP_CONST] = MK_CONST};

/* Writes modifier t into in: 0 when t is none this file knows, else 1 with its kind (an MK_ bit, 0 for a flag)
 * and its flag. */
static int apply_mod(const char *t, IsaInsn *in, uint32_t *kind, uint64_t *flag)
{
    *kind = numeric_mod(t, in), *flag = 0;
    if (*kind) return 1;
    for (size_t i = 0; i < sizeof kMods / sizeof kMods[0]; i++) {
        const Mod *m = &kMods[i];
        if (strcmp(m->text, t)) continue;
        switch (m->cat) {
        case M_TYPE:
            if (in->ntype == ISA_MAX_TYPES) return 0;
            in->type[in->ntype++] = (uint8_t)m->val;
            *kind = MK_TYPE;
            return 1;
        case M_SPACE:
            if (in->nspace == 2) return 0;
            in->space[in->nspace++] = (uint8_t)m->val;
            *kind = kSpaceKind[m->val];
            return 1;
        case M_CMP:
            /* .lo/.hi are halves for mul/mad and comparisons for setp */
            if (in->op != I_SETP && (m->val == CMP_LO || m->val == CMP_HI)) {
                in->flags |= *flag = m->val == CMP_LO ? F_LO : F_HI;
                return 1;
            }
            in->cmp = (uint8_t)m->val, *kind = MK_CMP;
            return 1;
        case M_RND: in->rnd = (uint8_t)m->val, *kind = MK_RND; return 1;
        case M_REDOP: in->redop = (uint8_t)m->val, *kind = MK_REDOP; return 1;
        case M_VEC: in->vec = (uint8_t)m->val, *kind = MK_VEC; return 1;
        case M_FLAG: in->flags |= *flag = m->val; return 1;
        case M_CACHEOP: in->cacheop = (uint8_t)m->val, *kind = MK_CACHEOP; return 1;
        case M_TMSHAPE: in->tmshape = (uint8_t)m->val, *kind = MK_TMSHAPE; return 1;
        case M_KIND: in->kind = (uint8_t)m->val, *kind = MK_KIND; return 1;
        case M_CTAGROUP: in->cta_group = (uint8_t)m->val, *kind = MK_CTAGROUP; return 1;
        case M_BCOLLECT: in->bcollect = (uint8_t)m->val, *kind = MK_BCOLLECT; return 1;
        case M_SUB: in->sub = (uint8_t)m->val, *kind = MK_SUB; return 1;
        case M_CC: in->cc = 1, *kind = MK_CC; return 1;
        case M_HINT:   /* a cache level is kept: the tensor prefetch takes .L2 only; griddepcontrol's form too */
            if (m->val == MK_LEVEL) in->level = (uint8_t)(t[1] - '0');
            if (m->val == MK_GRIDDEP) in->sub = (uint8_t)(t[0] == 'w' ? SUB_GRIDDEP_WAIT : SUB_GRIDDEP_LAUNCH);
            *kind = (uint32_t)m->val;
            return 1;
        }
    }
    return 0;
}

/* Flags of which an instruction names at most one: its mode, memory order, scope, ... (isa.def's fneed
 * names one set of these when one of the set must be there) */
static const uint64_t kOneOf[] = {
    F_LO | F_HI | F_WIDE, F_BFLY | F_IDX | F_UP | F_DOWN, F_BALLOT | F_ALL | F_ANY | F_UNI,
    F_VOLATILE | F_RELAXED | F_ACQUIRE | F_RELEASE | F_ACQ_REL | F_SC | F_WEAK, F_SCOPES, F_SHF_L | F_SHF_R,
    F_CLAMP | F_WRAP, F_PACK16 | F_UNPACK16, F_WARPX2_02_13 | F_WARPX2_01_23 | F_WARPX4, F_TILE | F_GATHER4 | F_IM2COL,
    F_COMPLETE_TX | F_BULK_GROUP,
};
enum { NONEOF = sizeof kOneOf / sizeof kOneOf[0] };

/* A flag as written (the first spelling of it) */
static const char *flag_text(uint64_t f)
{
    if (f == F_LO || f == F_HI) return f == F_LO ? "lo" : "hi";
    for (size_t i = 0; i < sizeof kMods / sizeof kMods[0]; i++)
        if (kMods[i].cat == M_FLAG && kMods[i].val == f) return kMods[i].text;
    return "?";
}

/* ".a, .b or .c" of the flags in set (join " or "; " and ": ".a, .b and .c"), into out */
static void flags_text(uint64_t set, const char *join, char *out, size_t cap)
{
    int n = __builtin_popcountll(set), k = 0;
    size_t at = 0;
    out[0] = 0;
    for (int b = 0; b < 64 && at < cap; b++) {
        if (!(set >> b & 1)) continue;
        at += (size_t)snprintf(out + at, cap - at, "%s.%s", !k ? "" : k + 1 < n ? ", " : join, flag_text(1ull << b));
        k++;
    }
}

typedef struct {
    const BaseInfo *base;
    const char *mn;
    uint32_t seen;            /* MK_ kinds written */
    const char *at[MK_COUNT]; /* where each was written, for messages */
} Written;

static int kind_bit(uint32_t kind) { return __builtin_ctz(kind); }

/* Whether the instruction takes modifier tok (of kind, or flag), and takes it with the ones before it. */
static int check_mod(Written *w, const IsaInsn *in, const char *tok, const char *where, uint32_t kind, uint64_t flag,
                     char *err, size_t errlen)
{
    const BaseInfo *b = w->base;
    uint32_t takes = b->need | b->allow;
    if (kind == MK_TYPE && (takes & MK_TYPES)) takes |= MK_TYPE;
    int type_off = kind == MK_TYPE && b->types && !(b->types >> in->type[in->ntype - 1] & 1);
    if ((kind && !(takes & kind)) || (flag & ~(b->fneed | b->fallow)) || type_off)
        return errf(err, errlen, "%s: %s takes no .%s", w->mn, b->text, tok);
    if (kind & MK_ANYSPACE) {
        if (in->nspace > ((takes & MK_SPACES2) ? 2 : 1))
            return errf(err, errlen, "%s: %s takes %s state space", w->mn, b->text, (takes & MK_SPACES2) ? "two" : "one");
        return 0;
    }
    if (kind == MK_TYPE && (takes & MK_TYPES)) return 0;
    /* the one kind written twice: createpolicy's primary and secondary L2 priorities */
    if ((kind & w->seen) && kind != MK_L2EVICT) {
        const char *prev = w->at[kind_bit(kind)];
        return errf(err, errlen, "%s: .%s cannot be combined with .%.*s", w->mn, tok, (int)strcspn(prev, "."), prev);
    }
    for (int g = 0; g < NONEOF; g++)
        if ((flag & kOneOf[g]) && (in->flags & kOneOf[g] & ~flag))
            return errf(err, errlen, "%s: .%s cannot be combined with .%s", w->mn, tok, flag_text(in->flags & kOneOf[g] & ~flag));
    if (kind) w->seen |= kind, w->at[kind_bit(kind)] = where;
    return 0;
}

static const char *kind_text(uint32_t kind)
{
    switch (kind) {
    case MK_TYPE: return "a type";
    case MK_SPACES2: return "a destination and a source state space";
    case MK_REDOP: return "an operation (.add, .min, .inc, ...)";
    case MK_SHAPE: return "a shape (.mMnN or .mMnNkK)";
    case MK_NUM: return "a count (.xN)";
    case MK_DIM: return "a dimension (.1d to .5d)";
    case MK_TMSHAPE: return "a shape (.32x32b, .16x256b, .128x256b, ...)";
    case MK_KIND: return "a .kind";
    case MK_CTAGROUP: return "a .cta_group (::1 or ::2)";
    case MK_CACHEOP: return "a cache operator (.ca or .cg)";
    case MK_GRIDDEP: return ".launch_dependents or .wait";
    case MK_SUB: return ".is_canceled or .get_first_ctaid";
    }
    return "another modifier";
}

/* What a float op must name that PTX leaves no default for (NULL: nothing): .approx for ex2, lg2, rsqrt, sin, cos,
 * tanh; a rounding or .approx for rcp, sqrt (and div, or .full) */
static const char *approx_needed(const IsaInsn *d)
{
    int t = d->ntype ? d->type[0] : T_NONE, fp = t == T_F16 || t == T_F16X2 || t == T_BF16 || t == T_BF16X2 ||
                                                  t == T_F32 || t == T_F64;
    uint64_t f = d->flags;
    switch (d->op) {
    case I_EX2: case I_LG2: case I_RSQRT: case I_SIN: case I_COS: case I_TANH:
        return f & F_APPROX ? NULL : "needs .approx";
    case I_RCP: case I_SQRT: return fp && !d->rnd && !(f & F_APPROX) ? "needs a rounding modifier or .approx" : NULL;
    case I_DIV: return fp && !d->rnd && !(f & (F_APPROX | F_FULL)) ? "needs a rounding modifier, .approx or .full" : NULL;
    default: return NULL;
    }
}

/* The combinations the columns cannot say: what the modifiers written ask of one another (NULL: nothing amiss),
 * worded after "<instruction> ". */
static const char *rule_breaks(const IsaInsn *in, uint32_t seen)
{
    int t = in->ntype ? in->type[0] : T_NONE, ws = (in->flags & F_WS) != 0;
    switch (in->op) {
    case I_BAR_RED: {   /* the predicate's reduction: a count, or an and/or of predicates */
        int popc = (in->flags & F_POPC) && !in->redop && t == T_U32;
        int logic = !(in->flags & F_POPC) && (in->redop == RO_AND || in->redop == RO_OR) && t == T_PRED;
        return popc || logic ? NULL : "needs .popc.u32, .and.pred or .or.pred";
    }
    case I_VOTE: return (t == T_B32) == !!(in->flags & F_BALLOT) ? NULL : "takes .b32 with .ballot and .pred with .all, .any, .uni";
    case I_SETMAXNREG: return in->redop == RO_INC || in->redop == RO_DEC ? NULL : "needs .inc or .dec";
    case I_RED: return in->redop == RO_EXCH || in->redop == RO_CAS ? "takes no .exch or .cas (atom does)" : NULL;
    case I_PREFETCH: return seen & (MK_LEVEL | MK_L2EVICT) ? NULL : "needs a cache level (.L1, .L2 or .L2::evict_last/normal)";
    case I_CP_ASYNC: return in->cacheop == CO_CA || in->cacheop == CO_CG ? NULL : "needs .ca or .cg";
    case I_CLC_QUERY: {   /* .is_canceled.pred, .get_first_ctaid.v4.b32 or ::x/y/z .b32, each of a .b128 response */
        int t1 = in->ntype > 1 ? in->type[1] : T_NONE, ok = in->ntype == 2 && t1 == T_B128;
        if (in->sub == SUB_IS_CANCELED) ok = ok && t == T_PRED && in->vec <= 1;
        else if (in->sub == SUB_CTAID) ok = ok && t == T_B32 && in->vec == 4;
        else ok = ok && t == T_B32 && in->vec <= 1;
        return ok ? NULL : "takes .is_canceled.pred.b128, .get_first_ctaid.v4.b32.b128 or .get_first_ctaid::x/y/z.b32.b128";
    }
    case I_ST_ASYNC:   /* ptxas 13.0: a vector of 128 bits at most */
        if (in->nspace != 1) return "needs a state space (.shared::cluster)";
        return in->vec <= 2 || (in->vec == 4 && isa_type_bits(t) == 32) ? NULL : "takes .v2, or .v4 of 32-bit types";
    case I_PREFETCH_TENSOR:
        return in->level == 2 && in->nspace == 1 && in->space[0] == SP_GLOBAL ? NULL : "needs .L2 and .global";
    case I_ADD: case I_SUB: case I_MAD:   /* .cc: integer carry arithmetic of 32 or 64 bits (ptxas 13.0) */
        if (!in->cc) break;
        if (in->flags & F_SAT) return "takes no .sat with .cc";
        if (t != T_U32 && t != T_S32 && t != T_U64 && t != T_S64) return "takes .cc with .u32, .s32, .u64 or .s64 only";
        return in->op == I_MAD && !(in->flags & (F_LO | F_HI)) ? "takes .cc with .lo or .hi only" : NULL;
    case I_TC_MMA:   /* .ws: one CTA, its own B collector buffers */
        if (ws && (in->cta_group != 1 || (in->flags & F_COLLECTOR))) return ".ws takes .cta_group::1 and no .collector::a";
        return in->bcollect && !ws ? "takes .collector::bN::... with .ws only" : NULL;
    }
    return approx_needed(in);
}

/* The kinds and flags the instruction needs and lacks: refused, named. */
static int check_needs(const Written *w, const IsaInsn *in, char *err, size_t errlen)
{
    const BaseInfo *b = w->base;
    for (uint32_t k = 1; k && k <= b->need; k <<= 1) {
        int have = k == MK_TYPE ? in->ntype > 0 : k == MK_SPACES2 ? in->nspace == 2 : (w->seen & k) != 0;
        if ((b->need & k) && !have) return errf(err, errlen, "%s: %s needs %s", w->mn, b->text, kind_text(k));
    }
    uint64_t alone = b->fneed;
    char list[160];
    for (int g = 0; g < NONEOF; g++) {
        uint64_t want = b->fneed & kOneOf[g];
        alone &= ~kOneOf[g];
        if (!want || (in->flags & want)) continue;
        flags_text(want, " or ", list, sizeof list);
        return errf(err, errlen, "%s: %s needs %s%s", w->mn, b->text, __builtin_popcountll(want) > 1 ? "one of " : "", list);
    }
    if (alone & ~in->flags) {
        flags_text(alone & ~in->flags, " and ", list, sizeof list);
        return errf(err, errlen, "%s: %s needs %s", w->mn, b->text, list);
    }
    const char *broken = rule_breaks(in, w->seen);
    return broken ? errf(err, errlen, "%s: %s %s", w->mn, b->text, broken) : 0;
}

/* Counter class refinements the base alone cannot give. */
static void refine_class(IsaInsn *in)
{
    int t = in->ntype ? in->type[in->ntype - 1] : T_NONE;
    if (in->unit == U_MEM && in->cls == CL_GLOBAL) {
        int sp = in->nspace ? in->space[0] : SP_NONE;
        in->cls = sp == SP_PARAM ? CL_PARAM : (sp == SP_SHARED || sp == SP_SHARED_CLUSTER) ? CL_SHARED : CL_GLOBAL;
    } else if (in->cls == CL_INT && in->unit == U_ALU && isa_type_is_float(t)) {
        in->cls = CL_FP32;
    }
}

int isa_decode(const char *mnemonic, IsaInsn *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int b = find_base(mnemonic);
    if (b < 0) return errf(err, errlen, "instruction %s is not supported", mnemonic);
    out->op = (uint16_t)b, out->unit = kBase[b].unit, out->cls = kBase[b].cls, out->vec = 1;
    Written w = {.base = &kBase[b], .mn = mnemonic};
    const char *p = mnemonic + strlen(kBase[b].text);
    char tok[64];
    while (*p == '.') {
        size_t n = strcspn(p + 1, ".");
        /* "::" joins parts of one modifier (shared::cta, L2::cache_hint) and has no '.' inside */
        if (n >= sizeof tok) return errf(err, errlen, "modifier of %s is too long", mnemonic);
        memcpy(tok, p + 1, n);
        tok[n] = 0;
        uint32_t kind;
        uint64_t flag;
        if (!apply_mod(tok, out, &kind, &flag)) return errf(err, errlen, "modifier .%s of %s is not supported", tok, mnemonic);
        if (check_mod(&w, out, tok, p + 1, kind, flag, err, errlen)) return -1;
        p += n + 1;
    }
    if (*p) return errf(err, errlen, "malformed mnemonic %s", mnemonic);
    if (check_needs(&w, out, err, errlen)) return -1;
    refine_class(out);
    return 0;
}

static void raise_to(int *v, int to) { if (to > *v) *v = to; }

void isa_needs(const IsaInsn *in, int *sm, int *arch_specific, int *ptx_x10)
{
    const BaseInfo *b = &kBase[in->op];
    *sm = b->sm, *arch_specific = b->arch_a, *ptx_x10 = b->ptx;
    if ((in->op == I_RED || in->op == I_ATOM) && in->vec > 1) raise_to(sm, 90), raise_to(ptx_x10, 81);
    if (in->flags & F_MULTICAST) *arch_specific = 1;
    if (in->cta_group == 2 || (in->flags & F_GATHER4)) raise_to(sm, 100), *arch_specific = 1, raise_to(ptx_x10, 86);
    if (in->op == I_MAD && in->cc) raise_to(ptx_x10, 30);   /* mad.cc: PTX 3.0 */
    if (isa_carry(in) && in->ntype && isa_type_bits(in->type[0]) == 64) raise_to(ptx_x10, 43);   /* 64-bit carries: PTX 4.3 */
    for (int i = 0; i < in->ntype; i++)   /* fp8 conversions: Ada and Hopper on */
        if (in->type[i] == T_E4M3X2 || in->type[i] == T_E5M2X2) raise_to(sm, 89), raise_to(ptx_x10, 78);
}

const char *isa_base_text(int op) { return op >= 0 && op < I_COUNT ? kBase[op].text : "?"; }

static const char *kClassNames[CL_COUNT] = {
    "integer", "fp32", "sfu (ex2/lg2/rcp)", "convert", "move/select", "compare", "tensor (mma)", "ldmatrix",
    "shared ld/st", "global ld/st", "cp.async", "param", "shuffle/vote/elect", "barrier", "control",
    "mbarrier/fence", "tma/bulk copy", "tmem (tcgen05 alloc/ld/st/cp)",
};
const char *isa_class_name(int cls) { return cls >= 0 && cls < CL_COUNT ? kClassNames[cls] : "?"; }

int isa_type_bits(int t)
{
    switch (t) {
    case T_PRED: return 1;
    case T_B8: case T_U8: case T_S8: case T_E4M3: case T_E5M2: return 8;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: case T_E4M3X2: case T_E5M2X2: return 16;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: case T_TF32: case T_U16X2:
    case T_S16X2: return 32;
    case T_B64: case T_U64: case T_S64: case T_F64: return 64;
    case T_B128: return 128;
    }
    return 0;
}

int isa_type_is_float(int t)
{
    return t == T_F16 || t == T_F16X2 || t == T_BF16 || t == T_BF16X2 || t == T_F32 || t == T_F64 || t == T_TF32 ||
           t == T_E4M3X2 || t == T_E5M2X2 || t == T_E4M3 || t == T_E5M2;
}

int isa_carry(const IsaInsn *in) { return in->cc || in->op == I_ADDC || in->op == I_SUBC || in->op == I_MADC; }

int isa_type_is_signed(int t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }
