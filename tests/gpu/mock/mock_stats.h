/* mock_stats.h - what the mock device (mock_cuda.c) counts, for tests that assert a
 * code path never waits for the device: a training step on the device path must make
 * no device-to-host copy and no synchronisation.
 */
#ifndef MOCK_STATS_H
#define MOCK_STATS_H

/* Device-to-host copies: cudaMemcpy/cudaMemcpyAsync with cudaMemcpyDeviceToHost, or
 * cudaMemcpyDefault from device memory to host memory. */
long mock_stat_d2h(void);
/* cudaStreamSynchronize, cudaDeviceSynchronize and cudaEventSynchronize calls. */
long mock_stat_syncs(void);
/* Both counters back to 0. */
void mock_stat_reset(void);

#endif
