/* CUDA Driver API backend for device.h. libcuda is opened with dlopen inside
 * dev_open, so the generator builds and runs (and still emits PTX) on machines
 * without a GPU or driver; only running kernels needs one. cuda.h is used for
 * types and enums only, never for linking. */
#include "device_impl.h"
#include "jit_cache.h"
#include "ptxas.h"
#include "sim_tmap.h"

#include <ctype.h>
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* dlsym hands back void *; POSIX guarantees function pointers share its size
 * and representation, which the memcpy in resolve() relies on. */
_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "function pointers must fit in void *");

/* One row per entry point: field, exported name, fallback name, parameters.
 * Exported names are what cuda.h (CUDA 13) #defines the API names to; the
 * unsuffixed exports of those are older ABIs with different semantics. The
 * fallback exists only where a pre-12.8 driver lacks the _v2 export and the
 * older entry point has the same signature and meaning. */
#define CUDA_SYMS(X)                                                                                  \
    X(Init, "cuInit", NULL, (unsigned int))                                                           \
    X(GetErrorName, "cuGetErrorName", NULL, (CUresult, const char **))                                \
    X(GetErrorString, "cuGetErrorString", NULL, (CUresult, const char **))                            \
    X(DeviceGetCount, "cuDeviceGetCount", NULL, (int *))                                              \
    X(DeviceGet, "cuDeviceGet", NULL, (CUdevice *, int))                                              \
    X(DeviceGetName, "cuDeviceGetName", NULL, (char *, int, CUdevice))                                \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, (int *, CUdevice_attribute, CUdevice))        \
    X(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, (size_t *, CUdevice))                              \
    X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, (CUcontext *, CUdevice))                    \
    X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, (CUdevice))                            \
    X(CtxSetCurrent, "cuCtxSetCurrent", NULL, (CUcontext))                                            \
    X(CtxSynchronize, "cuCtxSynchronize", NULL, (void))                                               \
    X(ModuleUnload, "cuModuleUnload", NULL, (CUmodule))                                               \
    X(ModuleLoadData, "cuModuleLoadData", NULL, (CUmodule *, const void *))                           \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL, (CUmodule *, const void *, unsigned int, CUjit_option *, void **)) \
    X(DriverGetVersion, "cuDriverGetVersion", NULL, (int *))                                          \
    X(ModuleGetFunction, "cuModuleGetFunction", NULL, (CUfunction *, CUmodule, const char *))         \
    X(FuncGetAttribute, "cuFuncGetAttribute", NULL, (int *, CUfunction_attribute, CUfunction))        \
    X(FuncSetAttribute, "cuFuncSetAttribute", NULL, (CUfunction, CUfunction_attribute, int))          \
    X(MemAlloc, "cuMemAlloc_v2", NULL, (CUdeviceptr *, size_t))                                       \
    X(MemFree, "cuMemFree_v2", NULL, (CUdeviceptr))                                                   \
    X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (CUdeviceptr, const void *, size_t))                       \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *, CUdeviceptr, size_t))                             \
    X(MemsetD8Async, "cuMemsetD8Async", NULL, (CUdeviceptr, unsigned char, size_t, CUstream))         \
    X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL, (CUdeviceptr, CUdeviceptr, size_t, CUstream))    \
    X(LaunchKernel, "cuLaunchKernel", NULL,                                                           \
      (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,              \
       unsigned int, unsigned int, CUstream, void **, void **))                                       \
    X(EventCreate, "cuEventCreate", NULL, (CUevent *, unsigned int))                                  \
    X(EventRecord, "cuEventRecord", NULL, (CUevent, CUstream))                                        \
    X(EventSynchronize, "cuEventSynchronize", NULL, (CUevent))                                        \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", (float *, CUevent, CUevent))   \
    X(EventDestroy, "cuEventDestroy_v2", NULL, (CUevent))

/* Resolved apart from CUDA_SYMS because only TMA kernels need it: a driver
 * without it (older than CUDA 12.0) still runs everything else. */
typedef CUresult (*EncodeTiledFn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                  const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
_Static_assert(sizeof(CUtensorMap) == DEV_TMAP_BYTES, "a CUtensorMap is the 128 bytes device.h promises");

#define AS_FIELD(field, name, alt, params) CUresult (*field) params;
typedef struct { CUDA_SYMS(AS_FIELD) } Api;
#define AS_ROW(field, name, alt, params) { name, alt, offsetof(Api, field) },
static const struct { const char *name, *alt; size_t off; } kSyms[] = { CUDA_SYMS(AS_ROW) };

typedef struct CuDev CuDev;
typedef struct CuMod CuMod;
typedef struct CuFunc CuFunc;
typedef struct CuEvt CuEvt;

/* Likewise optional: only cluster launches need it. */
typedef CUresult (*LaunchExFn)(const CUlaunchConfig *, CUfunction, void **, void **);

struct CuDev {
    struct Device base;
    void *lib;
    Api api;
    EncodeTiledFn encode_tiled;
    LaunchExFn launch_ex;
    CUdevice dev;
    CUcontext ctx;
    JitCache cache;        /* ptxas's cubins by (PTX, arch, driver, the ptxas): jit_cache.h */
    char jit_arch[16], jit_driver[16];
    char ptxas[1024];      /* the assembler (ptxas.h); empty: the driver's JIT */
    int ptxas_how;         /* PTXAS_NONE, _FOUND or _NAMED */
    char last_load[1400];  /* how the last load made its cubin, for the load log */
};
/* A module owns the DevFuncs taken from it: device.h has no per-function free,
 * and a CUfunction is dead once its module is unloaded anyway. */
struct CuMod { struct DevModule base; CuDev *d; CUmodule mod; CuFunc *funcs; };
struct CuFunc { struct DevFunc base; CuDev *d; CUfunction fn; CuFunc *next; };
struct CuEvt { struct DevEvent base; CuDev *d; CUevent ev; };

enum { LOG_CAP = 16384 };   /* JIT logs past this are truncated by the driver */

/* The one place driver failures are worded; returns 0 for CUDA_SUCCESS so that
 * callers can chain checks with ||. */
static int drv(const CuDev *d, CUresult r, const char *call, const char *ctx, char *err, size_t errlen)
{
    const char *name = NULL, *text = NULL;
    if (r == CUDA_SUCCESS) return 0;
    if (d->api.GetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_<unknown>";
    if (d->api.GetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unrecognized CUresult";
    return dev_errf(err, errlen, "%s failed: %s: %s (CUresult %d)%s%s%s", call, name, text, (int)r,
               ctx ? " [" : "", ctx ? ctx : "", ctx ? "]" : "");
}

/* Re-binding per call keeps stream 0 and allocations on our context even when
 * the caller hops threads or another library made a different device current. */
static int bind(const CuDev *d, char *err, size_t errlen)
{
    return drv(d, d->api.CtxSetCurrent(d->ctx), "cuCtxSetCurrent", NULL, err, errlen);
}

static int open_lib(CuDev *d, char *err, size_t errlen)
{
    char first[512];
    const char *e;
    if ((d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) return 0;
    e = dlerror();   /* keep the first reason: it names the soname users install */
    snprintf(first, sizeof first, "%s", e ? e : "unknown dlopen error");
    if ((d->lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL))) return 0;
    return dev_errf(err, errlen, "no CUDA driver: libcuda.so.1 not found (%s)", first);
}

static int resolve(CuDev *d, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof kSyms / sizeof kSyms[0]; i++) {
        void *p = dlsym(d->lib, kSyms[i].name);
        if (!p && kSyms[i].alt) p = dlsym(d->lib, kSyms[i].alt);
        if (!p) return dev_errf(err, errlen, "CUDA driver lacks symbol %s (driver older than the CUDA 13 headers?)",
                           kSyms[i].name);
        memcpy((char *)&d->api + kSyms[i].off, &p, sizeof p);
    }
    void *enc = dlsym(d->lib, "cuTensorMapEncodeTiled");   /* optional: NULL is reported when used */
    memcpy(&d->encode_tiled, &enc, sizeof enc);
    void *lex = dlsym(d->lib, "cuLaunchKernelEx");
    memcpy(&d->launch_ex, &lex, sizeof lex);
    return 0;
}

/* The primary context, not a private one, so that PyTorch or any other user of
 * the driver in this process shares allocations and modules with us. */
static int attach(CuDev *d, int ordinal, char *err, size_t errlen)
{
    int n = 0;
    if (drv(d, d->api.Init(0), "cuInit", NULL, err, errlen) ||
        drv(d, d->api.DeviceGetCount(&n), "cuDeviceGetCount", NULL, err, errlen))
        return -1;
    if (ordinal < 0 || ordinal >= n)
        return dev_errf(err, errlen, "device ordinal %d out of range (%d CUDA device%s)", ordinal, n, n == 1 ? "" : "s");
    if (drv(d, d->api.DeviceGet(&d->dev, ordinal), "cuDeviceGet", NULL, err, errlen) ||
        drv(d, d->api.PrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain", NULL, err, errlen))
        return -1;
    return bind(d, err, errlen);
}

static void cu_close(Device *d_);
static const DevOps kCudaOps;
static int dattr(const CuDev *d, CUdevice_attribute a, int *v, const char *what, char *err, size_t errlen);

int cuda_open(Device **out, int ordinal, char *err, size_t errlen)
{
    CuDev *d = calloc(1, sizeof *d);
    *out = NULL;
    if (!d) return dev_errf(err, errlen, "dev_open: out of memory");
    d->base.ops = &kCudaOps;
    if (open_lib(d, err, errlen) || resolve(d, err, errlen) || attach(d, ordinal, err, errlen)) {
        cu_close(&d->base);
        return -1;
    }
    int major = 0, minor = 0, version = 0;
    char why[256];
    if (dattr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major, "COMPUTE_CAPABILITY_MAJOR", err, errlen) ||
        dattr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor, "COMPUTE_CAPABILITY_MINOR", err, errlen) ||
        drv(d, d->api.DriverGetVersion(&version), "cuDriverGetVersion", NULL, err, errlen)) {
        cu_close(&d->base);
        return -1;
    }
    snprintf(d->jit_arch, sizeof d->jit_arch, "sm_%d%d", major, minor);
    snprintf(d->jit_driver, sizeof d->jit_driver, "%d", version);
    jit_cache_open(&d->cache, why, sizeof why);   /* off: every load compiles */
    d->ptxas_how = ptxas_choose(d->ptxas, sizeof d->ptxas);
    *out = &d->base;
    return 0;
}

/* Destructors have no err channel; a failure here follows a sticky context
 * error that an earlier call has already reported, so it is dropped. */
static void cu_close(Device *d_)
{
    CuDev *d = (CuDev *)d_;
    if (!d) return;
    if (d->ctx) (void)d->api.PrimaryCtxRelease(d->dev);
    /* libcuda stays loaded: unloading the driver while its threads live is not safe for a process that
     * opens devices again and again (tune, compare) */
    free(d);
}

static int dattr(const CuDev *d, CUdevice_attribute a, int *v, const char *what, char *err, size_t errlen)
{
    return drv(d, d->api.DeviceGetAttribute(v, a, d->dev), "cuDeviceGetAttribute", what, err, errlen);
}

static int cu_info(Device *d_, DevInfo *info, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    memset(info, 0, sizeof *info);
    if (drv(d, d->api.DeviceGetName(info->name, (int)sizeof info->name - 1, d->dev), "cuDeviceGetName", NULL, err, errlen) ||
        dattr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info->cc_major, "COMPUTE_CAPABILITY_MAJOR", err, errlen) ||
        dattr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info->cc_minor, "COMPUTE_CAPABILITY_MINOR", err, errlen) ||
        dattr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info->sm_count, "MULTIPROCESSOR_COUNT", err, errlen) ||
        dattr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info->max_smem_optin,
              "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", err, errlen))
        return -1;
    return drv(d, d->api.DeviceTotalMem(&info->total_mem, d->dev), "cuDeviceTotalMem", NULL, err, errlen);
}

/* ptxas logs are multi-line; err is one line, so lines are joined by " | ". */
static void one_line(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    if (!cap) return;
    for (; *src && n + 1 < cap; src++) {
        if (*src != '\n' && *src != '\r') { dst[n++] = *src; continue; }
        while (src[1] == '\n' || src[1] == '\r') src++;
        if (!src[1]) break;
        for (const char *s = " | "; *s && n + 1 < cap; s++) dst[n++] = *s;
    }
    dst[n] = '\0';
}

/* The repro must assemble for the target the module declares, not the host's. */
static void ptx_target(const char *ptx, char *out, size_t cap)
{
    const char *t = strstr(ptx, ".target");
    size_t n = 0;
    if (t)
        for (t += strlen(".target"); *t == ' ' || *t == '\t'; t++) {}
    while (t && n + 1 < cap && (isalnum((unsigned char)*t) || *t == '_')) out[n++] = *t++;
    out[n] = '\0';
    if (!n) snprintf(out, cap, "sm_XX");
}

/* A failed load's tail: where its PTX was dumped (a fresh private file named
 * after dump_name) and the command that reproduces the failure with ptxas. */
static void repro_tail(const char *ptx, const char *dump_name, const char *ptxas, char *tail, size_t cap)
{
    char arch[64], path[1024];
    tail[0] = '\0';
    if (dump_name && dev_dump_ptx(dump_name, ptx, path, sizeof path) == 0) {
        ptx_target(ptx, arch, sizeof arch);
        snprintf(tail, cap, "; PTX dumped to %s; repro: %s -arch=%s %s", path, ptxas, arch, path);
    } else if (dump_name) {
        snprintf(tail, cap, "; could not dump the PTX to a new file in $TMPDIR: %s", strerror(errno));
    }
}

/* The dump path and repro go last but are budgeted first, so a small err
 * buffer loses the middle of the JIT log rather than where the PTX went. */
static void jit_fail(const CuDev *d, CUresult r, const char *ptx, const char *dump_name, const char *log,
                     char *err, size_t errlen)
{
    char tail[2 * 4096 + 128];
    size_t used, tl;
    repro_tail(ptx, dump_name, "ptxas", tail, sizeof tail);
    drv(d, r, "the driver's JIT (cuModuleLoadDataEx)", NULL, err, errlen);
    if (!err || !errlen) return;
    used = strlen(err);
    tl = strlen(tail);
    if (log[0] && used + 2 + tl + 1 < errlen) {
        memcpy(err + used, ": ", 3);
        used += 2;
        one_line(err + used, errlen - used - tl, log);
        used += strlen(err + used);
    }
    snprintf(err + used, errlen - used, "%s", tail);
}

/* PTXGEN_DUMP_DIR: each load's PTX and JIT logs as <dir>/<name>-<key>.ptx and .log */
static void dump_load(const char *name, const uint8_t key[16], const char *ptx, const char *info, const char *elog)
{
    const char *dir = getenv("PTXGEN_DUMP_DIR");
    char path[1200];
    if (!dir || !*dir) return;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s-%02x%02x%02x%02x.%s", dir, name ? name : "module", key[0], key[1], key[2], key[3],
                 i ? "log" : "ptx");
        FILE *f = fopen(path, "w");
        if (!f) continue;
        if (i) fprintf(f, "JIT info log:\n%s\nJIT error log:\n%s\n", info, elog);
        else fputs(ptx, f);
        fclose(f);
    }
}

static const CUjit_option kLogOpts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                         CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE };

/* The PTX through ptxas (whole program), the cubin by ptxgen's cache: 0 loaded, -1 not, the reason in why. */
static int load_by_ptxas(CuDev *d, CuMod *m, const char *ptx, const char *dump_name, char *info, char *why, size_t whylen)
{
    char id[1200], arch[64];
    struct stat st;
    uint8_t key[16];
    void *bin = NULL;
    size_t n = 0;
    int corrupt = 0, stored;
    CUresult r;
    /* a ptxas replaced in place makes other cubins: its size and mtime join the key */
    int known = !stat(d->ptxas, &st);
    snprintf(id, sizeof id, "ptxas:%s:%lld:%lld", d->ptxas, known ? (long long)st.st_size : -1LL,
             known ? (long long)st.st_mtime : -1LL);
    const char *parts[] = { ptx, d->jit_arch, d->jit_driver, id };
    jit_cache_key(parts, 4, key);
    if (jit_cache_get(&d->cache, key, &bin, &n, &corrupt) && d->api.ModuleLoadData(&m->mod, bin) == CUDA_SUCCESS) {
        free(bin);
        snprintf(d->last_load, sizeof d->last_load, "cubin from ptxgen's cache (assembled by %s)", d->ptxas);
        return 0;
    }
    free(bin);   /* a cubin the driver cannot load (a stale one) is rebuilt */
    bin = NULL;
    ptx_target(ptx, arch, sizeof arch);
    if (ptxas_assemble(d->ptxas, arch, ptx, &bin, &n, info, LOG_CAP - 1, why, whylen)) return -1;
    dump_load(dump_name, key, ptx, info, "");
    r = d->api.ModuleLoadData(&m->mod, bin);
    if (r != CUDA_SUCCESS) {
        free(bin);
        return drv(d, r, "cuModuleLoadData", "the cubin ptxas made (a ptxas newer than the driver?)", why, whylen);
    }
    stored = d->cache.on && !jit_cache_put(&d->cache, key, bin, n);
    free(bin);
    snprintf(d->last_load, sizeof d->last_load, "%s, whole program; %s", d->ptxas,
             stored ? "cubin stored in ptxgen's cache" : "ptxgen's cache is off, nothing stored");
    if (getenv("PTXGEN_JIT_LOG") && info[0]) fprintf(stderr, "ptxgen: ptxas log:\n%s\n", info);
    return 0;
}

/* The assembler ptxas.h describes; on failure the PTX goes to a fresh private
 * file (dump_name) and err holds the JIT's or ptxas's log and the repro. */
static int cu_load_ptx(Device *d_, const char *ptx, const char *dump_name, DevModule **out, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    char *info = calloc(1, LOG_CAP), *elog = calloc(1, LOG_CAP), why[1024] = "", tail[2200];
    CuMod *m = calloc(1, sizeof *m);
    /* sizes leave one byte spare so the calloc'd NUL survives a full log */
    void *val[] = { info, (void *)(uintptr_t)(LOG_CAP - 1), elog, (void *)(uintptr_t)(LOG_CAP - 1), (void *)(uintptr_t)1 };
    const char *parts[] = { ptx, d->jit_arch, d->jit_driver, "driver" };
    uint8_t key[16];
    int rc = -1;
    CUresult r;
    *out = NULL;
    d->last_load[0] = '\0';
    if (!info || !elog || !m) {
        dev_errf(err, errlen, "dev_load_ptx: out of memory");
        goto done;
    }
    if (bind(d, err, errlen)) goto done;
    if (d->ptxas[0]) {
        if (!load_by_ptxas(d, m, ptx, dump_name, info, why, sizeof why)) goto loaded;
        if (d->ptxas_how == PTXAS_NAMED) {   /* the user's choice: no quiet way around it */
            repro_tail(ptx, dump_name, d->ptxas, tail, sizeof tail);
            dev_errf(err, errlen, "PTXGEN_PTXAS: %s%s", why, tail);
            goto done;
        }
    }
    jit_cache_key(parts, 4, key);
    r = d->api.ModuleLoadDataEx(&m->mod, ptx, (unsigned)(sizeof kLogOpts / sizeof kLogOpts[0]), (CUjit_option *)kLogOpts,
                                val);
    dump_load(dump_name, key, ptx, info, elog);
    if (r != CUDA_SUCCESS) {
        jit_fail(d, r, ptx, dump_name, elog, err, errlen);
        goto done;
    }
    snprintf(d->last_load, sizeof d->last_load, "the driver's JIT, whole program (the driver's own cache keeps it)%s%.900s",
             why[0] ? "; the ptxas found failed, so not it: " : "", why);
    if (getenv("PTXGEN_JIT_LOG") && info[0]) fprintf(stderr, "ptxgen: JIT info log:\n%s\n", info);
loaded:
    m->d = d;
    m->base.dev = &d->base;
    *out = &m->base;
    m = NULL;
    rc = 0;
done:
    free(m);
    free(info);
    free(elog);
    return rc;
}

static const char *cu_last_load(const Device *d) { return ((const CuDev *)d)->last_load; }

static void cu_unload(DevModule *m_)
{
    CuMod *m = (CuMod *)m_;
    if (!m) return;
    while (m->funcs) {
        CuFunc *next = m->funcs->next;
        free(m->funcs);
        m->funcs = next;
    }
    (void)m->d->api.ModuleUnload(m->mod);   /* see dev_close on dropped statuses */
    free(m);
}

static int cu_get_func(DevModule *m_, const char *entry, DevFunc **out, char *err, size_t errlen)
{
    CuMod *m = (CuMod *)m_;
    CuFunc *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f) return dev_errf(err, errlen, "dev_get_func: out of memory");
    if (drv(m->d, m->d->api.ModuleGetFunction(&f->fn, m->mod, entry), "cuModuleGetFunction", entry, err, errlen)) {
        free(f);
        return -1;
    }
    f->d = m->d;
    f->base.dev = &m->d->base;
    f->next = m->funcs;
    m->funcs = f;
    *out = &f->base;
    return 0;
}

static int fattr(const CuFunc *f, CUfunction_attribute a, int *v, const char *what, char *err, size_t errlen)
{
    return drv(f->d, f->d->api.FuncGetAttribute(v, a, f->fn), "cuFuncGetAttribute", what, err, errlen);
}

static int cu_func_attrs(DevFunc *f_, DevFuncAttrs *a, char *err, size_t errlen)
{
    CuFunc *f = (CuFunc *)f_;
    memset(a, 0, sizeof *a);
    return (fattr(f, CU_FUNC_ATTRIBUTE_NUM_REGS, &a->num_regs, "NUM_REGS", err, errlen) ||
            fattr(f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &a->local_bytes, "LOCAL_SIZE_BYTES", err, errlen) ||
            fattr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &a->static_smem, "SHARED_SIZE_BYTES", err, errlen) ||
            fattr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a->max_threads, "MAX_THREADS_PER_BLOCK", err, errlen) ||
            fattr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &a->max_dyn_smem,
                  "MAX_DYNAMIC_SHARED_SIZE_BYTES", err, errlen)) ? -1 : 0;
}

static int cu_set_dyn_smem(DevFunc *f_, int dyn_smem, char *err, size_t errlen)
{
    CuFunc *f = (CuFunc *)f_;
    char ctx[64];
    CUresult r = f->d->api.FuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn_smem);
    snprintf(ctx, sizeof ctx, "MAX_DYNAMIC_SHARED_SIZE_BYTES = %d", dyn_smem);
    return drv(f->d, r, "cuFuncSetAttribute", ctx, err, errlen);
}

/* Byte counts go into the message because most failures here are sizes. */
static int mem_check(const CuDev *d, CUresult r, const char *call, size_t bytes, char *err, size_t errlen)
{
    char ctx[48];
    snprintf(ctx, sizeof ctx, "%zu bytes", bytes);
    return drv(d, r, call, ctx, err, errlen);
}

static int cu_alloc(Device *d_, DevPtr *p, size_t bytes, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    CUdeviceptr v = 0;
    *p = 0;
    if (bind(d, err, errlen) || mem_check(d, d->api.MemAlloc(&v, bytes), "cuMemAlloc", bytes, err, errlen))
        return -1;
    *p = (DevPtr)v;
    return 0;
}

/* 0 is accepted so cleanup paths can free unconditionally. */
static int cu_free(Device *d_, DevPtr p, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    if (!p) return 0;
    return (bind(d, err, errlen) || drv(d, d->api.MemFree((CUdeviceptr)p), "cuMemFree", NULL, err, errlen)) ? -1 : 0;
}

static int cu_upload(Device *d_, DevPtr dst, const void *src, size_t bytes, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    return (bind(d, err, errlen) ||
            mem_check(d, d->api.MemcpyHtoD((CUdeviceptr)dst, src, bytes), "cuMemcpyHtoD", bytes, err, errlen)) ? -1 : 0;
}

static int cu_download(Device *d_, void *dst, DevPtr src, size_t bytes, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    return (bind(d, err, errlen) ||
            mem_check(d, d->api.MemcpyDtoH(dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoH", bytes, err, errlen)) ? -1 : 0;
}

static int cu_fill_u8(Device *d_, DevPtr dst, uint8_t v, size_t bytes, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    return (bind(d, err, errlen) ||
            mem_check(d, d->api.MemsetD8Async((CUdeviceptr)dst, v, bytes, (CUstream)d->base.stream), "cuMemsetD8Async", bytes,
                      err, errlen)) ? -1 : 0;
}

static int cu_copy(Device *d_, DevPtr dst, DevPtr src, size_t bytes, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    return (bind(d, err, errlen) ||
            mem_check(d, d->api.MemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, (CUstream)d->base.stream),
                      "cuMemcpyDtoDAsync", bytes, err, errlen)) ? -1 : 0;
}

/* Only configuration errors show up here; faults inside the kernel surface
 * at the next synchronizing call (dev_sync, dev_download, dev_event_ms). */
static int cu_launch(DevFunc *f_, const unsigned grid[3], const unsigned block[3], const DevLaunchHow *how,
                     unsigned dyn_smem, void **args, char *err, size_t errlen)
{
    CuFunc *f = (CuFunc *)f_;
    const unsigned *cluster = how->cluster;
    char ctx[192];
    CUresult r;
    if (bind(f->d, err, errlen)) return -1;
    if (cluster && !f->d->launch_ex)
        return dev_errf(err, errlen, "a cluster launch needs cuLaunchKernelEx, which this CUDA driver lacks (CUDA 12.0+)");
    /* a programmatic dependent without cuLaunchKernelEx launches as any kernel: its griddepcontrol.wait returns */
    int ex = cluster || (how->pdl && f->d->launch_ex);
    if (ex) {
        CUlaunchAttribute attr[2];
        unsigned n = 0;
        if (cluster) {
            attr[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
            attr[n].value.clusterDim.x = cluster[0], attr[n].value.clusterDim.y = cluster[1];
            attr[n++].value.clusterDim.z = cluster[2];
        }
        if (how->pdl) {
            attr[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
            attr[n++].value.programmaticStreamSerializationAllowed = 1;
        }
        CUlaunchConfig cfg = {.gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2], .blockDimX = block[0],
                              .blockDimY = block[1], .blockDimZ = block[2], .sharedMemBytes = dyn_smem,
                              .hStream = (CUstream)f->d->base.stream, .attrs = attr, .numAttrs = n};
        r = f->d->launch_ex(&cfg, f->fn, args, NULL);
    } else {
        r = f->d->api.LaunchKernel(f->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem,
                                   (CUstream)f->d->base.stream, args, NULL);
    }
    if (r == CUDA_SUCCESS) return 0;
    snprintf(ctx, sizeof ctx, "grid %ux%ux%u block %ux%ux%u cluster %ux%ux%u dyn_smem %u%s", grid[0], grid[1], grid[2],
             block[0], block[1], block[2], cluster ? cluster[0] : 1, cluster ? cluster[1] : 1, cluster ? cluster[2] : 1,
             dyn_smem, how->pdl ? " programmatic dependent" : "");
    return drv(f->d, r, ex ? "cuLaunchKernelEx" : "cuLaunchKernel", ctx, err, errlen);
}

static int cu_sync(Device *d_, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    return (bind(d, err, errlen) || drv(d, d->api.CtxSynchronize(), "cuCtxSynchronize",
                                        "may report a fault from an earlier launch", err, errlen)) ? -1 : 0;
}

static int cu_event_new(Device *d_, DevEvent **e, char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    CuEvt *v = calloc(1, sizeof *v);
    *e = NULL;
    if (!v) return dev_errf(err, errlen, "dev_event_new: out of memory");
    if (bind(d, err, errlen) || drv(d, d->api.EventCreate(&v->ev, CU_EVENT_DEFAULT), "cuEventCreate", NULL, err, errlen)) {
        free(v);
        return -1;
    }
    v->d = d;
    v->base.dev = &d->base;
    *e = &v->base;
    return 0;
}

static void cu_event_free(DevEvent *e_)
{
    CuEvt *e = (CuEvt *)e_;
    if (!e) return;
    (void)e->d->api.EventDestroy(e->ev);   /* see dev_close on dropped statuses */
    free(e);
}

static int cu_event_record(DevEvent *e_, char *err, size_t errlen)
{
    CuEvt *e = (CuEvt *)e_;
    return (bind(e->d, err, errlen) ||
            drv(e->d, e->d->api.EventRecord(e->ev, (CUstream)e->d->base.stream), "cuEventRecord", NULL, err, errlen)) ? -1 : 0;
}

static int cu_event_ms(DevEvent *start_, DevEvent *stop_, float *ms, char *err, size_t errlen)
{
    CuEvt *start = (CuEvt *)start_;
    CuEvt *stop = (CuEvt *)stop_;
    const CuDev *d = stop->d;
    *ms = 0.0f;
    if (drv(d, d->api.EventSynchronize(stop->ev), "cuEventSynchronize", NULL, err, errlen)) return -1;
    return drv(d, d->api.EventElapsedTime(ms, start->ev, stop->ev), "cuEventElapsedTime", NULL, err, errlen);
}

static int cu_stats(Device *d, FILE *out, char *err, size_t errlen)
{
    (void)d, (void)out;
    return dev_errf(err, errlen, "instruction and memory counters come from the sim device only (--device sim)");
}

/* The driver answers a bad map with a bare CUDA_ERROR_INVALID_VALUE, so the
 * context names the map and, where the sim's copy of the driver's rules
 * refuses it too, which argument is wrong. */
static void tmap_context(const DevTmapDesc *m, char *ctx, size_t cap)
{
    uint8_t scratch[TMAP_BYTES];
    char why[256];
    int n = snprintf(ctx, cap, "dataType %d rank %d gaddr 0x%llx boxDim[0] %u swizzle %d interleave %d", m->dtype,
                     m->rank, (unsigned long long)m->gaddr, m->box[0], m->swizzle, m->interleave);
    if (n > 0 && (size_t)n < cap &&
        sim_tmap_encode(m->dtype, m->rank, m->gaddr, m->dim, m->stride, m->box, m->estride, m->interleave,
                        m->swizzle, m->l2promo, m->oobfill, scratch, why, sizeof why))
        snprintf(ctx + n, cap - (size_t)n, "; %s", why);
}

static int cu_tmap_encode(Device *d_, const DevTmapDesc *m, uint8_t out[DEV_TMAP_BYTES], char *err, size_t errlen)
{
    CuDev *d = (CuDev *)d_;
    CUtensorMap map;   /* the driver wants 64-byte alignment, which out need not have */
    char ctx[512];
    if (!d->encode_tiled)
        return dev_errf(err, errlen, "CUDA driver lacks symbol cuTensorMapEncodeTiled (tensor maps need a CUDA 12.0+ driver)");
    if (m->rank < 1 || m->rank > DEV_TMAP_MAX_RANK)   /* the driver would read rank entries of fixed arrays */
        return dev_errf(err, errlen, "cuTensorMapEncodeTiled: tensorRank = %d is outside 1..%d", m->rank, DEV_TMAP_MAX_RANK);
    if (bind(d, err, errlen)) return -1;
    CUresult r = d->encode_tiled(&map, (CUtensorMapDataType)m->dtype, (cuuint32_t)m->rank, (void *)(uintptr_t)m->gaddr,
                                 m->dim, m->stride, m->box, m->estride, (CUtensorMapInterleave)m->interleave,
                                 (CUtensorMapSwizzle)m->swizzle, (CUtensorMapL2promotion)m->l2promo,
                                 (CUtensorMapFloatOOBfill)m->oobfill);
    if (r != CUDA_SUCCESS) {
        tmap_context(m, ctx, sizeof ctx);
        return drv(d, r, "cuTensorMapEncodeTiled", ctx, err, errlen);
    }
    memcpy(out, &map, DEV_TMAP_BYTES);
    return 0;
}

static const DevOps kCudaOps = {
    .name = "cuda", .close = cu_close, .info = cu_info, .load_ptx = cu_load_ptx, .unload = cu_unload,
    .get_func = cu_get_func, .func_attrs = cu_func_attrs, .set_dyn_smem = cu_set_dyn_smem, .alloc = cu_alloc,
    .free = cu_free, .upload = cu_upload, .download = cu_download, .fill_u8 = cu_fill_u8, .copy = cu_copy, .launch = cu_launch,
    .sync = cu_sync, .event_new = cu_event_new, .event_free = cu_event_free, .event_record = cu_event_record,
    .event_ms = cu_event_ms, .stats = cu_stats, .tmap_encode = cu_tmap_encode, .last_load = cu_last_load,
};
