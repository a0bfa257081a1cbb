/* mg_workspace.c - the training magics' session state (see mg_workspace.h): small
 * arrays of models and data sets in one session slot. Nothing here trains or draws;
 * loading a data set reports download progress as one display updated in place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg_workspace.h"
#include "rt_store_mirror.h"
#include "rt_clock.h"

#define WS_KEY "train.workspace"

struct mg_workspace {
    mg_ws_model *models;
    int nmodels, last_model;
    mg_ws_data **data; /* pointers: entries stay put while the array grows */
    int ndata, last_data;
};

void mg_ws_backend_free(rt_backend *b)
{
    if (!b) return;
    rt_backend_close(b);
    free(b);
}

static void model_clear(mg_ws_model *e)
{
    rt_model_destroy(e->trained);
    mg_ws_backend_free(e->backend);
    free(e->spec);
    e->trained = NULL;
    e->backend = NULL;
    e->spec = NULL;
}

static void ws_destroy(void *p)
{
    mg_workspace *ws = p;
    for (int i = 0; i < ws->nmodels; i++) model_clear(&ws->models[i]);
    for (int i = 0; i < ws->ndata; i++) {
        rt_dataset_splits_deinit(&ws->data[i]->splits);
        free(ws->data[i]);
    }
    free(ws->models);
    free(ws->data);
    free(ws);
}

mg_workspace *mg_ws_get(mg_ctx *ctx, mg_error *err)
{
    mg_workspace *ws = mg_session_get(ctx->session, WS_KEY);
    if (ws) return ws;
    ws = calloc(1, sizeof *ws);
    if (ws) ws->last_model = ws->last_data = -1;
    /* mg_session_set destroys ws itself when it fails */
    if (!ws || mg_session_set(ctx->session, WS_KEY, ws, ws_destroy) < 0) {
        mg_fail(err, "MemoryError", "out of memory creating the training workspace");
        return NULL;
    }
    return ws;
}

/* ---- models ---- */

int mg_ws_model_define(mg_workspace *ws, const char *name, const char *spec,
                       const rt_model_input *in, const char *dataset, mg_error *err)
{
    char *copy = strdup(spec);
    if (!copy) return mg_fail(err, "MemoryError", "out of memory storing model '%s'", name);
    mg_ws_model *e = NULL;
    for (int i = 0; i < ws->nmodels; i++)
        if (!strcmp(ws->models[i].name, name)) e = &ws->models[i];
    if (!e) {
        mg_ws_model *v = realloc(ws->models, (size_t)(ws->nmodels + 1) * sizeof *v);
        if (!v) {
            free(copy);
            return mg_fail(err, "MemoryError", "out of memory storing model '%s'", name);
        }
        ws->models = v;
        e = &v[ws->nmodels++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
    }
    model_clear(e);
    memset(&e->origin, 0, sizeof e->origin);
    e->spec = copy;
    e->input = *in;
    snprintf(e->dataset, sizeof e->dataset, "%s", dataset ? dataset : "");
    ws->last_model = (int)(e - ws->models);
    return 0;
}

mg_ws_model *mg_ws_model_find(mg_workspace *ws, const char *name)
{
    if (!name || !*name) return ws->last_model >= 0 ? &ws->models[ws->last_model] : NULL;
    for (int i = 0; i < ws->nmodels; i++)
        if (!strcmp(ws->models[i].name, name)) return &ws->models[i];
    return NULL;
}

void mg_ws_model_set_trained(mg_ws_model *e, rt_model *m, rt_backend *b)
{
    rt_model_destroy(e->trained);
    mg_ws_backend_free(e->backend);
    e->trained = m;
    e->backend = b;
    memset(&e->origin, 0, sizeof e->origin);
}

int mg_ws_model_count(const mg_workspace *ws) { return ws->nmodels; }
mg_ws_model *mg_ws_model_at(mg_workspace *ws, int i)
{
    return i >= 0 && i < ws->nmodels ? &ws->models[i] : NULL;
}

/* ---- data sets ---- */

mg_ws_data *mg_ws_data_find(mg_workspace *ws, const char *name)
{
    if (!name || !*name) return ws->last_data >= 0 ? ws->data[ws->last_data] : NULL;
    for (int i = ws->ndata; i-- > 0;)
        if (!strcmp(ws->data[i]->name, name)) return ws->data[i];
    return NULL;
}

typedef struct dl_state {
    mg_ctx *ctx;
    char id[48];
    double last;
    int shown;
} dl_state;

/* Download progress: one display, updated at most 4 times a second. */
static int on_download(const char *file, uint64_t done, uint64_t total, void *user)
{
    dl_state *s = user;
    double t = rt_clock_s();
    if (s->shown && t - s->last < 0.25 && done != total)
        return s->ctx->host->interrupted(s->ctx->host->user);
    s->last = t;
    char text[320];
    if (total)
        snprintf(text, sizeof text, "downloading %s: %.1f / %.1f MB (%.0f%%)", file,
                 (double)done / 1e6, (double)total / 1e6, 100.0 * (double)done / (double)total);
    else snprintf(text, sizeof text, "downloading %s: %.1f MB", file, (double)done / 1e6);
    json_t *data = json_pack("{s:s}", "text/plain", text);
    if (data && s->ctx->out->display)
        s->ctx->out->display(s->ctx->out->user, data, NULL, s->id, s->shown);
    json_decref(data);
    s->shown = 1;
    return s->ctx->host->interrupted(s->ctx->host->user);
}

static int host_stop(void *user)
{
    mg_ctx *ctx = user;
    return ctx->host && ctx->host->interrupted && ctx->host->interrupted(ctx->host->user);
}

static int stop_dl(void *user) { return host_stop(((dl_state *)user)->ctx); }

/* Keeps only the first n training images (the split's name gets "[:n]" and its
 * checksum is recomputed as rt_dataset.h defines it, from the raw bytes). */
static void cut(mg_ws_data *d, int n)
{
    rt_dataset *t = &d->splits.train;
    if (n <= 0 || n >= t->n) return;
    size_t img = (size_t)t->c * (size_t)t->h * (size_t)t->w;
    uint8_t *raw = malloc(img);
    if (!raw) return;
    t->n = n;
    d->subset = n;
    size_t len = strlen(t->name);
    snprintf(t->name + len, sizeof t->name - len, "[:%d]", n);
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64: pixels (N, C, H, W), then labels */
    for (int i = 0; i < n; i++) {
        rt_dataset_image_u8(t, i, raw);
        for (size_t k = 0; k < img; k++) h = (h ^ raw[k]) * 0x100000001b3ull;
    }
    for (int i = 0; i < n; i++) h = (h ^ t->labels[i]) * 0x100000001b3ull;
    t->checksum = h;
    free(raw);
}

mg_ws_data *mg_ws_data_load(mg_workspace *ws, mg_ctx *ctx, const char *name, int val, int subset,
                            const char *dir, const char *url, mg_error *err)
{
    return mg_ws_data_load_images(ws, ctx, name, val, subset, dir, url, NULL, err);
}

/* An s3:// data set (an archive or a folder): mirrored into the staging directory,
 * fetching only what changed (rt_store_mirror.h), bounded by KILN_S3_DATA_MAX_GB (50);
 * then read as the local path in local. */
static int mirror(mg_ctx *ctx, const char *url, char *local, size_t cap, mg_error *err)
{
    const char *e = getenv("KILN_S3_DATA_MAX_GB");
    double gb = e && *e ? atof(e) : 50;
    rt_store_mirror_stats st;
    rt_error re = {0};
    if (gb <= 0) return mg_fail(err, "ValueError", "KILN_S3_DATA_MAX_GB=%s: a size in GiB > 0", e);
    if (rt_store_mirror(url, (uint64_t)(gb * (double)(1ull << 30)), local, cap, &st, &re) != RT_OK)
        return mg_fail_status(err, &re, "data set %s: %s", url, re.msg);
    mg_printf(ctx->out, "%s: %zu object%s (%.1f MiB); fetched %zu (%.1f MiB)%s%s, into %s\n", url,
              st.objects, st.objects == 1 ? "" : "s", (double)st.bytes / (1 << 20), st.fetched,
              (double)st.fetched_bytes / (1 << 20),
              st.fetched ? "" : ", the local copy is up to date",
              st.removed ? "; removed files the store no longer has" : "", local);
    return 0;
}

/* " ---> HINT: did you mean fashion-mnist?" in hint for a name that is not found and is
 * one or two typos from a known data set's name ("" otherwise); returns hint. */
static const char *near_name(const char *name, rt_status s, char hint[96])
{
    hint[0] = 0;
    if (s != RT_ENOTFOUND || strchr(name, '/')) return hint;
    const char *const *known = rt_dataset_known_names();
    const char *best = NULL;
    size_t bd = 3;
    for (size_t i = 0; known[i]; i++) {
        size_t d = mg_edit_distance(name, known[i]);
        if (d > 0 && d < bd) bd = d, best = known[i];
    }
    if (!best) return hint;
    snprintf(hint, 96, " ---> HINT: did you mean %s?", best);
    return hint;
}

int mg_ws_shape_valid(const int d[3])
{
    for (int i = 0; i < 3; i++)
        if (d[i] < 1 || d[i] > 4096) return 0;
    return d[0] <= 4 || d[2] <= 4;
}

/* An image folder whose files (names, sizes, times) are no longer those it was loaded
 * from, or that is gone: the session's copy is stale and the folder is read again. */
static int folder_changed(const mg_ws_data *d)
{
    if (!d->splits.images.layout || rt_store_is_url(d->name)) return 0;
    uint64_t key = 0;
    rt_error ignored = {0};
    return rt_dataset_folder_key(d->name, &key, &ignored) != RT_OK ||
           key != d->splits.images.folder_key;
}

mg_ws_data *mg_ws_data_load_images(mg_workspace *ws, mg_ctx *ctx, const char *name, int val,
                                   int subset, const char *dir, const char *url,
                                   const mg_ws_images *images, mg_error *err)
{
    int slot = -1;
    for (int i = 0; i < ws->ndata; i++)
        if (!strcmp(ws->data[i]->name, name)) slot = i;
    mg_ws_images img = {0};
    if (images) img = *images;
    else if (slot >= 0) img = ws->data[slot]->images;
    if (slot >= 0 && !dir && !url && !memcmp(&img, &ws->data[slot]->images, sizeof img) &&
        !folder_changed(ws->data[slot])) {
        mg_ws_data *d = ws->data[slot];
        /* a cut can be made on a whole split, never undone */
        if ((val < 0 || d->val == val) &&
            (subset < 0 || subset == d->subset || (d->subset == 0 && subset > 0))) {
            cut(d, subset);
            d->reused = 1;
            ws->last_data = slot;
            return d;
        }
    }
    if (slot < 0) {
        mg_ws_data **v = realloc(ws->data, (size_t)(ws->ndata + 1) * sizeof *v);
        if (!v) return mg_fail(err, "MemoryError", "out of memory loading '%s'", name), NULL;
        ws->data = v;
    }
    mg_ws_data *d = calloc(1, sizeof *d);
    if (!d) return mg_fail(err, "MemoryError", "out of memory loading '%s'", name), NULL;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->val = val < 0 ? 0 : val;
    d->images = img;
    dl_state dl = {.ctx = ctx};
    snprintf(dl.id, sizeof dl.id, "kiln-dl-%p-%ld", (void *)d, (long)time(NULL));
    char local[1200];
    if (rt_store_is_url(name) && mirror(ctx, name, local, sizeof local, err) < 0) {
        free(d);
        return NULL;
    }
    rt_dataset_opts o = {.name = rt_store_is_url(name) ? local : name,
                         .val = d->val,
                         .progress = on_download,
                         .user = &dl,
                         .should_stop = stop_dl,
                         .dir = dir,
                         .url = url,
                         .image_h = img.image_h,
                         .image_w = img.image_w,
                         .channels = img.channels,
                         .val_fraction = img.val_fraction,
                         .seed = img.seed,
                         .skip_bad = img.skip_bad};
    memcpy(o.shape, img.shape, sizeof o.shape);
    rt_error re = {0};
    rt_status s = rt_dataset_load(&d->splits, &o, &re);
    if (s != RT_OK) {
        char hint[96];
        free(d);
        if (s == RT_EINTERRUPTED || host_stop(ctx))
            mg_fail(err, "KeyboardInterrupt", "loading data set '%s' was interrupted", name);
        else if (strstr(re.msg, name)) /* the message names it already: once is enough */
            mg_fail_status(err, &re, "%s%s", re.msg, near_name(name, s, hint));
        else
            mg_fail_status(err, &re, "data set '%s': %s%s", name, re.msg, near_name(name, s, hint));
        return NULL;
    }
    if (dl.shown) { /* the download display ends saying where the files are */
        char text[700];
        snprintf(text, sizeof text, "downloaded %s into %s", name, d->splits.source);
        json_t *data = json_pack("{s:s}", "text/plain", text);
        if (data && ctx->out->display) ctx->out->display(ctx->out->user, data, NULL, dl.id, 1);
        json_decref(data);
    }
    cut(d, subset);
    if (slot >= 0) { /* one copy per name: the new one replaces the old */
        rt_dataset_splits_deinit(&ws->data[slot]->splits);
        free(ws->data[slot]);
    } else {
        slot = ws->ndata++;
    }
    ws->data[slot] = d;
    ws->last_data = slot;
    return d;
}
