/* mg_train_resume.c - %train on a --run-dir that already holds checkpoints, by its
 * --resume rule (mg_ckpt_train_autoresume):
 *   auto   continue the directory's run when the model, the data set (and its
 *          %dataset options: source, --val count or fraction, --subset, --size,
 *          --channels, --seed, --shape; then its training images' checksum) and the
 *          options the %train table marks run-defining (mg_train_table.c: batch, lr,
 *          optimiser and its settings, schedule, seed, augmentation, precision...)
 *          equal the ones typed, and the typed --epochs
 *          is not smaller (larger = train longer, said so). Otherwise the run goes to
 *          the first versioned directory beside it (DIR-v2, DIR-v3, ...) that is new or
 *          holds a run of exactly these options, so the old run stays intact and the
 *          same cell run again continues its own run. The output names the directory.
 *   never  a new run in DIR; its earlier checkpoints move to DIR/previous-<time>/.
 *   must   continue DIR's run; an error when there is none or its options differ.
 * Nothing typed is ever silently replaced by a checkpoint's value.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mg_ckpt_internal.h"
#include "mg_resume.h"
#include "mg_store.h"
#include "mg_workspace.h"
#include "rt_ckpt_dir.h"

#define MAX_VERSIONS 1000

/* The run-defining options %train was given, with "as loaded" resolved. */
typedef struct typed {
    const mg_run_opts *o;
    const char *data;     /* data set name ("" when unknown) */
    int val, subset;      /* -1 when unknown */
    char canonical[4096]; /* the model's canonical spec ("" when unknown) */
    const mg_ws_data *d;  /* the loaded copy of that data set the run would use, or NULL */
} typed;

static void resolve_typed(mg_ctx *ctx, const mg_run_opts *o, typed *t)
{
    memset(t, 0, sizeof *t);
    t->o = o;
    t->data = o->data;
    t->val = o->val;
    t->subset = -1;
    mg_error ignored;
    mg_workspace *ws = mg_ws_get(ctx, &ignored);
    if (!ws) return;
    mg_ws_model *m = mg_ws_model_find(ws, o->model);
    mg_ws_data *d = mg_ws_data_find(ws, o->data[0] ? o->data : NULL);
    if (!d && !o->data[0] && m && m->dataset[0]) d = mg_ws_data_find(ws, m->dataset);
    if (!o->data[0] && d) t->data = d->name;
    if (!o->data[0] && !d && m) t->data = m->dataset;
    if (d && !strcmp(d->name, t->data)) {
        if (t->val < 0) t->val = d->val;
        t->subset = d->subset;
        if (t->val == d->val) t->d = d; /* else %train reloads it with its own --val */
    }
    rt_model *model = NULL;
    if (m &&
        rt_model_create(&model, m->spec, &(rt_model_input){m->input.c, m->input.h, m->input.w, 0},
                        NULL) == RT_OK)
        snprintf(t->canonical, sizeof t->canonical, "%s", rt_model_spec_canonical(model));
    rt_model_destroy(model);
}

/* --val as %dataset took it: a count, or a fraction of train. */
static void val_text(int n, double fraction, char *buf, size_t cap)
{
    if (fraction > 0) snprintf(buf, cap, "%g", fraction);
    else snprintf(buf, cap, "%d", n);
}

/* A pixel CSV's --shape as typed, "none" when inferred. */
static void shape_text(const int *d, char *buf, size_t cap)
{
    if (d[0] > 0) snprintf(buf, cap, "%dx%dx%d", d[0], d[1], d[2]);
    else snprintf(buf, cap, "none");
}

/* The data set's defining options against the checkpoint's record dj of the one it was
 * trained on: source, --val (a count or a fraction), --subset, for an image folder
 * --size, --channels, --seed, for a pixel CSV --shape; then, when the options agree, the
 * training images themselves (their checksum: a folder whose files changed). Appends " %dataset --opt
 * typed (checkpoint stored)" to buf (at k, capacity n); returns the new length. */
static size_t data_differences(const typed *t, json_t *dj, char *buf, size_t k, size_t n)
{
#define DIFF(cond, ...) \
    if ((cond) && k < n) k += (size_t)snprintf(buf + k, n - k, __VA_ARGS__)
    const char *cdata = json_string_value(json_object_get(dj, "name"));
    if (!cdata) return k;
    int cval = (int)json_integer_value(json_object_get(dj, "val"));
    int csub = (int)json_integer_value(json_object_get(dj, "subset"));
    json_t *im = json_object_get(dj, "images");
    double cfrac = json_is_object(im) ? json_number_value(json_object_get(im, "val_fraction")) : 0;
    const mg_ws_images *ti = t->d ? &t->d->images : NULL;
    double tfrac = ti ? ti->val_fraction : 0;
    char a[32], b[32];
    DIFF(t->data[0] && strcmp(cdata, t->data), " data set %s (checkpoint %s)", t->data, cdata);
    val_text(t->val, tfrac, a, sizeof a);
    val_text(cval, cfrac, b, sizeof b);
    DIFF(t->val >= 0 && (t->d ? strcmp(a, b) : t->val != cval),
         " %%dataset --val %s (checkpoint %s)", a, b);
    DIFF(t->subset >= 0 && t->subset != csub, " %%dataset --subset %d (checkpoint %d)", t->subset,
         csub);
    if (ti && t->d->splits.images.layout && json_is_object(im)) {
        json_t *size = json_object_get(im, "size");
        int ch = (int)json_integer_value(json_array_get(size, 0));
        int cw = (int)json_integer_value(json_array_get(size, 1));
        int th = t->d->splits.train.h, tw = t->d->splits.train.w; /* as loaded */
        if (ch <= 0) ch = 64;                                     /* %dataset's default side */
        if (cw <= 0) cw = ch;
        int cc = (int)json_integer_value(json_object_get(im, "channels"));
        uint64_t cseed = (uint64_t)json_integer_value(json_object_get(im, "seed"));
        DIFF(th != ch || tw != cw, " %%dataset --size %dx%d (checkpoint %dx%d)", th, tw, ch, cw);
        DIFF(cc && t->d->splits.train.c != cc, " %%dataset --channels %d (checkpoint %d)",
             t->d->splits.train.c, cc);
        DIFF((tfrac > 0 || cfrac > 0) && ti->seed != cseed,
             " %%dataset --seed %" PRIu64 " (checkpoint %" PRIu64 ")", ti->seed, cseed);
    }
    json_t *cs = json_object_get(dj, "shape");
    int cshape[3], tshape[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) cshape[i] = (int)json_integer_value(json_array_get(cs, (size_t)i));
    if (ti) memcpy(tshape, ti->shape, sizeof tshape);
    shape_text(tshape, a, sizeof a);
    shape_text(cshape, b, sizeof b);
    DIFF(t->d && strcmp(a, b), " %%dataset --shape %s (checkpoint %s)", a, b);
    const char *cfnv = json_string_value(json_object_get(dj, "fnv1a64"));
    char fnv[24];
    if (t->d) snprintf(fnv, sizeof fnv, "%016" PRIx64, t->d->splits.train.checksum);
    DIFF(k == 0 && t->d && cfnv && cfnv[0] && strcmp(fnv, cfnv),
         " the data set's training images (checksum %s, checkpoint %s: its files changed)", fnv,
         cfnv);
#undef DIFF
    return k;
}

/* Appends " --opt typed (checkpoint stored)" for every run-defining option of t that
 * differs from the checkpoint at path; 0 = none differ, -1 = not a run's checkpoint. */
static int differences(const typed *t, const char *path, char *buf, size_t n, int *longer,
                       int *ck_epochs)
{
    rt_ckpt_reader *rd = NULL;
    buf[0] = 0;
    *longer = 0;
    if (rt_ckpt_reader_open(path, RT_CKPT_OPEN_HEADER_ONLY, &rd, NULL) != RT_OK) return -1;
    const char *hp = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS);
    const char *ds = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_DATASET);
    const char *canon = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SPEC_CANONICAL);
    json_t *h = hp ? json_loads(hp, 0, NULL) : NULL, *dj = ds ? json_loads(ds, 0, NULL) : NULL;
    mg_run_opts c;
    mg_run_opts_default(&c);
    mg_error ignored;
    int rc = h && dj && mg_run_opts_from_json(&c, h, &ignored) == 0 ? 0 : -1;
    size_t k = 0;
    const mg_run_opts *o = t->o;
#define DIFF(cond, ...) \
    if (rc == 0 && (cond) && k < n) k += (size_t)snprintf(buf + k, n - k, __VA_ARGS__)
    DIFF(canon && t->canonical[0] && strcmp(canon, t->canonical), " the model");
    if (rc == 0) k = data_differences(t, dj, buf, k, n);
    if (rc == 0 && k < n) {
        buf[k] = 0;
        mg_run_opts_differences(o, &c, buf, n); /* the table's run-defining options */
        k = strlen(buf);
    }
#undef DIFF
    if (rc == 0) *longer = o->epochs > c.epochs, *ck_epochs = c.epochs;
    json_decref(h);
    json_decref(dj);
    rt_ckpt_reader_destroy(rd);
    return rc < 0 ? -1 : k > 0;
}

/* When the model differs: the checkpoint's model, as a display (the error stays short). */
static void show_model(mg_ctx *ctx, const char *path, const typed *t)
{
    rt_ckpt_reader *rd = NULL;
    if (rt_ckpt_reader_open(path, RT_CKPT_OPEN_HEADER_ONLY, &rd, NULL) != RT_OK) return;
    const char *canon = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SPEC_CANONICAL);
    if (canon && t->canonical[0] && strcmp(canon, t->canonical))
        mg_printf(ctx->out, "The model of %s:\n%s%s", path, canon,
                  canon[0] && canon[strlen(canon) - 1] == '\n' ? "" : "\n");
    rt_ckpt_reader_destroy(rd);
}

/* Starting over in a run directory that holds checkpoints: its Kiln-named files move to
 * DIR/previous-<UTC time>/ so the new run's (lower-step) files are not rotated away and
 * nothing is deleted. */
static int set_aside(mg_ctx *ctx, const char *dir, mg_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    char sub[1100], from[1400], to[1400], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
    snprintf(sub, sizeof sub, "%s/previous-%s", dir, stamp);
    int moved = 0, rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        size_t n = strlen(e->d_name), x = strlen(RT_CKPT_EXT);
        if (strncmp(e->d_name, RT_CKPT_DIR_PREFIX, strlen(RT_CKPT_DIR_PREFIX)) || n <= x ||
            strcmp(e->d_name + n - x, RT_CKPT_EXT))
            continue;
        if (!moved && mkdir(sub, 0777) != 0 && errno != EEXIST)
            rc = mg_fail(err, "OSError", "%%train: cannot create %s: %s", sub, strerror(errno));
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", sub, e->d_name);
        if (rc == 0 && rename(from, to) != 0)
            rc = mg_fail(err, "OSError", "%%train: cannot move %s to %s: %s", from, sub,
                         strerror(errno));
        moved += rc == 0;
    }
    closedir(d);
    if (moved)
        mg_printf(ctx->out,
                  "--resume never: a new run in %s; its %d earlier checkpoint%s "
                  "moved to %s\n",
                  dir, moved, moved == 1 ? "" : "s", sub);
    return rc;
}

/* The newest valid checkpoint of dir (NULL: none; damaged newer files are warned). */
static char *latest(mg_ctx *ctx, const char *dir, int quiet, mg_error *err, int *failed)
{
    struct stat st;
    *failed = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    char *path = NULL, *skipped = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_dir_latest(dir, &path, &skipped, &re);
    if (s == RT_ENOMEM) {
        *failed = 1;
        mg_fail_status(err, &re, "%%train: %s", re.msg);
        free(skipped);
        return NULL;
    }
    if (s != RT_OK && skipped && !quiet)
        mg_eprintf(ctx->out,
                   "warning: %%train: no valid checkpoint in %s to continue from; "
                   "a new run starts there:\n%s",
                   dir, skipped);
    if (s == RT_OK && skipped && !quiet)
        for (char *line = strtok(skipped, "\n"); line; line = strtok(NULL, "\n"))
            mg_eprintf(ctx->out, "warning: skipped damaged checkpoint %s/%s\n", dir, line);
    free(skipped);
    return s == RT_OK ? path : NULL;
}

/* Continues the run of checkpoint path with what %train was given for run control. */
static int continue_run(mg_ctx *ctx, const mg_run_opts *o, const char *path, int longer,
                        int ck_epochs, mg_error *err)
{
    char name[1100];
    mg_printf(ctx->out, "%s holds this run (same options): continuing it%s",
              mg_store_display(ctx, o->run_dir, name, sizeof name),
              longer ? "" : " (--resume never starts a new one)\n");
    if (longer)
        mg_printf(ctx->out, " and training it longer: --epochs %d (it planned %d)\n", o->epochs,
                  ck_epochs);
    mg_resume_opts ro;
    mg_resume_opts_default(&ro);
    ro.caller = "%train";
    ro.epochs = o->epochs;
    snprintf(ro.device, sizeof ro.device, "%s", o->device);
    snprintf(ro.results, sizeof ro.results, "%s", o->results);
    ro.time_limit_s = o->time_limit_s;
    snprintf(ro.checkpoint_every, sizeof ro.checkpoint_every, "%s", o->checkpoint_every_text);
    ro.keep = o->keep;
    return mg_ckpt_resume(ctx, path, &ro, err);
}

/* --resume auto with options that differ from DIR's run: DIR-vN. */
static int versioned(mg_ctx *ctx, mg_run_opts *o, const typed *t, const char *why, int *handled,
                     mg_error *err)
{
    char base[sizeof o->run_dir], dir[sizeof o->run_dir + 16], diff[1024];
    snprintf(base, sizeof base, "%s", o->run_dir);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/') base[--bl] = 0;
    for (int v = 2; v <= MAX_VERSIONS; v++) {
        snprintf(dir, sizeof dir, "%s-v%d", base, v);
        if (strlen(dir) >= sizeof o->run_dir)
            return mg_fail(err, "OSError",
                           "%%train: --run-dir %s: name too long for a "
                           "versioned directory",
                           base);
        int failed = 0, longer = 0, ck_epochs = 0;
        if (mg_store_fetch_sibling(ctx, dir, err) < 0) return *handled = 1, -1;
        char *path = latest(ctx, dir, 1, err, &failed);
        if (failed) return *handled = 1, -1;
        struct stat st;
        if (!path && stat(dir, &st) == 0) { /* there, but no run of ours: use it if empty */
            DIR *dd = S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
            int empty = dd != NULL;
            struct dirent *e;
            while (dd && (e = readdir(dd)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
            if (dd) closedir(dd);
            if (!empty) continue;
        }
        int d = path ? differences(t, path, diff, sizeof diff, &longer, &ck_epochs) : -1;
        if (path && d != 0) {
            free(path);
            continue;
        }
        char bbuf[1100], dbuf[1100]; /* an s3:// run's staging directories: its URLs */
        const char *bname = mg_store_display(ctx, base, bbuf, sizeof bbuf);
        const char *dname = mg_store_display(ctx, dir, dbuf, sizeof dbuf);
        mg_printf(ctx->out, "%s holds a run with other options:%s\n", bname, why);
        snprintf(o->run_dir, sizeof o->run_dir, "%s", dir);
        if (mg_store_rehome(ctx, dir, err) < 0) {
            free(path);
            return *handled = 1, -1;
        }
        if (!path) {
            mg_printf(ctx->out,
                      "This run goes to %s (the run in %s is kept; --resume never "
                      "would start over in %s instead)\n",
                      dname, bname, bname);
            return 0;
        }
        *handled = 1;
        int rc = continue_run(ctx, o, path, longer, ck_epochs, err);
        free(path);
        return rc;
    }
    return mg_fail(err, "OSError",
                   "%%train: %s-v2 ... %s-v%d are all taken ---> HINT: give "
                   "a new --run-dir",
                   base, base, MAX_VERSIONS);
}

int mg_ckpt_train_autoresume(mg_ctx *ctx, mg_run_opts *o, mg_resume_mode mode, int *handled,
                             mg_error *err)
{
    *handled = 0;
    if (!o->run_dir[0]) {
        if (mode == MG_RESUME_MUST)
            return *handled = 1, mg_fail(err, "ValueError",
                                         "%%train: --resume must needs "
                                         "--run-dir DIR (the run to continue)");
        return 0;
    }
    if (mode == MG_RESUME_NEVER) { /* rank 0 alone moves the files */
        int rc = rt_dist_is_writer() ? set_aside(ctx, o->run_dir, err) : 0;
        return *handled = rc < 0, rc;
    }
    int failed = 0;
    char *path = latest(ctx, o->run_dir, 0, err, &failed);
    if (failed) return *handled = 1, -1;
    char buf[1100];
    const char *name = mg_store_display(ctx, o->run_dir, buf, sizeof buf);
    if (!path && mode == MG_RESUME_MUST)
        return *handled = 1, mg_fail(err, "FileNotFoundError",
                                     "%%train: --resume must: no "
                                     "valid checkpoint in %s to continue ---> HINT: "
                                     "--resume auto starts a new run there",
                                     name);
    if (!path) return 0;
    typed t;
    resolve_typed(ctx, o, &t);
    char diff[1024];
    int longer = 0, ck_epochs = 0;
    int d = differences(&t, path, diff, sizeof diff, &longer, &ck_epochs);
    int rc = 0;
    if (d == 0) {
        *handled = 1;
        rc = continue_run(ctx, o, path, longer, ck_epochs, err);
    } else if (mode == MG_RESUME_MUST) {
        *handled = 1;
        show_model(ctx, path, &t); /* the detail beside the short error */
        rc = mg_fail(err, "ValueError",
                     "%%train --resume must: the run in %s has other "
                     "options:%s ---> HINT: --resume auto trains these options in a new "
                     "directory beside it (%s-v2...); --resume never starts over in %s",
                     name, d < 0 ? " (its checkpoint does not describe them)" : diff, name, name);
    } else {
        rc = versioned(ctx, o, &t, d < 0 ? " (its checkpoint does not describe them)" : diff,
                       handled, err);
    }
    free(path);
    return rc;
}
