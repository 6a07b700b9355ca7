/* Per-lane arithmetic, comparisons, selects, moves and conversions, each
 * with the PTX ISA's semantics: 32-bit ops wrap, shifts clamp at the width,
 * .lo/.wide pick halves, f32 ops round to nearest even (.ftz where the op says
 * so), min/max return the non-NaN operand, setp on floats is ordered. */
#include <math.h>
#include "hostdata.h"
#include "sim.h"

static float F(uint64_t u) { return bits_f32((uint32_t)u); }
static uint64_t U(float x) { return f32_bits(x); }

static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

static uint32_t brev(uint32_t a) {
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) r |= (a >> i & 1) << (31 - i);
    return r;
}

static uint32_t shl(uint32_t a, uint32_t s) { return s >= 32 ? 0 : a << s; }
static uint32_t shr_u(uint32_t a, uint32_t s) { return s >= 32 ? 0 : a >> s; }
static uint32_t shr_s(int32_t a, uint32_t s) { return (uint32_t)(s >= 32 ? (a < 0 ? -1 : 0) : a >> s); }

/* ex2/lg2 .approx are within 2 ulp on hardware; the sim rounds the exact value. */
static float ex2(float a) { return ftz((float)exp2((double)ftz(a))); }
static float lg2(float a) { return ftz((float)log2((double)ftz(a))); }

/* Returns 1 with the value in *out, 0 for an op this file does not own, -1 for
 * a fault (reported here). */
static int lane_op(SimCta *c, SimWarp *w, const SimInsn *in, int lane, uint64_t *out)
{
    const SimOpnd *o = in->o;
    uint64_t a = in->nops > 1 ? sim_read(c, w, &o[1], lane) : 0;
    uint64_t b = in->nops > 2 ? sim_read(c, w, &o[2], lane) : 0;
    uint64_t d = in->nops > 3 ? sim_read(c, w, &o[3], lane) : 0;
    uint32_t a32 = (uint32_t)a, b32 = (uint32_t)b;
    int32_t as = (int32_t)a32, bs = (int32_t)b32;
    switch (in->op) {
    case OP_MOV_B32: case OP_MOV_F32: case OP_MOV_F32_B32: case OP_MOV_U32_SYM: case OP_CVT_U32_U64: *out = a32; break;
    case OP_MOV_B64: case OP_CVTA_GLOBAL: *out = a; break;   /* the sim's generic and global addresses coincide */
    case OP_CVT_U64_U32: *out = a32; break;
    case OP_ADD_U32: case OP_ADD_S32: *out = a32 + b32; break;
    case OP_ADD_U64: *out = a + b; break;
    case OP_SUB_U32: case OP_SUB_S32: *out = a32 - b32; break;
    case OP_MUL_LO_U32: case OP_MUL_LO_S32: *out = a32 * b32; break;
    case OP_MUL_WIDE_U32: *out = (uint64_t)a32 * b32; break;
    case OP_MUL_WIDE_S32: *out = (uint64_t)((int64_t)as * bs); break;
    case OP_MUL_LO_U64: *out = a * b; break;
    case OP_MAD_LO_U32: case OP_MAD_LO_S32: *out = a32 * b32 + (uint32_t)d; break;
    case OP_MAD_WIDE_U32: *out = (uint64_t)a32 * b32 + d; break;
    case OP_MAD_WIDE_S32: *out = (uint64_t)((int64_t)as * bs) + d; break;
    case OP_SHL_B32: *out = shl(a32, b32); break;
    case OP_SHR_U32: *out = shr_u(a32, b32); break;
    case OP_SHR_S32: *out = shr_s(as, b32); break;
    case OP_AND_B32: *out = a32 & b32; break;
    case OP_OR_B32: *out = a32 | b32; break;
    case OP_XOR_B32: *out = a32 ^ b32; break;
    case OP_MIN_U32: *out = a32 < b32 ? a32 : b32; break;
    case OP_MIN_S32: *out = (uint32_t)(as < bs ? as : bs); break;
    case OP_MAX_S32: *out = (uint32_t)(as > bs ? as : bs); break;
    case OP_DIV_U32: case OP_REM_U32: case OP_DIV_S32:
        if (!b32) {
            sim_fail(c, sim_warp_id(c, w), lane, in, "integer division by zero");
            return -1;
        }
        *out = in->op == OP_DIV_U32 ? a32 / b32 : in->op == OP_REM_U32 ? a32 % b32
             : (as == INT32_MIN && bs == -1) ? (uint32_t)as : (uint32_t)(as / bs);
        break;
    case OP_SELP_B32: case OP_SELP_F32: *out = (d & 1) ? a32 : b32; break;
    case OP_SETP_LT_U32: *out = a32 < b32; break;
    case OP_SETP_GE_U32: *out = a32 >= b32; break;
    case OP_SETP_EQ_U32: *out = a32 == b32; break;
    case OP_SETP_NE_U32: *out = a32 != b32; break;
    case OP_BREV_B32: *out = brev(a32); break;
    case OP_CLZ_B32: *out = a32 ? (uint32_t)__builtin_clz(a32) : 32; break;
    case OP_SETP_LT_S32: *out = as < bs; break;
    case OP_SETP_LE_S32: *out = as <= bs; break;
    case OP_SETP_GT_S32: *out = as > bs; break;
    case OP_SETP_GE_S32: *out = as >= bs; break;
    case OP_SETP_NE_U64: *out = a != b; break;
    case OP_SETP_EQ_F32: *out = F(a) == F(b); break;
    case OP_ADD_F32: *out = U(F(a) + F(b)); break;
    case OP_SUB_F32: *out = U(F(a) - F(b)); break;
    case OP_MUL_F32: *out = U(F(a) * F(b)); break;
    case OP_FMA_F32: *out = U(fmaf(F(a), F(b), F(d))); break;
    case OP_MAX_F32: *out = U(fmaxf(F(a), F(b))); break;
    case OP_EX2_F32: *out = U(ex2(F(a))); break;
    case OP_LG2_F32: *out = U(lg2(F(a))); break;
    case OP_RCP_F32: *out = U(1.0f / F(a)); break;
    /* the first source lands in the upper half, the second in the lower */
    case OP_CVT_BF16X2: *out = (uint32_t)f32_to_bf16(F(a)) << 16 | f32_to_bf16(F(b)); break;
    case OP_CVT_F16X2: *out = (uint32_t)f32_to_fp16(F(a)) << 16 | f32_to_fp16(F(b)); break;
    case OP_CVT_F32_F16: *out = U(fp16_to_f32((uint16_t)a32)); break;
    default: return 0;
    }
    return 1;
}

int sim_alu(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint64_t v;
    int first = __builtin_ctz(exec);
    int r = lane_op(c, w, in, first, &v);
    if (r <= 0) return r < 0;
    sim_write(w, c->f, &in->o[0], first, v);
    for (int l = first + 1; l < 32 && !c->failed; l++)
        if (exec >> l & 1) {
            if (lane_op(c, w, in, l, &v) < 0) return 1;
            sim_write(w, c->f, &in->o[0], l, v);
        }
    return 1;
}
