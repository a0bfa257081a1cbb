/* jk_run.h - pieces of `kiln run` shared between its files. */
#ifndef JK_RUN_H
#define JK_RUN_H

#include <jansson.h>
#include <stddef.h>

/* Reads notebook text the way `kiln run` reads its input file: nbformat 4 with a
 * list of cells that have "cell_type" and "source", brought up to 4.5 (cell ids,
 * empty outputs). New ref, or NULL after printing why to stderr (naming what).
 * (Also the entry point of tests/fuzz/notebook.c.) */
json_t *jk_run_parse(const char *text, size_t len, const char *what);

/* Inserts (or replaces) the "injected-parameters" cell for -p NAME VALUE overrides.
 * Returns 0, or -1 after printing why (a value that does not fit its #@param). */
int jk_run_inject(json_t *nb, int n, const char **names, const char **values);

#endif
