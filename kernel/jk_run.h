/* jk_run.h - pieces of `kiln run` shared between its files. */
#ifndef JK_RUN_H
#define JK_RUN_H

#include <jansson.h>

/* Inserts (or replaces) the "injected-parameters" cell for -p NAME VALUE overrides.
 * Returns 0, or -1 after printing why (a value that does not fit its #@param). */
int jk_run_inject(json_t *nb, int n, const char **names, const char **values);

#endif
