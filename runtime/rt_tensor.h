/* rt_tensor.h - tensors as views into backend-owned arenas.
 *
 * A tensor is {data, dtype, shape}: it never owns memory. Memory comes in a few big
 * arenas (parameters, gradients, optimiser state, activations) that a model allocates
 * once through its backend (ops->alloc) and frees once (ops->free); tensors are carved
 * from them with rt_arena_take(). `data` is backend memory: a host pointer on the CPU
 * backend, a device pointer on CUDA. Code above the backend never dereferences it; it
 * moves bytes with ops->upload / ops->download.
 *
 * Shapes are always 4-D in the N, C, H, W vocabulary; a (N, F) matrix is (N, F, 1, 1),
 * a vector of K values is (K, 1, 1, 1). Layout is contiguous row-major NCHW.
 */
#ifndef RT_TENSOR_H
#define RT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

typedef enum { RT_F32 = 0, RT_I32 = 1 } rt_dtype;

typedef struct rt_tensor {
    void *data; /* backend memory (see above); NULL for an unbound tensor */
    rt_dtype dtype;
    int n, c, h, w; /* shape (N, C, H, W) */
} rt_tensor;

/* Number of elements n*c*h*w. */
size_t rt_tensor_numel(const rt_tensor *t);
/* Bytes the tensor spans (numel * 4: both dtypes are 4 bytes). */
size_t rt_tensor_bytes(const rt_tensor *t);
/* Host float pointer of a tensor on a host backend (CPU); the caller knows it is host. */
static inline float *rt_tensor_f32(const rt_tensor *t) { return (float *)t->data; }

typedef struct rt_backend rt_backend;

/* A slab of backend memory with a bump pointer. Every offset is 64-byte aligned. */
typedef struct rt_arena {
    rt_backend *backend; /* borrowed */
    void *base;          /* backend memory from ops->alloc */
    size_t size, used;
} rt_arena;

/* Allocates `bytes` (rounded up to 64) of backend memory, zero-filled. */
RT_MUST_USE rt_status rt_arena_init(rt_arena *a, rt_backend *b, size_t bytes, rt_error *err);
/* Frees the slab through the backend; accepts a zeroed/already deinit'ed arena. */
void rt_arena_deinit(rt_arena *a);
/* Binds t (shape already set) to the next bytes of the arena. RT_ENOMEM when the arena
 * is too small: callers size arenas with rt_arena_need() first. */
RT_MUST_USE rt_status rt_arena_take(rt_arena *a, rt_tensor *t, rt_error *err);
/* Bytes a tensor of this numel takes in an arena (aligned). */
size_t rt_arena_need(size_t numel);

#endif
