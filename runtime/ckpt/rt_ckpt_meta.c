/* rt_ckpt_meta.c - Kiln's __metadata__ contract: reserved keys, the header checksum,
 * version checks and the JSON-encoded values (metrics), per docs/checkpoint-format.md.
 *
 * The header checksum covers a canonical form of the header rather than its bytes, so
 * a file re-serialised by another safetensors writer (which orders __metadata__ keys
 * by hash) still verifies, while any change to a name, dtype, shape, offset or
 * metadata value is caught. jansson is used here for the JSON-valued keys only.
 */
#include "rt_ckpt_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static const char *const reserved[] = {RT_CKPT_KEY_FORMAT,       RT_CKPT_KEY_FORMAT_VERSION,
                                       RT_CKPT_KEY_KILN_VERSION, RT_CKPT_KEY_DATA_XXH3,
                                       RT_CKPT_KEY_DATA_CRC,     RT_CKPT_KEY_HEADER_CRC};

int rtp_ckpt_meta_reserved(const char *key)
{
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (strcmp(key, reserved[i]) == 0) return 1;
    return 0;
}

int rtp_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9'))) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

void rtp_ckpt_crc_hex(uint32_t crc, char out[9]) { snprintf(out, 9, "%08x", (unsigned)crc); }

static uLong crc_str(uLong crc, const char *s)
{
    return crc32_z(crc, (const Bytef *)s, strlen(s) + 1); /* with its NUL separator */
}

uint32_t rtp_ckpt_header_crc32(void *src, size_t ntensors, rtp_tensor_at_fn info, size_t nmeta,
                               rtp_meta_at_fn meta)
{
    uLong crc = crc32_z(0L, Z_NULL, 0);
    char buf[32 * (RT_ST_MAX_DIMS + 2)];
    for (size_t i = 0; i < ntensors; i++) {
        const rt_st_tensor_info *t = info(src, i);
        crc = crc_str(crc, t->name);
        crc = crc_str(crc, rt_st_dtype_name(t->dtype));
        int len = snprintf(buf, sizeof buf, "[");
        for (int d = 0; d < t->ndim; d++)
            len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%lld", d ? "," : "",
                            (long long)t->shape[d]);
        snprintf(buf + len, sizeof buf - (size_t)len, "]");
        crc = crc_str(crc, buf);
        snprintf(buf, sizeof buf, "[%llu,%llu]", (unsigned long long)t->begin,
                 (unsigned long long)t->end);
        crc = crc_str(crc, buf);
    }
    for (size_t i = 0; i < nmeta; i++) {
        const char *k, *v;
        meta(src, i, &k, &v);
        if (strcmp(k, RT_CKPT_KEY_HEADER_CRC) == 0) continue;
        crc = crc_str(crc_str(crc, k), v);
    }
    return (uint32_t)crc;
}

/* ---- checks on a parsed header ---- */

static const char *const int_keys[] = {RT_CKPT_KEY_STEP, RT_CKPT_KEY_EPOCH,
                                       RT_CKPT_KEY_OPTIMIZER_STEP};
static const char *const json_keys[] = {
    RT_CKPT_KEY_INPUT_SHAPE, RT_CKPT_KEY_HYPERPARAMS, RT_CKPT_KEY_DATASET, RT_CKPT_KEY_SCHEDULE,
    RT_CKPT_KEY_RNG,         RT_CKPT_KEY_DATA_ORDER,  RT_CKPT_KEY_METRIC,  RT_CKPT_KEY_BEST_METRIC};

/* 1 valid JSON, 0 not, -1 out of memory. */
static int json_valid(const char *s)
{
    json_t *j = NULL;
    char why[200];
    int rc =
        rtp_json_load(s, strlen(s), JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &j, why, sizeof why);
    json_decref(j);
    return rc == 0 ? 1 : rc == -2 ? -1 : 0;
}

rt_status rtp_ckpt_meta_check(const rt_st_index *ix, const char *what, rt_error *err)
{
    const char *fmt = rt_st_index_meta(ix, RT_CKPT_KEY_FORMAT);
    const char *ver = rt_st_index_meta(ix, RT_CKPT_KEY_FORMAT_VERSION);
    if (!fmt || strcmp(fmt, RT_CKPT_FORMAT) != 0)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: a safetensors file but not a Kiln checkpoint "
                      "(__metadata__.format is %s%s%s, expected \"" RT_CKPT_FORMAT "\") "
                      "---> HINT: load plain safetensors weights with a weights import, "
                      "not %%resume",
                      what, fmt ? "\"" : "", fmt ? fmt : "missing", fmt ? "\"" : "");
    int64_t v;
    if (!ver || rtp_parse_i64(ver, &v) != 0 || v < 1)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: format_version %s%s%s is not a version number "
                      "(corrupt header)",
                      what, ver ? "\"" : "", ver ? ver : "missing", ver ? "\"" : "");
    if (v > RT_CKPT_FORMAT_VERSION)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: checkpoint format v%lld found, this kiln reads "
                      "v%d ---> HINT: upgrade kiln to read it (it was written by kiln %s)",
                      what, (long long)v, RT_CKPT_FORMAT_VERSION,
                      rt_st_index_meta(ix, RT_CKPT_KEY_KILN_VERSION)
                          ? rt_st_index_meta(ix, RT_CKPT_KEY_KILN_VERSION)
                          : "unknown");
    for (size_t i = 0; i < sizeof int_keys / sizeof *int_keys; i++) {
        const char *s = rt_st_index_meta(ix, int_keys[i]);
        int64_t x;
        if (s && (rtp_parse_i64(s, &x) != 0 || x < 0))
            return RT_ERR(err, RT_EFORMAT,
                          "%s: metadata '%s' = \"%s\" is not a "
                          "non-negative integer",
                          what, int_keys[i], s);
    }
    for (size_t i = 0; i < sizeof json_keys / sizeof *json_keys; i++) {
        const char *s = rt_st_index_meta(ix, json_keys[i]);
        int ok = s ? json_valid(s) : 1;
        if (ok < 0) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading metadata", what);
        if (!ok)
            return RT_ERR(err, RT_EFORMAT, "%s: metadata '%s' is not valid JSON", what,
                          json_keys[i]);
    }
    return RT_OK;
}

/* ---- JSON-valued keys ---- */

/* Checks that a caller's JSON text parses (for rt_ckpt_writer_set_meta_json). */
int rtp_ckpt_json_valid(const char *s) { return json_valid(s); }

/* Encodes m as JSON; caller frees. NULL when out of memory. */
char *rtp_ckpt_metric_json(const rt_ckpt_metric *m)
{
    json_t *o = json_pack("{s:s, s:o, s:s, s:I}", "name", m->name, "value",
                          m->has_value && isfinite(m->value) ? json_real(m->value) : json_null(),
                          "mode", m->higher_is_better ? "max" : "min", "step", (json_int_t)m->step);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return s;
}

/* Decodes a metric; 0 on success, -1 when the text is not a metric object, -2 when
 * out of memory. */
int rtp_ckpt_metric_parse(const char *s, rt_ckpt_metric *m)
{
    memset(m, 0, sizeof *m);
    m->step = -1;
    json_t *o = NULL;
    char why[200];
    if (rtp_json_load(s, strlen(s), JSON_REJECT_DUPLICATES, &o, why, sizeof why) == -2) return -2;
    json_t *name = json_object_get(o, "name"), *value = json_object_get(o, "value");
    json_t *mode = json_object_get(o, "mode"), *step = json_object_get(o, "step");
    const char *md = json_string_value(mode);
    int ok = json_is_string(name) && (json_is_number(value) || json_is_null(value)) && md &&
             (strcmp(md, "max") == 0 || strcmp(md, "min") == 0) && (!step || json_is_integer(step));
    if (ok) {
        snprintf(m->name, sizeof m->name, "%s", json_string_value(name));
        m->has_value = json_is_number(value);
        m->value = json_number_value(value);
        m->higher_is_better = strcmp(md, "max") == 0;
        m->step = step ? (int64_t)json_integer_value(step) : -1;
    }
    json_decref(o);
    return ok ? 0 : -1;
}
