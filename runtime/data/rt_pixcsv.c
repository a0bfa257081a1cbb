/* rt_pixcsv.c - images as CSV rows of pixel values, the format of Kaggle's Digit
 * Recognizer (and of the MNIST-like sets posted there): a header line
 * `label,pixel0,...,pixelN` (or `pixel0,...` without labels: a test file to predict
 * on), then one row an image, each cell an integer, the label first.
 *
 * The shape comes from the caller (CxHxW: the pixels of a row are channel planes, as
 * CIFAR's own files store them; HxWxC: interleaved, the order numpy's reshape(-1) of
 * an image gives) or from the pixel count: 784 -> 1x28x28, 3072 -> 3x32x32, S*S ->
 * 1xSxS, 3*S*S -> 3xSxS. Every row is checked as it is read, and the first bad one is an
 * error naming the file and line: a row with more or fewer cells than the header, a
 * cell that is not an integer, a pixel outside 0..255, a label outside 0..99. Nothing
 * the file claims is trusted: the buffer is sized from the file's length (every row
 * takes at least 2 bytes a cell), checked against the memory there is first.
 */
#include "rt_data_internal.h"
#include "rt_mem.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define HEADER_MAX (4u << 20)
#define MAX_PIXELS (3u * 1024 * 1024)
#define CELL_SHOWN 24

typedef struct rd {
    FILE *f;
    size_t at, len;
    uint8_t buf[1 << 16];
} rd;

static int rd_get(rd *r)
{
    if (r->at == r->len) {
        r->len = fread(r->buf, 1, sizeof r->buf, r->f);
        r->at = 0;
        if (r->len == 0) return EOF;
    }
    return r->buf[r->at++];
}

static int starts_ci(const char *s, size_t n, const char *p)
{
    size_t k = strlen(p);
    return n >= k && !strncasecmp(s, p, k);
}

/* 1 labelled, 2 without labels, 0 not a pixel header: the first bytes of a line. */
static int header_kind(const char *s, size_t n)
{
    if (n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) s += 3, n -= 3; /* a UTF-8 BOM */
    if (n && *s == '"') s++, n--;
    if (starts_ci(s, n, "label")) { /* quotes and spaces around names: a few, so the
                                       first 64 bytes always decide (rtp_pixcsv_sniff) */
        size_t k = 5;
        while (k < n && k < 8 && (s[k] == '"' || s[k] == ' ')) k++;
        if (k < n && s[k] == ',') {
            size_t e = ++k + 3;
            while (k < n && k < e && (s[k] == '"' || s[k] == ' ')) k++;
            return starts_ci(s + k, n - k, "pixel") ? 1 : 0;
        }
        return 0;
    }
    return starts_ci(s, n, "pixel") ? 2 : 0;
}

int rtp_pixcsv_sniff(const char *path)
{
    char head[64];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return header_kind(head, n) != 0;
}

rt_status rtp_pixcsv_shape(const char *path, int pixels, const int given[3], int out[4],
                           rt_error *err)
{
    int c = 0, h = 0, w = 0, last = 0;
    if (given && given[0] > 0) {
        int a = given[0], b = given[1], d = given[2];
        if (a >= 1 && a <= 4) c = a, h = b, w = d; /* CxHxW, also when both ends could be C */
        else if (d >= 1 && d <= 4) h = a, w = b, c = d, last = 1;
        else
            return RT_ERR(err, RT_EINVAL,
                          "--shape %dx%dx%d: one end must be the channel count (1 to 4): "
                          "CxHxW or HxWxC",
                          a, b, d);
        if (h < 1 || w < 1 || h > 4096 || w > 4096)
            return RT_ERR(err, RT_EINVAL, "--shape %dx%dx%d: sides must be 1 to 4096", a, b, d);
        if ((long long)c * h * w != pixels)
            return RT_ERR(err, RT_EFORMAT,
                          "%s: rows have %d pixels but --shape %dx%dx%d needs %lld", path, pixels,
                          a, b, d, (long long)c * h * w);
    } else if (pixels == 784) {
        c = 1, h = w = 28;
    } else if (pixels == 3072) {
        c = 3, h = w = 32;
    } else {
        for (int ch = 1; ch <= 3 && !c; ch += 2) {
            int s = 1;
            while ((long long)ch * (s + 1) * (s + 1) <= pixels) s++;
            if ((long long)ch * s * s == pixels && pixels % ch == 0) c = ch, h = w = s;
        }
        if (!c)
            return RT_ERR(err, RT_EFORMAT,
                          "%s: %d pixel columns is not a square grey or RGB image ---> HINT: "
                          "give the shape: %%dataset %s --shape CxHxW (or HxWxC)",
                          path, pixels, path);
    }
    out[0] = c, out[1] = h, out[2] = w, out[3] = last;
    return RT_OK;
}

/* One cell: its text (first CELL_SHOWN bytes kept for messages) up to ',' / newline /
 * EOF, which *term gets. Returns the integer, or -1 when it is not one. */
static long read_cell(rd *r, int *term, char shown[CELL_SHOWN + 1])
{
    int ch, k = 0, digits = 0, bad = 0, after = 0;
    long v = 0;
    while ((ch = rd_get(r)) != EOF && ch != ',' && ch != '\n') {
        if (k < CELL_SHOWN) shown[k++] = (char)ch;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '"') {
            after = digits > 0; /* spaces and quotes around the number only */
            continue;
        }
        if (ch < '0' || ch > '9' || after) bad = 1;
        else if (digits++ < 9) v = v * 10 + (ch - '0');
    }
    shown[k] = '\0';
    *term = ch;
    return bad || digits == 0 ? -1 : digits > 9 ? 1000000000L : v;
}

/* Header: counts the cells (and checks the names of the pixel columns). */
static rt_status read_header(rd *r, const char *path, int *ncols, int *labelled, rt_error *err)
{
    char *line = malloc(HEADER_MAX);
    if (!line) return RT_ERR(err, RT_ENOMEM, "out of memory");
    size_t n = 0;
    int ch;
    while ((ch = rd_get(r)) != EOF && ch != '\n' && n < HEADER_MAX) line[n++] = (char)ch;
    rt_status st = RT_OK;
    int kind = header_kind(line, n);
    if (n == HEADER_MAX)
        st = RT_ERR(err, RT_EFORMAT, "%s:1: the header is longer than %u bytes", path, HEADER_MAX);
    else if (!kind)
        st = RT_ERR(err, RT_EFORMAT,
                    "%s:1: not a pixel CSV header (expected label,pixel0,pixel1,... or "
                    "pixel0,pixel1,...)",
                    path);
    int cells = 1;
    for (size_t i = 0; st == RT_OK && i < n; i++) cells += line[i] == ',';
    free(line);
    if (st != RT_OK) return st;
    *labelled = kind == 1;
    int pixels = cells - *labelled;
    if (pixels < 1 || (unsigned)pixels > MAX_PIXELS)
        return RT_ERR(err, RT_EFORMAT, "%s:1: %d pixel columns (1 to %u)", path, pixels,
                      MAX_PIXELS);
    *ncols = cells;
    return RT_OK;
}

rt_status rtp_pixcsv_read(const char *path, const int shape[3], rtp_raw_split *s, int *labelled,
                          const rtp_stop *stop, rt_error *err)
{
    *s = (rtp_raw_split){0};
    *labelled = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                      strerror(errno));
    struct stat sb;
    rd *r = malloc(sizeof *r);
    int ncols = 0, shp[4];
    rt_status st = r && fstat(fileno(f), &sb) == 0
                       ? RT_OK
                       : RT_ERR(err, r ? RT_EIO : RT_ENOMEM, "%s: cannot read", path);
    if (st == RT_OK) {
        *r = (rd){.f = f};
        st = read_header(r, path, &ncols, labelled, err);
    }
    int lab = *labelled, pixels = ncols - lab;
    if (st == RT_OK) st = rtp_pixcsv_shape(path, pixels, shape, shp, err);
    /* every row takes at least one digit and one separator a cell */
    uint64_t body = (uint64_t)sb.st_size, max_rows = st == RT_OK ? body / (2u * ncols - 1) + 1 : 0;
    if (max_rows > 0x7fffffff) max_rows = 0x7fffffff;
    if (st == RT_OK) st = rt_mem_check(max_rows * (uint64_t)(pixels + 1), path, err);
    if (st == RT_OK) {
        s->pixels = malloc((size_t)max_rows * (size_t)pixels);
        s->labels = malloc((size_t)max_rows);
        if (!s->pixels || !s->labels) st = RT_ERR(err, RT_ENOMEM, "%s: out of memory", path);
    }
    int C = shp[0], plane = st == RT_OK ? shp[1] * shp[2] : 0, last = st == RT_OK && shp[3];
    long line = 1, n = 0;
    char shown[CELL_SHOWN + 1];
    while (st == RT_OK) {
        line++;
        int ch = rd_get(r);
        while (ch == '\r' || ch == ' ' || ch == '\t') ch = rd_get(r);
        if (ch == EOF) break;
        if (ch == '\n') continue; /* a blank line */
        r->at--;                  /* the character belongs to the first cell */
        if ((n & 4095) == 0 && (st = rtp_check_stop(stop, path, err)) != RT_OK) break;
        if ((uint64_t)n >= max_rows) { /* cannot happen: rows take 2 bytes a cell */
            st = RT_ERR(err, RT_EFORMAT, "%s:%ld: more rows than the file can hold", path, line);
            break;
        }
        uint8_t *px = s->pixels + (size_t)n * (size_t)pixels;
        for (int col = 0; col < ncols; col++) {
            int term;
            long v = read_cell(r, &term, shown);
            int is_label = lab && col == 0, p = col - lab;
            if (v < 0) {
                char col_name[24] = "label";
                if (!is_label) snprintf(col_name, sizeof col_name, "pixel%d", p);
                st = RT_ERR(err, RT_EFORMAT, "%s:%ld: cell %d (%s) is '%s', not an integer", path,
                            line, col + 1, col_name, shown);
            } else if (is_label && v >= RT_MAX_CLASSES) {
                st = RT_ERR(err, RT_EFORMAT, "%s:%ld: label %ld is out of range (0 to %d)", path,
                            line, v, RT_MAX_CLASSES - 1);
            } else if (!is_label && v > 255) {
                st = RT_ERR(err, RT_EFORMAT, "%s:%ld: pixel%d is %ld, outside 0..255", path, line,
                            p, v);
            } else if (col < ncols - 1 && term != ',') {
                st = RT_ERR(err, RT_EFORMAT, "%s:%ld: %d cells, the header has %d", path, line,
                            col + 1, ncols);
            } else if (col == ncols - 1 && term == ',') {
                int extra = 1;
                while ((term = rd_get(r)) != EOF && term != '\n') extra += term == ',';
                st = RT_ERR(err, RT_EFORMAT, "%s:%ld: %d cells, the header has %d", path, line,
                            ncols + extra, ncols);
            }
            if (st != RT_OK) break;
            if (is_label) s->labels[n] = (uint8_t)v;
            else
                px[last ? (size_t)(p % C) * (size_t)plane + (size_t)(p / C) : (size_t)p] =
                    (uint8_t)v;
        }
        n++;
    }
    if (st == RT_OK && ferror(f)) st = RT_ERR(err, RT_EIO, "%s: read error", path);
    if (st == RT_OK && n == 0) st = RT_ERR(err, RT_EFORMAT, "%s: no rows after the header", path);
    fclose(f);
    free(r);
    if (st != RT_OK) {
        rtp_raw_split_deinit(s);
        return st;
    }
    s->n = (int)n, s->c = C, s->h = shp[1], s->w = shp[2];
    uint8_t *shrunk = realloc(s->pixels, (size_t)n * (size_t)pixels);
    if (shrunk) s->pixels = shrunk;
    if (!lab) { /* no labels: zeros, so the split is still well formed */
        memset(s->labels, 0, (size_t)n);
    }
    return RT_OK;
}

rt_status rt_pixel_csv_read(const char *path, const int shape[3], int *n, int *c, int *h, int *w,
                            uint8_t **pixels, uint8_t **labels, rt_error *err)
{
    rtp_raw_split s;
    int labelled = 0;
    RT_TRY(rtp_pixcsv_read(path, shape, &s, &labelled, NULL, err));
    *n = s.n, *c = s.c, *h = s.h, *w = s.w;
    *pixels = s.pixels;
    if (labelled) *labels = s.labels;
    else {
        free(s.labels);
        *labels = NULL;
    }
    return RT_OK;
}
