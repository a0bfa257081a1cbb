/* mg_ckpt_read.c - what a checkpoint says about its run: the file a %resume /
 * %checkpoint / --init argument names (mg_ckpt_resolve), and the model, data set, input
 * shape, schedule and options of its metadata (mgp_ckpt_read_desc), for continuing the
 * run (mg_resume_run.c) and for %checkpoint load.
 *
 * A checkpoint is untrusted input (docs/security.md): what is read here describes a
 * run; it never names a destination.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_ckpt_internal.h"
#include "mg_store.h"
#include "rt_ckpt_dir.h"
#include "rt_store.h"

int mg_ckpt_resolve(const char *arg, const mg_out *out, char **path, mg_error *err)
{
    struct stat st;
    *path = NULL;
    if (rt_store_is_url(arg)) return mg_store_fetch(arg, 0, out, path, err);
    if (stat(arg, &st) != 0) return mg_fail(err, "FileNotFoundError", "'%s' does not exist", arg);
    if (!S_ISDIR(st.st_mode)) {
        if (!(*path = strdup(arg))) return mg_fail(err, "MemoryError", "out of memory");
        return 0;
    }
    char *skipped = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_dir_latest(arg, path, &skipped, &re);
    if (s == RT_OK && skipped) /* "name: reason" lines: each damaged newer file, named */
        for (char *line = strtok(skipped, "\n"); line; line = strtok(NULL, "\n"))
            mg_eprintf(out, "warning: skipped damaged checkpoint %s/%s\n", arg, line);
    free(skipped);
    if (s != RT_OK) return mg_fail_status(err, &re, "%s", re.msg);
    return 0;
}

/* An image folder's %dataset options ("images" in the dataset record; older
 * checkpoints have none: the defaults, or the copy loaded in this session). The file is
 * untrusted: options %dataset itself would refuse (a side over 4096, channels other
 * than 1 or 3, a fraction outside [0, 1)) are ignored, and the checksum check then
 * refuses the data set loaded with the defaults. */
static void images_of(json_t *im, mg_ws_origin *d)
{
    json_t *size = json_object_get(im, "size");
    d->has_images = json_is_object(im) && json_array_size(size) == 2;
    if (!d->has_images) return;
    d->images =
        (mg_ws_images){.image_h = (int)json_integer_value(json_array_get(size, 0)),
                       .image_w = (int)json_integer_value(json_array_get(size, 1)),
                       .channels = (int)json_integer_value(json_object_get(im, "channels")),
                       .val_fraction = json_number_value(json_object_get(im, "val_fraction")),
                       .seed = (uint64_t)json_integer_value(json_object_get(im, "seed")),
                       .skip_bad = json_is_true(json_object_get(im, "skip_bad"))};
    const mg_ws_images *o = &d->images;
    if (o->image_h < 0 || o->image_h > 4096 || o->image_w < 0 || o->image_w > 4096 ||
        (o->channels != 0 && o->channels != 1 && o->channels != 3) ||
        !(o->val_fraction >= 0 && o->val_fraction < 1))
        d->has_images = 0, d->images = (mg_ws_images){0};
}

/* A pixel CSV's --shape (an array of three sides in the dataset record); one %dataset
 * would refuse is ignored, as in images_of. */
static void shape_of(json_t *shape, mg_ws_origin *d)
{
    int v[3];
    if (json_array_size(shape) != 3) return;
    for (int i = 0; i < 3; i++) { /* out of int's range: 0, which the check refuses */
        json_int_t x = json_integer_value(json_array_get(shape, (size_t)i));
        v[i] = x > 0 && x <= 4096 ? (int)x : 0;
    }
    if (!mg_ws_shape_valid(v)) return;
    memcpy(d->images.shape, v, sizeof v);
    d->has_images = 1; /* reload with these options (the others: %dataset's defaults) */
}

int mgp_ckpt_read_origin(const rt_ckpt_reader *rd, const char *path, mg_ws_origin *o)
{
    memset(o, 0, sizeof *o);
    const char *ds = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_DATASET);
    json_t *dj = ds ? json_loads(ds, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(dj, "name"));
    if (name && name[0]) {
        snprintf(o->data, sizeof o->data, "%s", name);
        snprintf(o->ckpt, sizeof o->ckpt, "%s", path);
        o->val = (int)json_integer_value(json_object_get(dj, "val"));
        o->subset = (int)json_integer_value(json_object_get(dj, "subset"));
        const char *f = json_string_value(json_object_get(dj, "fnv1a64"));
        snprintf(o->fnv, sizeof o->fnv, "%s", f ? f : "");
        images_of(json_object_get(dj, "images"), o);
        shape_of(json_object_get(dj, "shape"), o);
    }
    json_decref(dj);
    return o->data[0] ? 0 : -1;
}

int mgp_ckpt_read_desc(const rt_ckpt_reader *rd, const char *path, mgp_ck_desc *d, mg_error *err)
{
    const char *hp = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS);
    const char *ds = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_DATASET);
    const char *sh = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_INPUT_SHAPE);
    const char *sc = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SCHEDULE);
    d->spec = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_SPEC);
    d->name = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_NAME);
    if (!d->name || !d->name[0]) d->name = "resumed";
    int64_t classes = 0;
    if (!hp || !ds || !sh || !d->spec ||
        rt_ckpt_reader_meta_i64(rd, RT_CKPT_KEY_NUM_CLASSES, &classes, NULL) != RT_OK)
        return mg_fail(err, "ValueError",
                       "checkpoint '%s' does not describe its run (no "
                       "model_spec, hyperparameters, dataset or input_shape) ---> HINT: only "
                       "checkpoints written by %%train or %%checkpoint save can be resumed",
                       path);
    json_t *h = json_loads(hp, 0, NULL), *dj = json_loads(ds, 0, NULL);
    json_t *sj = json_loads(sh, 0, NULL), *cj = sc ? json_loads(sc, 0, NULL) : NULL;
    int rc = 0;
    mg_run_opts_default(&d->o);
    if (!h || !dj || !sj || !json_is_string(json_object_get(dj, "name")) ||
        json_array_size(sj) != 3 || mg_run_opts_from_json(&d->o, h, err) < 0) {
        rc = mg_fail(err, "ValueError",
                     "checkpoint '%s': malformed hyperparameters, dataset "
                     "or input_shape",
                     path);
    } else {
        d->in = (rt_model_input){(int)json_integer_value(json_array_get(sj, 0)),
                                 (int)json_integer_value(json_array_get(sj, 1)),
                                 (int)json_integer_value(json_array_get(sj, 2)), (int)classes};
        mgp_ckpt_read_origin(rd, path, &d->ds);
        const char *spec = json_string_value(json_object_get(cj, "spec"));
        if (!spec) spec = d->o.schedule;
        if (strlen(spec) >= sizeof d->schedule)
            rc = mg_fail(err, "ValueError", "checkpoint '%s': schedule too long", path);
        else memcpy(d->schedule, spec, strlen(spec) + 1);
    }
    json_decref(h), json_decref(dj), json_decref(sj), json_decref(cj);
    return rc;
}
