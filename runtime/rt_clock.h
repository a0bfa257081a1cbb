/* rt_clock.h - the one monotonic clock: seconds for timings, progress and timeouts
 * (not the time of day; unaffected when the system clock is set). */
#ifndef RT_CLOCK_H
#define RT_CLOCK_H

/* Seconds since an arbitrary point, CLOCK_MONOTONIC, with nanosecond resolution. */
double rt_clock_s(void);

#endif
