/* The attention kernel description: everything fixed at generation time.
 * Shapes (batch, lengths, heads) and strides are runtime parameters. */
#ifndef PTXGEN_ATTN_H
#define PTXGEN_ATTN_H
#include "arch.h"
#include "kernel.h"
#include "tilecfg.h"
#include "ptxgen_dtype.h"

typedef struct {
    int bm;      /* query rows per CTA */
    int bn;      /* key/value rows per main-loop step */
    int warps;   /* warps per CTA, stacked along the query rows */
} AttnTile;

typedef struct {
    const ArchInfo *arch;
    DType dtype;
    int d, dv;
    int causal;
    AttnTile tile;
} AttnDesc;

extern const TileKey attn_fwd_keys[];
extern const int attn_fwd_nkeys;

AttnTile attn_fwd_default_tile(const ArchInfo *a, int d);
/* Structural tile rules (warp rows, head-dim coverage); err names the rule. */
int  attn_fwd_check_tile(const AttnDesc *d, char *err, size_t errlen);
void attn_fwd_plan(const AttnDesc *d, Plan *p);
void attn_fwd_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
/* Appends the kernel to the module. */
void attn_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
const char *dtype_name(DType t);
#endif
