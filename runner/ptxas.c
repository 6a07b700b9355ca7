/* A whole-program cubin from a ptxas, and which ptxas (ptxas.h says why). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ptxas.h"

extern char **environ;

static int executable(const char *dir, const char *tail, char *path, size_t cap)
{
    int n = snprintf(path, cap, "%s%s", dir, tail);
    return n > 0 && (size_t)n < cap && access(path, X_OK) == 0;
}

int ptxas_choose(char *path, size_t cap)
{
    const char *named = getenv("PTXGEN_PTXAS"), *env[] = { "CUDA_HOME", "CUDA_PATH" };
    path[0] = '\0';
    if (named && !strcmp(named, "driver")) return PTXAS_NONE;
    if (named && *named) {
        snprintf(path, cap, "%s", named);
        return PTXAS_NAMED;
    }
    for (int i = 0; i < 2; i++) {
        const char *dir = getenv(env[i]);
        if (dir && *dir && executable(dir, "/bin/ptxas", path, cap)) return PTXAS_FOUND;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        size_t len = strcspn(p, ":");
        char dir[512];
        if (len && len < sizeof dir) {
            memcpy(dir, p, len);
            dir[len] = '\0';
            if (executable(dir, "/ptxas", path, cap)) return PTXAS_FOUND;
        }
        p += len + (p[len] == ':');
    }
    if (executable("/usr/local/cuda", "/bin/ptxas", path, cap)) return PTXAS_FOUND;
    path[0] = '\0';
    return PTXAS_NONE;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A new private file $TMPDIR/ptxgen-ptxas-XXXXXX<suffix>, its descriptor (or -1). */
static int temp_file(char *path, size_t cap, const char *suffix)
{
    const char *dir = getenv("TMPDIR");
    int n = snprintf(path, cap, "%s/ptxgen-ptxas-XXXXXX%s", dir && *dir ? dir : "/tmp", suffix);
    if (n < 0 || (size_t)n >= cap) return errno = ENAMETOOLONG, -1;
    return mkstemps(path, (int)strlen(suffix));
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* The whole file at path, malloc'd (+1 NUL byte), or NULL. */
static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    if (f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
        (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
        buf[len] = '\0';
        *n = (size_t)len;
    } else {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    return buf;
}

int ptxas_assemble(const char *path, const char *arch, const char *ptx, void **cubin, size_t *n, char *log,
                   size_t loglen, char *err, size_t errlen)
{
    char in[1024], out[1024], lg[1024], archopt[64];
    int fin = -1, fout = -1, flog = -1, rc = -1, status = 0;
    size_t nlog = 0;
    char *text = NULL;
    *cubin = NULL, *n = 0;
    if (log && loglen) log[0] = '\0';
    if ((fin = temp_file(in, sizeof in, ".ptx")) < 0 || (fout = temp_file(out, sizeof out, ".cubin")) < 0 ||
        (flog = temp_file(lg, sizeof lg, ".log")) < 0) {
        fail(err, errlen, "ptxas: cannot create a private file in $TMPDIR: %s", strerror(errno));
        goto done;
    }
    if (write_all(fin, ptx, strlen(ptx))) {
        fail(err, errlen, "ptxas: cannot write the PTX to %s: %s", in, strerror(errno));
        goto done;
    }
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    char *argv[] = { (char *)path, archopt, "-v", "-o", out, in, NULL };
    posix_spawn_file_actions_t fa;
    pid_t pid;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, flog, 1);
    posix_spawn_file_actions_adddup2(&fa, flog, 2);
    /* a path without '/' is looked up on PATH, as a shell would */
    int e = (strchr(path, '/') ? posix_spawn : posix_spawnp)(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        fail(err, errlen, "%s: cannot run it: %s", path, strerror(e));
        goto done;
    }
    /* a ptxas that never finishes must not hang the load: PTXGEN_PTXAS_TIMEOUT_S, default 600 */
    const char *lim = getenv("PTXGEN_PTXAS_TIMEOUT_S");
    double limit_s = lim && atof(lim) > 0 ? atof(lim) : 600;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) { fail(err, errlen, "ptxas: waitpid: %s", strerror(errno)); goto done; }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >= limit_s) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            fail(err, errlen, "%s -arch=%s did not finish in %.0f s (PTXGEN_PTXAS_TIMEOUT_S); killed", path, arch, limit_s);
            goto done;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);   /* 2 ms: ptxas takes 0.1-1 s */
    }
    text = read_all(lg, &nlog);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        char first[600] = "";
        if (text) {
            size_t k = 0;
            for (const char *s = text; *s && k + 1 < sizeof first; s++) first[k++] = *s == '\n' ? ' ' : *s;
            first[k] = '\0';
        }
        fail(err, errlen, "%s -arch=%s failed (%s %d): %s", path, arch,
             WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), first);
        goto done;
    }
    if (log && loglen && text) snprintf(log, loglen, "%s", text);
    if (!(*cubin = read_all(out, n)) || !*n) {
        free(*cubin), *cubin = NULL;
        fail(err, errlen, "%s wrote no cubin to %s", path, out);
        goto done;
    }
    rc = 0;
done:
    free(text);
    if (fin >= 0) close(fin), unlink(in);
    if (fout >= 0) close(fout), unlink(out);
    if (flog >= 0) close(flog), unlink(lg);
    return rc;
}
