/* rt_tensor.c - tensor sizes and the arena bump allocator (see rt_tensor.h). */
#include "rt_tensor.h"

#include "rt_backend.h"

size_t rt_tensor_numel(const rt_tensor *t)
{
    return (size_t)t->n * (size_t)t->c * (size_t)t->h * (size_t)t->w;
}

size_t rt_tensor_bytes(const rt_tensor *t) { return rt_tensor_numel(t) * 4; }

size_t rt_arena_need(size_t numel) { return (numel * 4 + 63) / 64 * 64; }

rt_status rt_arena_init(rt_arena *a, rt_backend *b, size_t bytes, rt_error *err)
{
    a->backend = b;
    a->base = NULL;
    a->size = a->used = 0;
    size_t n = (bytes + 63) / 64 * 64;
    RT_TRY(b->ops->alloc(b, &a->base, n, err));
    a->size = n;
    return RT_OK;
}

void rt_arena_deinit(rt_arena *a)
{
    if (!a || !a->backend) return;
    a->backend->ops->free(a->backend, a->base);
    a->base = NULL;
    a->size = a->used = 0;
    a->backend = NULL;
}

rt_status rt_arena_take(rt_arena *a, rt_tensor *t, rt_error *err)
{
    size_t need = rt_arena_need(rt_tensor_numel(t));
    if (!a->base || a->used + need > a->size)
        return RT_ERR(err, RT_ENOMEM, "arena of %zu bytes exhausted (%zu used, %zu asked)", a->size,
                      a->used, need);
    t->data = (char *)a->base + a->used;
    a->used += need;
    return RT_OK;
}
