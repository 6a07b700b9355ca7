/* For the tests that record a GPU's answers in a golden file (test_fuzz_alu, test_approx): the device to run on and
 * the file to write, opened together, the file headed "# TOOL: WHAT, as computed by DEVICE"; and one run of a
 * program's entry k(in, out) on either device. */
#ifndef GOLDEN_DEV_H
#define GOLDEN_DEV_H
#include <stdio.h>
#include <string.h>
#include "device.h"

static Device *golden_open(const char *tool, const char *kind, const char *path, const char *what, FILE **f)
    __attribute__((unused));
static Device *golden_open(const char *tool, const char *kind, const char *path, const char *what, FILE **f)
{
    char err[512];
    Device *dev = NULL;
    DevInfo info;
    memset(&info, 0, sizeof info);
    if (dev_open(&dev, kind, 0, err, sizeof err) || (!strcmp(kind, "cuda") && dev_info(dev, &info, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", tool, err);
        if (dev) dev_close(dev);
        return NULL;
    }
    if (!(*f = fopen(path, "w"))) {
        fprintf(stderr, "%s: cannot write %s\n", tool, path);
        dev_close(dev);
        return NULL;
    }
    fprintf(*f, "# %s: %s, as computed by %s\n", tool, what, info.name[0] ? info.name : kind);
    return dev;
}

/* Runs entry k(.param .u64 in, .param .u64 out) of ptx in one CTA of threads threads over a copy of in (in_bytes)
 * and an output buffer poisoned with 0xA5, downloaded into out (out_bytes); 0, or 1 with err set */
static int golden_run(Device *dev, const char *ptx, unsigned threads, const void *in, size_t in_bytes, void *out,
                      size_t out_bytes, char *err, size_t cap) __attribute__((unused));
static int golden_run(Device *dev, const char *ptx, unsigned threads, const void *in, size_t in_bytes, void *out,
                      size_t out_bytes, char *err, size_t cap)
{
    DevModule *m = NULL;
    DevFunc *f = NULL;
    DevPtr din = 0, dout = 0;
    unsigned grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
    int rc = dev_load_ptx(dev, ptx, NULL, &m, err, cap) || dev_get_func(m, "k", &f, err, cap) ||
             dev_alloc(dev, &din, in_bytes, err, cap) || dev_alloc(dev, &dout, out_bytes, err, cap) ||
             dev_upload(dev, din, in, in_bytes, err, cap) || dev_fill_u8(dev, dout, 0xA5, out_bytes, err, cap);
    void *args[2] = {&din, &dout};
    if (!rc) rc = dev_launch(f, grid, block, 0, args, err, cap) || dev_sync(dev, err, cap) || dev_download(dev, out, dout, out_bytes, err, cap);
    char ignore[256];
    if (din) dev_free(dev, din, ignore, sizeof ignore);
    if (dout) dev_free(dev, dout, ignore, sizeof ignore);
    if (m) dev_unload(m);
    return rc;
}

#endif
