/* notebook.c - fuzz target: the `kiln run` notebook reader (jk_run_parse: JSON,
 * nbformat 4 checks, normalising to 4.5) and papermill-style parameter injection
 * (jk_run_inject: finds the "parameters" cell, types each -p VALUE by that cell's
 * #@param annotations through the forms parser, inserts the injected cell).
 * Input: the .ipynb bytes. The -p overrides are fixed (a number, a float, a quoted
 * string, a bare word, a list), so the fuzzer varies the notebook around them.
 * Invariants: an accepted notebook has nbformat_minor >= 5, a cell id on every
 * cell, and after injection exactly one cell tagged "injected-parameters"; the
 * result serialises and reads back. */
#include <string.h>

#include "fz.h"
#include "jk_run.h"

static int injected_cells(json_t *nb)
{
    int count = 0;
    size_t i, j;
    json_t *c, *t;
    json_array_foreach(json_object_get(nb, "cells"), i, c) json_array_foreach(
        json_object_get(json_object_get(c, "metadata"), "tags"), j,
        t) if (json_is_string(t) && !strcmp(json_string_value(t), "injected-parameters")) count++;
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *nb = jk_run_parse((const char *)data, size, "fuzz.ipynb");
    if (!nb) return 0;
    FZ_CHECK(json_integer_value(json_object_get(nb, "nbformat_minor")) >= 5);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(nb, "cells"), i, c)
        FZ_CHECK(json_is_string(json_object_get(c, "id")));
    static const char *names[] = {"epochs", "lr", "optimizer", "run_name", "sizes"};
    static const char *values[] = {"7", "0.01", "'sgd'", "mnist", "[32, 64]"};
    if (jk_run_inject(nb, 5, names, values) == 0) FZ_CHECK(injected_cells(nb) == 1);
    char *text = json_dumps(nb, JSON_INDENT(1));
    if (text) {
        json_t *back = jk_run_parse(text, strlen(text), "fuzz.out.ipynb");
        FZ_CHECK(back != NULL);
        json_decref(back);
        free(text);
    }
    json_decref(nb);
    return 0;
}
