/* NVRTC and the GPU references: the reference source compiles for sm_80 and
 * sm_90 and its PTX assembles with ptxas; compile errors come back with their
 * log; a missing or wrong libnvrtc and a device that is not "cuda" give one
 * clean line. Where a CUDA device exists, gpu_ref_selfcheck runs as well. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "device.h"
#include "gpu_ref.h"
#include "nvrtc.h"

static void skip(const char *name, const char *why) { printf("SKIP %s: %s\n", name, why); }

/* Writes ptx to a file and assembles it for arch; 0 when ptxas accepts it. */
static int assemble(const char *ptx, const char *arch, char *why, size_t whylen)
{
    char path[1024], log[1100], cmd[2400];
    FILE *f;
    int rc;
    if (dev_dump_ptx(arch, ptx, path, sizeof path)) {   /* a fresh private file, never a fixed name */
        snprintf(why, whylen, "cannot write a PTX file in $TMPDIR: %s", strerror(errno));
        return -1;
    }
    snprintf(log, sizeof log, "%s.log", path);
    snprintf(cmd, sizeof cmd, "ptxas -arch=%s %s -o /dev/null >%s 2>&1", arch, path, log);
    rc = system(cmd);
    if (rc != 0 && (f = fopen(log, "r"))) {
        size_t n = fread(why, 1, whylen - 1, f);
        why[n] = '\0';
        fclose(f);
    }
    remove(path);
    remove(log);
    return rc == 0 ? 0 : -1;
}

static void test_reference_source(Nvrtc *nv)
{
    static const char *const archs[][2] = { { "8", "0" }, { "9", "0" } };
    int have_ptxas = system("command -v ptxas >/dev/null 2>&1") == 0;
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        char name[96], err[1024], target[32], why[600] = "";
        char *ptx = NULL, *log = NULL;
        int major = atoi(archs[a][0]), minor = atoi(archs[a][1]), rc, all = 1;
        snprintf(target, sizeof target, "sm_%d%d", major, minor);
        snprintf(name, sizeof name, "nvrtc compiles the GPU references for %s", target);
        rc = nvrtc_compile(nv, gpu_ref_source, "gpu_ref.cu", major, minor, &ptx, &log, err, sizeof err);
        check(rc == 0 && ptx && strstr(ptx, target), name, "%s", rc ? err : "PTX lacks its .target");
        if (rc) continue;
        for (const char *const *e = gpu_ref_entries; *e; e++) {
            char entry[96];
            snprintf(entry, sizeof entry, ".entry %s(", *e);
            if (!strstr(ptx, entry)) all = 0;
        }
        snprintf(name, sizeof name, "%s PTX has every entry of gpu_ref_entries", target);
        check(all, name, "an entry is missing");
        snprintf(name, sizeof name, "ptxas -arch=%s accepts the GPU references", target);
        if (!have_ptxas) skip(name, "ptxas is not on PATH");
        else check(assemble(ptx, target, why, sizeof why) == 0, name, "%s", why);
        free(ptx);
        free(log);
    }
}

static void test_compile_error(Nvrtc *nv)
{
    static const char bad[] = "extern \"C\" __global__ void f(float *x)\n{\n    x[0] = no_such_name;\n}\n";
    char err[512], *ptx = NULL, *log = NULL;
    int rc = nvrtc_compile(nv, bad, "bad.cu", 9, 0, &ptx, &log, err, sizeof err);
    check(rc != 0 && !ptx, "nvrtc: a compile error fails", "rc %d", rc);
    check(rc != 0 && strstr(err, "nvrtcCompileProgram") && strstr(err, "no_such_name") && !strchr(err, '\n'),
          "nvrtc: the error is one line naming the call and the log's error", "err: %s", err);
    check(log && strstr(log, "bad.cu") && strstr(log, "no_such_name"), "nvrtc: the full log comes back",
          "log: %s", log ? log : "(none)");
    free(log);
}

/* open with PTXGEN_NVRTC_LIB=lib; err must contain want */
static void test_lib(const char *name, const char *lib, const char *want)
{
    char err[512] = "";
    Nvrtc *nv = NULL;
    int rc;
    setenv("PTXGEN_NVRTC_LIB", lib, 1);
    rc = nvrtc_open(&nv, err, sizeof err);
    unsetenv("PTXGEN_NVRTC_LIB");
    check(rc != 0 && !nv && strstr(err, want) && strstr(err, lib), name, "rc %d, err: %s", rc, err);
    nvrtc_close(nv);
}

static void test_devices(void)
{
    char err[1024] = "";
    Device *dev = NULL;
    GpuRef *g = NULL;
    int rc;
    if (dev_open(&dev, "sim", 0, err, sizeof err) == 0) {
        rc = gpu_ref_open(&g, dev, err, sizeof err);
        check(rc != 0 && !g && strstr(err, "cuda device"), "gpu_ref refuses the sim device", "rc %d: %s", rc, err);
        dev_close(dev);
    } else {
        check(0, "sim device opens", "%s", err);
    }
    if (dev_open(&dev, "cuda", 0, err, sizeof err) != 0) {
        skip("gpu_ref_selfcheck", err);
        return;
    }
    rc = gpu_ref_selfcheck(dev, err, sizeof err);
    if (rc && strncmp(err, "no NVRTC", 8) == 0) skip("gpu_ref_selfcheck", err);
    else check(rc == 0, "gpu_ref_selfcheck on the CUDA device", "%s", err);
    dev_close(dev);
}

int main(void)
{
    char err[512];
    Nvrtc *nv = NULL;
    int major = 0, minor = 0;
    test_lib("nvrtc: a missing library is one clean line", "/nonexistent/libnvrtc.so", "no NVRTC");
    test_lib("nvrtc: a library without NVRTC's symbols is refused", "libm.so.6", "lacks symbol nvrtc");
    if (nvrtc_open(&nv, err, sizeof err) != 0) {
        skip("nvrtc compiles", err);
    } else {
        nvrtc_version(nv, &major, &minor);
        printf("NVRTC %d.%d from %s\n", major, minor, nvrtc_path(nv));
        test_reference_source(nv);
        test_compile_error(nv);
        nvrtc_close(nv);
    }
    test_devices();
    return check_summary();
}
