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
             isa_base_text(in->d.op), exec);
    return 0;
}

static uint32_t vec_reg(const SimCta *c, const SimOpnd *v, int k) { return (uint32_t)c->f->vec[v->reg + k]; }
static uint64_t *lane_reg(SimWarp *w, uint32_t slot, int lane) { return &w->r[(size_t)slot * 32 + (size_t)lane]; }
/* Element k of destination vector v in lane: a register, or the sink _, which ptxas takes there (the value is
 * dropped). A source vector's elements are registers (its form, sim_form.c). */
static void put(SimCta *c, SimWarp *w, const SimOpnd *v, int k, int lane, uint64_t x)
{
    SimOpnd e = sim_vec_elem(c->f, v, k);
    sim_write(w, c->f, &e, lane, x);
}

/* movmatrix.sync.aligned.m8n8.trans.b16 d, a: lane l holds row l / 4, columns 2 (l % 4) (low half) and + 1 of the
 * matrix in a, and gets the same place of its transpose in d: elements (2 (l % 4), l / 4) and (2 (l % 4) + 1,
 * l / 4). */
static void movmatrix(SimCta *c, SimWarp *w, const SimInsn *in)
{
    uint32_t a[32];
    for (int l = 0; l < 32; l++) a[l] = (uint32_t)sim_read(c, w, &in->o[1], l);
    for (int l = 0; l < 32; l++) {
        uint32_t d = 0;
        for (int h = 0; h < 2; h++) {
            int r = 2 * (l % 4) + h, col = l / 4;   /* the source element (r, col): lane 4 r + col / 2, half col % 2 */
            d |= (a[4 * r + col / 2] >> (16 * (col % 2)) & 0xFFFFu) << (16 * h);
        }
        sim_write(w, c->f, &in->o[0], l, d);
    }
}

static void ldmatrix(SimCta *c, SimWarp *w, const SimInsn *in, int nmat, int trans)
{
    uint16_t m[4][8][8];
    uint32_t addr[32] = {0}, providers = nmat == 4 ? 0xFFFFFFFFu : (1u << (8 * nmat)) - 1;
    const SimOpnd *a = &in->o[1];
    for (int l = 0; l < 8 * nmat && !c->failed; l++) {
        addr[l] = (uint32_t)sim_addr(c, w, a, l);
        memcpy(m[l / 8][l % 8], sim_smem_read(c, w, l, in, addr[l], 16), 16);
    }
    if (c->failed) return;
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int i = 0; i < nmat; i++) {
            uint16_t lo = trans ? m[i][2 * t][g] : m[i][g][2 * t], hi = trans ? m[i][2 * t + 1][g] : m[i][g][2 * t + 1];
            put(c, w, &in->o[0], i, l, (uint32_t)hi << 16 | lo);
        }
    }
    sim_count_smem(c, addr, providers, 16);
}

/* stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [p], {r...}: ldmatrix backwards. Lane l's register i holds
 * row l/4, columns 2 (l%4) and 2 (l%4) + 1 of matrix i (.trans: that column and row); lanes 8 i .. 8 i + 7 give the
 * addresses of matrix i's rows, 16 bytes each. */
static void stmatrix(SimCta *c, SimWarp *w, const SimInsn *in, int nmat, int trans)
{
    uint16_t m[4][8][8];
    uint32_t addr[32] = {0}, providers = nmat == 4 ? 0xFFFFFFFFu : (1u << (8 * nmat)) - 1;
    for (int l = 0; l < 32; l++) {
        int g = l >> 2, t = l & 3;
        for (int i = 0; i < nmat; i++) {
            uint32_t v = (uint32_t)*lane_reg(w, vec_reg(c, &in->o[1], i), l);
            if (trans) m[i][2 * t][g] = (uint16_t)v, m[i][2 * t + 1][g] = (uint16_t)(v >> 16);
            else m[i][g][2 * t] = (uint16_t)v, m[i][g][2 * t + 1] = (uint16_t)(v >> 16);
        }
    }
    for (int l = 0; l < 8 * nmat && !c->failed; l++) {
        addr[l] = (uint32_t)sim_addr(c, w, &in->o[0], l);
        memcpy(sim_smem_write(c, w, l, in, addr[l], 16), m[l / 8][l % 8], 16);
    }
    if (!c->failed) sim_count_smem(c, addr, providers, 16);
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
            put(c, w, &in->o[0], k, l, f32_bits((float)acc));
        }
    }
}

/* Each executing lane's member mask (operand k) into masks: a lane may name a group of its own (cooperative_groups'
 * tiles under 32 lanes pass 0xff << 8 i), as long as it is in its group, every lane of the group executes the
 * instruction now, and every lane of the group names the same group (else reported, 0). */
static int member_masks(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, int k, uint32_t masks[32])
{
    for (int l = 0; l < 32; l++) masks[l] = exec >> l & 1 ? (uint32_t)sim_read(c, w, &in->o[k], l) : 0;
    for (int l = 0; l < 32; l++) {
        uint32_t m = masks[l];
        if (!(exec >> l & 1)) continue;
        const char *bad = !(m >> l & 1) ? "does not name the lane itself"
                        : (m & ~exec) ? "names lanes that do not execute it" : NULL;
        for (int j = 0; !bad && j < 32; j++)
            if ((m >> j & 1) && masks[j] != m) bad = "differs from the mask of a lane it names";
        if (bad) {
            sim_fail(c, sim_warp_id(c, w), l, in, "%s member mask 0x%08x %s (lanes 0x%08x execute it)",
                     isa_base_text(in->d.op), m, bad, exec);
            return 0;
        }
    }
    return 1;
}

/* The source values of a shfl.sync (operand 1) of the lanes that take part, and each lane's group (operand 4);
 * 0 when the member masks do not hold. */
static int shfl_sources(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec, uint64_t src[32], uint32_t masks[32])
{
    if (!member_masks(c, w, in, exec, 4, masks)) return 0;
    for (int l = 0; l < 32; l++) src[l] = (exec >> l & 1) ? sim_read(c, w, &in->o[1], l) : 0;
    return 1;
}

/* shfl.sync in every mode: the source lane j from b and c (clamp in bits 4:0,
 * segment mask in 12:8); a lane whose j falls outside its segment keeps its
 * own value, and the "|p" destination says whether j was in range. Lane j
 * must take part. */
static void shfl(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint64_t src[32];
    uint32_t masks[32];
    if (!shfl_sources(c, w, in, exec, src, masks)) return;
    uint64_t f = in->d.flags;
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        uint32_t b = (uint32_t)sim_read(c, w, &in->o[2], l) & 31, cv = (uint32_t)sim_read(c, w, &in->o[3], l);   /* b[4:0] */
        uint32_t seg = cv >> 8 & 31, clamp = cv & 31, lane = (uint32_t)l;
        uint32_t minl = lane & seg, maxl = minl | (clamp & ~seg);
        int64_t j;
        int ok;
        if (f & F_UP) j = (int64_t)lane - b, ok = j >= (int64_t)maxl;
        else if (f & F_DOWN) j = (int64_t)lane + b, ok = j <= (int64_t)maxl;
        else if (f & F_BFLY) j = lane ^ b, ok = j <= (int64_t)maxl;
        else j = minl | (b & ~seg), ok = j <= (int64_t)maxl;
        if (!ok) j = lane;
        if (!(masks[l] >> j & 1)) {
            sim_fail(c, sim_warp_id(c, w), l, in, "shfl.sync reads lane %u, which is not in the lane's member mask 0x%08x",
                     (unsigned)j, masks[l]);
            return;
        }
        sim_write(w, c->f, &in->o[0], l, (uint32_t)src[j]);
        if (in->o[0].reg2 >= 0) sim_write(w, c->f, &(SimOpnd){.kind = SO_REG, .reg = in->o[0].reg2}, l, (uint64_t)ok);
    }
}

/* vote.sync.ballot.b32 d, a, membermask: the lanes of the lane's group whose a holds */
static void vote_ballot(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t ballot = 0, masks[32];
    if (!member_masks(c, w, in, exec, 2, masks)) return;
    for (int l = 0; l < 32; l++)
        if ((exec >> l & 1) && (sim_read(c, w, &in->o[1], l) & 1)) ballot |= 1u << l;
    for (int l = 0; l < 32; l++)
        if (exec >> l & 1) sim_write(w, c->f, &in->o[0], l, ballot & masks[l]);
}

/* vote.sync.all/any/uni.pred d, a, membermask: whether a holds in every / some member lane, or in all or
 * none of them (uniform). */
static void vote_pred(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t all_yes = 0, masks[32];
    if (!member_masks(c, w, in, exec, 2, masks)) return;
    for (int l = 0; l < 32; l++)
        if ((exec >> l & 1) && (sim_read(c, w, &in->o[1], l) & 1)) all_yes |= 1u << l;
    uint64_t f = in->d.flags;   /* .all and .any sit past bit 31 */
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        uint32_t g = masks[l], yes = all_yes & g;
        sim_write(w, c->f, &in->o[0], l, (f & F_ALL) ? yes == g : (f & F_ANY) ? yes != 0 : (yes == g || !yes));
    }
}

/* redux.sync.op.type d, a, membermask: op (add, min, max of .u32/.s32; and, or, xor of .b32) over the member
 * lanes' a, in every member lane. */
static void redux(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int t = in->d.ntype ? in->d.type[in->d.ntype - 1] : T_NONE, op = in->d.redop;
    int ok_t = t == T_U32 || t == T_S32 || t == T_B32;
    int logic = op == RO_AND || op == RO_OR || op == RO_XOR, arith = op == RO_ADD || op == RO_MIN || op == RO_MAX;
    if (!ok_t || !(logic ? t == T_B32 : arith && t != T_B32)) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "redux.sync takes .add/.min/.max with .u32/.s32 or .and/.or/.xor with .b32");
        return;
    }
    uint32_t masks[32];
    if (!member_masks(c, w, in, exec, 2, masks)) return;
    for (int l = 0; l < 32; l++) {   /* over the lane's group */
        if (!(exec >> l & 1)) continue;
        uint64_t acc = 0;
        int first = 1;
        for (int j = 0; j < 32; j++) {
            if (!(masks[l] >> j & 1)) continue;
            uint64_t v = (uint32_t)sim_read(c, w, &in->o[1], j);
            acc = first ? v : (uint32_t)sim_red_apply(t, op, acc, v, 0, 4);
            first = 0;
        }
        sim_write(w, c->f, &in->o[0], l, acc);
    }
}

/* elect.sync d|p, membermask: the lowest lane of the mask is elected; every
 * lane gets its number in d and p true in the elected lane only. */
static void elect(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    uint32_t mask = (uint32_t)sim_read(c, w, &in->o[1], __builtin_ctz(exec));
    if ((exec & mask) != mask) {
        sim_fail(c, sim_warp_id(c, w), -1, in, "elect.sync member mask 0x%08x but lanes 0x%08x execute it", mask, exec);
        return;
    }
    uint32_t leader = mask ? (uint32_t)__builtin_ctz(mask) : 0;
    const SimOpnd *d = &in->o[0];   /* d|p, d maybe _ (sim_form.c) */
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        sim_write(w, c->f, d, l, leader);
        sim_write(w, c->f, &(SimOpnd){.kind = SO_REG, .reg = d->reg2}, l, (uint64_t)(mask && (uint32_t)l == leader));
    }
}

/* match.any.sync.b32/.b64 d, a, membermask: the member lanes whose a equals this lane's; match.all.sync d|p, a,
 * membermask: the mask if every member's a is equal, else 0 (p: whether they are). */
static void match(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    int all = (in->d.flags & F_ALL) != 0;
    uint32_t masks[32];
    if (!member_masks(c, w, in, exec, 2, masks)) return;
    uint64_t v[32];
    for (int l = 0; l < 32; l++) v[l] = exec >> l & 1 ? sim_read(c, w, &in->o[1], l) : 0;
    for (int l = 0; l < 32; l++) {   /* over the lane's group */
        if (!(exec >> l & 1)) continue;
        uint32_t g = masks[l], m = 0, same_all = g;
        for (int j = 0; j < 32; j++)
            if (g >> j & 1) {
                if (v[j] == v[l]) m |= 1u << j;
                else same_all = 0;
            }
        sim_write(w, c->f, &in->o[0], l, all ? same_all : m);
        if (all && in->o[0].reg2 >= 0) sim_write(w, c->f, &(SimOpnd){.kind = SO_REG, .reg = in->o[0].reg2}, l, same_all != 0);
    }
}

/* The operands and the mode (shfl's, vote's, match's) were checked when the module was parsed (sim_form.c,
 * emit/isa.c); what is left are the forms the sim does not model. */
int sim_collective(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    const IsaInsn *d = &in->d;
    switch (d->op) {
    case I_SHFL: shfl(c, w, in, exec); return 1;
    case I_VOTE:
        if (d->flags & F_BALLOT) vote_ballot(c, w, in, exec);
        else vote_pred(c, w, in, exec);
        return 1;
    case I_REDUX: redux(c, w, in, exec); return 1;
    case I_ELECT: elect(c, w, in, exec); return 1;
    case I_MATCH: match(c, w, in, exec); return 1;
    case I_ACTIVEMASK:   /* the lanes executing it */
        for (int l = 0; l < 32; l++)
            if (exec >> l & 1) sim_write(w, c->f, &in->o[0], l, exec);
        return 1;
    case I_BAR_WARP_SYNC: {   /* the sim runs a warp's lanes in lockstep: memory is ordered; every lane named must be here */
        uint32_t mask = (uint32_t)sim_read(c, w, &in->o[0], __builtin_ctz(exec));
        if ((exec & mask) != mask)
            sim_fail(c, sim_warp_id(c, w), -1, in, "bar.warp.sync names lanes 0x%08x but only lanes 0x%08x are here", mask,
                     exec);
        return 1;
    }
    case I_LDMATRIX:
        if (d->m != 8 || d->n != 8 || (d->num != 1 && d->num != 2 && d->num != 4) || d->type[0] != T_B16) break;
        if (full_warp(c, w, in, exec)) ldmatrix(c, w, in, d->num, (d->flags & F_TRANS) != 0);
        return 1;
    case I_STMATRIX:
        if (d->m != 8 || d->n != 8 || (d->num != 1 && d->num != 2 && d->num != 4) || d->type[0] != T_B16) break;
        if (full_warp(c, w, in, exec)) stmatrix(c, w, in, d->num, (d->flags & F_TRANS) != 0);
        return 1;
    case I_MOVMATRIX:   /* .m8n8.trans.b16 (the shape ptxas takes; the rest were checked at parse) */
        if (d->m != 8 || d->n != 8) break;
        if (full_warp(c, w, in, exec)) movmatrix(c, w, in);
        return 1;
    case I_MMA:   /* its vectors (D, A, B, C of 4, 4, 2, 4 registers) were checked at parse: a scalar once was read past */
        if (d->m != 16 || d->n != 8 || d->k != 16 || d->ntype != 4 || d->type[0] != T_F32 || d->type[3] != T_F32 ||
            d->type[1] != d->type[2] || (d->type[1] != T_BF16 && d->type[1] != T_F16)) break;
        if (full_warp(c, w, in, exec)) mma_16816(c, w, in, d->type[1] == T_BF16 ? DT_BF16 : DT_FP16);
        return 1;
    default: return 0;
    }
    sim_fail(c, sim_warp_id(c, w), -1, in, "this form of %s is not modelled by the sim", isa_base_text(d->op));
    return 1;
}
