/* rt_model_init.c - a model's starting weights from a safetensors file or another model
 * (rt_model_init.h): the file read and its header validated (rt_safetensors), a Kiln
 * checkpoint's checksums checked (rt_ckpt_reader), the tensors matched by name and shape
 * and converted to float, then written through the backend (rt_model_tensor_write). */
#include "rt_model_init.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_ckpt.h"
#include "rt_safetensors.h"

/* One tensor of the source: its bytes are borrowed (file buffer or model copy). */
typedef struct src_tensor {
    const char *name;
    rt_st_dtype dtype;
    int ndim;
    const int64_t *shape;
    const unsigned char *data;
} src_tensor;

static const char *const COUNTER = ".num_batches_tracked";

static int is_counter(const char *name)
{
    size_t n = strlen(name), k = strlen(COUNTER);
    return n >= k && !strcmp(name + n - k, COUNTER);
}

static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t used = 0;
    buf[0] = 0;
    for (int d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? "x" : "", (long long)shape[d]);
    if (ndim == 0) snprintf(buf, n, "scalar");
}

/* Appends item to a comma-separated list of at most n bytes ("..." once full). */
static void list_add(char *list, size_t n, const char *item)
{
    size_t used = strlen(list);
    if (used >= 3 && !strcmp(list + used - 3, "...")) return;
    if (used + strlen(item) + 6 >= n) {
        snprintf(list + used, n - used, "%s...", used ? ", " : "");
        return;
    }
    snprintf(list + used, n - used, "%s%s", used ? ", " : "", item);
}

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    float v;
    if (e == 0) v = ldexpf((float)f, -24);
    else if (e == 31) v = f ? NAN : INFINITY;
    else v = ldexpf((float)(f | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* n values of dtype at p -> dst (little-endian; F32 F64 F16 BF16). */
static void convert(float *dst, const unsigned char *p, rt_st_dtype dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case RT_ST_F32: memcpy(&dst[i], p + 4 * i, 4); break;
        case RT_ST_F64: {
            double d;
            memcpy(&d, p + 8 * i, 8);
            dst[i] = (float)d;
            break;
        }
        case RT_ST_F16: dst[i] = half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8)); break;
        default: { /* BF16 */
            uint32_t u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &u, 4);
        }
        }
    }
}

static int float_dtype(rt_st_dtype dt)
{
    return dt == RT_ST_F32 || dt == RT_ST_F64 || dt == RT_ST_F16 || dt == RT_ST_BF16;
}

static rt_status apply(rt_model *m, const src_tensor *src, size_t n, int strict, const char *what,
                       rt_init_report *rep, rt_error *err)
{
    int nt = rt_model_num_tensors(m);
    int *from = malloc(sizeof(int) * (size_t)(nt > 0 ? nt : 1));
    char *used = calloc(n ? n : 1, 1);
    rt_status s = from && used ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory reading %s", what);
    size_t most = 0;
    int kiln = rep->kiln;
    memset(rep, 0, sizeof *rep);
    rep->kiln = kiln;
    for (int i = 0; i < nt && s == RT_OK; i++) {
        rt_named_tensor t;
        from[i] = -1;
        s = rt_model_tensor(m, i, &t, err);
        if (s != RT_OK) break;
        size_t k = 0;
        while (k < n && strcmp(src[k].name, t.name)) k++;
        if (k == n) {
            rep->fresh++;
            list_add(rep->fresh_names, sizeof rep->fresh_names, t.name);
            continue;
        }
        used[k] = 1;
        int same = src[k].ndim == t.ndim;
        for (int d = 0; same && d < t.ndim; d++) same = src[k].shape[d] == t.shape[d];
        if (!same) {
            char a[64], b[64], item[200];
            int64_t mine[4] = {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
            shape_text(a, sizeof a, t.ndim, mine);
            shape_text(b, sizeof b, src[k].ndim, src[k].shape);
            snprintf(item, sizeof item, "%s (%s, source %s)", t.name, a, b);
            rep->fresh++;
            list_add(rep->fresh_names, sizeof rep->fresh_names, item);
            continue;
        }
        if (!float_dtype(src[k].dtype)) {
            s = RT_ERR(err, RT_EFORMAT, "%s: tensor '%s' is %s, not a floating-point type", what,
                       t.name, rt_st_dtype_name(src[k].dtype));
            break;
        }
        from[i] = (int)k;
        rep->loaded++;
        if (t.numel > most) most = t.numel;
    }
    for (size_t k = 0; k < n && s == RT_OK; k++)
        if (!used[k] && !is_counter(src[k].name)) {
            rep->skipped++;
            list_add(rep->skipped_names, sizeof rep->skipped_names, src[k].name);
        }
    if (s == RT_OK && strict && (rep->fresh || rep->skipped))
        s = RT_ERR(err, RT_EINVAL,
                   "%s does not match the model exactly: %d model tensor%s not loaded%s%s%s, "
                   "%d source tensor%s unused%s%s%s",
                   what, rep->fresh, rep->fresh == 1 ? "" : "s", rep->fresh ? " (" : "",
                   rep->fresh_names, rep->fresh ? ")" : "", rep->skipped,
                   rep->skipped == 1 ? "" : "s", rep->skipped ? " (" : "", rep->skipped_names,
                   rep->skipped ? ")" : "");
    float *buf = s == RT_OK ? malloc(sizeof(float) * (most ? most : 1)) : NULL;
    if (s == RT_OK && !buf) s = RT_ERR(err, RT_ENOMEM, "out of memory reading %s", what);
    for (int i = 0; i < nt && s == RT_OK; i++) {
        if (from[i] < 0) continue;
        rt_named_tensor t;
        s = rt_model_tensor(m, i, &t, err);
        if (s != RT_OK) break;
        convert(buf, src[from[i]].data, src[from[i]].dtype, t.numel);
        s = rt_model_tensor_write(m, i, buf, err);
    }
    free(buf);
    free(from);
    free(used);
    return s;
}

/* The whole file into *out (*len bytes). */
static rt_status read_all(const char *path, unsigned char **out, uint64_t *len, rt_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return RT_ERR(err, RT_ENOTFOUND,
                      "cannot open '%s' ---> HINT: give a Kiln run directory, "
                      "a checkpoint or a .safetensors file",
                      path);
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return RT_ERR(err, RT_EIO, "'%s' is not a regular file", path);
    }
    *len = (uint64_t)st.st_size;
    unsigned char *b = malloc(*len ? (size_t)*len : 1);
    if (!b) {
        fclose(f);
        return RT_ERR(err, RT_ENOMEM, "out of memory reading '%s' (%llu bytes)", path,
                      (unsigned long long)*len);
    }
    size_t got = *len ? fread(b, 1, (size_t)*len, f) : 0;
    int bad = ferror(f) || got != (size_t)*len;
    fclose(f);
    if (bad) {
        free(b);
        return RT_ERR(err, RT_EIO, "could not read '%s'", path);
    }
    *out = b;
    return RT_OK;
}

rt_status rt_model_init_file(rt_model *m, const char *path, int strict, rt_init_report *rep,
                             rt_error *err)
{
    unsigned char *file = NULL;
    uint64_t len = 0, hn = 0;
    rt_st_index *ix = NULL;
    memset(rep, 0, sizeof *rep);
    RT_TRY(read_all(path, &file, &len, err));
    rt_status s = rt_st_prefix_check(file, len, path, &hn, err);
    if (s == RT_OK)
        s = rt_st_index_parse((const char *)file + 8, (size_t)hn, len - 8 - hn, path, &ix, err);
    const char *fmt = s == RT_OK ? rt_st_index_meta(ix, RT_CKPT_KEY_FORMAT) : NULL;
    rep->kiln = fmt && !strcmp(fmt, RT_CKPT_FORMAT);
    if (s == RT_OK && rep->kiln) { /* its checksums too: a damaged checkpoint is refused */
        rt_ckpt_reader *rd = NULL;
        s = rt_ckpt_reader_open(path, 0, &rd, err);
        rt_ckpt_reader_destroy(rd);
    }
    size_t n = s == RT_OK ? rt_st_index_count(ix) : 0, k = 0;
    src_tensor *src = calloc(n ? n : 1, sizeof *src);
    if (s == RT_OK && !src) s = RT_ERR(err, RT_ENOMEM, "out of memory reading '%s'", path);
    const unsigned char *data = file + 8 + hn;
    for (size_t i = 0; i < n && s == RT_OK; i++) {
        const rt_st_tensor_info *ti = rt_st_index_tensor(ix, i);
        const char *name = ti->name;
        if (rep->kiln) { /* a checkpoint's weights; its optimiser state is not for us */
            if (strncmp(name, "model.", 6)) continue;
            name += 6;
        }
        src[k++] = (src_tensor){name, ti->dtype, ti->ndim, ti->shape, data + ti->begin};
    }
    char what[1100];
    snprintf(what, sizeof what, "'%s'", path);
    if (s == RT_OK) s = apply(m, src, k, strict, what, rep, err);
    free(src);
    rt_st_index_destroy(ix);
    free(file);
    return s;
}

rt_status rt_model_init_model(rt_model *m, rt_model *from, int strict, rt_init_report *rep,
                              rt_error *err)
{
    memset(rep, 0, sizeof *rep);
    int n = rt_model_num_tensors(from);
    size_t total = 0;
    rt_named_tensor *nt = calloc((size_t)(n > 0 ? n : 1), sizeof *nt);
    int64_t(*shapes)[4] = calloc((size_t)(n > 0 ? n : 1), sizeof *shapes);
    src_tensor *src = calloc((size_t)(n > 0 ? n : 1), sizeof *src);
    rt_status s = nt && shapes && src ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory");
    for (int i = 0; i < n && s == RT_OK; i++) {
        s = rt_model_tensor(from, i, &nt[i], err);
        total += nt[i].numel;
    }
    float *block = s == RT_OK ? malloc(sizeof(float) * (total ? total : 1)) : NULL;
    if (s == RT_OK && !block) s = RT_ERR(err, RT_ENOMEM, "out of memory");
    size_t off = 0;
    for (int i = 0; i < n && s == RT_OK; i++) {
        s = rt_model_tensor_read(from, i, block + off, err);
        for (int d = 0; d < 4; d++) shapes[i][d] = nt[i].shape[d];
        src[i] = (src_tensor){nt[i].name, RT_ST_F32, nt[i].ndim, shapes[i],
                              (const unsigned char *)(block + off)};
        off += nt[i].numel;
    }
    if (s == RT_OK) s = apply(m, src, (size_t)n, strict, "the source model", rep, err);
    free(block);
    free(src);
    free(shapes);
    free(nt);
    return s;
}

void rt_init_report_text(const rt_init_report *rep, char *buf, size_t n)
{
    snprintf(buf, n, "loaded %d tensor%s, %d new%s%s%s, %d skipped%s%s%s", rep->loaded,
             rep->loaded == 1 ? "" : "s", rep->fresh, rep->fresh ? " (" : "", rep->fresh_names,
             rep->fresh ? ")" : "", rep->skipped, rep->skipped ? " (" : "", rep->skipped_names,
             rep->skipped ? ")" : "");
}
