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
int mg_predict_is_csv(const char *word);
RT_MUST_USE int mg_predict_files(mg_ctx *ctx, const mg_args *args, mg_error *err);
/* The trained model (MODEL positional when first is 1, else the last one) and the data
 * set that supplies its normalisation and class names (--data, its checkpoint's, its
 * own, the last loaded); channels and classes checked to match. */
RT_MUST_USE int mg_predict_model_data(mg_ctx *ctx, const mg_args *args, int first,
                                      mg_ws_model **model, mg_ws_data **data, mg_error *err);
/* probs (n, L) of the model on images (n, C, H, W), eval mode, batch by batch. */
RT_MUST_USE rt_status mg_predict_infer(rt_model *m, const float *images, int n, float *probs,
                                       rt_error *err);
/* The k most likely classes of probabilities p (L of them), best first, into best. */
void mg_predict_topk(const float *p, int L, int k, int *best);
/* %predict [MODEL] FILE.csv [--top K] [--out FILE] (mg_predict_csv.c): the rows of a
 * pixel CSV (Kaggle's test.csv). */
RT_MUST_USE int mg_predict_csv(mg_ctx *ctx, const mg_args *args, int first, int topk,
                               mg_error *err);

#endif
