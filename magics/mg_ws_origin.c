/* mg_ws_origin.c - the data set a checkpoint was trained on, found again (see
 * mg_workspace.h): what %resume continues on and what %evaluate, %predict and %export
 * use for a model that %checkpoint load brought into a new kernel. A copy loaded in
 * this session is used as loaded (a different one is refused by its checksum);
 * otherwise an image folder is decoded as the run had it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mg_workspace.h"

/* The %dataset options that load o's data set as the run had it (for a hint). */
static void dataset_opts(const mg_ws_origin *o, char *buf, size_t cap)
{
    const mg_ws_images *im = &o->images;
    size_t k = 0;
#define ADD(...) k += k < cap ? (size_t)snprintf(buf + k, cap - k, __VA_ARGS__) : 0
    if (o->has_images && im->val_fraction > 0) ADD("--val %g", im->val_fraction);
    else ADD("--val %d", o->val);
    ADD(" --subset %d", o->subset);
    if (o->has_images && im->image_h > 0) ADD(" --size %dx%d", im->image_h, im->image_w);
    if (o->has_images && im->channels) ADD(" --channels %d", im->channels);
    if (o->has_images && im->seed) ADD(" --seed %llu", (unsigned long long)im->seed);
    if (o->has_images && im->skip_bad) ADD(" --skip-bad");
    if (o->has_images && im->shape[0])
        ADD(" --shape %dx%dx%d", im->shape[0], im->shape[1], im->shape[2]);
#undef ADD
}

mg_ws_data *mg_ws_origin_open(mg_workspace *ws, mg_ctx *ctx, const mg_ws_origin *o,
                              const char *caller, mg_error *err)
{
    char opts[200];
    dataset_opts(o, opts, sizeof opts);
    if (strstr(o->data, "://") && !mg_ws_data_find(ws, o->data))
        return mg_fail(err, "ValueError",
                       "%s: checkpoint '%s' was trained on a data set "
                       "downloaded from %.300s; a checkpoint does not choose what is fetched "
                       "---> HINT: if you trust that address, load it yourself first "
                       "(%%dataset %.300s %s), then run %s again",
                       caller, o->ckpt, o->data, o->data, opts, caller),
               NULL;
    const mg_ws_images *im = o->has_images && !mg_ws_data_find(ws, o->data) ? &o->images : NULL;
    mg_ws_data *data =
        mg_ws_data_load_images(ws, ctx, o->data, o->val, o->subset, NULL, NULL, im, err);
    if (!data) {
        mg_error e = *err;
        return mg_fail(err, e.ename,
                       "%s: checkpoint '%s' was trained on data set '%s', "
                       "which cannot be loaded here: %s",
                       caller, o->ckpt, o->data, e.evalue),
               NULL;
    }
    char here[24];
    snprintf(here, sizeof here, "%016" PRIx64, data->splits.train.checksum);
    if (o->fnv[0] && strcmp(here, o->fnv))
        return mg_fail(err, "ValueError",
                       "%s: data set '%s' here is not the one checkpoint "
                       "'%s' was trained on (training split checksum %s here, %s in the "
                       "checkpoint) ---> HINT: load the same files (%%dataset %.300s %s), or "
                       "start a new run with %%train",
                       caller, o->data, o->ckpt, here, o->fnv, o->data, opts),
               NULL;
    return data;
}
