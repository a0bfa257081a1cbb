/* rt_clock.c - the monotonic clock of rt_clock.h. */
#include <time.h>

#include "rt_clock.h"

double rt_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
