/* rt_onnx_pb.c - the protobuf encoder of rt_onnx_pb.h. */
#include <stdlib.h>
#include <string.h>

#include "rt_onnx_pb.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2, WIRE_I32 = 5 };

static int reserve(rt_pb *b, size_t more)
{
    if (b->oom) return -1;
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more) {
        if (cap > SIZE_MAX / 2) return b->oom = 1, -1;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) return b->oom = 1, -1;
    b->p = p, b->cap = cap;
    return 0;
}

static int varint_encode(uint64_t v, uint8_t out[10])
{
    int k = 0;
    do {
        out[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return k;
}

static void put(rt_pb *b, const void *data, size_t n)
{
    if (reserve(b, n)) return;
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void varint(rt_pb *b, uint64_t v)
{
    uint8_t t[10];
    put(b, t, (size_t)varint_encode(v, t));
}

static void tag(rt_pb *b, int field, int wire)
{
    varint(b, ((uint64_t)field << 3) | (unsigned)wire);
}

void rt_pb_free(rt_pb *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void rt_pb_int(rt_pb *b, int field, int64_t v)
{
    tag(b, field, WIRE_VARINT);
    varint(b, (uint64_t)v); /* negative int64: ten bytes, two's complement */
}

void rt_pb_float(rt_pb *b, int field, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    tag(b, field, WIRE_I32);
    put(b, le, 4);
}

void rt_pb_bytes(rt_pb *b, int field, const void *data, size_t n)
{
    tag(b, field, WIRE_LEN);
    varint(b, n);
    put(b, data, n);
}

void rt_pb_raw(rt_pb *b, const void *data, size_t n) { put(b, data, n); }

void rt_pb_str(rt_pb *b, int field, const char *s) { rt_pb_bytes(b, field, s, strlen(s)); }

void rt_pb_packed_ints(rt_pb *b, int field, const int64_t *v, int n)
{
    size_t mark = rt_pb_open(b, field);
    for (int i = 0; i < n; i++) varint(b, (uint64_t)v[i]);
    rt_pb_close(b, mark);
}

size_t rt_pb_open(rt_pb *b, int field)
{
    tag(b, field, WIRE_LEN);
    return b->n;
}

void rt_pb_close(rt_pb *b, size_t mark)
{
    if (b->oom) return;
    uint8_t t[10];
    size_t len = b->n - mark;
    int k = varint_encode(len, t);
    if (reserve(b, (size_t)k)) return;
    memmove(b->p + mark + k, b->p + mark, len); /* the body moves up behind its length */
    memcpy(b->p + mark, t, (size_t)k);
    b->n += (size_t)k;
}
