/* A host application using ptxgen as a library, through include/ptxgen.h only:
 *   1. open a device ("cuda" by default: the driver via dlopen, no nvcc; "sim" runs anywhere),
 *   2. generate attn_fwd for that GPU in-process ("this GPU": ptxgen_device_arch),
 *   3. load it and launch it with named tensors (the library derives sizes,
 *      grid, parameters and workspaces from the kernel's description),
 *   4. check one output row against a float64 computation.
 * Build: make (produces build/example_host). Run: build/example_host [cuda|cuda:N|sim] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptxgen.h"

enum { B = 1, S = 200, H = 2, D = 64 };

static int die(const char *what, const char *err) {
    fprintf(stderr, "example: %s: %s\n", what, err);
    return 1;
}

static unsigned short to_bf16(float f) {   /* round to nearest even */
    unsigned u;
    memcpy(&u, &f, 4);
    return (unsigned short)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(unsigned short h) {
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
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

int main(int argc, char **argv) {
    char err[4096], arch[16];
    const char *name = argc > 1 ? argv[1] : "cuda";
    ptxgen_device *dev;
    if (ptxgen_device_open(name, &dev, err, sizeof err)) return die("device", err);
    if (ptxgen_device_arch(dev, arch, sizeof arch, err, sizeof err)) return die("device", err);

    ptxgen_request rq = {.arch = arch, .kernel = "attn_fwd", .hdim = D};
    ptxgen_set *set;
    ptxgen_loaded *ld;
    if (ptxgen_build(&rq, &set, err, sizeof err)) return die("generate", err);
    if (ptxgen_load(dev, set, &ld, err, sizeof err)) return die("load", err);

    /* inputs: pseudo-random bf16 values; host copies as float for the check */
    size_t n = (size_t)B * S * H * D;
    unsigned short *raw = malloc(n * 2);
    float *host[3];
    unsigned long long bufs[5];
    unsigned x = 7;
    for (int t = 0; t < 3; t++) {
        host[t] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            raw[i] = to_bf16((float)((x >> 8) / 8388608.0 - 1.0)), host[t][i] = from_bf16(raw[i]);
        }
        if (ptxgen_device_alloc(dev, n * 2, &bufs[t], err, sizeof err) ||
            ptxgen_device_upload(dev, bufs[t], raw, n * 2, err, sizeof err))
            return die("upload", err);
    }
    if (ptxgen_device_alloc(dev, n * 2, &bufs[3], err, sizeof err) ||
        ptxgen_device_alloc(dev, (size_t)B * H * S * 4, &bufs[4], err, sizeof err))
        return die("alloc", err);

    /* the tensors by name, shapes and strides in elements: contiguous [b, s, h, d] and lse [b, h, s] */
    ptxgen_tensor t[] = {{"q", bufs[0], 4, {B, S, H, D}, {S * H * D, H * D, D, 1}},
                         {"k", bufs[1], 4, {B, S, H, D}, {S * H * D, H * D, D, 1}},
                         {"v", bufs[2], 4, {B, S, H, D}, {S * H * D, H * D, D, 1}},
                         {"o", bufs[3], 4, {B, S, H, D}, {S * H * D, H * D, D, 1}},
                         {"lse", bufs[4], 3, {B, H, S}, {H * S, S, 1}}};
    float scale = 1.0f / sqrtf((float)D);
    if (ptxgen_launch(ld, NULL, t, 5, NULL, 0, scale, err, sizeof err) || ptxgen_device_sync(dev, err, sizeof err))
        return die("launch", err);

    if (ptxgen_device_download(dev, raw, bufs[3], n * 2, err, sizeof err)) return die("download", err);
    int row = 123;
    double want = expected(host[0], host[1], host[2], row, scale), got = from_bf16(raw[row * H * D]);
    int ok = fabs(got - want) <= 2e-2 * fmax(1.0, fabs(want));
    printf("%s on %s (%s): o[0, %d, 0, 0] = %.5f, float64 reference %.5f: %s\n", ptxgen_entry(set, 0), name, arch, row,
           got, want, ok ? "ok" : "MISMATCH");
    for (int i = 0; i < 5; i++) ptxgen_device_free(dev, bufs[i], err, sizeof err);
    for (int i = 0; i < 3; i++) free(host[i]);
    free(raw);
    ptxgen_unload(ld);
    ptxgen_free(set);
    ptxgen_device_close(dev);
    return ok ? 0 : 1;
}
