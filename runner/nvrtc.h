/* CUDA C compiled to PTX at run time by NVRTC. libnvrtc is opened with dlopen
 * in nvrtc_open, never linked, so everything builds and runs without it; only
 * what compiles CUDA C at run time (runner/gpu_ref.c) needs it, and where it is
 * missing that gets one line saying so. */
#ifndef PTXGEN_NVRTC_H
#define PTXGEN_NVRTC_H
#include <stddef.h>

typedef struct Nvrtc Nvrtc;   /* an opened libnvrtc */

/* Opens libnvrtc: the file named by PTXGEN_NVRTC_LIB when that is set (and
 * nothing else), otherwise libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 on the
 * loader's path, then in $CUDA_HOME/lib64 and /usr/local/cuda/lib64. Returns 0,
 * or -1 with a one-line message in err that starts with "no NVRTC" when no
 * library could be opened. */
int  nvrtc_open(Nvrtc **out, char *err, size_t errlen);
void nvrtc_close(Nvrtc *n);
/* The file that was opened and its version (nvrtcVersion), for messages. */
const char *nvrtc_path(const Nvrtc *n);
void nvrtc_version(const Nvrtc *n, int *major, int *minor);

/* Compiles the CUDA C text src (called name in diagnostics) to PTX for compute
 * capability cc_major.cc_minor (--gpu-architecture=compute_XY). On success
 * *ptx is the PTX text, NUL-terminated and malloc'd. On failure err holds one
 * line: the failing NVRTC call, its result, and for a compile error the first
 * error line of the log. When log is non-NULL it receives the whole compile log
 * (malloc'd, possibly empty) on success and on failure, or NULL where there is
 * none; the caller frees *ptx and *log. */
int  nvrtc_compile(Nvrtc *n, const char *src, const char *name, int cc_major, int cc_minor, char **ptx, char **log,
                   char *err, size_t errlen);
#endif
