/* mg_ckpt_table.c - the tables of %checkpoint list and show, as one display_data with
 * text/plain (aligned columns) and text/html. A cell holds at most 200 characters of a
 * value (long metadata such as the model spec is shown in full by show's own rows). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg_ckpt_internal.h"
#include "mg_ckpt_table.h"
#include "mg_store.h"
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
        return mg_fail_status(err, &re, "%%checkpoint list: %s", re.msg);
    table t = {.ncol = 7};
    static const char *const head[] = {"checkpoint", "step",    "epoch", "metric",
                                       "size",       "created", "valid"};
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

int mg_ckpt_table_list_store(const mg_out *out, const char *url, mg_error *err)
{
    rt_store_ckpt *c = NULL;
    size_t n = 0, nbad = 0;
    char *skipped = NULL;
    if (mg_store_list(url, &c, &n, &skipped, err) < 0) {
        mg_error e = *err;
        return mg_fail(err, e.ename, "%%checkpoint list: %s", e.evalue);
    }
    table t = {.ncol = 5};
    static const char *const head[] = {"checkpoint", "step", "size", "sha256", "complete"};
    int rc = add_row(&t, head);
    for (size_t i = 0; i < n && rc == 0; i++) { /* oldest first, as a directory's list */
        char step[24], size[24], sha[16];
        snprintf(step, sizeof step, "%" PRId64, c[i].step);
        mgp_human_size(c[i].size, size, sizeof size);
        snprintf(sha, sizeof sha, "%.12s", c[i].sha256);
        const char *row[] = {c[i].name, step, size, sha, "yes"};
        rc = add_row(&t, row);
    }
    /* manifests that are unreadable or whose object is missing or of another size */
    for (char *save = NULL, *line = skipped ? strtok_r(skipped, "\n", &save) : NULL;
         line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(line, ": "), why[600];
        if (sep) *sep = '\0';
        snprintf(why, sizeof why, "NO: %s", sep ? sep + 2 : "");
        const char *row[] = {line, "?", "", "", why};
        rc = add_row(&t, row);
        nbad++;
    }
    char title[1200];
    snprintf(title, sizeof title,
             "%s: %zu complete checkpoint%s (manifest and object; verified when fetched)%s", url, n,
             n == 1 ? "" : "s", nbad ? ", and incomplete or unreadable ones" : "");
    if (rc == 0) rc = show(out, title, &t, err);
    else mg_fail(err, "MemoryError", "out of memory");
    table_free(&t);
    free(skipped);
    rt_store_ckpt_free(c, n);
    return rc;
}

/* The shortest "%.Ng" that reads back as the same double (0.774, not the
 * 0.77400000000000002 that JSON writers keep); ".0" kept on a whole real. */
static int shortest_real(double v, char *buf, size_t n)
{
    int k = 0;
    for (int p = 6; p <= 17; p++) {
        k = snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (k > 0 && (size_t)k + 2 < n && !strpbrk(buf, ".eEni"))
        k += snprintf(buf + k, n - (size_t)k, ".0");
    return k;
}

/* Copies a metadata value for display with every real outside JSON strings written in
 * its shortest round-trip form; other text unchanged. out is truncated to n. */
void mgp_ckpt_display_value(const char *in, char *out, size_t n)
{
    size_t o = 0;
    int in_str = 0;
    if (!n) return;
    for (const char *p = in; *p && o + 1 < n;) {
        char c = *p;
        if (in_str) {
            out[o++] = c, p++;
            if (c == '\\' && *p && o + 1 < n) out[o++] = *p++;
            else if (c == '"') in_str = 0;
            continue;
        }
        int start = (isdigit((unsigned char)c) || c == '-') &&
                    (p == in || !(isalnum((unsigned char)p[-1]) || strchr("._-+", p[-1])));
        if (start) {
            char *end;
            double v = strtod(p, &end);
            size_t len = (size_t)(end - p);
            char tok[40];
            int real = len > 0 && memchr(p, '.', len) && len < sizeof tok &&
                       !(isalnum((unsigned char)*end) || *end == '.' || *end == '-');
            if (real) {
                int k = shortest_real(v, tok, sizeof tok);
                if (k > 0 && (size_t)k < len) {
                    for (int i = 0; i < k && o + 1 < n; i++) out[o++] = tok[i];
                    p = end;
                    continue;
                }
            }
            while (p < end && o + 1 < n) out[o++] = *p++;
            if (len) continue;
        }
        if (c == '"') in_str = 1;
        out[o++] = c, p++;
    }
    out[o] = 0;
}

int mg_ckpt_table_show(const mg_out *out, const char *path, const char *name, mg_error *err)
{
    rt_ckpt_reader *rd = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_reader_open(path, 0, &rd, &re);
    if (s != RT_OK) return mg_fail_status(err, &re, "%%checkpoint show: %s", re.msg);
    table t = {.ncol = 2};
    static const char *const head[] = {"key", "value"};
    int rc = add_row(&t, head);
    for (size_t i = 0; i < rt_ckpt_reader_meta_count(rd) && rc == 0; i++) {
        const char *k, *v;
        rt_ckpt_reader_meta_at(rd, i, &k, &v);
        char shown[1024];
        mgp_ckpt_display_value(v, shown, sizeof shown);
        const char *row[] = {k, strlen(v) < sizeof shown ? shown : v};
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
    snprintf(title, sizeof title, "%s: valid Kiln checkpoint, %s, %zu tensors", name, size, nt);
    if (rc == 0) rc = show(out, title, &t, err);
    else mg_fail(err, "MemoryError", "out of memory");
    table_free(&t);
    rt_ckpt_reader_destroy(rd);
    return rc;
}
