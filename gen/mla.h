/* Sparse MLA (DeepSeek V3.2 shapes, MQA form) on the mma.sync family. The
 * description is AttnDesc's: the "query rows" of a CTA are bm heads of one
 * token, the "key rows" of a step are bn gathered top-k slots; d = d_qk (576
 * = 512 + 64 rope), dv = d_v (512), warps = 2 * bm / 16 (two warps per 16
 * heads, one per half of the step's slots and of d_v). */
#ifndef PTXGEN_MLA_H
#define PTXGEN_MLA_H
#include "attn.h"

#define MLA_D_QK 576
#define MLA_D_QK_TEXT "576"     /* the same, for manifest expressions */
#define MLA_D_V 512
/* P's shared tile is 64 columns wide whatever bn: swizzled rows need 128 bytes */
#define MLA_P_COLS 64

extern const TileKey mla_fwd_keys[];
extern const int mla_fwd_nkeys;
AttnTile mla_fwd_default_tile(const ArchInfo *a, int d, int dv);
int  mla_fwd_check_tile(const AttnDesc *d, char *err, size_t errlen);
void mla_fwd_plan(const AttnDesc *d, Plan *p);
void mla_fwd_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void mla_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);

/* The forward's launch ABI after its entry (inputs, o, lse, sizes, scale, grid [s_q, cdiv(h_q, bm)]). */
void mla_fwd_abi(KernelSpec *ks, const AttnDesc *d);

/* mla_fwd, wgmma family (sm_90a): a gathering producer warpgroup and two consumer warpgroups */
#define MLA_WG_BM 64          /* heads per CTA: wgmma's M, shared by both consumer warpgroups */
#define MLA_WG_BN 64          /* slots per block (mla_fwd: each consumer's S; mla_bwd: a step), P's [64][64] tile one rope slab */
extern const TileKey mla_fwd_wg_keys[];
extern const int mla_fwd_wg_nkeys;
AttnTile mla_fwd_wg_default_tile(const ArchInfo *a, int d, int dv);
int  mla_fwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen);
void mla_fwd_wg_plan(const AttnDesc *d, Plan *p);
void mla_fwd_wg_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void mla_fwd_wg_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);

/* mla_bwd: the kernel set (pre, main, convert) */
extern const TileKey mla_bwd_keys[];
extern const int mla_bwd_nkeys;
AttnTile mla_bwd_default_tile(const ArchInfo *a, int d, int dv);
int  mla_bwd_check_tile(const AttnDesc *d, char *err, size_t errlen);
int  mla_bwd_plan(const AttnDesc *d, Plan *plans);
void mla_bwd_build(const AttnDesc *d, KernelSet *ks, Buf *module);

/* mla_bwd, wgmma family (sm_90a): the same set with a wgmma main kernel (a gathering producer warpgroup,
 * two consumer warpgroups over 64 heads) */
extern const TileKey mla_bwd_wg_keys[];
extern const int mla_bwd_wg_nkeys;
AttnTile mla_bwd_wg_default_tile(const ArchInfo *a, int d, int dv);
int  mla_bwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen);
int  mla_bwd_wg_plan(const AttnDesc *d, Plan *plans);
void mla_bwd_wg_build(const AttnDesc *d, KernelSet *ks, Buf *module);

/* mla_bwd, tcgen05 family (sm_100a/103a): the same set with a tcgen05 main kernel */
#define MLA_TC_BN 128         /* slots per step: the MMAs' M, one TMEM lane each */
#define MLA_TC_DQ_TILES 5     /* dQ^T in M=128 row tiles: d_qk rows 0-511 and 448-575 */
#define MLA_TC_DKV_COLS 256   /* dkv columns per TMEM chunk (the dkv MMAs' largest N) */
extern const TileKey mla_bwd_tc_keys[];
extern const int mla_bwd_tc_nkeys;
AttnTile mla_bwd_tc_default_tile(const ArchInfo *a, int d, int dv);
int  mla_bwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen);
int  mla_bwd_tc_plan(const AttnDesc *d, Plan *plans);
void mla_bwd_tc_build(const AttnDesc *d, KernelSet *ks, Buf *module);
int  mla_bwd_tc_mmas_per_step(const AttnDesc *d);

/* mla_fwd, tcgen05 family (sm_100a/103a): the top-k slots as the MMAs' M, S^T and O^T in TMEM */
extern const TileKey mla_fwd_tc_keys[];
extern const int mla_fwd_tc_nkeys;
AttnTile mla_fwd_tc_default_tile(const ArchInfo *a, int d, int dv);
int  mla_fwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen);
void mla_fwd_tc_plan(const AttnDesc *d, Plan *p);
void mla_fwd_tc_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void mla_fwd_tc_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);

/* The launch ABI the MLA kernels share (KERNELS.md "mla_fwd / mla_bwd"). */
#define MLA_SCALE_MEANING "S = softmax_scale * q . K[idx] (natural units); no default"
#define MLA_LSE_MEANING "log-sum-exp of the scaled scores over valid slots, natural log, +inf for tokens with no valid slot; contiguous"
extern const char *const mla_size_names[4];   /* s_q s_kv h_q topk */
void mla_abi_inputs(KernelSpec *ks, const AttnDesc *d);            /* q, kv and the selection */
void mla_abi_selection(KernelSpec *ks);                             /* indices, topk_length */
/* The first tile of order (warps derived) whose plan fits the arch, else the last. */
AttnTile mla_first_fitting(const ArchInfo *a, const AttnTile *order, int n, void (*plan)(const AttnDesc *, Plan *));
#endif
