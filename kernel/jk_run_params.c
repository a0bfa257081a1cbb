/* jk_run_params.c - papermill-style parameters for `kiln run -p NAME VALUE`.
 * The new cell (tagged "injected-parameters", source "# Parameters\nNAME = VALUE\n")
 * goes right after the cell tagged "parameters", else after the first cell with a
 * #@param form, else first; an injected cell from an
 * earlier run is replaced. Each VALUE is typed by, in order: the #@param annotation
 * of NAME in the parameters cell (fm_form_coerce: a bad value is an error), a literal
 * of the cell language (42, 0.1, True, [1, 2], 'x'), or else the text as a string.
 * A NAME the parameters cell does not assign gets a warning, as papermill gives. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"
#include "jk_run.h"
#include "kl.h"

char *jk_cell_source(json_t *cell)
{
    json_t *src = json_object_get(cell, "source"), *x;
    if (json_is_string(src)) return strdup(json_string_value(src));
    size_t total = 1, at = 0, i;
    json_array_foreach(src, i, x) total += json_string_length(x);
    char *s = malloc(total);
    json_array_foreach(src, i, x) if (s && json_is_string(x))
    {
        memcpy(s + at, json_string_value(x), json_string_length(x));
        at += json_string_length(x);
    }
    if (s) s[at] = 0;
    return s;
}

static int tagged(json_t *cell, const char *tag)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(cell, "metadata"), "tags"), i,
                       t) if (json_is_string(t) && !strcmp(json_string_value(t), tag)) return 1;
    return 0;
}

/* Does src have a line "NAME =" (an assignment of NAME)? */
static int assigns(const char *src, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = src; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        while (*p == ' ' || *p == '\t') p++;
        if (!strncmp(p, name, n)) {
            const char *q = p + n;
            while (*q == ' ' || *q == '\t') q++;
            if (*q == '=' && q[1] != '=') return 1;
        }
    }
    return 0;
}

static int valid_name(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_') return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

/* The parameters cell's index as jk_run_inject finds it (tagged, else the first code
 * cell with a #@param form) and its source (*src, free()); -1 when there is none. */
static long params_cell(json_t *nb, char **src_out)
{
    json_t *cells = json_object_get(nb, "cells");
    size_t i;
    json_t *c;
    *src_out = NULL;
    json_array_foreach(cells, i, c) if (tagged(c, "parameters"))
    {
        *src_out = jk_cell_source(c);
        return *src_out ? (long)i : -1;
    }
    json_array_foreach(cells, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "cell_type"));
        if (!type || strcmp(type, "code")) continue;
        char *src = jk_cell_source(c);
        fm_form *form = NULL;
        mg_error merr = {{0}, {0}};
        int ok = src && fm_form_parse(src, &form, &merr) == 0 && form;
        fm_form_destroy(form);
        if (ok) {
            *src_out = src;
            return (long)i;
        }
        free(src);
    }
    return -1;
}

int jk_run_params_check(json_t *nb, int n, const char **names, char *why, size_t whylen)
{
    char *src = NULL;
    if (params_cell(nb, &src) < 0) {
        snprintf(why, whylen,
                 "the notebook has no parameters cell (tag a cell \"parameters\", or give "
                 "one a #@param form)");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        if (valid_name(names[k]) && assigns(src, names[k])) continue;
        snprintf(why, whylen, "the parameters cell does not assign %s%s", names[k],
                 valid_name(names[k]) ? "" : " (not a variable name)");
        free(src);
        return -1;
    }
    free(src);
    return 0;
}

int jk_run_inject(json_t *nb, int n, const char **names, const char **values)
{
    json_t *cells = json_object_get(nb, "cells");
    size_t i, params_at = (size_t)-1;
    json_t *c;
    /* drop an earlier injected cell */
    for (i = 0; i < json_array_size(cells);) {
        if (tagged(json_array_get(cells, i), "injected-parameters")) json_array_remove(cells, i);
        else i++;
    }
    json_array_foreach(cells, i, c) if (params_at == (size_t)-1 && tagged(c, "parameters"))
        params_at = i;
    char *psrc = params_at != (size_t)-1 ? jk_cell_source(json_array_get(cells, params_at)) : NULL;
    fm_form *form = NULL;
    mg_error merr = {{0}, {0}};
    if (psrc && fm_form_parse(psrc, &form, &merr) < 0) form = NULL;
    /* No cell tagged "parameters": the first code cell with a #@param form is the
     * parameters cell (a Colab notebook has no tags), so the injected values come
     * after the form's own assignments instead of being overwritten by them. */
    for (i = 0; !psrc && i < json_array_size(cells); i++) {
        json_t *cell = json_array_get(cells, i);
        const char *type = json_string_value(json_object_get(cell, "cell_type"));
        if (!type || strcmp(type, "code")) continue;
        char *src = jk_cell_source(cell);
        if (src && fm_form_parse(src, &form, &merr) == 0 && form) {
            params_at = i;
            psrc = src;
        } else {
            fm_form_destroy(form);
            form = NULL;
            free(src);
        }
    }
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    int rc = f ? 0 : -1;
    if (f) fputs("# Parameters\n", f);
    for (int k = 0; rc == 0 && k < n; k++) {
        if (!valid_name(names[k])) {
            fprintf(stderr, "kiln run: -p %s: not a valid variable name\n", names[k]);
            rc = -1;
            break;
        }
        json_t *v = NULL;
        int got = form ? fm_form_coerce(form, names[k], values[k], &v, &merr) : 0;
        if (got < 0) {
            fprintf(stderr, "kiln run: -p %s %s: %s\n", names[k], values[k], merr.evalue);
            rc = -1;
            break;
        }
        if (got == 0) {
            v = strchr(values[k], '\n') ? NULL : kl_literal_parse(values[k]);
            if (!v) v = json_string(values[k]);
        }
        char *repr = v ? kl_value_repr(v) : NULL;
        json_decref(v);
        if (!repr) {
            fprintf(stderr, "kiln run: -p %s: the value is not valid UTF-8\n", names[k]);
            rc = -1;
            break;
        }
        if (!psrc || !assigns(psrc, names[k]))
            fprintf(stderr, "kiln run: warning: passed unknown parameter: %s\n", names[k]);
        fprintf(f, "%s = %s\n", names[k], repr);
        free(repr);
    }
    if (f && fclose(f) != 0) rc = -1;
    if (rc == 0) {
        json_t *cell = json_pack("{s:s, s:s, s:{s:[s]}, s:s, s:[], s:n}", "cell_type", "code", "id",
                                 "injected-parameters", "metadata", "tags", "injected-parameters",
                                 "source", text, "outputs", "execution_count");
        size_t at = params_at == (size_t)-1 ? 0 : params_at + 1;
        if (!cell || json_array_insert_new(cells, at, cell) < 0) rc = -1;
    }
    free(text);
    free(psrc);
    fm_form_destroy(form);
    return rc;
}
