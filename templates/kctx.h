/* The kernel being emitted: its emitter, launch spec and the per-thread
 * registers every template needs (thread, lane, warp, shared base). */
#ifndef PTXGEN_KCTX_H
#define PTXGEN_KCTX_H
#include "../emit/emit.h"
#include "kernel.h"

#define SMEM_SYM "ptxgen_smem"

typedef struct {
    Emit e;
    const KernelSpec *spec;
    Reg smem;     /* 32-bit shared-window address of the dynamic shared memory */
    Reg tid, lane, warp;
} Kctx;

void kctx_begin(Kctx *k, const KernelSpec *spec);
/* Kernel parameters by name from the spec (a name the spec lacks is a generator bug).
 * Pointers come back as global-window addresses. */
Reg  kc_ptr(Kctx *k, const char *name);
/* A predicate: the pointer parameter is not null (optional tensors). */
Reg  kc_ptr_set(Kctx *k, const char *name);
Reg  kc_u32(Kctx *k, const char *name);
Reg  kc_u64(Kctx *k, const char *name);
Reg  kc_f32(Kctx *k, const char *name);
Reg  kc_imm32(Kctx *k, int64_t v);        /* a register holding a constant */
Reg  kc_pred(Kctx *k, int v);             /* a predicate that is always v (operands that take no immediate) */
Reg  kc_tmap(Kctx *k, const char *name);  /* a tensor-map parameter's generic address (b64) */
/* Appends the finished entry (signature, directives, declarations, body) to module. */
void kctx_finish(Kctx *k, Buf *module);
/* Module header: .version (emit/target.h derives it from the instructions),
 * .target, .address_size and the dynamic smem symbol. */
void module_header(Buf *module, const ArchInfo *a, const char *version);
#endif
