/* NVRTC loaded with dlopen (see nvrtc.h). The toolkit's nvrtc.h is not used:
 * its name is this file's header's, and the few types needed are declared
 * here exactly as NVRTC's C ABI has them (an int enum, an opaque pointer). */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"   /* dev_errf */

typedef int NvResult;                   /* nvrtcResult; NVRTC_SUCCESS is 0 */
typedef struct NvProgram *NvProgram;    /* nvrtcProgram */

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "function pointers must fit in void *");

/* One row per entry point: return type, field, exported name, parameters. */
#define NVRTC_SYMS(X)                                                                                        \
    X(const char *, ErrorString, "nvrtcGetErrorString", (NvResult))                                          \
    X(NvResult, Version, "nvrtcVersion", (int *, int *))                                                     \
    X(NvResult, CreateProgram, "nvrtcCreateProgram",                                                         \
      (NvProgram *, const char *, const char *, int, const char *const *, const char *const *))              \
    X(NvResult, CompileProgram, "nvrtcCompileProgram", (NvProgram, int, const char *const *))                \
    X(NvResult, PtxSize, "nvrtcGetPTXSize", (NvProgram, size_t *))                                           \
    X(NvResult, Ptx, "nvrtcGetPTX", (NvProgram, char *))                                                     \
    X(NvResult, LogSize, "nvrtcGetProgramLogSize", (NvProgram, size_t *))                                    \
    X(NvResult, Log, "nvrtcGetProgramLog", (NvProgram, char *))                                              \
    X(NvResult, DestroyProgram, "nvrtcDestroyProgram", (NvProgram *))

#define AS_FIELD(ret, field, name, params) ret (*field) params;
typedef struct { NVRTC_SYMS(AS_FIELD) } NvApi;
#define AS_ROW(ret, field, name, params) { name, offsetof(NvApi, field) },
static const struct { const char *name; size_t off; } kNvSyms[] = { NVRTC_SYMS(AS_ROW) };

struct Nvrtc { void *lib; NvApi api; char path[512]; int major, minor; };

/* Sonames first (the loader's path and ldconfig), then the toolkit's usual homes. */
static const char *const kNames[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12" };

static int try_open(Nvrtc *n, const char *path)
{
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (n->lib) snprintf(n->path, sizeof n->path, "%s", path);
    return n->lib != NULL;
}

static int open_lib(Nvrtc *n, char *err, size_t errlen)
{
    const char *env = getenv("PTXGEN_NVRTC_LIB"), *home = getenv("CUDA_HOME");
    const char *dirs[] = { home && *home ? home : NULL, "/usr/local/cuda" };
    char first[512] = "", path[512];
    const char *e;
    if (env && *env) {
        if (try_open(n, env)) return 0;
        e = dlerror();
        return dev_errf(err, errlen, "no NVRTC: cannot open PTXGEN_NVRTC_LIB=%s (%s)", env, e ? e : "dlopen failed");
    }
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++) {
        if (try_open(n, kNames[i])) return 0;
        if (!first[0] && (e = dlerror())) snprintf(first, sizeof first, "%s", e);   /* names the soname to install */
    }
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
        for (size_t i = 0; dirs[d] && i < sizeof kNames / sizeof kNames[0]; i++) {
            snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], kNames[i]);
            if (try_open(n, path)) return 0;
        }
    return dev_errf(err, errlen, "no NVRTC: libnvrtc.so not found (%s); install the CUDA toolkit's NVRTC or set "
                    "PTXGEN_NVRTC_LIB to its path", first[0] ? first : "dlopen failed");
}

static int resolve(Nvrtc *n, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof kNvSyms / sizeof kNvSyms[0]; i++) {
        void *p = dlsym(n->lib, kNvSyms[i].name);
        if (!p) return dev_errf(err, errlen, "%s lacks symbol %s (not an NVRTC library?)", n->path, kNvSyms[i].name);
        memcpy((char *)&n->api + kNvSyms[i].off, &p, sizeof p);
    }
    return 0;
}

int nvrtc_open(Nvrtc **out, char *err, size_t errlen)
{
    Nvrtc *n = calloc(1, sizeof *n);
    *out = NULL;
    if (!n) return dev_errf(err, errlen, "nvrtc_open: out of memory");
    if (open_lib(n, err, errlen) || resolve(n, err, errlen)) {
        nvrtc_close(n);
        return -1;
    }
    if (n->api.Version(&n->major, &n->minor) != 0) n->major = n->minor = 0;   /* only ever printed */
    *out = n;
    return 0;
}

/* libnvrtc stays loaded, as libcuda does (runner/cuda.c): a process that compiles the references again
 * and again (tune) must not unload a library whose threads or exit handlers may still run. */
void nvrtc_close(Nvrtc *n)
{
    free(n);
}

const char *nvrtc_path(const Nvrtc *n) { return n->path; }

void nvrtc_version(const Nvrtc *n, int *major, int *minor)
{
    *major = n->major;
    *minor = n->minor;
}

/* The one place NVRTC failures are worded; 0 for NVRTC_SUCCESS so checks chain with ||. */
static int nv(const Nvrtc *n, NvResult r, const char *call, const char *name, char *err, size_t errlen)
{
    const char *text;
    if (r == 0) return 0;
    text = n->api.ErrorString(r);
    return dev_errf(err, errlen, "%s failed for %s: %s (nvrtcResult %d; NVRTC %d.%d, %s)", call, name,
                    text ? text : "unknown nvrtcResult", r, n->major, n->minor, n->path);
}

/* Appends the log's first line that reports an error (else its first line). */
static void add_first_error(char *err, size_t errlen, const char *log)
{
    const char *line = strstr(log, "error");
    size_t used = err ? strlen(err) : 0, len;
    if (!err || !*log || used + 4 >= errlen) return;
    if (!line) line = log;
    while (line > log && line[-1] != '\n') line--;
    len = strcspn(line, "\r\n");
    snprintf(err + used, errlen - used, ": %.*s", (int)len, line);
}

/* Reads one of the program's texts (PTX or log) through its size and copy calls. */
static int get_text(const Nvrtc *n, NvProgram prog, NvResult (*size_fn)(NvProgram, size_t *),
                    NvResult (*copy_fn)(NvProgram, char *), const char *copy_call, const char *name, char **out,
                    char *err, size_t errlen)
{
    char size_call[64];
    size_t size = 0;
    *out = NULL;
    snprintf(size_call, sizeof size_call, "%sSize", copy_call);   /* nvrtcGetPTXSize, nvrtcGetProgramLogSize */
    if (nv(n, size_fn(prog, &size), size_call, name, err, errlen)) return -1;
    if (!(*out = calloc(1, size + 1))) return dev_errf(err, errlen, "nvrtc_compile: out of memory (%zu bytes)", size);
    if (nv(n, copy_fn(prog, *out), copy_call, name, err, errlen)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int nvrtc_compile(Nvrtc *n, const char *src, const char *name, int cc_major, int cc_minor, char **ptx, char **log,
                  char *err, size_t errlen)
{
    NvProgram prog = NULL;
    char arch[64], *text = NULL;
    const char *opts[] = { arch };
    NvResult rc;
    int fail;
    *ptx = NULL;
    if (log) *log = NULL;
    snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d%d", cc_major, cc_minor);
    if (nv(n, n->api.CreateProgram(&prog, src, name, 0, NULL, NULL), "nvrtcCreateProgram", name, err, errlen))
        return -1;
    rc = n->api.CompileProgram(prog, 1, opts);
    /* The log is read either way: a failure's cause is in it, and a success may carry warnings. */
    fail = get_text(n, prog, n->api.LogSize, n->api.Log, "nvrtcGetProgramLog", name, &text, err, errlen);
    if (!fail && nv(n, rc, "nvrtcCompileProgram", name, err, errlen)) {
        char target[80];
        snprintf(target, sizeof target, " [%s]", arch);
        if (err && strlen(err) + strlen(target) < errlen) strcat(err, target);
        add_first_error(err, errlen, text);
        fail = 1;
    }
    if (!fail) fail = get_text(n, prog, n->api.PtxSize, n->api.Ptx, "nvrtcGetPTX", name, ptx, err, errlen);
    (void)n->api.DestroyProgram(&prog);   /* frees host memory only; nothing to report */
    if (log) *log = text;
    else free(text);
    return fail ? -1 : 0;
}
