/* mg_ckpt_internal.h - shared between the mg_ckpt_*.c / mg_checkpoint.c / mg_resume*.c
 * files only (the rest of magics/ uses mg_ckpt.h). */
#ifndef MG_CKPT_INTERNAL_H
#define MG_CKPT_INTERNAL_H

#include "mg_ckpt.h"
#include "mg_workspace.h"

/* Fills rec's descriptive fields (model name, run dir, hyperparameters, data set
 * identity, resolved schedule, run id, results store) from run; frees what rec held. */
RT_MUST_USE int mgp_ckpt_describe(const mg_ckpt_run *run, mg_ckpt_last *rec, mg_error *err);
/* Frees rec's strings and snapshot and zeroes it (not rec itself). */
void mgp_ckpt_last_clear(mg_ckpt_last *rec);
/* The rt_ckpt_train_info view of rec (borrowing its strings). */
rt_ckpt_train_info mgp_ckpt_info(const mg_ckpt_last *rec);

/* Saves run's current state (model, optimiser, position, metadata) to path,
 * atomically, with this checkpoint's metric and the best so far (each may be NULL). -1
 * with err naming the file (disk full, not writable...). */
RT_MUST_USE int mgp_ckpt_save(const mg_ckpt_run *run, const char *path,
                              const rt_ckpt_metric *metric, const rt_ckpt_metric *best,
                              mg_error *err);

/* What a checkpoint says about its run, for resuming it (mg_ckpt_read.c). All of it
 * comes from the file, so it is untrusted: it never names a destination. */
typedef struct mgp_ck_desc {
    const char *spec, *name; /* borrowed from the reader */
    rt_model_input in;
    mg_ws_origin ds; /* the data set: reloaded and checked by its checksum */
    char schedule[sizeof(((mg_run_opts *)0)->schedule)];
    mg_run_opts o;
} mgp_ck_desc;

/* Reads model, data set, input shape, schedule and options from rd's metadata into d;
 * -1 with a ValueError naming path when they are missing or malformed. */
RT_MUST_USE int mgp_ckpt_read_desc(const rt_ckpt_reader *rd, const char *path, mgp_ck_desc *d,
                                   mg_error *err);
/* The data-set record of rd (from path) into o; 0 when it has a name, else -1 and o
 * empty (no error: older or hand-made files have none). */
int mgp_ckpt_read_origin(const rt_ckpt_reader *rd, const char *path, mg_ws_origin *o);

/* "12.3 MB" */
void mgp_human_size(uint64_t bytes, char *buf, size_t n);

#endif
