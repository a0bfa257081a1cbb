/* jk_run.h - pieces of `kiln run` shared between its files. */
#ifndef JK_RUN_H
#define JK_RUN_H

#include <jansson.h>
#include <stddef.h>

#include "rt_store.h"

/* Reads notebook text the way `kiln run` reads its input file: nbformat 4 with a
 * list of cells that have "cell_type" and "source", brought up to 4.5 (cell ids,
 * empty outputs). New ref, or NULL after printing why to stderr (naming what).
 * (Also the entry point of tests/fuzz/notebook.c.) */
json_t *jk_run_parse(const char *text, size_t len, const char *what);

/* Inserts (or replaces) the "injected-parameters" cell for -p NAME VALUE overrides.
 * Returns 0, or -1 after printing why (a value that does not fit its #@param). */
RT_MUST_USE int jk_run_inject(json_t *nb, int n, const char **names, const char **values);

/* A notebook cell's source, joined when it is a list of lines: new string (free()), or
 * NULL when out of memory. */
char *jk_cell_source(json_t *cell);

/* For `kiln sweep`: 0 when nb has a parameters cell (as jk_run_inject finds it) that
 * assigns every one of names; else -1 with why (one line, size whylen). */
int jk_run_params_check(json_t *nb, int n, const char **names, char *why, size_t whylen);

/* ---- s3:// notebooks (jk_run_store.c) ---- */

/* The notebook at url, as jk_run_parse reads it; NULL after printing why. */
json_t *jk_run_store_load(const char *url);

/* A result notebook at an s3:// URL: written to local (in the staging directory of the
 * URL's folder), then uploaded as the object. */
typedef struct jk_run_remote {
    const char *url;
    rt_store *s;
    char *key;
    char local[1200];
} jk_run_remote;
/* Opens url's store (a wrong key, a missing bucket, a bad endpoint are errors now,
 * before any cell runs). 0, or -1 after printing why. */
int jk_run_remote_open(jk_run_remote *r, const char *url);
/* Uploads r->local as the object. 0, or -1 after printing why (the local copy stays). */
int jk_run_remote_upload(jk_run_remote *r);
void jk_run_remote_close(jk_run_remote *r); /* a zeroed or closed r is fine */

#endif
