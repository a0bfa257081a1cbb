/* mock_graph.h - stream capture and CUDA graphs on the mock device (mock_cuda.c).
 *
 * cudaStreamBeginCapture starts recording on the calling thread: from then on every
 * stream operation the mock provides (kernel launchers, cudaMemcpyAsync/cudaMemsetAsync,
 * the cuBLAS GEMMs, the cuDNN convolutions) records itself with its arguments instead
 * of running. cudaStreamEndCapture hands the recording over as a graph; each
 * cudaGraphLaunch of its instance calls the recorded operations again, in order,
 * outside any capture, so they run on device memory as it is at the launch (as a real
 * graph's kernel nodes read the memory their pointers name when they run). What a real
 * capture refuses fails here too and invalidates the capture: a synchronisation, a
 * device-to-host copy, cudaMalloc or cudaFree while capturing. KILN_MOCK_DEVICE=
 * capture-fails invalidates every capture (as an operation that cannot be captured,
 * e.g. a cuDNN algorithm, would on a GPU).
 */
#ifndef MOCK_GRAPH_H
#define MOCK_GRAPH_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 while the calling thread captures. */
int mock_capturing(void);
/* Records fn(ctx) in the calling thread's capture; free_ctx(ctx) when the graph goes. */
void mock_capture_call(cudaError_t (*fn)(void *), void *ctx, void (*free_ctx)(void *));
/* The same for a C caller: ctx is a copy of the n bytes at args, freed with free(). */
void mock_capture_copy(cudaError_t (*fn)(void *), const void *args, size_t n);
/* Graphs launched, and captures ended with a graph, since the last mock_stat_reset. */
long mock_stat_graph_launches(void);
long mock_stat_captures(void);

#ifdef __cplusplus
}
#endif

#endif
