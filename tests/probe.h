/* What the hardware/sim cross-check probes (test_xprobe: sm_90a, test_tprobe and
 * test_tprobe_pair: sm_100a) share: emitter helpers for parameters and 2-D TMA
 * loads, 2-D tensor maps over row-major matrices, the device side of a 2-CTA
 * cluster probe, the error against float64, and the sim-vs-device output files. */
#ifndef PTXGEN_TEST_PROBE_H
#define PTXGEN_TEST_PROBE_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "hostdata.h"
#include "arch.h"
#include "emit.h"
#include "target.h"

/* The probe tests' command line. `allowed` names the options a test takes, among: seed (--seed N,
 * default from the clock), ptx (--ptx: print one probe), dump (--dump DIR: write every probe for
 * run_all.sh to assemble), arch (--arch A), device (--device sim|cuda), out (--out FILE), compare
 * (--compare FILE). Returns 0, or 2 after printing the usage line. */
typedef struct { uint64_t seed; int show; const char *dump, *arch, *device, *out, *compare; } ProbeArgs;
static inline int probe_args(int argc, char **argv, const char *allowed, const char *usage, ProbeArgs *a)
{
    static const char *valued[] = {"seed", "dump", "arch", "device", "out", "compare"};
    const char **slot[] = {NULL, &a->dump, &a->arch, &a->device, &a->out, &a->compare};
    a->seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int ok = 0;
        if (!strcmp(o, "--ptx") && strstr(allowed, "ptx")) a->show = ok = 1;
        for (int k = 0; !ok && k < 6; k++)
            if (!strncmp(o, "--", 2) && !strcmp(o + 2, valued[k]) && strstr(allowed, valued[k]) && i + 1 < argc) {
                if (slot[k]) *slot[k] = argv[++i];
                else a->seed = strtoull(argv[++i], NULL, 10);
                ok = 1;
            }
        if (!ok) {
            fprintf(stderr, "usage: %s\n", usage);
            return 2;
        }
    }
    return 0;
}

/* --dump: writes one probe's PTX as DIR/PREFIXnnn.ptx, numbered in the order written. */
static inline void probe_dump(const char *dir, const char *prefix, const char *ptx)
{
    static int n;
    char path[512];
    snprintf(path, sizeof path, "%s/%s%03d.ptx", dir, prefix, n++);
    FILE *f = fopen(path, "w");
    if (f) fputs(ptx, f), fclose(f);
    if (!f) check(0, "probe written", "cannot write %s", path);
}

/* Runs entry "k" of ptx on device kind ("sim", or "cuda": a GPU; strict: the sim's notes are errors) as
 * one CTA of `threads` threads with `smem` bytes of dynamic shared memory. Its parameters: nin input
 * buffers (src[i], sz[i] bytes), then the output buffer (out_bytes, poisoned with 0xFF, read back into
 * out), then *scalar unless NULL. 0, or non-zero with the error in err. */
enum { PROBE_MAX_IN = 4 };
static inline int probe_run_on(const char *kind, const char *ptx, unsigned threads, unsigned smem, int strict, int nin,
                               const void *const *src, const size_t *sz, void *out, size_t out_bytes,
                               const unsigned *scalar, char *err, size_t errlen)
{
    Device *dev = NULL;
    DevModule *m = NULL;
    DevFunc *f = NULL;
    DevPtr p[PROBE_MAX_IN + 1] = {0};
    void *args[PROBE_MAX_IN + 2];
    unsigned grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
    if (nin > PROBE_MAX_IN) return snprintf(err, errlen, "probe_run_sim: %d inputs, at most %d", nin, PROBE_MAX_IN), 1;
    int rc = dev_open(&dev, kind, 0, err, errlen);
    if (!rc) dev_set_strict(dev, strict);
    rc = rc || dev_load_ptx(dev, ptx, NULL, &m, err, errlen) || dev_get_func(m, "k", &f, err, errlen) ||
         dev_set_dyn_smem(f, (int)smem, err, errlen);
    for (int i = 0; i <= nin && !rc; i++)
        rc = i < nin ? dev_alloc(dev, &p[i], sz[i], err, errlen) || dev_upload(dev, p[i], src[i], sz[i], err, errlen)
                     : dev_alloc(dev, &p[i], out_bytes, err, errlen) || dev_fill_u8(dev, p[i], 0xFF, out_bytes, err, errlen);
    for (int i = 0; i <= nin; i++) args[i] = &p[i];
    args[nin + 1] = (void *)scalar;
    rc = rc || dev_launch(f, grid, block, smem, args, err, errlen) || dev_sync(dev, err, errlen) ||
         dev_download(dev, out, p[nin], out_bytes, err, errlen);
    char ignore[256];
    for (int i = 0; i <= nin; i++)
        if (p[i]) dev_free(dev, p[i], ignore, sizeof ignore);
    if (m) dev_unload(m);
    if (dev) dev_close(dev);
    return rc;
}

static inline int probe_run_sim(const char *ptx, unsigned threads, unsigned smem, int strict, int nin, const void *const *src,
                                const size_t *sz, void *out, size_t out_bytes, const unsigned *scalar, char *err, size_t errlen)
{
    return probe_run_on("sim", ptx, threads, smem, strict, nin, src, sz, out, out_bytes, scalar, err, errlen);
}

/* A 2-CTA cluster probe's device side (xprobe, tprobe, tprobe_pair): the device, the probe's
 * entry, and every buffer allocated for it, all released by probe_dev_close. Each call returns 0
 * or non-zero with the error in err. */
enum { PROBE_MAX_BUFS = 8 };
typedef struct { Device *dev; DevModule *mod; DevFunc *fn; DevPtr buf[PROBE_MAX_BUFS]; int nbuf; } ProbeDev;

/* strict: the sim holds the kernel to the ISA (notes are errors); no effect on CUDA */
static inline int probe_dev_open(ProbeDev *p, const char *kind, int strict, char *err, size_t errlen)
{
    *p = (ProbeDev){0};
    int rc = dev_open(&p->dev, kind, 0, err, errlen);
    if (!rc) dev_set_strict(p->dev, strict);
    return rc;
}

/* Loads ptx (written to dump when it fails to load) and takes `entry` with smem bytes of dynamic shared memory. */
static inline int probe_dev_load(ProbeDev *p, const char *ptx, const char *dump, const char *entry, unsigned smem,
                                 char *err, size_t errlen)
{
    return dev_load_ptx(p->dev, ptx, dump, &p->mod, err, errlen) || dev_get_func(p->mod, entry, &p->fn, err, errlen) ||
           dev_set_dyn_smem(p->fn, (int)smem, err, errlen);
}

static inline int probe_dev_alloc(ProbeDev *p, size_t bytes, DevPtr *out, char *err, size_t errlen)
{
    if (p->nbuf == PROBE_MAX_BUFS) return snprintf(err, errlen, "probe: more than %d buffers", PROBE_MAX_BUFS), 1;
    if (dev_alloc(p->dev, out, bytes, err, errlen)) return 1;
    p->buf[p->nbuf++] = *out;
    return 0;
}

/* An input buffer holding src. */
static inline int probe_dev_in(ProbeDev *p, const void *src, size_t bytes, DevPtr *out, char *err, size_t errlen)
{
    return probe_dev_alloc(p, bytes, out, err, errlen) || dev_upload(p->dev, *out, src, bytes, err, errlen);
}

/* An output buffer poisoned with 0xFF (NaN as floats): every element the kernel must write. */
static inline int probe_dev_out(ProbeDev *p, size_t bytes, DevPtr *out, char *err, size_t errlen)
{
    return probe_dev_alloc(p, bytes, out, err, errlen) || dev_fill_u8(p->dev, *out, 0xFF, bytes, err, errlen);
}

/* One 2-CTA cluster of `threads` threads each, then the output read back. */
static inline int probe_dev_run(ProbeDev *p, unsigned threads, unsigned smem, void **args, DevPtr dout, void *out,
                                size_t bytes, char *err, size_t errlen)
{
    unsigned grid[3] = {2, 1, 1}, block[3] = {threads, 1, 1}, cluster[3] = {2, 1, 1};
    return dev_launch_cluster(p->fn, grid, block, cluster, smem, args, err, errlen) || dev_sync(p->dev, err, errlen) ||
           dev_download(p->dev, out, dout, bytes, err, errlen);
}

static inline void probe_dev_close(ProbeDev *p)
{
    char ignore[256];
    for (int i = 0; i < p->nbuf; i++) dev_free(p->dev, p->buf[i], ignore, sizeof ignore);
    if (p->mod) dev_unload(p->mod);
    if (p->dev) dev_close(p->dev);
    *p = (ProbeDev){0};
}

/* A probe's output against its float64 reference: the largest error (infinite once a NaN is
 * seen), the largest reference magnitude, the NaN count. */
typedef struct { double max_err, max_ref; int nan; } ProbeErr;
static inline void probe_err_add(ProbeErr *e, double got, double ref)
{
    if (isnan(got)) e->nan++, e->max_err = INFINITY;
    else if (fabs(got - ref) > e->max_err) e->max_err = fabs(got - ref);
    if (fabs(ref) > e->max_ref) e->max_ref = fabs(ref);
}

/* Prints the errors (what: "O") and checks: no NaN, max error within tol * max |ref|. */
static inline void probe_err_check(const ProbeErr *e, const char *what, const char *name, double tol)
{
    printf("  max |%s - ref| = %.3g (max |ref| %.3g), %d NaN\n", what, e->max_err, e->max_ref, e->nan);
    check(!e->nan && e->max_err <= tol * e->max_ref, name, "max error %.3g of %.3g, %d NaN", e->max_err, e->max_ref,
          e->nan);
}

/* n bf16 values uniform in [-1, 1): fresh inputs (never zeros) for a probe's matrices. */
static inline void probe_fill_bf16(Rng *r, uint16_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = f32_to_bf16((float)(rng_uniform(r) * 2 - 1));
}

/* The generic address of a kernel parameter (a tensor map the TMA reads). */
static inline Reg probe_param_addr(Emit *e, const char *name)
{
    Reg r = e_reg(e, RC_B64);
    INS(e, MOV_B64, R(r), SYM(name));
    INS(e, CVTA_PARAM, R(r), R(r));
    return r;
}

static inline Reg probe_imm(Emit *e, int64_t v)
{
    Reg r = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(r), I(v));
    return r;
}

/* A 2-D TMA load of the box at (x, y) to smem + dst, completing on bar; mask: multicast, or NULL. */
static inline void probe_tma_load(Emit *e, Reg smem, uint32_t dst, Reg map, Reg x, Reg y, Reg bar, const Reg *mask)
{
    Reg a = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(a), R(smem), I(dst));
    Reg c[2] = {x, y};
    if (mask) INS(e, TMA_LOAD_2D_MC, A(a, 0), TA(map, 2, c), A(bar, 0), R(*mask));
    else INS(e, TMA_LOAD_2D, A(a, 0), TA(map, 2, c), A(bar, 0));
}

/* A K-major 128B-swizzled tcgen05 smem descriptor at smem + off: start >> 4, LBO field 1 (unused),
 * SBO 1024 (8 rows of 128 B), bit 46 (the sm_100 version), layout 2 (128B swizzle) in bits 61-63. */
static inline Reg probe_sdesc_sw128(Emit *e, Reg smem, uint32_t off)
{
    Reg a = e_reg(e, RC_B32), d = e_reg(e, RC_B64);
    INS(e, ADD_U32, R(a), R(smem), I(off));
    INS(e, SHR_U32, R(a), R(a), I(4));
    INS(e, AND_B32, R(a), R(a), I(0x3FFF));
    INS(e, CVT_U64_U32, R(d), R(a));
    INS(e, OR_B64, R(d), R(d), I((int64_t)(1ull << 16 | (uint64_t)(1024 >> 4) << 32 | 1ull << 46 | 2ull << 61)));
    return d;
}

/* barrier.cluster between tcgen05 fences: the pair's TMEM and tiles are ordered for both CTAs */
static inline void probe_pair_sync(Emit *e)
{
    INS0(e, TC_FENCE_BEFORE);
    INS0(e, CLUSTER_ARRIVE);
    INS0(e, CLUSTER_WAIT);
    INS0(e, TC_FENCE_AFTER);
}

/* spins until the mbarrier at bar completes the phase with parity `parity` (acquire.cluster) */
static inline void probe_wait_cluster(Emit *e, Reg bar, int parity)
{
    int spin = e_label(e);
    Reg ready = e_reg(e, RC_PRED);
    e_place(e, spin);
    INS(e, MBAR_TRY_WAIT_PARITY_CLUSTER, R(ready), A(bar, 0), I(parity));
    INSP(e, ready, 1, BRA, L(spin));
}

/* The module around a probe's body: the target check (which also derives .version), one entry of
 * `threads` threads in a 2-CTA cluster with dynamic shared memory `smem`; params: its parameter list.
 * Frees the emitter. Exits 2 when the body does not fit the arch. */
static inline char *probe_module(Emit *e, const char *arch, const char *comment, const char *entry, const char *params,
                                 int threads)
{
    Buf m = {0}, decls = {0};
    char version[16], err[256];
    const ArchInfo *a = arch_find(arch);
    if (!a || emit_target_check(e->body.s, a, version, err, sizeof err)) {
        fprintf(stderr, "%s\n", a ? err : "unknown arch");
        exit(2);
    }
    e_decls(e, &decls);
    buf_printf(&m, "// %s\n.version %s\n.target %s\n.address_size 64\n\n", comment, version, a->name);
    buf_printf(&m, ".extern .shared .align 1024 .b8 smem[];\n\n.visible .entry %s(\n%s\n)\n"
                   ".maxntid %d, 1, 1\n.reqnctapercluster 2, 1, 1\n{\n%s%s}\n", entry, params, threads, decls.s, e->body.s);
    buf_free(&decls);
    e_free(e);
    return buf_take(&m);
}

/* A 2-D tensor map over a row-major [rows][cols] matrix of eb-byte elements. */
static inline int probe_map2d(Device *dev, DevPtr p, int dtype, int eb, int rows, int cols, int box0, int box1,
                              int swizzle, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen)
{
    DevTmapDesc d = {.dtype = dtype, .rank = 2, .gaddr = p, .dim = {(uint64_t)cols, (uint64_t)rows},
                     .stride = {(uint64_t)cols * (uint64_t)eb}, .box = {(uint32_t)box0, (uint32_t)box1},
                     .estride = {1, 1}, .swizzle = swizzle};
    return dev_tmap_encode(dev, &d, out, err, errlen);
}

/* --out: writes n floats; --compare: checks them against such a file from the other device within
 * tol * max |o| (tensor cores and the sim sum in different orders). */
static inline void probe_write(const char *what, const char *path, const float *o, size_t n)
{
    FILE *f = fopen(path, "wb");
    check(f && fwrite(o, sizeof *o, n, f) == n, what, "cannot write %s", path);
    if (f) fclose(f);
}

static inline void probe_compare(const char *what, const char *path, const float *o, float *other, size_t n, double tol)
{
    FILE *f = fopen(path, "rb");
    int got = f && fread(other, sizeof *other, n, f) == n;
    if (f) fclose(f);
    double diff = 0, mx = 0;
    for (size_t i = 0; got && i < n; i++) {
        double d = fabs((double)o[i] - other[i]);
        if (d > diff || d != d) diff = d != d ? INFINITY : d;
        if (fabs(o[i]) > mx) mx = fabs(o[i]);
    }
    if (got) printf("  max |O - O(%s)| = %.3g (max |O| %.3g)\n", path, diff, mx);
    check(got && diff <= tol * mx, what, "%s: %s", path, got ? "outputs differ" : "cannot read it");
}
#endif
