/* jk_nbout.h - an mg_out that writes a cell's outputs into its nbformat 4 "outputs"
 * array, the way nbclient records them (used by `kiln run`). */
#ifndef JK_NBOUT_H
#define JK_NBOUT_H

#include <jansson.h>

#include "jk_run_progress.h"
#include "mg.h"

typedef struct jk_nbout {
    mg_out out;       /* hand &nb->out to the engine */
    json_t *outputs;  /* borrowed: the running cell's outputs array */
    json_t *displays; /* owned: display_id -> array of output objects (whole notebook) */
    int execution_count;
    int clear_pending;         /* clear_output(wait=True) seen */
    int log_output;            /* also echo stream text to this process's stderr */
    jk_run_progress *progress; /* borrowed, NULL: live displays echoed there */
} jk_nbout;

RT_MUST_USE int jk_nbout_init(jk_nbout *nb); /* 0 or -1 (out of memory) */
void jk_nbout_deinit(jk_nbout *nb);          /* accepts NULL */
/* Points the writer at the next cell's outputs array (borrowed). */
void jk_nbout_begin_cell(jk_nbout *nb, json_t *outputs, int execution_count);
/* Appends an error output (traceback borrowed). */
void jk_nbout_error(jk_nbout *nb, const char *ename, const char *evalue, json_t *traceback);

#endif
