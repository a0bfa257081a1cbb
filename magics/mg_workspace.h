/* mg_workspace.h - what the training magics keep between cells: named models (spec
 * text, input shape, and once trained the model on its backend), loaded data sets and
 * the name of the last run's model. Stored in the mg_session slot "train.workspace"
 * (no globals): one workspace per engine, freed with the session.
 *
 * Models: %%model NAME defines (or redefines) a spec; %train builds a fresh rt_model
 * from it and, when the run ends, gives the trained model to the workspace
 * (mg_ws_model_set_trained); %evaluate/%predict/%checkpoint use that one.
 * Data sets: keyed by the name the user gave plus --val; %dataset loads, %train
 * --data loads on demand.
 */
#ifndef MG_WORKSPACE_H
#define MG_WORKSPACE_H

#include "mg.h"
#include "rt.h"

typedef struct mg_workspace mg_workspace;

/* %dataset's image-folder options (rt_dataset_opts' fields of the same names). */
typedef struct mg_ws_images {
    int image_h, image_w, channels, skip_bad;
    double val_fraction;
    uint64_t seed;
    int shape[3]; /* a pixel CSV's --shape as written (zeros: inferred) */
} mg_ws_images;

/* A --shape %dataset takes: CxHxW or HxWxC, sides 1 to 4096, one end a channel count
 * (1 to 4). */
int mg_ws_shape_valid(const int shape[3]);

/* The data set a checkpoint says its model was trained on: name, --val, --subset, the
 * image-folder options and the training split's checksum (hex; "" when not recorded).
 * %resume reloads it; %checkpoint load keeps it with the model for %evaluate,
 * %predict and %export. Read from the file, so untrusted: data[0] == 0 = none. */
typedef struct mg_ws_origin {
    char data[256];
    int val, subset;
    int has_images; /* an image folder or a --shape pixel CSV: reload with these options */
    mg_ws_images images;
    char fnv[24];
    char ckpt[1024]; /* the checkpoint it came from, for messages */
} mg_ws_origin;

typedef struct mg_ws_model {
    char name[64];
    char *spec;           /* the %%model body, verbatim */
    rt_model_input input; /* the shape it was checked against */
    char dataset[256];    /* the data set it was checked against ("" = default) */
    rt_model *trained;    /* NULL until a run (or %checkpoint load) gave one */
    rt_backend *backend;  /* the trained model's backend (heap; owned) */
    mg_ws_origin origin;  /* set by %checkpoint load: the data set the weights need */
} mg_ws_model;

typedef struct mg_ws_data {
    char name[256];      /* as the user wrote it: "fashion-mnist", a path */
    int val;             /* --val it was loaded with */
    mg_ws_images images; /* the image-folder options it was loaded with */
    int subset;          /* --subset: train split cut to its first N images (0 = all) */
    int reused;          /* the last load found this copy current: nothing was read or decoded */
    rt_dataset_splits splits;
} mg_ws_data;

/* The session's workspace, created on first use; NULL with err on out of memory. */
mg_workspace *mg_ws_get(mg_ctx *ctx, mg_error *err);

/* ---- models ---- */
/* Defines (or replaces, dropping its trained model) model name. spec is copied. */
RT_MUST_USE int mg_ws_model_define(mg_workspace *ws, const char *name, const char *spec,
                                   const rt_model_input *in, const char *dataset, mg_error *err);
/* name "" or NULL = the model defined last. NULL when none (no error filled). */
mg_ws_model *mg_ws_model_find(mg_workspace *ws, const char *name);
/* Takes ownership of m and b (b heap-allocated with malloc, opened); frees the previous
 * trained model of that entry and forgets its origin (a run trained it here). */
void mg_ws_model_set_trained(mg_ws_model *e, rt_model *m, rt_backend *b);
int mg_ws_model_count(const mg_workspace *ws);
mg_ws_model *mg_ws_model_at(mg_workspace *ws, int i);

/* ---- data sets ---- */
/* Returns the data set name loaded with val images carved off and its training split
 * cut to the first subset images, loading it when the workspace holds no such copy
 * (val < 0 / subset < 0: whatever copy is loaded, else val 0 / the whole split).
 * dir/url (may be NULL) as %dataset --dir/--url; given, they force a reload. One copy
 * per name: a reload replaces the previous one. An image folder's copy is reused only
 * while the folder holds the same files (rt_dataset_folder_key). Shows download progress on out.
 * Borrowed result, NULL with err (naming the data set) on failure. */
mg_ws_data *mg_ws_data_load(mg_workspace *ws, mg_ctx *ctx, const char *name, int val, int subset,
                            const char *dir, const char *url, mg_error *err);
/* The same with image-folder options (NULL = those of the loaded copy, else defaults);
 * options that differ from the loaded copy's force a reload (the decode cache makes it
 * cheap). */
mg_ws_data *mg_ws_data_load_images(mg_workspace *ws, mg_ctx *ctx, const char *name, int val,
                                   int subset, const char *dir, const char *url,
                                   const mg_ws_images *images, mg_error *err);
/* name "" or NULL = the data set loaded last; NULL when none is loaded. */
mg_ws_data *mg_ws_data_find(mg_workspace *ws, const char *name);

/* The data set o names, as %resume finds it: the copy loaded in this session, else
 * loaded with o's --val, --subset and image-folder options; refused unless its training
 * split has o's checksum. A data set o names by URL is not fetched (a checkpoint does
 * not choose what is downloaded). Errors name caller, o's checkpoint and data set.
 * Borrowed result, NULL with err. (mg_ws_origin.c) */
mg_ws_data *mg_ws_origin_open(mg_workspace *ws, mg_ctx *ctx, const mg_ws_origin *o,
                              const char *caller, mg_error *err);

/* Frees an rt_backend made with malloc + rt_backend_open (accepts NULL). */
void mg_ws_backend_free(rt_backend *b);

#endif
