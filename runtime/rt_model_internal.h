/* rt_model_internal.h - the model record shared by rt_model*.c (private). */
#ifndef RT_MODEL_INTERNAL_H
#define RT_MODEL_INTERNAL_H

#include "rt_layer.h"
#include "rt_model.h"

struct rt_model {
    char *spec;      /* as given (owned) */
    char *canonical; /* normalised (owned) */
    rt_model_input in;
    int nlayers;
    rt_layer *layers;     /* (nlayers) owned */
    rt_summary_row *rows; /* (nlayers) owned */
    long total_params;
    /* ---- after attach ---- */
    rt_backend *b; /* borrowed */
    int max_batch;
    uint64_t seed;
    float smoothing; /* label smoothing of the loss (rt_model_set_label_smoothing) */
    uint32_t shard;  /* rt_model_set_shard: dropout streams of this rank's share */
    int unfused;     /* rt_model_set_fusion(m, 0): nothing fused at attach */
    rt_arena params, grads, acts, state;
    rt_tensor *act;    /* (nlayers + 1) owned array of views; act[0] = input */
    rt_tensor gbuf[2]; /* ping-pong gradient buffers, max activation size */
    rt_tensor labels, loss, probs;
    rt_tensor pflat, gflat;
    float *host_loss; /* (max_batch) host scratch for the loss download */
    /* ---- timing ---- */
    int timing;
    int bwd_floor;       /* the lowest layer the backward reaches (rt_model_set_backward_floor) */
    double *tfwd, *tbwd; /* (nlayers + 1) owned */
};

/* rt_model_parse.c: parse + infer into m (spec already copied). */
RT_MUST_USE rt_status rtp_model_parse(rt_model *m, rt_error *err);
/* rt_model_tensors.c: tensor pname of layer l as checkpoints name it: "PREFIX.pname"
 * with a name= prefix, else "<index>.<type>.pname". */
void rtp_tensor_name(const rt_layer *l, const char *pname, char *buf, size_t n);
/* rt_model.c: frees attach-time memory (arenas, views). */
void rtp_model_detach(rt_model *m);

#endif
