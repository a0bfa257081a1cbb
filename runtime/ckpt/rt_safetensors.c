/* rt_safetensors.c - safetensors writer and validating header index (see the header).
 *
 * The one runtime file besides rt_ckpt_* allowed to use jansson (tests/lint): the
 * header is JSON. Both directions live here so the JSON rules sit side by side.
 * Invariants: the writer never copies tensor data (it is borrowed and streamed to the
 * sink); the index never trusts a number from the file before checking it against
 * the file size, and checks every multiplication for overflow.
 */
#include "rt_safetensors.h"

#include "rt_json_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this writer streams host memory as-is"
#endif

/* ---- dtypes ---- */

static const struct {
    const char *name;
    size_t size;
} dtypes[RT_ST_DTYPE_COUNT] = {
    [RT_ST_BOOL] = {"BOOL", 1},       [RT_ST_U8] = {"U8", 1},           [RT_ST_I8] = {"I8", 1},
    [RT_ST_F8_E5M2] = {"F8_E5M2", 1}, [RT_ST_F8_E4M3] = {"F8_E4M3", 1}, [RT_ST_I16] = {"I16", 2},
    [RT_ST_U16] = {"U16", 2},         [RT_ST_F16] = {"F16", 2},         [RT_ST_BF16] = {"BF16", 2},
    [RT_ST_I32] = {"I32", 4},         [RT_ST_U32] = {"U32", 4},         [RT_ST_F32] = {"F32", 4},
    [RT_ST_F64] = {"F64", 8},         [RT_ST_I64] = {"I64", 8},         [RT_ST_U64] = {"U64", 8},
};

const char *rt_st_dtype_name(rt_st_dtype dt)
{
    return (unsigned)dt < RT_ST_DTYPE_COUNT ? dtypes[dt].name : NULL;
}

size_t rt_st_dtype_size(rt_st_dtype dt)
{
    return (unsigned)dt < RT_ST_DTYPE_COUNT ? dtypes[dt].size : 0;
}

int rt_st_dtype_parse(const char *name, rt_st_dtype *out)
{
    for (int i = 0; i < RT_ST_DTYPE_COUNT; i++)
        if (strcmp(dtypes[i].name, name) == 0) {
            *out = (rt_st_dtype)i;
            return 0;
        }
    return -1;
}

/* Well-formed UTF-8 without surrogates or overlongs (what a JSON string may hold). */
static int utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p, n = c < 0x80         ? 0
                             : (c >> 5) == 6  ? 1
                             : (c >> 4) == 14 ? 2
                             : (c >> 3) == 30 ? 3
                                              : 9;
        if (n == 9) return 0;
        unsigned cp = n ? c & (0x3Fu >> n) : c;
        for (unsigned i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3Fu);
        }
        static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        p += n + 1;
    }
    return 1;
}

/* Elements * dtype size with overflow detection; 0 on overflow or a negative dim. */
static int tensor_nbytes(rt_st_dtype dt, int ndim, const int64_t *shape, uint64_t *out)
{
    uint64_t n = rt_st_dtype_size(dt);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, (uint64_t)shape[i], &n)) return 0;
    }
    *out = n;
    return 1;
}

/* ---- writer ---- */

typedef struct wtensor {
    rt_st_tensor_info info; /* info.name owned (malloc) */
    const void *data;
} wtensor;

struct rt_st_writer {
    wtensor *t;
    size_t n, cap;
    int sorted;      /* t[] in file order with offsets assigned */
    char **mk, **mv; /* metadata, sorted by key */
    size_t mn, mcap;
};

rt_status rt_st_writer_create(rt_st_writer **out, rt_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return RT_ERR(err, RT_ENOMEM, "out of memory creating a safetensors writer");
    return RT_OK;
}

void rt_st_writer_destroy(rt_st_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free((char *)w->t[i].info.name);
    for (size_t i = 0; i < w->mn; i++) {
        free(w->mk[i]);
        free(w->mv[i]);
    }
    free(w->t);
    free(w->mk);
    free(w->mv);
    free(w);
}

rt_status rt_st_writer_add(rt_st_writer *w, const char *name, rt_st_dtype dtype, int ndim,
                           const int64_t *shape, const void *data, rt_error *err)
{
    if (!name || !*name || strcmp(name, "__metadata__") == 0 || !utf8_valid(name))
        return RT_ERR(err, RT_EINVAL, "invalid tensor name '%s'", name ? name : "(null)");
    if (!rt_st_dtype_name(dtype))
        return RT_ERR(err, RT_EINVAL, "tensor '%s': unknown dtype %d", name, (int)dtype);
    if (ndim < 0 || ndim > RT_ST_MAX_DIMS || (ndim > 0 && !shape))
        return RT_ERR(err, RT_EINVAL, "tensor '%s': %d dimensions (at most %d)", name, ndim,
                      RT_ST_MAX_DIMS);
    uint64_t nbytes;
    if (!tensor_nbytes(dtype, ndim, shape, &nbytes) || nbytes > (uint64_t)SIZE_MAX)
        return RT_ERR(err, RT_EINVAL, "tensor '%s': negative or overflowing shape", name);
    if (nbytes && !data) return RT_ERR(err, RT_EINVAL, "tensor '%s': no data", name);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].info.name, name) == 0)
            return RT_ERR(err, RT_EINVAL, "tensor '%s' added twice", name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        wtensor *t = realloc(w->t, cap * sizeof *t);
        if (!t) return RT_ERR(err, RT_ENOMEM, "out of memory adding tensor '%s'", name);
        w->t = t;
        w->cap = cap;
    }
    wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->info.name = strdup(name)))
        return RT_ERR(err, RT_ENOMEM, "out of memory adding tensor '%s'", name);
    t->info.dtype = dtype;
    t->info.ndim = ndim;
    if (ndim) memcpy(t->info.shape, shape, (size_t)ndim * sizeof *shape);
    t->info.end = nbytes; /* begin/end are assigned when sorted */
    t->data = data;
    w->n++;
    w->sorted = 0;
    return RT_OK;
}

/* Index of key in the sorted metadata, or where it would be inserted. */
static size_t meta_slot(const rt_st_writer *w, const char *key)
{
    size_t lo = 0, hi = w->mn;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(w->mk[mid], key);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

const char *rt_st_writer_meta(const rt_st_writer *w, const char *key)
{
    size_t i = meta_slot(w, key);
    return i < w->mn && strcmp(w->mk[i], key) == 0 ? w->mv[i] : NULL;
}

rt_status rt_st_writer_set_meta(rt_st_writer *w, const char *key, const char *value, rt_error *err)
{
    if (!key || !value || !utf8_valid(key) || !utf8_valid(value))
        return RT_ERR(err, RT_EINVAL, "metadata '%s': key and value must be UTF-8 strings",
                      key ? key : "(null)");
    size_t lo = meta_slot(w, key);
    char *v = strdup(value);
    if (!v) return RT_ERR(err, RT_ENOMEM, "out of memory setting metadata '%s'", key);
    if (lo < w->mn && strcmp(w->mk[lo], key) == 0) {
        free(w->mv[lo]);
        w->mv[lo] = v;
        return RT_OK;
    }
    if (w->mn == w->mcap) {
        size_t cap = w->mcap ? 2 * w->mcap : 32;
        char **k = realloc(w->mk, cap * sizeof *k);
        if (k) w->mk = k;
        char **vv = k ? realloc(w->mv, cap * sizeof *vv) : NULL;
        if (vv) w->mv = vv;
        if (!k || !vv) {
            free(v);
            return RT_ERR(err, RT_ENOMEM, "out of memory setting metadata '%s'", key);
        }
        w->mcap = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return RT_ERR(err, RT_ENOMEM, "out of memory setting metadata '%s'", key);
    }
    memmove(w->mk + lo + 1, w->mk + lo, (w->mn - lo) * sizeof *w->mk);
    memmove(w->mv + lo + 1, w->mv + lo, (w->mn - lo) * sizeof *w->mv);
    w->mk[lo] = k;
    w->mv[lo] = v;
    w->mn++;
    return RT_OK;
}

/* The reference's order: descending dtype rank, then name (bytewise). */
static int wtensor_cmp(const void *a, const void *b)
{
    const wtensor *x = a, *y = b;
    if (x->info.dtype != y->info.dtype) return x->info.dtype > y->info.dtype ? -1 : 1;
    return strcmp(x->info.name, y->info.name);
}

static void writer_sort(rt_st_writer *w)
{
    if (w->sorted) return;
    if (w->n) qsort(w->t, w->n, sizeof *w->t, wtensor_cmp);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        uint64_t nbytes = w->t[i].info.end - w->t[i].info.begin;
        w->t[i].info.begin = off;
        w->t[i].info.end = off += nbytes;
    }
    w->sorted = 1;
}

size_t rt_st_writer_count(rt_st_writer *w) { return w->n; }

const rt_st_tensor_info *rt_st_writer_tensor(rt_st_writer *w, size_t i)
{
    writer_sort(w);
    return i < w->n ? &w->t[i].info : NULL;
}

size_t rt_st_writer_meta_count(const rt_st_writer *w) { return w->mn; }

void rt_st_writer_meta_at(const rt_st_writer *w, size_t i, const char **key, const char **value)
{
    *key = i < w->mn ? w->mk[i] : NULL;
    *value = i < w->mn ? w->mv[i] : NULL;
}

uint32_t rt_st_writer_data_crc32(rt_st_writer *w)
{
    writer_sort(w);
    uLong crc = crc32_z(0L, Z_NULL, 0);
    for (size_t i = 0; i < w->n; i++) {
        size_t len = (size_t)(w->t[i].info.end - w->t[i].info.begin);
        if (len) crc = crc32_z(crc, w->t[i].data, len);
    }
    return (uint32_t)crc;
}

const void *rt_st_writer_data(rt_st_writer *w, size_t i)
{
    writer_sort(w);
    return i < w->n ? w->t[i].data : NULL;
}

/* json_object_set_new that also fails on a NULL value (an allocation failure). */
static int set_new(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *tensor_json(const rt_st_tensor_info *t)
{
    json_t *o = json_object(), *shape = json_array(), *offs = json_array();
    int bad = !o || !shape || !offs;
    for (int d = 0; !bad && d < t->ndim; d++)
        bad = json_array_append_new(shape, json_integer(t->shape[d])) != 0;
    if (!bad)
        bad = json_array_append_new(offs, json_integer((json_int_t)t->begin)) ||
              json_array_append_new(offs, json_integer((json_int_t)t->end));
    if (!bad) {
        bad = set_new(o, "dtype", json_string(rt_st_dtype_name(t->dtype))) ||
              json_object_set(o, "shape", shape) || json_object_set(o, "data_offsets", offs);
    }
    json_decref(shape);
    json_decref(offs);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A growing byte buffer for json_dump_callback. jansson ignores the status of some
 * of its own writes (object keys), so a failed append is remembered here rather than
 * trusted to come back as the dump's return value: a header is never emitted with a
 * piece missing. */
typedef struct hbuf {
    char *p;
    size_t len, cap;
    int failed;
} hbuf;

static int hbuf_put(const char *s, size_t n, void *user)
{
    hbuf *b = user;
    if (b->failed) return -1;
    if (b->len + n + 8 > b->cap) {
        size_t cap = 2 * (b->len + n + 8);
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

/* The JSON header padded with spaces to a multiple of 8, preceded by its length. */
char *rt_st_writer_header(rt_st_writer *w, size_t *len)
{
    writer_sort(w);
    json_t *root = json_object(), *meta = w->mn ? json_object() : NULL;
    int bad = !root || (w->mn && !meta);
    for (size_t i = 0; !bad && i < w->mn; i++)
        bad = set_new(meta, w->mk[i], json_string(w->mv[i])) != 0;
    if (!bad && meta) {
        bad = json_object_set_new(root, "__metadata__", meta) != 0;
        meta = NULL;
    }
    for (size_t i = 0; !bad && i < w->n; i++)
        bad = set_new(root, w->t[i].info.name, tensor_json(&w->t[i].info)) != 0;
    hbuf b = {0};
    bad = bad || hbuf_put("\0\0\0\0\0\0\0\0", 8, &b) != 0 || /* the length, later */
          json_dump_callback(root, hbuf_put, &b, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 ||
          b.failed;
    json_decref(meta);
    json_decref(root);
    if (bad) {
        free(b.p);
        return NULL;
    }
    size_t n = b.len - 8, padded = n + (8 - n % 8) % 8; /* cap has 8 bytes spare */
    memset(b.p + 8 + n, ' ', padded - n);
    for (int i = 0; i < 8; i++) b.p[i] = (char)(((uint64_t)padded >> (8 * i)) & 0xFF);
    *len = 8 + padded;
    return b.p;
}

rt_status rt_st_writer_emit(rt_st_writer *w, rt_st_sink_fn sink, void *user, rt_error *err)
{
    writer_sort(w);
    size_t len = 0;
    char *hdr = rt_st_writer_header(w, &len);
    if (!hdr) return RT_ERR(err, RT_ENOMEM, "out of memory building a safetensors header");
    rt_status s = sink(user, hdr, len, err);
    free(hdr);
    for (size_t i = 0; s == RT_OK && i < w->n; i++) {
        size_t n = (size_t)(w->t[i].info.end - w->t[i].info.begin);
        if (n) s = sink(user, w->t[i].data, n, err);
    }
    return s;
}

/* ---- reader ---- */

int rtp_json_load(const char *s, size_t n, size_t flags, struct json_t **out, char *why, size_t cap)
{
    /* jansson 2.14 mishandles allocation failures while parsing: a failed string
     * buffer either reads as a syntax error ("invalid token") or silently drops a
     * character from a key or value and still succeeds. So a document is accepted
     * only when two parses agree, and called invalid only when parsing fails twice
     * with a syntax message; anything else is an allocation failure. */
    json_error_t jerr = {0};
    int syntax_errors = 0;
    for (int attempt = 0; attempt < 4 && syntax_errors < 2; attempt++) {
        json_t *a = json_loadb(s, n, flags, &jerr);
        json_t *b = a ? json_loadb(s, n, flags, &jerr) : NULL;
        if (b && json_equal(a, b)) {
            json_decref(b);
            *out = a;
            return 0;
        }
        json_decref(a);
        json_decref(b);
        if (!b && json_error_code(&jerr) != json_error_out_of_memory && jerr.text[0])
            syntax_errors++;
    }
    *out = NULL;
    if (syntax_errors < 2) return -2;
    snprintf(why, cap, "byte %d: %s", jerr.position, jerr.text);
    return -1;
}

struct rt_st_index {
    json_t *root;         /* owns every string handed out */
    rt_st_tensor_info *t; /* data order */
    size_t n;
    const char **mk, **mv; /* metadata in key order */
    size_t mn;
};

rt_status rt_st_prefix_check(const uint8_t prefix[8], uint64_t file_size, const char *what,
                             uint64_t *n, rt_error *err)
{
    if (file_size < 8)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: only %llu bytes, too short for a safetensors "
                      "file (truncated?)",
                      what, (unsigned long long)file_size);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | prefix[i];
    if (v > RT_ST_MAX_HEADER || v > file_size - 8)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: header length %llu is impossible for a %llu-byte "
                      "file (truncated, or not a safetensors file)",
                      what, (unsigned long long)v, (unsigned long long)file_size);
    *n = v;
    return RT_OK;
}

void rt_st_index_destroy(rt_st_index *ix)
{
    if (!ix) return;
    json_decref(ix->root);
    free(ix->t);
    free(ix->mk);
    free(ix->mv);
    free(ix);
}

/* A non-negative JSON integer, or -1. */
static int64_t json_uint(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

static rt_status parse_tensor(const char *name, json_t *v, const char *what, rt_st_tensor_info *t,
                              rt_error *err)
{
    json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    json_t *offs = json_object_get(v, "data_offsets");
    t->name = name;
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs))
        return RT_ERR(err, RT_EFORMAT,
                      "%s: tensor '%s' lacks dtype/shape/data_offsets "
                      "(corrupt header)",
                      what, name);
    if (rt_st_dtype_parse(json_string_value(dt), &t->dtype) != 0)
        return RT_ERR(err, RT_EFORMAT, "%s: tensor '%s' has unsupported dtype '%s'", what, name,
                      json_string_value(dt));
    if (json_array_size(shape) > RT_ST_MAX_DIMS)
        return RT_ERR(err, RT_EFORMAT, "%s: tensor '%s' has %zu dimensions (at most %d)", what,
                      name, json_array_size(shape), RT_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    for (int d = 0; d < t->ndim; d++)
        if ((t->shape[d] = json_uint(json_array_get(shape, (size_t)d))) < 0)
            return RT_ERR(err, RT_EFORMAT,
                          "%s: tensor '%s' has a shape that is not a list "
                          "of non-negative integers",
                          what, name);
    int64_t b = json_uint(json_array_get(offs, 0)), e = json_uint(json_array_get(offs, 1));
    if (json_array_size(offs) != 2 || b < 0 || e < b)
        return RT_ERR(err, RT_EFORMAT, "%s: tensor '%s' has invalid data_offsets", what, name);
    t->begin = (uint64_t)b;
    t->end = (uint64_t)e;
    uint64_t nbytes;
    if (!tensor_nbytes(t->dtype, t->ndim, t->shape, &nbytes) || nbytes != t->end - t->begin)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: tensor '%s' (%s, %d dims) needs a different byte "
                      "count than its data_offsets [%llu, %llu] give",
                      what, name, rt_st_dtype_name(t->dtype), t->ndim, (unsigned long long)t->begin,
                      (unsigned long long)t->end);
    return RT_OK;
}

static int info_cmp(const void *a, const void *b)
{
    const rt_st_tensor_info *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int meta_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static rt_status parse_meta(rt_st_index *ix, json_t *meta, const char *what, rt_error *err)
{
    if (!json_is_object(meta))
        return RT_ERR(err, RT_EFORMAT, "%s: __metadata__ is not an object", what);
    size_t n = json_object_size(meta);
    ix->mk = calloc(n + 1, sizeof *ix->mk);
    ix->mv = calloc(n + 1, sizeof *ix->mv);
    if (!ix->mk || !ix->mv) return RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    const char *k;
    json_t *v;
    json_object_foreach(meta, k, v)
    {
        if (!json_is_string(v))
            return RT_ERR(err, RT_EFORMAT, "%s: __metadata__ value '%s' is not a string", what, k);
        ix->mk[ix->mn++] = k;
    }
    qsort(ix->mk, ix->mn, sizeof *ix->mk, meta_cmp);
    for (size_t i = 0; i < ix->mn; i++)
        ix->mv[i] = json_string_value(json_object_get(meta, ix->mk[i]));
    return RT_OK;
}

static rt_status index_fill(rt_st_index *ix, uint64_t data_len, const char *what, rt_error *err)
{
    if (!json_is_object(ix->root))
        return RT_ERR(err, RT_EFORMAT, "%s: header is not a JSON object", what);
    ix->t = calloc(json_object_size(ix->root) + 1, sizeof *ix->t);
    if (!ix->t) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading the header", what);
    const char *key;
    json_t *v;
    json_object_foreach(ix->root, key, v)
    {
        if (strcmp(key, "__metadata__") == 0) RT_TRY(parse_meta(ix, v, what, err));
        else RT_TRY(parse_tensor(key, v, what, &ix->t[ix->n++], err));
    }
    qsort(ix->t, ix->n, sizeof *ix->t, info_cmp);
    uint64_t expect = 0;
    for (size_t i = 0; i < ix->n; i++) {
        if (ix->t[i].begin != expect)
            return RT_ERR(err, RT_EFORMAT,
                          "%s: tensor '%s' starts at byte %llu of the data, "
                          "expected %llu (overlapping or gapped offsets: corrupt header)",
                          what, ix->t[i].name, (unsigned long long)ix->t[i].begin,
                          (unsigned long long)expect);
        expect = ix->t[i].end;
    }
    if (expect != data_len)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: the tensors need %llu data bytes but the file "
                      "holds %llu (%s)",
                      what, (unsigned long long)expect, (unsigned long long)data_len,
                      expect > data_len ? "truncated" : "trailing bytes");
    return RT_OK;
}

rt_status rt_st_index_parse(const char *header, size_t n, uint64_t data_len, const char *what,
                            rt_st_index **out, rt_error *err)
{
    *out = NULL;
    rt_st_index *ix = calloc(1, sizeof *ix);
    if (!ix) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading the header", what);
    char why[200];
    int rc = rtp_json_load(header, n, JSON_REJECT_DUPLICATES, &ix->root, why, sizeof why);
    rt_status s = RT_OK;
    if (rc == -2) s = RT_ERR(err, RT_ENOMEM, "%s: out of memory parsing the header", what);
    else if (rc != 0)
        s = RT_ERR(err, RT_EFORMAT, "%s: header is not valid JSON (%s; corrupt file?)", what, why);
    else s = index_fill(ix, data_len, what, err);
    if (s != RT_OK) {
        rt_st_index_destroy(ix);
        return s;
    }
    *out = ix;
    return RT_OK;
}

size_t rt_st_index_count(const rt_st_index *ix) { return ix->n; }

const rt_st_tensor_info *rt_st_index_tensor(const rt_st_index *ix, size_t i)
{
    return i < ix->n ? &ix->t[i] : NULL;
}

const rt_st_tensor_info *rt_st_index_find(const rt_st_index *ix, const char *name)
{
    for (size_t i = 0; i < ix->n; i++)
        if (strcmp(ix->t[i].name, name) == 0) return &ix->t[i];
    return NULL;
}

const char *rt_st_index_meta(const rt_st_index *ix, const char *key)
{
    const char **k = ix->mn ? bsearch(&key, ix->mk, ix->mn, sizeof *ix->mk, meta_cmp) : NULL;
    return k ? ix->mv[k - ix->mk] : NULL;
}

size_t rt_st_index_meta_count(const rt_st_index *ix) { return ix->mn; }

void rt_st_index_meta_at(const rt_st_index *ix, size_t i, const char **key, const char **value)
{
    *key = i < ix->mn ? ix->mk[i] : NULL;
    *value = i < ix->mn ? ix->mv[i] : NULL;
}
