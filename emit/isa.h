/* What a PTX mnemonic means, decoded once from its text: the base
 * instruction (isa.def), its types, state spaces, comparison, rounding,
 * vector width, shapes and the other modifiers. The emitter asks it what an op
 * needs of the target; the sim parses every instruction through it, ours and
 * foreign PTX alike, and dispatches on the unit. */
#ifndef PTXGEN_ISA_H
#define PTXGEN_ISA_H
#include <stddef.h>
#include <stdint.h>

typedef enum { U_ALU, U_MEM, U_WARP, U_CTRL, U_MBAR, U_TMA, U_CLUSTER, U_WGMMA, U_TMEM, U_UMMA, U_COUNT } IsaUnit;

/* Counter classes (the sim's instruction mix). */
typedef enum {
    CL_INT, CL_FP32, CL_SFU, CL_CONVERT, CL_MOVE, CL_COMPARE, CL_TENSOR, CL_LDMATRIX, CL_SHARED, CL_GLOBAL,
    CL_ASYNC, CL_PARAM, CL_SHUFFLE, CL_BARRIER, CL_CONTROL, CL_SYNC, CL_TMA, CL_TMEM, CL_COUNT
} IsaClass;

typedef enum {
#define ISA(id, text, unit, cls, sm, a, ptx, need, allow, fneed, fallow, types) I_##id,
#include "isa.def"
#undef ISA
    I_COUNT
} IsaOp;

typedef enum {
    T_NONE, T_PRED, T_B8, T_B16, T_B32, T_B64, T_B128, T_U8, T_U16, T_U32, T_U64, T_S8, T_S16, T_S32, T_S64,
    T_F16, T_F16X2, T_BF16, T_BF16X2, T_F32, T_F64, T_TF32, T_E4M3X2, T_E5M2X2,   /* two fp8 values in 16 bits */
    T_E4M3, T_E5M2,   /* one fp8 value: wgmma's A and B */
    T_U16X2, T_S16X2,   /* two 16-bit integers in 32 bits (add, min, max: nvcc's __vadd2 and friends on sm_90) */
    T_COUNT
} IsaType;
/* .shared without a qualifier is .shared::cta */
typedef enum { SP_NONE, SP_GLOBAL, SP_SHARED, SP_SHARED_CLUSTER, SP_PARAM, SP_LOCAL, SP_CONST } IsaSpace;
typedef enum {
    CMP_NONE, CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS,
    CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN,
    /* testp's properties */
    CMP_FINITE, CMP_INFINITE, CMP_NUMBER, CMP_NOTANUMBER, CMP_NORMAL, CMP_SUBNORMAL
} IsaCmp;
typedef enum { RND_NONE, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI, RND_RNA } IsaRound;
typedef enum { RO_NONE, RO_ADD, RO_MIN, RO_MAX, RO_INC, RO_DEC, RO_AND, RO_OR, RO_XOR, RO_EXCH, RO_CAS } IsaRedOp;
/* tcgen05 data-movement shapes (tcgen05.ld/st/cp) */
typedef enum { TS_NONE, TS_32X32B, TS_16X64B, TS_16X128B, TS_16X256B, TS_16X32BX2, TS_128X256B, TS_4X256B,
               TS_128X128B, TS_64X128B, TS_32X128B } IsaTmemShape;
typedef enum { KIND_NONE, KIND_F16, KIND_TF32, KIND_F8F6F4, KIND_I8 } IsaKind;
/* What clusterlaunchcontrol.query_cancel asks of a try_cancel response */
typedef enum { SUB_NONE, SUB_IS_CANCELED, SUB_CTAID, SUB_CTAID_X, SUB_CTAID_Y, SUB_CTAID_Z,
               SUB_GRIDDEP_LAUNCH, SUB_GRIDDEP_WAIT } IsaSub;   /* and griddepcontrol's form (its hint) */
/* Cache operators: hints, kept because cp.async's .cg fixes its size */
typedef enum { CO_NONE, CO_CA, CO_CG, CO_CS, CO_LU, CO_CV, CO_WB, CO_WT } IsaCacheOp;

/* Modifiers that are flags. Cache-policy and eviction hints that change no
 * result are accepted and dropped, except .L2::cache_hint (it adds an operand). */
enum {
    F_LO = 1ull << 0, F_HI = 1ull << 1, F_WIDE = 1ull << 2, F_FTZ = 1ull << 3, F_SAT = 1ull << 4,
    F_APPROX = 1ull << 5, F_UNI = 1ull << 6, F_SYNC = 1ull << 7, F_ALIGNED = 1ull << 8, F_TRANS = 1ull << 9,
    F_NC = 1ull << 10, F_VOLATILE = 1ull << 11, F_RELAXED = 1ull << 12, F_ACQUIRE = 1ull << 13,
    F_RELEASE = 1ull << 14, F_ACQ_REL = 1ull << 15, F_SCOPE_CTA = 1ull << 16, F_SCOPE_CLUSTER = 1ull << 17,
    F_SCOPE_GPU = 1ull << 18, F_SCOPE_SYS = 1ull << 19, F_TO = 1ull << 20, F_CACHE_HINT = 1ull << 21,
    F_COMPLETE_TX = 1ull << 22, F_BULK_GROUP = 1ull << 23, F_MULTICAST = 1ull << 24, F_EXPECT_TX = 1ull << 25,
    F_PARITY = 1ull << 26, F_READ = 1ull << 27, F_TILE = 1ull << 28, F_GATHER4 = 1ull << 29, F_IM2COL = 1ull << 30,
    F_WS = 1ull << 31, F_PACK16 = 1ull << 32, F_UNPACK16 = 1ull << 33, F_ARRIVE_ONE = 1ull << 34,
    F_BFLY = 1ull << 35, F_IDX = 1ull << 36, F_UP = 1ull << 37, F_DOWN = 1ull << 38, F_BALLOT = 1ull << 39,
    F_ALL = 1ull << 40, F_ANY = 1ull << 41, F_ROW = 1ull << 42, F_COL = 1ull << 43, F_WEAK = 1ull << 44,
    F_ASYNC = 1ull << 45, F_SC = 1ull << 46, F_FULL = 1ull << 47, F_NOFTZ = 1ull << 48,
    F_COLLECTOR = 1ull << 49, F_WARPX2_02_13 = 1ull << 50, F_WARPX4 = 1ull << 51, F_NOINC = 1ull << 52,
    F_WARPX2_01_23 = 1ull << 53, F_DECOMPRESS = 1ull << 54,  /* tcgen05.cp: the two warp-pair forms; .b8x16 with .b6x16_p32/.b4x16_p64 */
    F_SHF_L = 1ull << 55, F_SHF_R = 1ull << 56, F_CLAMP = 1ull << 57, F_WRAP = 1ull << 58,  /* shf's direction and mode */
    F_POPC = 1ull << 59, F_SHIFTAMT = 1ull << 60,   /* bar.red.popc; bfind.shiftamt */
    F_SATFINITE = 1ull << 61,   /* cvt to fp8: out-of-range values to the largest finite */
    F_RELU = 1ull << 62, F_NAN = 1ull << 63   /* fma/cvt.relu: negatives to 0; min/max.NaN: a NaN operand wins */
};

/* What modifiers an instruction takes (isa.def's need and allow columns):
 * the kinds of modifier that are not flags, one bit each, and named sets of
 * flags. The decoder refuses a modifier the instruction does not take, one it
 * lacks, and two of a kind (two roundings, two shapes); an instruction takes
 * one type and one state space unless MK_TYPES or MK_SPACES2 says more. */
enum {
    MK_TYPE = 1u << 0, MK_TYPES = 1u << 1,
    MK_GLOBAL = 1u << 2, MK_SHARED = 1u << 3, MK_CLUSTER = 1u << 4, MK_PARAM = 1u << 5, MK_LOCAL = 1u << 6,
    MK_CONST = 1u << 7, MK_SPACES2 = 1u << 8,   /* .shared is .shared::cta; MK_CLUSTER: .shared::cluster */
    MK_CMP = 1u << 9, MK_RND = 1u << 10, MK_REDOP = 1u << 11, MK_VEC = 1u << 12, MK_SHAPE = 1u << 13,
    MK_NUM = 1u << 14, MK_DIM = 1u << 15, MK_TMSHAPE = 1u << 16, MK_KIND = 1u << 17, MK_CTAGROUP = 1u << 18,
    MK_BCOLLECT = 1u << 19,
    /* hints, by kind: cache operator, L1 and L2 eviction priority, L2 prefetch size, prefetch's cache level,
     * createpolicy's .fractional, griddepcontrol's form */
    MK_CACHEOP = 1u << 20, MK_L1EVICT = 1u << 21, MK_L2EVICT = 1u << 22, MK_PREFSIZE = 1u << 23, MK_LEVEL = 1u << 24,
    MK_POLICY = 1u << 25, MK_GRIDDEP = 1u << 26,
    MK_SUB = 1u << 27,   /* clusterlaunchcontrol.query_cancel's question (IsaSub) */
    MK_CC = 1u << 28,    /* .cc: the carry arithmetic writes the condition code's carry flag CC.CF */
    MK_COUNT = 29
};
#define TY(t) (1u << T_##t)   /* a set of IsaTypes */
#define MK_ANYSPACE (MK_GLOBAL | MK_SHARED | MK_CLUSTER | MK_PARAM | MK_LOCAL | MK_CONST)
#define MK_ALU (MK_TYPES | MK_CMP | MK_RND | MK_REDOP)
#define F_SYNC_ALIGNED (F_SYNC | F_ALIGNED)
#define F_SCOPES (F_SCOPE_CTA | F_SCOPE_CLUSTER | F_SCOPE_GPU | F_SCOPE_SYS)
/* what arithmetic takes: halves, flushing, saturation, approximation, shf's direction and mode, bfind's .shiftamt */
#define F_ALU (F_LO | F_HI | F_WIDE | F_FTZ | F_NOFTZ | F_SAT | F_APPROX | F_FULL | F_SATFINITE | F_RELU | F_NAN | \
               F_SHIFTAMT | F_SHF_L | F_SHF_R | F_CLAMP | F_WRAP)

enum { ISA_MAX_TYPES = 4 };
typedef struct {
    uint16_t op;                  /* IsaOp */
    uint8_t unit, cls;            /* IsaUnit, IsaClass */
    uint8_t type[ISA_MAX_TYPES];  /* type modifiers in the order written */
    uint8_t ntype;
    uint8_t space[2], nspace;     /* state spaces in the order written (destination first for copies) */
    uint8_t cmp, rnd, redop, vec; /* vec: 1, or the .v2/.v4/.v8 count */
    uint8_t dim;                  /* .1d-.5d */
    uint8_t cta_group;            /* 0 when not written */
    uint8_t kind, tmshape;
    uint8_t bcollect;             /* tcgen05.mma.ws .collector::bN::action: ISA_BCOLLECT(action, N), 0 when not written */
    uint8_t cacheop;              /* IsaCacheOp */
    uint8_t level;                /* a cache level .L1 or .L2 (prefetch's): 1 or 2, 0 when not written */
    uint8_t sub;                  /* IsaSub: what clusterlaunchcontrol.query_cancel asks */
    uint8_t cc;                   /* 1: .cc written (add, sub, mad and addc, subc, madc write CC.CF) */
    uint16_t num;                 /* .xN (ldmatrix .x4, tcgen05.ld .x128) */
    uint16_t m, n, k;             /* .mMnNkK */
    uint64_t flags;
} IsaInsn;

/* The B collector buffers of tcgen05.mma.ws: fill keeps B in buffer N, use and
 * lastuse read the kept copy instead of shared memory (lastuse then frees it),
 * discard reads shared memory and keeps nothing. */
enum { BC_NONE, BC_FILL, BC_USE, BC_LASTUSE, BC_DISCARD };
#define ISA_BCOLLECT(action, buf) ((action) << 2 | (buf))
#define ISA_BCOLLECT_ACTION(v) ((v) >> 2)
#define ISA_BCOLLECT_BUF(v) ((v) & 3)

/* Decodes a mnemonic; an unknown instruction or modifier, a modifier the
 * instruction does not take or one it needs and lacks is an error that names
 * it (PTX ptxas refuses, refused here for the emitter and the sim alike). */
int isa_decode(const char *mnemonic, IsaInsn *out, char *err, size_t errlen);
/* What the instruction needs of the target: lowest sm, arch-specific ('a')
 * target, lowest PTX ISA version x10. */
void isa_needs(const IsaInsn *in, int *sm, int *arch_specific, int *ptx_x10);
const char *isa_base_text(int op);
const char *isa_class_name(int cls);
int isa_type_bits(int type);      /* 0 for T_NONE */
int isa_type_is_float(int type);
int isa_type_is_signed(int type);
/* whether the instruction reads or writes the carry flag CC.CF: add/sub/mad with .cc, addc, subc, madc */
int isa_carry(const IsaInsn *in);
#endif
