/* mg_run_init.c - fine-tuning options of a run: --init (the starting weights from a run
 * directory, a checkpoint or a safetensors state_dict, rt_model_init.h), --freeze and
 * --lr-mult (one lr multiplier a parameter tensor, 0 = frozen, handed to the trainer as
 * rt_trainer_config.param_lr_mult). Both act in mg_run_create, before anything trains,
 * and every problem is an error naming the option. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_ckpt.h"
#include "mg_run_internal.h"
#include "rt_model_init.h"
#include "rt_store.h"

/* name lies under prefix: equal, or prefix then a '.' (or prefix ends with one). */
static int under(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n)) return 0;
    return name[n] == 0 || name[n] == '.' || (n > 0 && prefix[n - 1] == '.');
}

/* The part of a tensor name before its last '.' ("layer1.0.conv1" of ".weight"). */
static size_t layer_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

/* --init: the weights of SOURCE (or of the workspace model init_model) into the model
 * and its replicas; one line says what was loaded. */
static int load_init(mg_run *r, mg_error *err)
{
    const mg_run_opts *o = &r->o;
    rt_init_report rep;
    rt_error re = {0};
    char line[800], *path = NULL;
    if (o->init_model[0]) {
        mg_workspace *ws = mg_ws_get(r->ctx, err);
        mg_ws_model *e = ws ? mg_ws_model_find(ws, o->init_model) : NULL;
        if (!e || !e->trained)
            return mg_fail(err, "ValueError", "%%train: no trained model '%s' to start from",
                           o->init_model);
        if (rt_model_init_model(r->model, e->trained, o->init_strict, &rep, &re) != RT_OK)
            return mg_fail_status(err, &re, "%%train: --init: %s", re.msg);
    } else {
        struct stat st;
        if (!rt_store_is_url(o->init) && stat(o->init, &st) != 0)
            return mg_fail(err, "FileNotFoundError",
                           "%%train: --init %s: no such file or directory ---> HINT: give a "
                           "Kiln run directory, a checkpoint or a .safetensors file",
                           o->init);
        if (mg_ckpt_resolve(o->init, r->ctx->out, &path, err) < 0) {
            char msg[sizeof err->evalue];
            snprintf(msg, sizeof msg, "%s", err->evalue);
            snprintf(err->evalue, sizeof err->evalue, "%%train: --init %.200s: %.700s", o->init,
                     msg);
            return -1;
        }
        rt_status s = rt_model_init_file(r->model, path, o->init_strict, &rep, &re);
        free(path);
        if (s != RT_OK)
            return mg_fail_status(err, &re, "%%train: --init%s: %s",
                                  o->init_strict ? " (--init-strict)" : "", re.msg);
    }
    for (int i = 0; i < r->nrep; i++) { /* the other devices start from the same weights */
        rt_init_report same;
        if (rt_model_init_model(r->rep_m[i], r->model, 1, &same, &re) != RT_OK)
            return mg_fail_status(err, &re, "%%train: --init: %s", re.msg);
    }
    rt_init_report_text(&rep, line, sizeof line);
    mg_printf(r->ctx->out, "--init %s: %s\n", o->init_model[0] ? o->init_model : o->init, line);
    return 0;
}

/* The multipliers of --lr-mult and --freeze, one a trainable tensor (0: frozen). */
static int resolve_mult(mg_run *r, mg_error *err)
{
    const mg_run_opts *o = &r->o;
    int nt = rt_model_num_tensors(r->model), np = 0;
    rt_named_tensor *t = calloc((size_t)(nt > 0 ? nt : 1), sizeof *t);
    if (!t || !(r->lr_mult = calloc((size_t)(nt > 0 ? nt : 1), sizeof *r->lr_mult))) {
        free(t);
        return mg_fail(err, "MemoryError", "%%train: out of memory");
    }
    rt_error re = {0};
    for (int i = 0; i < nt; i++) {
        if (rt_model_tensor(r->model, i, &t[np], &re) != RT_OK) {
            free(t);
            return mg_fail_status(err, &re, "%%train: %s", re.msg);
        }
        if (t[np].trainable) r->lr_mult[np++] = 1.0;
    }
    int rc = 0;
    if (o->lr_mult[0]) {
        char prefix[MG_LR_MULT_MAX][128];
        double f[MG_LR_MULT_MAX];
        int n = 0;
        rc = mg_run_parse_lr_mult(o->lr_mult, "%train", prefix, f, MG_LR_MULT_MAX, &n, err);
        for (int k = 0; k < n && rc == 0; k++) {
            int hits = 0;
            for (int i = 0; i < np; i++)
                if (under(t[i].name, prefix[k])) r->lr_mult[i] = f[k], hits++;
            if (!hits)
                rc = mg_fail(err, "ValueError",
                             "%%train: --lr-mult %s=%g: '%s' matches no parameter of model '%s' "
                             "(its first is %s, its last %s)",
                             prefix[k], f[k], prefix[k], r->model_name, np ? t[0].name : "none",
                             np ? t[np - 1].name : "none");
        }
    }
    const char *p = o->freeze;
    char item[256];
    while (rc == 0 && o->freeze[0] && mg_run_next_item(&p, item, sizeof item)) {
        int hits = 0;
        if (!strcmp(item, "body")) { /* all but the last layer with parameters */
            size_t hl = np ? layer_len(t[np - 1].name) : 0;
            for (int i = 0; i < np; i++)
                if (layer_len(t[i].name) != hl || strncmp(t[i].name, t[np - 1].name, hl))
                    r->lr_mult[i] = 0, hits++;
        } else if (!strncmp(item, "until:", 6)) {
            int first = 0;
            while (first < np && !under(t[first].name, item + 6)) first++;
            if (first == np) hits = -1;
            for (int i = 0; i < first && first < np; i++) r->lr_mult[i] = 0, hits++;
        } else {
            for (int i = 0; i < np; i++)
                if (under(t[i].name, item)) r->lr_mult[i] = 0, hits++;
        }
        if (hits <= 0)
            rc = mg_fail(err, "ValueError",
                         "%%train: --freeze %s: %s of model '%s' (its first parameter is %s, "
                         "its last %s)",
                         item, hits < 0 ? "no such layer" : "matches no parameter", r->model_name,
                         np ? t[0].name : "none", np ? t[np - 1].name : "none");
    }
    if (rc == 0 && o->freeze[0]) {
        int frozen = 0;
        long fp = 0, tp = 0;
        for (int i = 0; i < np; i++) {
            tp += (long)t[i].numel;
            if (r->lr_mult[i] == 0) frozen++, fp += (long)t[i].numel;
        }
        if (frozen == np)
            rc = mg_fail(err, "ValueError",
                         "%%train: --freeze %s freezes every parameter of model '%s': nothing "
                         "would train",
                         o->freeze, r->model_name);
        else
            mg_printf(r->ctx->out,
                      "--freeze %s: %d of %d parameter tensors frozen (%ld of %ld parameters)\n",
                      o->freeze, frozen, np, fp, tp);
    }
    free(t);
    return rc;
}

int mgp_run_finetune(mg_run *r, mg_error *err)
{
    const mg_run_opts *o = &r->o;
    if (o->init_strict && !o->init[0] && !o->init_model[0])
        return mg_fail(err, "ValueError", "%%train: --init-strict needs --init SOURCE");
    if ((o->init[0] || o->init_model[0]) && !o->init_done && load_init(r, err) < 0) return -1;
    if ((o->freeze[0] || o->lr_mult[0]) && resolve_mult(r, err) < 0) return -1;
    return 0;
}
