/* dev_open must fail cleanly, with "no CUDA driver", where libcuda is absent,
 * and must open and describe the device where it is present. */
#include "device.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    char err[512];
    Device *d = NULL;
    DevInfo info;
    static const char want[] = "no CUDA driver";

    if (dev_open(&d, "cuda", 0, err, sizeof err) != 0) {
        if (strncmp(err, want, sizeof want - 1) == 0) {
            printf("ok no-driver path: %s\n", err);
            return 0;
        }
        fprintf(stderr, "FAIL dev_open: %s\n", err);
        return 1;
    }
    if (dev_info(d, &info, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL dev_info: %s\n", err);
        dev_close(d);
        return 1;
    }
    printf("ok device: %s, sm_%d%d, %d SMs, %d B opt-in smem/block, %zu B memory\n", info.name, info.cc_major,
           info.cc_minor, info.sm_count, info.max_smem_optin, info.total_mem);
    dev_close(d);
    return 0;
}
