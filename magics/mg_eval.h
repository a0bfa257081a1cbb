/* mg_eval.h - what %evaluate and %predict share: finding the trained model, the data
 * set and the split they run on, with the errors a user needs. */
#ifndef MG_EVAL_H
#define MG_EVAL_H

#include "mg_workspace.h"

typedef struct mg_eval_target {
    mg_ws_model *model; /* has a trained model */
    mg_ws_data *data;
    const rt_dataset *split; /* --split (test by default) */
} mg_eval_target;

/* MODEL positional (optional), --data, --split. magic names the magic in errors. */
RT_MUST_USE int mg_eval_resolve(mg_ctx *ctx, const mg_args *args, const char *magic,
                                mg_eval_target *t, mg_error *err);

/* %predict on files (mg_predict_files.c): [MODEL] FILE|GLOB... with --top, --data. */
int mg_predict_is_file_arg(const char *word);
RT_MUST_USE int mg_predict_files(mg_ctx *ctx, const mg_args *args, mg_error *err);

#endif
