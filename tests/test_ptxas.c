/* The loader's ptxas (runner/ptxas.c): which one PTXGEN_PTXAS, $CUDA_HOME and
 * PATH pick; a valid module comes back as an
 * ELF cubin with ptxas's -v report; a PTX error, a missing ptxas and a ptxas
 * that writes nothing or hangs each give one line naming it; no private file is left
 * behind in $TMPDIR. Needs ptxas on PATH (a SKIP line otherwise). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ptxas.h"

static const char *kGood =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry twice(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n\t.reg .f32 %f<2>;\n"
    "\tld.param.u64 %rd0, [p];\n\tcvta.to.global.u64 %rd1, %rd0;\n\tld.global.f32 %f0, [%rd1];\n"
    "\tadd.f32 %f1, %f0, %f0;\n\tst.global.f32 [%rd1], %f1;\n\tret;\n}\n";

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(void)
{
    char tmp[] = "/tmp/ptxgen-test-ptxas-XXXXXX", log[4096], err[1024];
    void *cubin = NULL;
    size_t n = 0;
    if (system("command -v ptxas >/dev/null 2>&1")) {
        printf("SKIP PTXGEN_PTXAS: ptxas is not on PATH\n");
        return check_summary();
    }
    if (!mkdtemp(tmp)) {
        check(0, "a private TMPDIR", "mkdtemp failed");
        return check_summary();
    }
    setenv("TMPDIR", tmp, 1);

    char path[1024], fake[1200], bin[1100];
    int how;
    setenv("PTXGEN_PTXAS", "driver", 1);
    how = ptxas_choose(path, sizeof path);
    check(how == PTXAS_NONE && !path[0], "PTXGEN_PTXAS=driver picks the driver's JIT", "%d %s", how, path);
    setenv("PTXGEN_PTXAS", "/opt/x/ptxas", 1);
    how = ptxas_choose(path, sizeof path);
    check(how == PTXAS_NAMED && !strcmp(path, "/opt/x/ptxas"), "PTXGEN_PTXAS=PATH names the ptxas", "%d %s", how, path);
    /* unset: $CUDA_HOME/bin before PATH; a file that is not executable is passed over */
    unsetenv("PTXGEN_PTXAS");
    snprintf(bin, sizeof bin, "%s/bin", tmp);
    snprintf(fake, sizeof fake, "%s/ptxas", bin);
    FILE *f = (mkdir(bin, 0700), fopen(fake, "w"));
    if (f) fclose(f);
    char *saved_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    unsetenv("CUDA_PATH");
    setenv("CUDA_HOME", tmp, 1);
    setenv("PATH", "/nonexistent", 1);
    how = ptxas_choose(path, sizeof path);
    check(strcmp(path, fake) != 0, "a ptxas without exec permission is passed over", "%d %s", how, path);
    chmod(fake, 0700);
    how = ptxas_choose(path, sizeof path);
    check(how == PTXAS_FOUND && !strcmp(path, fake), "unset: $CUDA_HOME/bin/ptxas is found", "%d %s", how, path);
    unsetenv("CUDA_HOME");
    setenv("PATH", bin, 1);
    how = ptxas_choose(path, sizeof path);
    check(how == PTXAS_FOUND && !strcmp(path, fake), "unset: a ptxas on PATH is found", "%d %s", how, path);
    if (saved_path) setenv("PATH", saved_path, 1), free(saved_path);
    unlink(fake);
    rmdir(bin);

    int rc = ptxas_assemble("ptxas", "sm_80", kGood, &cubin, &n, log, sizeof log, err, sizeof err);
    check(rc == 0 && n > 64 && !memcmp(cubin, "\x7f" "ELF", 4), "a valid module assembles to an ELF cubin",
          "rc %d, %zu bytes: %s", rc, n, err);
    check(rc == 0 && strstr(log, "Used ") && strstr(log, "twice"), "the log is ptxas's -v report of the entry", "%s", log);
    free(cubin);

    char *bad = strdup(kGood);
    memcpy(strstr(bad, "add.f32"), "add.q32", 7);
    rc = ptxas_assemble("ptxas", "sm_80", bad, &cubin, &n, log, sizeof log, err, sizeof err);
    check(rc == -1 && !cubin && strstr(err, "failed (exit status") && strstr(err, ".q32"),
          "a PTX error names ptxas's exit status and its message", "rc %d: %s", rc, err);
    free(bad);

    rc = ptxas_assemble("/nonexistent/ptxas", "sm_80", kGood, &cubin, &n, log, sizeof log, err, sizeof err);
    check(rc == -1 && strstr(err, "/nonexistent/ptxas") && (strstr(err, "cannot run") || strstr(err, "failed")),
          "a missing ptxas is named", "rc %d: %s", rc, err);

    rc = ptxas_assemble("true", "sm_80", kGood, &cubin, &n, log, sizeof log, err, sizeof err);
    check(rc == -1 && strstr(err, "wrote no cubin"), "a ptxas that writes nothing is refused", "rc %d: %s", rc, err);

    /* a ptxas that never finishes is killed after PTXGEN_PTXAS_TIMEOUT_S */
    char slow[1200];
    snprintf(slow, sizeof slow, "%s/slow-ptxas", tmp);
    FILE *sf = fopen(slow, "w");
    if (sf) fputs("#!/bin/sh\nexec sleep 30\n", sf), fclose(sf);
    chmod(slow, 0700);
    setenv("PTXGEN_PTXAS_TIMEOUT_S", "0.2", 1);
    rc = ptxas_assemble(slow, "sm_80", kGood, &cubin, &n, log, sizeof log, err, sizeof err);
    unsetenv("PTXGEN_PTXAS_TIMEOUT_S");
    check(rc == -1 && strstr(err, "did not finish in") && strstr(err, "killed"), "a ptxas that hangs is killed, not waited on",
          "rc %d: %s", rc, err);
    unlink(slow);

    check(files_in(tmp) == 0, "no private file is left in $TMPDIR", "%d left in %s", files_in(tmp), tmp);
    rmdir(tmp);
    return check_summary();
}
