/* mg_ckpt_table.c - the tables of %checkpoint list and show, as one display_data with
 * text/plain (aligned columns) and text/html. A cell holds at most 200 characters of a
 * value (long metadata such as the model spec is shown in full by show's own rows). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg_ckpt_internal.h"
#include "mg_ckpt_table.h"
#include "rt_ckpt_dir.h"

#define MAXCOL 8

typedef struct table {
    int ncol, nrow, cap;
    char **cell; /* nrow x ncol, row 0 = the header */
} table;

static int add_row(table *t, const char *const *v)
{
    if (t->nrow == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        char **c = realloc(t->cell, (size_t)cap * (size_t)t->ncol * sizeof *c);
        if (!c) return -1;
        t->cell = c, t->cap = cap;
    }
    for (int j = 0; j < t->ncol; j++)
        t->cell[t->nrow * t->ncol + j] = strndup(v[j] ? v[j] : "", 200);
    t->nrow++;
    return 0;
}

static void table_free(table *t)
{
    for (int i = 0; i < t->nrow * t->ncol; i++) free(t->cell[i]);
    free(t->cell);
}

static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '\n') fputs("<br>", f);
        else fputc(*s, f);
    }
}

/* Shows t with a title line; 0 or -1 (out of memory). */
static int show(const mg_out *out, const char *title, const table *t, mg_error *err)
{
    char *txt = NULL, *html = NULL;
    size_t nt = 0, nh = 0;
    FILE *ft = open_memstream(&txt, &nt), *fh = open_memstream(&html, &nh);
    if (!ft || !fh) {
        if (ft) fclose(ft);
        if (fh) fclose(fh);
        free(txt), free(html);
        return mg_fail(err, "MemoryError", "out of memory");
    }
    int w[MAXCOL] = {0};
    for (int i = 0; i < t->nrow; i++)
        for (int j = 0; j < t->ncol; j++) {
            int l = 0;
            for (const char *q = t->cell[i * t->ncol + j]; *q; q++) l += *q == '\n' ? 2 : 1;
            if (l > w[j]) w[j] = l;
        }
    fprintf(ft, "%s\n", title);
    fputs("<p>", fh), html_text(fh, title), fputs("</p><table><thead>", fh);
    for (int i = 0; i < t->nrow; i++) {
        fputs("<tr>", fh);
        for (int j = 0; j < t->ncol; j++) {
            const char *c = t->cell[i * t->ncol + j];
            fprintf(ft, "%s", j ? "  " : "");
            int len = 0; /* a multi-line value (the model spec) on one line: "a; b" */
            for (const char *q = c; *q; q++, len++) {
                if (*q == '\n' && q[1]) fputs("; ", ft), len++;
                else if (*q != '\n') fputc(*q, ft);
            }
            if (j + 1 < t->ncol) fprintf(ft, "%*s", w[j] > len ? w[j] - len : 0, "");
            fputs(i ? "<td style=\"text-align:left\">" : "<th style=\"text-align:left\">", fh);
            html_text(fh, c);
            fputs(i ? "</td>" : "</th>", fh);
        }
        fputs(i ? "</tr>" : "</tr></thead><tbody>", fh);
        fputc('\n', ft);
    }
    fputs("</tbody></table>", fh);
    fclose(ft), fclose(fh);
    json_t *b = json_pack("{ssss}", "text/plain", txt, "text/html", html);
    free(txt), free(html);
    if (!b) return mg_fail(err, "MemoryError", "out of memory");
    out->display(out->user, b, NULL, NULL, 0);
    json_decref(b);
    return 0;
}

int mg_ckpt_table_list(const mg_out *out, const char *dir, mg_error *err)
{
    rt_ckpt_list l;
    rt_error re = {0};
    if (rt_ckpt_dir_scan(dir, 0, &l, &re) != RT_OK)
        return mg_fail(err, re.code == RT_ENOMEM ? "MemoryError" : "FileNotFoundError",
                       "%%checkpoint list: %s", re.msg);
    table t = {.ncol = 7};
    static const char *const head[] = {"checkpoint", "step", "epoch", "metric", "size",
                                       "created", "valid"};
    int rc = add_row(&t, head);
    size_t nvalid = 0;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        const rt_ckpt_entry *e = &l.items[i];
        char step[24] = "?", epoch[24] = "?", metric[96] = "", size[24], valid[560];
        if (e->step >= 0) snprintf(step, sizeof step, "%" PRId64, e->step);
        if (e->epoch >= 0) snprintf(epoch, sizeof epoch, "%" PRId64, e->epoch);
        if (e->has_metric && e->metric.has_value)
            snprintf(metric, sizeof metric, "%s %.4f", e->metric.name, e->metric.value);
        mgp_human_size(e->size, size, sizeof size);
        snprintf(valid, sizeof valid, "%s%s", e->valid ? "yes" : "NO: ", e->error);
        nvalid += e->valid != 0;
        const char *row[] = {e->name, step, epoch, metric, size, e->created, valid};
        rc = add_row(&t, row);
    }
    char title[1200];
    snprintf(title, sizeof title, "%s: %zu checkpoint%s, %zu valid", dir, l.count,
             l.count == 1 ? "" : "s", nvalid);
    if (rc == 0) rc = show(out, title, &t, err);
    else mg_fail(err, "MemoryError", "out of memory");
    table_free(&t);
    rt_ckpt_list_deinit(&l);
    return rc;
}

int mg_ckpt_table_show(const mg_out *out, const char *path, mg_error *err)
{
    rt_ckpt_reader *rd = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_reader_open(path, 0, &rd, &re);
    if (s != RT_OK)
        return mg_fail(err, s == RT_ENOTFOUND ? "FileNotFoundError" : "ValueError",
                       "%%checkpoint show: %s", re.msg);
    table t = {.ncol = 2};
    static const char *const head[] = {"key", "value"};
    int rc = add_row(&t, head);
    for (size_t i = 0; i < rt_ckpt_reader_meta_count(rd) && rc == 0; i++) {
        const char *k, *v;
        rt_ckpt_reader_meta_at(rd, i, &k, &v);
        const char *row[] = {k, v};
        rc = add_row(&t, row);
    }
    size_t nt = rt_ckpt_reader_tensor_count(rd);
    for (size_t i = 0; i < nt && rc == 0; i++) {
        const rt_st_tensor_info *ti = rt_ckpt_reader_tensor_at(rd, i);
        char desc[160];
        int k = snprintf(desc, sizeof desc, "%s [", rt_st_dtype_name(ti->dtype));
        for (int d = 0; d < ti->ndim && k < (int)sizeof desc; d++)
            k += snprintf(desc + k, sizeof desc - (size_t)k, d ? ",%" PRId64 : "%" PRId64,
                          ti->shape[d]);
        if (k < (int)sizeof desc) snprintf(desc + k, sizeof desc - (size_t)k, "]");
        const char *row[] = {ti->name, desc};
        rc = add_row(&t, row);
    }
    char size[24], title[1200];
    mgp_human_size(rt_ckpt_reader_file_size(rd), size, sizeof size);
    snprintf(title, sizeof title, "%s: valid Kiln checkpoint, %s, %zu tensors", path, size, nt);
    if (rc == 0) rc = show(out, title, &t, err);
    else mg_fail(err, "MemoryError", "out of memory");
    table_free(&t);
    rt_ckpt_reader_destroy(rd);
    return rc;
}
