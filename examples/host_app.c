/* A host application using ptxgen as a library:
 *   1. generate attn_fwd for this GPU in-process (no files, no nvcc),
 *   2. load the PTX with the CUDA Driver API (runner/device.h, libcuda via dlopen),
 *   3. fill the argument list and launch dimensions from the kernel's
 *      description (the same data the --manifest JSON holds),
 *   4. check one output row against a float64 computation.
 * Build: make (produces build/example_host). Run: build/example_host */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptxgen.h"
#include "device.h"
#include "hostdata.h"

enum { B = 1, S = 200, H = 2, D = 64 };

static int die(const char *what, const char *err) {
    fprintf(stderr, "example: %s: %s\n", what, err);
    return 1;
}

/* One parameter's value, chosen by its role and name from the description. */
static uint64_t arg_value(const ptxgen_param *p, const DevPtr *bufs, float scale) {
    static const char *const tensors[] = {"q", "k", "v", "o", "lse"};
    if (p->role == PTXGEN_ROLE_IN || p->role == PTXGEN_ROLE_OUT)
        for (int i = 0; i < 5; i++)
            if (!strcmp(p->name, tensors[i])) return bufs[i];
    if (p->role == PTXGEN_ROLE_SIZE) return !strcmp(p->of, "s_q") || !strcmp(p->of, "s_k") ? S : H;
    if (p->role == PTXGEN_ROLE_STRIDE)   /* contiguous [b, s, h, d] */
        return !strcmp(p->dim, "h") ? D : !strcmp(p->dim, "s") ? (uint64_t)H * D : (uint64_t)S * H * D;
    uint64_t v = 0;
    memcpy(&v, &scale, sizeof scale);
    return v;
}

/* float64 attention for (batch 0, head 0, query row `row`), column 0 of o */
static double expected(const float *q, const float *k, const float *v, int row, double scale) {
    double m = -INFINITY, l = 0, acc = 0, s[S];
    for (int j = 0; j < S; j++) {
        s[j] = 0;
        for (int x = 0; x < D; x++) s[j] += (double)q[row * H * D + x] * k[j * H * D + x];
        s[j] *= scale;
        m = fmax(m, s[j]);
    }
    for (int j = 0; j < S; j++) l += exp(s[j] - m), acc += exp(s[j] - m) * v[j * H * D];
    return acc / l;
}

int main(void) {
    char err[2048];
    Device *dev;
    DevInfo info;
    if (dev_open(&dev, "cuda", 0, err, sizeof err)) return die("device", err);
    if (dev_info(dev, &info, err, sizeof err)) return die("device", err);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", info.cc_major, info.cc_minor);

    ptxgen_request rq = {.arch = arch, .kernel = "attn_fwd", .hdim = D};
    ptxgen_set *set;
    if (ptxgen_build(&rq, &set, err, sizeof err)) return die("generate", err);
    DevModule *mod;
    DevFunc *fn;
    if (dev_load_ptx(dev, ptxgen_ptx(set), "example_attn_fwd", &mod, err, sizeof err) ||
        dev_get_func(mod, ptxgen_entry(set, 0), &fn, err, sizeof err))
        return die("load", err);

    /* inputs: random bf16 values; host copies as float for the check */
    size_t n = (size_t)B * S * H * D;
    uint16_t *raw = malloc(n * 2);
    float *host[3];
    DevPtr bufs[5];
    Rng rng;
    rng_seed(&rng, 7);
    for (int t = 0; t < 3; t++) {
        host[t] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) raw[i] = f32_to_bf16((float)rng_normal(&rng)), host[t][i] = bf16_to_f32(raw[i]);
        if (dev_alloc(dev, &bufs[t], n * 2, err, sizeof err) || dev_upload(dev, bufs[t], raw, n * 2, err, sizeof err))
            return die("upload", err);
    }
    if (dev_alloc(dev, &bufs[3], n * 2, err, sizeof err) || dev_alloc(dev, &bufs[4], (size_t)B * H * S * 4, err, sizeof err))
        return die("alloc", err);

    /* arguments and launch shape from the kernel description */
    float scale = 1.0f / sqrtf((float)D);
    uint64_t vals[64];
    void *args[64];
    int np = ptxgen_num_params(set, 0);
    for (int i = 0; i < np; i++) {
        ptxgen_param p;
        ptxgen_param_info(set, 0, i, &p);
        vals[i] = arg_value(&p, bufs, scale);
        args[i] = &vals[i];
    }
    ptxgen_size sizes[] = {{"b", B}, {"s_q", S}, {"s_k", S}, {"h_q", H}, {"h_kv", H}};
    unsigned grid[3], block[3], smem;
    if (ptxgen_launch_dims(set, 0, sizes, 5, grid, block, &smem, err, sizeof err)) return die("launch dims", err);
    if (dev_set_dyn_smem(fn, (int)smem, err, sizeof err) || dev_launch(fn, grid, block, smem, args, err, sizeof err) ||
        dev_sync(dev, err, sizeof err))
        return die("launch", err);

    if (dev_download(dev, raw, bufs[3], n * 2, err, sizeof err)) return die("download", err);
    int row = 123;
    double want = expected(host[0], host[1], host[2], row, scale), got = bf16_to_f32(raw[row * H * D]);
    int ok = fabs(got - want) <= 2e-2 * fmax(1.0, fabs(want));
    printf("%s on %s: o[0, %d, 0, 0] = %.5f, float64 reference %.5f: %s\n", ptxgen_entry(set, 0), info.name, row, got,
           want, ok ? "ok" : "MISMATCH");
    for (int t = 0; t < 5; t++) dev_free(dev, bufs[t], err, sizeof err);
    for (int t = 0; t < 3; t++) free(host[t]);
    free(raw);
    dev_unload(mod);
    ptxgen_free(set);
    dev_close(dev);
    return ok ? 0 : 1;
}
