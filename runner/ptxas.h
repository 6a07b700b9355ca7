/* The assembler that turns PTX into a cubin when ptxgen loads it on a GPU.
 *
 * Why not the driver's linker (cuLink*): it assembles each PTX input as
 * relocatable code (ptxas -c), and in that mode ptxas ignores setmaxnreg
 * ("to maintain compatibility across compilation units") and serializes every
 * wgmma.mma_async ("presence of Extern calls"). Measured on an H200 with the
 * wgmma attn_fwd: a wait after each wgmma, local memory at bn=128, and 20-30 %
 * lost. A whole-program assembly has neither, and comes from either
 *  - a ptxas (the toolkit's, as XLA and Triton use), whose cubin ptxgen's own
 *    cache keeps (jit_cache.h), or
 *  - the driver's JIT on the PTX itself (cuModuleLoadDataEx), which gives no
 *    cubin back: the driver's own JIT cache (CUDA_CACHE_PATH) keeps that one.
 * PTXGEN_PTXAS picks: a path (that ptxas, its failures are errors), "driver"
 * (the driver's JIT), or unset (the first ptxas of $CUDA_HOME/bin, $CUDA_PATH/bin,
 * PATH, /usr/local/cuda/bin; the driver's JIT when there is none, or when that
 * ptxas fails or its cubin does not load, which the load log then says). A
 * ptxas still running after PTXGEN_PTXAS_TIMEOUT_S seconds (600) is killed. */
#ifndef PTXGEN_PTXAS_H
#define PTXGEN_PTXAS_H
#include <stddef.h>

enum { PTXAS_NONE, PTXAS_FOUND, PTXAS_NAMED };
/* The ptxas to use into path, and how it was chosen (PTXAS_NONE: the driver's JIT). */
int ptxas_choose(char *path, size_t cap);

/* Assembles ptx for arch (e.g. "sm_90a") with the ptxas at path, whole program
 * and -v, through private files in $TMPDIR that are removed afterwards. On
 * success *cubin is the malloc'd cubin of *n bytes and log (when non-NULL)
 * holds ptxas's -v report; on failure err names the step, with ptxas's output. */
int ptxas_assemble(const char *path, const char *arch, const char *ptx, void **cubin, size_t *n, char *log,
                   size_t loglen, char *err, size_t errlen);
#endif
