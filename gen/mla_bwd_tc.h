/* The tcgen05 mla_bwd main kernel's state, shared by its two files:
 * mla_bwd_tc.c (roles, loops, epilogue) -> mla_bwd_tc_mma.c (descriptors
 * and the MMA groups the issuing thread sends). Internal to them. */
#ifndef PTXGEN_MLA_BWD_TC_H
#define PTXGEN_MLA_BWD_TC_H
#include "mla_bwd.h"
#include "../templates/umma.h"

/* mbarriers, in the plan's "bars" region, and who arrives on each:
 *   KV_FULL   the producer lanes (lane 0 with the step's bytes), then the gathers' bytes
 *   S         the issuer's commit of S^T, dP^T
 *   P         the compute threads, once P^T, dS^T are in TMEM and dS^T rows in smem
 *   DQ        the issuer's commit of dQ^T: KV and dS are free again
 *   KV        the issuer's commit of a dkv chunk
 *   FREE      the compute threads, once a dkv chunk is out of TMEM */
enum { BAR_KV_FULL, BAR_S, BAR_P, BAR_DQ, BAR_KV, BAR_FREE, NBARS };

#define TC_BARS_BYTES (8 * NBARS + 8)
#define MAX_HB 32
/* warps: 4 compute (TMEM lane quarters 0-3), 1 MMA issuer (lane 0), 1 producer
 * (TMA tile::gather4: 4 rows per lane, 32 lanes = the step's 128 slots) */
#define TC_COMPUTE 128
#define TC_ISSUER 128              /* its thread */
#define TC_PRODUCER0 160
#define TC_PRODUCERS 32
#define TC_THREADS 192

typedef struct {
    const AttnDesc *d;
    int hb, bn, det;
    int kv, q, dout, ds, dq, bars, rows;   /* shared regions */
    int c_kv, c_dq, c_s, c_dp, c_p, c_ds;  /* TMEM columns */
    Reg t, h0, h_q, s_kv, eff, nsteps;
    Reg kv_map, idx_row;                   /* kv's tensor map (generic address); this token's index row */
    Reg taddr, tq;                         /* TMEM base; this warp's lane quarter */
    Reg leader;                            /* the issuer warp's lane 0 */
    Reg yes, no;                           /* constant predicates for enable-input-d */
    Reg bar[NBARS];
    Reg scale, scale_log2;
    Reg neg_lse2[MAX_HB], delta[MAX_HB];
    Reg dkv_base;                          /* b64: dkv_accum, or deterministic dkv_fixed */
    Reg mul;                               /* deterministic: 2^S, dkv's fixed-point scale */
    /* descriptors at their operands' first byte */
    Reg kv_k, q_k, do_k, kv_mn, ds_mn, q_mn, do_mn;
    uint32_t i_s, i_dq, i_kv[2];
} TcBwd;

/* mla_bwd_tc_mma.c: what the issuing thread emits */
void tc_descriptors(Kctx *k, TcBwd *f);
int  tc_chunks(const TcBwd *f);                   /* dkv chunks per step (the KV and FREE phases per step) */
int  tc_chunk_cols(const TcBwd *f, int ch);
void tc_issue_scores(Kctx *k, TcBwd *f);          /* S^T, dP^T; commit to S */
void tc_issue_dq(Kctx *k, TcBwd *f, Reg acc);     /* dQ^T (+)= ...; commit to DQ */
void tc_issue_dkv(Kctx *k, TcBwd *f, int ch);     /* dkv chunk ch; commit to KV */
#endif
