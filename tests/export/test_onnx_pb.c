/* test_onnx_pb.c - the protobuf encoder ONNX files are written with (rt_onnx_pb.h),
 * byte for byte against the protobuf encoding rules: varints (one byte, several
 * bytes, a negative int64 as ten bytes), fixed32 floats little-endian, strings,
 * packed repeated ints, nested messages whose length needs one byte and two (the body
 * moves behind its length), a nested message inside a nested one, and an empty one. */
#include <stdint.h>
#include <stdlib.h>

#include "rt_onnx_pb.h"
#include "t.h"

static int same(const rt_pb *b, const uint8_t *want, size_t n)
{
    if (b->oom || b->n != n) {
        fprintf(stderr, "  got %zu bytes, want %zu\n", b->n, n);
        return 0;
    }
    return memcmp(b->p, want, n) == 0;
}

T_TEST(test_scalars)
{
    rt_pb b = {0};
    rt_pb_int(&b, 1, 150); /* the protobuf documentation's example */
    rt_pb_int(&b, 2, 0);
    rt_pb_int(&b, 20, 7);     /* field 20: a two-byte tag */
    rt_pb_int(&b, 3, -1);     /* int64 -1: ten bytes */
    rt_pb_float(&b, 2, 1.0f); /* 0x3f800000 little-endian */
    rt_pb_str(&b, 4, "ab");
    static const uint8_t want[] = {0x08, 0x96, 0x01, 0x10, 0x00, 0xa0, 0x01, 0x07, 0x18, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x15,
                                   0x00, 0x00, 0x80, 0x3f, 0x22, 0x02, 'a',  'b'};
    ASSERT(same(&b, want, sizeof want));
    rt_pb_free(&b);
    ASSERT(b.p == NULL && b.n == 0);
}

T_TEST(test_packed_and_nested)
{
    rt_pb b = {0};
    int64_t dims[3] = {3, 270, 1};
    rt_pb_packed_ints(&b, 1, dims, 3); /* 0a 04 03 8e 02 01 */
    size_t outer = rt_pb_open(&b, 7);
    size_t inner = rt_pb_open(&b, 1);
    rt_pb_int(&b, 2, 5);
    rt_pb_close(&b, inner); /* 0a 02 10 05 */
    size_t empty = rt_pb_open(&b, 3);
    rt_pb_close(&b, empty); /* 1a 00 */
    rt_pb_close(&b, outer); /* 3a 06 ... */
    static const uint8_t want[] = {0x0a, 0x04, 0x03, 0x8e, 0x02, 0x01, 0x3a,
                                   0x06, 0x0a, 0x02, 0x10, 0x05, 0x1a, 0x00};
    ASSERT(same(&b, want, sizeof want));
    rt_pb_free(&b);
}

/* A body of 300 bytes: its length takes two bytes (ac 02), and the body after it is
 * intact; a field after the nested message lands after it. */
T_TEST(test_long_body)
{
    rt_pb b = {0};
    uint8_t raw[298];
    for (int i = 0; i < 298; i++) raw[i] = (uint8_t)i;
    size_t m = rt_pb_open(&b, 9);
    rt_pb_bytes(&b, 1, raw, 296); /* 0a a8 02 + 296 = 299 bytes */
    rt_pb_raw(&b, "x", 1);        /* 300 */
    rt_pb_close(&b, m);
    rt_pb_int(&b, 1, 1);
    ASSERT_EQ(b.n, 1 + 2 + 300 + 2);
    ASSERT(b.p[0] == 0x4a && b.p[1] == 0xac && b.p[2] == 0x02);
    ASSERT(b.p[3] == 0x0a && b.p[4] == 0xa8 && b.p[5] == 0x02);
    ASSERT(memcmp(b.p + 6, raw, 296) == 0);
    ASSERT(b.p[302] == 'x' && b.p[303] == 0x08 && b.p[304] == 0x01);
    rt_pb_free(&b);
}

int main(void)
{
    T_RUN(test_scalars);
    T_RUN(test_packed_and_nested);
    T_RUN(test_long_body);
    return T_EXIT();
}
