/* Warp collectives: ldmatrix, mma.sync m16n8k16 and shfl.sync, with the
 * fragment maps of the PTX ISA (g = lane >> 2, t = lane & 3):
 *   A 16x16: reg0 A[g][2t..2t+1], reg1 A[g+8][2t..], reg2 A[g][8+2t..], reg3 A[g+8][8+2t..]
 *   B 16x8 (k x n): reg0 B[2t..2t+1][g], reg1 B[8+2t..][g]
 *   C/D 16x8: c0,c1 = C[g][2t..], c2,c3 = C[g+8][2t..]
 * the lower-indexed element in bits 15:0. ldmatrix gives lane L, for matrix i,
 * row L>>2, columns 2t..2t+1 (transposed with .trans). */
#include <string.h>
#include "hostdata.h"
#include "sim.h"

static int full_warp(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    if (exec == 0xFFFFFFFFu) return 1;
    sim_fail(c, sim_warp_id(c, w), -1, in,
             "%s is warp-collective (.sync.aligned) but only lanes 0x%08x execute it (divergent or predicated off)",
             op_text((Op)in->op), exec);
    return 0;
}

static uint32_t vec_reg(const SimCta *c, const SimOpnd *v, int k) { return (uint32_t)c->f->vec[v->reg + k]; }
static uint64_t *lane_reg(SimWarp *w, uint32_t slot, int lane) { return &w->r[(size_t)slot * 32 + (size_t)lane]; }

static void ldmatrix(SimCta *c, SimWarp *w, const SimInsn *in, int nmat, int trans)
{
    uint16_t m[4][8][8];
    uint32_t addr[32] = {0}, providers = nmat == 4 ? 0xFFFFFFFFu : (1u << (8 * nmat)) - 1;
    const SimOpnd *a = &in->o[1];
    for (int l = 0; l < 8 * nmat && !c->failed; l++) {
        addr[l] = (uint32_t)sim_addr(w, a, l);
        memcpy(m[l / 8][l % 8], sim_smem_read(c, w, l, in, addr[l], 16), 16);
    }
    if (c->failed) return;
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int i = 0; i < nmat; i++) {
            uint16_t lo = trans ? m[i][2 * t][g] : m[i][g][2 * t], hi = trans ? m[i][2 * t + 1][g] : m[i][g][2 * t + 1];
            *lane_reg(w, vec_reg(c, &in->o[0], i), l) = (uint32_t)hi << 16 | lo;
        }
    }
    sim_count_smem(c, addr, providers, 16);
}

static double half_of(uint64_t reg, int hi, DType dt) { return dt_to_f32(dt, (uint16_t)(reg >> (hi ? 16 : 0))); }

/* Products of bf16/f16 are exact in double and the 16-term sum nearly so;
 * the tensor core's own fp32 accumulation differs from this in the last bits. */
static void mma_16816(SimCta *c, SimWarp *w, const SimInsn *in, DType dt)
{
    double A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int half = 0; half < 2; half++) {
            for (int r = 0; r < 4; r++) {
                uint64_t v = *lane_reg(w, vec_reg(c, &in->o[1], r), l);
                A[g + 8 * (r & 1)][8 * (r >> 1) + 2 * t + half] = half_of(v, half, dt);
            }
            for (int r = 0; r < 2; r++) B[8 * r + 2 * t + half][g] = half_of(*lane_reg(w, vec_reg(c, &in->o[2], r), l), half, dt);
            for (int r = 0; r < 2; r++) C[g + 8 * r][2 * t + half] = bits_f32((uint32_t)*lane_reg(w, vec_reg(c, &in->o[3], 2 * r + half), l));
        }
    }
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int k = 0; k < 4; k++) {
            int row = g + 8 * (k >> 1), col = 2 * t + (k & 1);
            double acc = C[row][col];
            for (int kk = 0; kk < 16; kk++) acc += A[row][kk] * B[kk][col];
            *lane_reg(w, vec_reg(c, &in->o[0], k), l) = f32_bits((float)acc);
        }
    }
}

/* The source values of a shfl.sync (operand 1) of the lanes that take part;
 * 0 when the member mask (operand 4) is not exactly those lanes. */
static int shfl_sources(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, uint64_t src[32])
{
    uint32_t mask = (uint32_t)in->o[4].imm;
    if (exec != mask) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "shfl.sync member mask 0x%08x but lanes 0x%08x execute it", mask, exec);
        return 0;
    }
    for (int l = 0; l < 32; l++) src[l] = (exec >> l & 1) ? sim_read(c, w, &in->o[1], l) : 0;
    return 1;
}

/* Lane l of a shfl.sync reads lane j: j must take part. */
static int shfl_deliver(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, const uint64_t *src, int l, uint32_t j)
{
    if (!(exec >> j & 1)) {
        sim_fail(c, sim_warp_id(c, w), l, in, "shfl.sync reads lane %u, which does not take part", j);
        return 0;
    }
    sim_write(w, c->f, &in->o[0], l, (uint32_t)src[j]);
    return 1;
}

static void shfl_bfly(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t cval = (uint32_t)in->o[3].imm, seg = cval >> 8 & 31, clamp = cval & 31;
    uint64_t src[32];
    if (!shfl_sources(c, w, in, exec, src)) return;
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        uint32_t lane = (uint32_t)l, j = lane ^ ((uint32_t)sim_read(c, w, &in->o[2], l) & 31);
        uint32_t max_lane = (lane & seg) | (clamp & ~seg);
        if (j > max_lane) j = lane;
        if (!shfl_deliver(c, w, in, exec, src, l, j)) return;
    }
}

/* shfl.sync.idx with clamp 31: lane l reads lane b & 31 */
static void shfl_idx(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint64_t src[32];
    if (!shfl_sources(c, w, in, exec, src)) return;
    for (int l = 0; l < 32; l++)
        if ((exec >> l & 1) && !shfl_deliver(c, w, in, exec, src, l, (uint32_t)sim_read(c, w, &in->o[2], l) & 31)) return;
}

static void vote_ballot(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t mask = (uint32_t)in->o[2].imm, ballot = 0;
    if (exec != mask) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "vote.sync member mask 0x%08x but lanes 0x%08x execute it", mask, exec);
        return;
    }
    for (int l = 0; l < 32; l++)
        if ((exec >> l & 1) && (sim_read(c, w, &in->o[1], l) & 1)) ballot |= 1u << l;
    for (int l = 0; l < 32; l++)
        if (exec >> l & 1) sim_write(w, c->f, &in->o[0], l, ballot);
}

int sim_collective(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    switch (in->op) {
    case OP_SHFL_BFLY: shfl_bfly(c, w, in, exec); return 1;
    case OP_SHFL_IDX: shfl_idx(c, w, in, exec); return 1;
    case OP_VOTE_BALLOT: vote_ballot(c, w, in, exec); return 1;
    case OP_LDSM_X4: case OP_LDSM_X4_T: case OP_LDSM_X2_T:
        if (full_warp(c, w, in, exec)) ldmatrix(c, w, in, in->op == OP_LDSM_X2_T ? 2 : 4, in->op != OP_LDSM_X4);
        return 1;
    case OP_MMA_BF16: case OP_MMA_F16:
        if (full_warp(c, w, in, exec)) mma_16816(c, w, in, in->op == OP_MMA_BF16 ? DT_BF16 : DT_FP16);
        return 1;
    }
    return 0;
}
