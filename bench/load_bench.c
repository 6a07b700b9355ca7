/* Emit and load times of every kernel set for this GPU, through the public API:
 * emit (ptxgen_build), cold load (an empty cache: ptxas or the driver's JIT,
 * as ptxgen_loaded_how says; run with CUDA_CACHE_DISABLE=1 so the driver's own
 * cache does not answer), and warm loads (ptxgen's cache, or the driver's),
 * each the median of `reps`.
 * usage: load_bench [cuda|cuda:N] [reps]   (PTXGEN_CACHE_DIR: an empty directory) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ptxgen.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "cuda";
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    char err[4096], arch[16];
    ptxgen_device *d;
    if (reps < 1 || reps > 100) { fprintf(stderr, "usage: load_bench [cuda|cuda:N] [reps 1-100]\n"); return 2; }
    if (ptxgen_device_open(name, &d, err, sizeof err) || ptxgen_device_arch(d, arch, sizeof arch, err, sizeof err)) {
        fprintf(stderr, "load_bench: %s\n", err);
        return 1;
    }
    printf("| kernel set (%s) | kernels | PTX KB | emit ms | cold load ms | warm load ms | cold load by / warm load by |\n", arch);
    printf("|---|---|---|---|---|---|---|\n");
    static const char *const kernels[] = {"attn_fwd", "attn_bwd", "mla_fwd", "mla_bwd"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        ptxgen_request rq = {.arch = arch, .kernel = kernels[i]};
        ptxgen_set *s;
        double emit[100], warm[100], cold;
        for (int r = 0; r < reps; r++) {
            double t0 = now_ms();
            if (ptxgen_build(&rq, &s, err, sizeof err)) { fprintf(stderr, "load_bench: %s\n", err); return 1; }
            emit[r] = now_ms() - t0;
            if (r + 1 < reps) ptxgen_free(s);
        }
        ptxgen_loaded *l;
        double t0 = now_ms();
        if (ptxgen_load(d, s, &l, err, sizeof err)) { fprintf(stderr, "load_bench: %s\n", err); return 1; }
        cold = now_ms() - t0;
        char how_cold[512], how_warm[512] = "";
        snprintf(how_cold, sizeof how_cold, "%s", ptxgen_loaded_how(l));
        ptxgen_unload(l);
        for (int r = 0; r < reps; r++) {
            t0 = now_ms();
            if (ptxgen_load(d, s, &l, err, sizeof err)) { fprintf(stderr, "load_bench: %s\n", err); return 1; }
            warm[r] = now_ms() - t0;
            snprintf(how_warm, sizeof how_warm, "%s", ptxgen_loaded_how(l));
            ptxgen_unload(l);
        }
        qsort(emit, (size_t)reps, sizeof *emit, cmp);
        qsort(warm, (size_t)reps, sizeof *warm, cmp);
        printf("| %s | %d | %.0f | %.2f | %.1f | %.2f | %s / %s |\n", kernels[i], ptxgen_num_kernels(s),
               (double)strlen(ptxgen_ptx(s)) / 1024, emit[reps / 2], cold, warm[reps / 2], how_cold, how_warm);
        ptxgen_free(s);
    }
    ptxgen_device_close(d);
    return 0;
}
