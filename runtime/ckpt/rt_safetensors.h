/* rt_safetensors.h - the safetensors container: a writer and a validating header index.
 *
 * Layout (https://github.com/huggingface/safetensors): 8-byte little-endian u64 N,
 * N bytes of UTF-8 JSON {"__metadata__": {str: str}, NAME: {"dtype", "shape",
 * "data_offsets": [begin, end]}, ...} padded with spaces to a multiple of 8, then the
 * data area: raw little-endian, C-order tensor bytes, offsets relative to its start.
 *
 * The writer produces the same bytes as the reference implementation (Rust crate /
 * PyPI package): compact JSON, "__metadata__" first, tensors ordered by descending
 * dtype rank then by name, data in that order. (Only the order of __metadata__ keys
 * differs: the reference emits them in hash order, we sort them.)
 *
 * This layer knows nothing about Kiln checkpoints (see rt_ckpt.h) and does no file
 * I/O: the writer emits bytes through a sink, the index parses header bytes that the
 * caller read. Every parse error names the file (`what`) and the offending tensor.
 */
#ifndef RT_SAFETENSORS_H
#define RT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

/* In the reference's enum order: the writer sorts by descending rank. */
typedef enum rt_st_dtype {
    RT_ST_BOOL,
    RT_ST_U8,
    RT_ST_I8,
    RT_ST_F8_E5M2,
    RT_ST_F8_E4M3,
    RT_ST_I16,
    RT_ST_U16,
    RT_ST_F16,
    RT_ST_BF16,
    RT_ST_I32,
    RT_ST_U32,
    RT_ST_F32,
    RT_ST_F64,
    RT_ST_I64,
    RT_ST_U64,
    RT_ST_DTYPE_COUNT
} rt_st_dtype;

#define RT_ST_MAX_DIMS 8
/* The reference refuses headers over 100 MB; so do we (a corrupt length field). */
#define RT_ST_MAX_HEADER ((uint64_t)100000000)

/* "F32" etc.; NULL for an out-of-range value. */
const char *rt_st_dtype_name(rt_st_dtype dt);
/* Bytes per element. */
size_t rt_st_dtype_size(rt_st_dtype dt);
/* 0 and *out set when name is a known dtype, else -1. */
int rt_st_dtype_parse(const char *name, rt_st_dtype *out);

typedef struct rt_st_tensor_info {
    const char *name; /* borrowed from the writer / index */
    rt_st_dtype dtype;
    int ndim; /* 0 = scalar */
    int64_t shape[RT_ST_MAX_DIMS];
    uint64_t begin, end; /* byte offsets in the data area, end - begin = size */
} rt_st_tensor_info;

/* ---- writer ---- */
typedef struct rt_st_writer rt_st_writer;
/* Receives the file's bytes in order; returns RT_OK or fills err. */
typedef rt_status (*rt_st_sink_fn)(void *user, const void *buf, size_t len, rt_error *err);

RT_MUST_USE rt_status rt_st_writer_create(rt_st_writer **out, rt_error *err);
void rt_st_writer_destroy(rt_st_writer *w); /* NULL ok */
/* Adds a tensor. Copies name and shape; BORROWS data (little-endian, C order,
 * prod(shape) * dtype size bytes) until the writer is destroyed. Duplicate or empty
 * names, "__metadata__", negative dims and more than RT_ST_MAX_DIMS dims: RT_EINVAL. */
RT_MUST_USE rt_status rt_st_writer_add(rt_st_writer *w, const char *name, rt_st_dtype dtype,
                                       int ndim, const int64_t *shape, const void *data,
                                       rt_error *err);
/* Sets (or replaces) a __metadata__ entry; copies both strings (valid UTF-8). */
RT_MUST_USE rt_status rt_st_writer_set_meta(rt_st_writer *w, const char *key, const char *value,
                                            rt_error *err);
/* The value set for key, or NULL; borrowed until the next set_meta. */
const char *rt_st_writer_meta(const rt_st_writer *w, const char *key);
/* The tensors in file order with their offsets (i < count), valid until the next add. */
size_t rt_st_writer_count(rt_st_writer *w);
const rt_st_tensor_info *rt_st_writer_tensor(rt_st_writer *w, size_t i);
/* Metadata entries in key order (i < count). */
size_t rt_st_writer_meta_count(const rt_st_writer *w);
void rt_st_writer_meta_at(const rt_st_writer *w, size_t i, const char **key, const char **value);
/* CRC-32 (zlib) of the data area the writer will emit. */
uint32_t rt_st_writer_data_crc32(rt_st_writer *w);
/* The file's first bytes: the 8-byte length and the padded JSON header for the current
 * tensors and metadata (malloc'd, *len set); NULL when out of memory. The data area
 * follows at offset *len. */
char *rt_st_writer_header(rt_st_writer *w, size_t *len);
/* The borrowed bytes of the i-th tensor in file order (rt_st_writer_tensor(w, i)->end
 * - begin of them); NULL when i is out of range. */
const void *rt_st_writer_data(rt_st_writer *w, size_t i);
/* Emits the whole file through sink. */
RT_MUST_USE rt_status rt_st_writer_emit(rt_st_writer *w, rt_st_sink_fn sink, void *user,
                                        rt_error *err);

/* ---- reader: the parsed, validated header ---- */
typedef struct rt_st_index rt_st_index;

/* Checks the 8-byte prefix of a `file_size`-byte file and returns the header length N
 * in *n: RT_EFORMAT when the file is shorter than 8 bytes, N exceeds RT_ST_MAX_HEADER or
 * the file. `what` (the path) starts every message. */
RT_MUST_USE rt_status rt_st_prefix_check(const uint8_t prefix[8], uint64_t file_size,
                                         const char *what, uint64_t *n, rt_error *err);
/* Parses and validates the N header bytes of a file whose data area has data_len bytes:
 * JSON object, no duplicate keys, string-only __metadata__, known dtypes, integer
 * shapes, offsets contiguous from 0 to data_len without gaps or overlaps, and
 * prod(shape) * dtype size == end - begin for every tensor. */
RT_MUST_USE rt_status rt_st_index_parse(const char *header, size_t n, uint64_t data_len,
                                        const char *what, rt_st_index **out, rt_error *err);
void rt_st_index_destroy(rt_st_index *ix); /* NULL ok */
size_t rt_st_index_count(const rt_st_index *ix);
/* Tensors in data order (i < count); borrowed from ix. */
const rt_st_tensor_info *rt_st_index_tensor(const rt_st_index *ix, size_t i);
const rt_st_tensor_info *rt_st_index_find(const rt_st_index *ix, const char *name);
/* __metadata__ value for key, or NULL; borrowed from ix. */
const char *rt_st_index_meta(const rt_st_index *ix, const char *key);
/* __metadata__ entries in key order (i < count); borrowed. */
size_t rt_st_index_meta_count(const rt_st_index *ix);
void rt_st_index_meta_at(const rt_st_index *ix, size_t i, const char **key, const char **value);

#endif
