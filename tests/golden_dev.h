/* For the tests that record a GPU's answers in a golden file (test_fuzz_alu, test_approx): the device to run on and
 * the file to write, opened together, the file headed "# TOOL: WHAT, as computed by DEVICE". */
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

#endif
