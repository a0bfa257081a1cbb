/* rt_onnx_pb.h - a protobuf encoder for the few ONNX messages Kiln writes (private to
 * runtime/: rt_onnx*.c).
 *
 * ONNX files are protobuf: every field is a tag (field number << 3 | wire type) and a
 * value, a varint (wire 0), a 32-bit little-endian word (wire 5) or a length-prefixed
 * run of bytes (wire 2: strings, packed numbers, nested messages). Kiln only writes,
 * and only eight message types (ModelProto, GraphProto, NodeProto, TensorProto,
 * ValueInfoProto, AttributeProto, OperatorSetIdProto, StringStringEntryProto), so this
 * is an append-only byte buffer with those three encodings and nested messages:
 * rt_pb_open writes the tag and remembers where the body starts, rt_pb_close puts the
 * body's length in front of it. Allocation failure is sticky (oom), checked once at
 * the end, so the graph builder stays a straight list of calls.
 */
#ifndef RT_ONNX_PB_H
#define RT_ONNX_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_pb {
    uint8_t *p;
    size_t n, cap;
    int oom; /* 1 once an allocation failed: everything after is dropped */
} rt_pb;

void rt_pb_free(rt_pb *b);                                         /* zeroes b */
void rt_pb_int(rt_pb *b, int field, int64_t v);                    /* wire 0 */
void rt_pb_float(rt_pb *b, int field, float v);                    /* wire 5 */
void rt_pb_bytes(rt_pb *b, int field, const void *data, size_t n); /* wire 2 */
void rt_pb_str(rt_pb *b, int field, const char *s);                /* wire 2 */
/* Bytes appended as they are: the body of an open field (e.g. raw tensor data). */
void rt_pb_raw(rt_pb *b, const void *data, size_t n);
/* A repeated int64 field written packed (n varints in one length-prefixed field), the
 * form every protobuf parser accepts for a repeated number field. */
void rt_pb_packed_ints(rt_pb *b, int field, const int64_t *v, int n);
/* A nested message: open returns the mark to give close after writing its fields. */
size_t rt_pb_open(rt_pb *b, int field);
void rt_pb_close(rt_pb *b, size_t mark);

#endif
