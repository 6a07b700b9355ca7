/* A kernel's launch arguments from names: each parameter of kernel k of a
 * set binds, by its role, to a tensor's device address or stride, a problem
 * size, a workspace or the softmax scale, and each tensor-map parameter is
 * encoded from its manifest row on the device. The names are looked up
 * through a Binder, so the runner's own problems (problem.c) and a host
 * application's tensors (api.c) bind the same way. */
#ifndef PTXGEN_BIND_H
#define PTXGEN_BIND_H
#include <stdint.h>
#include "device.h"
#include "ptxgen.h"

typedef struct {
    DevPtr ptr;                            /* 0: an absent optional input (a null pointer) */
    uint64_t stride_b, stride_s, stride_h; /* elements */
    int esize;                             /* bytes per element */
} BindTensor;

typedef struct {
    void *ctx;
    /* 0 and *out when the name binds; else non-zero with err saying why */
    int (*tensor)(void *ctx, const char *name, BindTensor *out, char *err, size_t errlen);
    int (*size)(void *ctx, const char *name, uint64_t *v);        /* 0 found */
    int (*workspace)(void *ctx, const char *name, uint64_t *v);   /* 0 found */
    float scale;
} Binder;

enum { BIND_MAX_PARAMS = 64, BIND_MAX_TMAPS = 8 };
typedef struct {
    uint64_t argv[BIND_MAX_PARAMS];
    uint8_t tmap[BIND_MAX_TMAPS][DEV_TMAP_BYTES] __attribute__((aligned(64)));
    void *args[BIND_MAX_PARAMS];           /* what dev_launch takes: a pointer to each parameter's value */
} BoundArgs;

int bind_args(const ptxgen_set *s, int kernel, Device *dev, const Binder *b, BoundArgs *out, char *err, size_t errlen);
#endif
