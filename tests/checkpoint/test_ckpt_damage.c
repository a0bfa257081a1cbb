/* test_ckpt_damage.c - every kind of damaged file is refused with an error naming it:
 * truncation at every length, every header byte flipped, every data byte flipped,
 * absurd header lengths, hand-made inconsistent headers, a newer format version, and a
 * safetensors file that is not a Kiln checkpoint. */
#include "ck_util.h"

#include "rt_ckpt_internal.h"
#include "t.h"

static char dir[256], good[512], bad[512];

/* Opens `bad` fully (and header-only too when `also_header_only`) and expects each to
 * be refused with status `want` (any error when 0) and a message naming the file and
 * containing `needle` (when given). Fills why on failure. */
static int refused_as(rt_status want, const char *needle, int also_header_only, char *why,
                      size_t cap)
{
    unsigned modes[2] = {0, RT_CKPT_OPEN_HEADER_ONLY};
    for (int i = 0; i < (also_header_only ? 2 : 1); i++) {
        rt_ckpt_reader *r = NULL;
        rt_error err;
        rt_status s = rt_ckpt_reader_open(bad, modes[i], &r, &err);
        if ((want && s != want) || s == RT_OK || !strstr(err.msg, bad) ||
            (needle && !strstr(err.msg, needle))) {
            snprintf(why, cap, "%s open: status %d, msg: %s", i ? "header-only" : "full", (int)s,
                     s == RT_OK ? "(opened)" : err.msg);
            rt_ckpt_reader_destroy(r);
            return 0;
        }
    }
    return 1;
}

static int refused(rt_status want, const char *needle, char *why, size_t cap)
{
    return refused_as(want, needle, 1, why, cap);
}

/* The good file's bytes (free()) and its header's length (the first 8 bytes, little
 * endian); NULL when it cannot be read. */
static unsigned char *read_good(size_t *len, uint64_t *header_len)
{
    unsigned char *b = ck_read(good, len);
    for (int i = 7; b && i >= 0; i--) *header_len = (*header_len << 8) | b[i];
    return b;
}

T_TEST(truncated_at_every_length)
{
    size_t len;
    unsigned char *b = ck_read(good, &len);
    ASSERT(b);
    char why[700];
    for (size_t n = 0; n < len; n++) {
        ASSERT_EQ(ck_write(bad, b, n), 0);
        if (!refused(RT_EFORMAT, NULL, why, sizeof why)) {
            free(b);
            T_FAIL_("truncated to %zu of %zu bytes: %s", n, len, why);
        }
    }
    /* a truncated data area says so */
    ASSERT_EQ(ck_write(bad, b, len - 3), 0);
    ASSERT(refused(RT_EFORMAT, "truncated", why, sizeof why));
    free(b);
}

T_TEST(every_header_byte_flipped)
{
    size_t len;
    uint64_t n = 0;
    unsigned char *b = read_good(&len, &n);
    ASSERT(b);
    char why[700];
    for (size_t i = 0; i < 8 + n; i++) {
        b[i] ^= 0xFF;
        ASSERT_EQ(ck_write(bad, b, len), 0);
        b[i] ^= 0xFF;
        if (!refused(0, NULL, why, sizeof why)) {
            free(b);
            T_FAIL_("header byte %zu flipped: %s", i, why);
        }
    }
    free(b);
}

/* Edits that keep the header valid JSON and UTF-8 (a digit for another digit, a letter
 * for another letter) change values or names: the header checksum must catch them. */
T_TEST(every_header_value_edited)
{
    size_t len;
    uint64_t n = 0;
    unsigned char *b = read_good(&len, &n);
    ASSERT(b);
    char why[700];
    int edits = 0;
    for (size_t i = 8; i < 8 + n; i++) {
        unsigned char c = b[i];
        if (c >= '0' && c <= '9') b[i] = (unsigned char)(c == '9' ? '0' : c + 1);
        else if (c >= 'a' && c <= 'z') b[i] = (unsigned char)(c == 'z' ? 'a' : c + 1);
        else continue;
        edits++;
        ASSERT_EQ(ck_write(bad, b, len), 0);
        b[i] = c;
        if (!refused(RT_EFORMAT, NULL, why, sizeof why)) {
            free(b);
            T_FAIL_("header byte %zu ('%c') edited: %s", i, c, why);
        }
    }
    ASSERT(edits > 500);
    free(b);
}

T_TEST(every_data_byte_flipped)
{
    size_t len;
    uint64_t n = 0;
    unsigned char *b = read_good(&len, &n);
    ASSERT(b);
    char why[700];
    for (size_t i = 8 + n; i < len; i++) {
        b[i] ^= (unsigned char)(1u << (i % 8)); /* a single bit */
        ASSERT_EQ(ck_write(bad, b, len), 0);
        b[i] ^= (unsigned char)(1u << (i % 8));
        if (!refused_as(RT_EFORMAT, "data checksum mismatch", 0, why, sizeof why)) {
            free(b);
            T_FAIL_("data byte %zu flipped: %s", i, why);
        }
    }
    free(b);
}

T_TEST(absurd_header_lengths)
{
    size_t len;
    unsigned char *b = ck_read(good, &len);
    ASSERT(b);
    uint64_t lens[] = {UINT64_MAX,           (uint64_t)1 << 63, (uint64_t)1 << 40,
                       RT_ST_MAX_HEADER + 1, len - 7,           len};
    char why[700];
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(lens[k] >> (8 * i));
        ASSERT_EQ(ck_write(bad, b, len), 0);
        if (!refused(RT_EFORMAT, "header length", why, sizeof why)) {
            free(b);
            T_FAIL_("header length %llu: %s", (unsigned long long)lens[k], why);
        }
    }
    free(b);
}

/* Writes prefix + header (padded) + data_len zero bytes to `bad`. */
static void write_raw(const char *hdr, size_t data_len)
{
    size_t n = strlen(hdr), padded = n + (8 - n % 8) % 8;
    unsigned char *b = calloc(1, 8 + padded + data_len);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(b + 8, hdr, n);
    memset(b + 8 + n, ' ', padded - n);
    ck_write(bad, b, 8 + padded + data_len);
    free(b);
}

T_TEST(inconsistent_headers)
{
    static const struct {
        const char *hdr;
        size_t data;
        const char *needle;
    } cases[] = {
        {"[1,2,3]", 0, "not a JSON object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "not valid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
         8, "not valid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
         12, "'b' starts"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
         20, "'b' starts"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 9, "trailing"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.0,8]}}", 8, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype 'F33'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,8]}}",
         8, "'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "lacks"},
        {"{\"a\":[]}", 0, "lacks"},
        {"{\"__metadata__\":{\"format\":1}}", 0, "not a string"},
        {"{\"__metadata__\":[]}", 0, "not an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
         "not a Kiln checkpoint"},
        {"{\"__metadata__\":{\"format\":\"kiln-checkpoint\",\"format_version\":\"x\"}}", 0,
         "format_version"},
        {"{\"__metadata__\":{\"format\":\"kiln-checkpoint\",\"format_version\":\"1\"}}", 0,
         "header_crc32"},
    };
    char why[700];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_raw(cases[i].hdr, cases[i].data);
        if (!refused(0, cases[i].needle, why, sizeof why))
            T_FAIL_("case %zu (%s): %s", i, cases[i].hdr, why);
    }
    /* and the plain safetensors ones do parse at the container level */
    rt_st_index *ix = NULL;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    ASSERT_EQ(rt_st_index_parse(ok, strlen(ok), 8, "x", &ix, NULL), RT_OK);
    ASSERT_EQ(rt_st_index_count(ix), 1);
    rt_st_index_destroy(ix);
}

static const rt_st_tensor_info *wt(void *w, size_t i) { return rt_st_writer_tensor(w, i); }
static void wm(void *w, size_t i, const char **k, const char **v)
{
    rt_st_writer_meta_at(w, i, k, v);
}

static rt_status sink(void *user, const void *buf, size_t len, rt_error *err)
{
    (void)err;
    return fwrite(buf, 1, len, user) == len ? RT_OK : RT_EIO;
}

/* A checkpoint claiming format_version `ver`, with correct checksums: the data
 * checksum as format v1 defines it (zlib CRC-32, "data_crc32") or as v2 and later do
 * (XXH3-64, "data_xxh3"). */
static int write_version(const char *ver)
{
    rt_st_writer *w = NULL;
    int failed = 0;
    float x[2] = {1, 2};
    int64_t shape[1] = {2};
    char hex[17];
    failed |= rt_st_writer_create(&w, NULL) != RT_OK;
    failed |= rt_st_writer_add(w, "model.x", RT_ST_F32, 1, shape, x, NULL) != RT_OK;
    failed |= rt_st_writer_set_meta(w, "format", "kiln-checkpoint", NULL) != RT_OK;
    failed |= rt_st_writer_set_meta(w, "format_version", ver, NULL) != RT_OK;
    failed |= rt_st_writer_set_meta(w, "kiln_version", "9.0.0", NULL) != RT_OK;
    failed |= rt_st_writer_set_meta(w, "step", "1", NULL) != RT_OK;
    failed |= rt_st_writer_set_meta(w, "epoch", "0", NULL) != RT_OK;
    if (strcmp(ver, "1") == 0) {
        rtp_ckpt_crc_hex(rt_st_writer_data_crc32(w), hex);
        failed |= rt_st_writer_set_meta(w, "data_crc32", hex, NULL) != RT_OK;
    } else {
        rtp_ckpt_xxh3_hex(rtp_ckpt_xxh3(x, sizeof x), hex);
        failed |= rt_st_writer_set_meta(w, "data_xxh3", hex, NULL) != RT_OK;
    }
    failed |= rt_st_writer_set_meta(w, "header_crc32", "", NULL) != RT_OK;
    rtp_ckpt_crc_hex(
        rtp_ckpt_header_crc32(w, rt_st_writer_count(w), wt, rt_st_writer_meta_count(w), wm), hex);
    failed |= rt_st_writer_set_meta(w, "header_crc32", hex, NULL) != RT_OK;
    FILE *f = fopen(bad, "wb");
    failed |= rt_st_writer_emit(w, sink, f, NULL) != RT_OK;
    fclose(f);
    rt_st_writer_destroy(w);
    return failed ? -1 : 0;
}

/* Flips one bit of the last byte of path (inside the data area). */
static void flip_last_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, -1, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 1, f);
    fclose(f);
}

T_TEST(older_format_versions_still_read)
{
    rt_ckpt_reader *r = NULL;
    rt_error err;
    float x[2];
    int64_t shape[1] = {2};
    for (int v = 1; v <= 2; v++) {
        ASSERT_EQ(write_version(v == 1 ? "1" : "2"), 0); /* v1: zlib CRC-32 of the data */
        ASSERT_EQ(rt_ckpt_reader_open(bad, 0, &r, &err), RT_OK);
        ASSERT_EQ(rt_ckpt_reader_get(r, "model.x", RT_ST_F32, 1, shape, x, sizeof x, &err), RT_OK);
        ASSERT(x[0] == 1 && x[1] == 2);
        rt_ckpt_reader_destroy(r);
        flip_last_byte(bad); /* and its own checksum still guards it */
        ASSERT_EQ(rt_ckpt_reader_open(bad, 0, &r, &err), RT_EFORMAT);
        ASSERT_STR_CONTAINS(err.msg, "data checksum mismatch");
    }
}

T_TEST(newer_format_version)
{
    rt_ckpt_reader *r = NULL;
    rt_error err;
    ASSERT_EQ(write_version("3"), 0);
    ASSERT_EQ(rt_ckpt_reader_open(bad, 0, &r, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, bad);
    ASSERT_STR_CONTAINS(err.msg, "checkpoint format v3 found, this kiln reads v2");
    ASSERT_STR_CONTAINS(err.msg, "HINT: upgrade kiln");
    ASSERT_STR_CONTAINS(err.msg, "9.0.0");
}

int main(void)
{
    rt_error err;
    if (ck_tmpdir_fast(dir, sizeof dir) != 0) return 99;
    snprintf(good, sizeof good, "%s/good.safetensors", dir);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    if (ck_save_sample(good, 500, &err) != RT_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 99;
    }
    T_RUN(truncated_at_every_length);
    T_RUN(every_header_byte_flipped);
    T_RUN(every_header_value_edited);
    T_RUN(every_data_byte_flipped);
    T_RUN(absurd_header_lengths);
    T_RUN(inconsistent_headers);
    T_RUN(older_format_versions_still_read);
    T_RUN(newer_format_version);
    /* none of this touched the good file */
    int intact = ck_holds_step(good, 500);
    ck_rmrf(dir);
    if (!intact) {
        printf("FAIL good checkpoint changed\n");
        return 1;
    }
    return T_EXIT();
}
