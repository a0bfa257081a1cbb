/* rt_model_init.h - starting a model from another model's weights (%train --init).
 *
 * The source is a safetensors file: a Kiln checkpoint (its "model.*" tensors; the
 * optimiser and training state are not used) or a PyTorch state_dict saved with
 * safetensors (torchvision's weights, say). Tensors are matched by name and shape:
 * every model tensor (parameters and batch-norm running statistics) whose name the
 * source holds with the same shape is loaded; one the source lacks, or holds with another
 * shape (a classifier head for other classes), keeps its fresh initialisation from the
 * seed ("new"); a source tensor the model has no use for is "skipped". PyTorch's
 * batch-norm step counters (*.num_batches_tracked) have no Kiln counterpart and are
 * ignored. Values of dtype F32, F64, F16 and BF16 are converted to float; a model tensor
 * whose source has another dtype is an error. strict: any new or skipped tensor is an
 * error (RT_EINVAL naming them). Everything is checked before the first tensor is
 * written: on error the model is unchanged.
 */
#ifndef RT_MODEL_INIT_H
#define RT_MODEL_INIT_H

#include "rt_error.h"
#include "rt_model.h"

typedef struct rt_init_report {
    int loaded;              /* model tensors loaded from the source */
    int fresh;               /* model tensors left as initialised (absent, other shape) */
    int skipped;             /* source tensors not used */
    int kiln;                /* 1: the source was a Kiln checkpoint */
    char fresh_names[256];   /* the first few, "fc.weight (shape 10x512, source 1000x512)" */
    char skipped_names[256]; /* the first few, comma-separated */
} rt_init_report;

/* Loads the safetensors file at path into m (attached) as above. A missing file is
 * RT_ENOTFOUND, an unreadable one RT_EIO, a damaged one RT_EFORMAT, all naming path. */
RT_MUST_USE rt_status rt_model_init_file(rt_model *m, const char *path, int strict,
                                         rt_init_report *rep, rt_error *err);
/* The same from another attached model's tensors (names and shapes as the file would
 * have them). */
RT_MUST_USE rt_status rt_model_init_model(rt_model *m, rt_model *src, int strict,
                                          rt_init_report *rep, rt_error *err);
/* One line: "loaded 60 tensors, 2 new (fc.weight ...), 0 skipped". */
void rt_init_report_text(const rt_init_report *rep, char *buf, size_t n);

#endif
