/* The TMEM and tcgen05 unit: to be written. */
#include "sim.h"

int sim_tcgen05(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    (void)c, (void)w, (void)in, (void)exec;
    return 0;
}

int sim_tcgen05_exit(SimCta *c)
{
    (void)c;
    return 0;
}
