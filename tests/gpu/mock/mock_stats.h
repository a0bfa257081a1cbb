/* mock_stats.h - what the mock device (mock_cuda.c) counts, for tests that assert a
 * code path never waits for the device: a training step on the device path must make
 * no device-to-host copy and no synchronisation.
 */
#ifndef MOCK_STATS_H
#define MOCK_STATS_H

#include <stddef.h>

/* Device-to-host copies: cudaMemcpy/cudaMemcpyAsync with cudaMemcpyDeviceToHost, or
 * cudaMemcpyDefault from device memory to host memory. */
long mock_stat_d2h(void);
/* cudaStreamSynchronize, cudaDeviceSynchronize and cudaEventSynchronize calls. */
long mock_stat_syncs(void);
/* cudaEventQuery calls that found the work done: each is the end of one polled host
 * wait (the polls that found it busy are not counted). */
long mock_stat_event_polls(void);
/* cuBLAS GEMMs on 16-bit inputs (the backend's staged copies), and on fp32 matrices with
 * a FAST_16BF/16F compute type (a permission cuBLAS may ignore: never used). */
long mock_stat_gemm16(void);
long mock_stat_gemm_fast(void);
/* cuBLAS calls that multiply (each strided batch counts once), and the strided batches
 * among them. */
long mock_stat_gemm_calls(void);
long mock_stat_gemm_batched(void);
/* cudaStreamWaitEvent calls (a stream ordered after another's work). */
long mock_stat_event_waits(void);
/* Bytes copied host to device (cudaMemcpy/cudaMemcpyAsync). */
long mock_stat_h2d_bytes(void);
/* Floats rounded to bf16/fp16 by rtp_k_to_16 (the 16-bit staging of conv and dense). */
long mock_stat_to16(void);
void mock_count_to16(size_t n); /* (mock_kernels.cu's) */
/* Every counter back to 0. */
void mock_stat_reset(void);

#endif
