/* The wgmma unit: to be written. */
#include "sim.h"

int sim_wgmma(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    (void)c, (void)w, (void)in, (void)exec;
    return 0;
}

void sim_wgmma_free(SimWarp *w) { (void)w; }
