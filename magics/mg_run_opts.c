/* mg_run_opts.c - the %train options: the table (help and completion come from it),
 * defaults, reading them from parsed arguments, the --checkpoint-every and
 * --time-limit syntaxes, and the JSON form stored in checkpoints and the results
 * store (read back by %resume). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_run.h"

const mg_option mg_train_options[] = {
    {"--data", MG_OPT_STRING, "NAME", "data set (default: the one %dataset loaded last)", NULL},
    {"--epochs", MG_OPT_INT, "N", "epochs to train (1)", NULL},
    {"--batch", MG_OPT_INT, "N", "minibatch size (64)", NULL},
    {"--lr", MG_OPT_FLOAT, "LR", "learning rate (0.001)", NULL},
    {"--optimizer", MG_OPT_CHOICE, NULL, "optimiser (adam)", "adam|sgd|adamw"},
    {"--momentum", MG_OPT_FLOAT, "M", "SGD momentum (0.9 with sgd)", NULL},
    {"--weight-decay", MG_OPT_FLOAT, "WD", "weight decay (adam/sgd 0, adamw 0.01)", NULL},
    {"--nesterov", MG_OPT_FLAG, NULL, "Nesterov momentum (sgd)", NULL},
    {"--schedule", MG_OPT_STRING, "SPEC", "lr schedule: constant, step:10:0.1, cosine, onecycle",
     NULL},
    {"--seed", MG_OPT_INT, "N", "seed of init, shuffling, dropout, augmentation (0)", NULL},
    {"--device", MG_OPT_STRING, "DEV", "auto, cpu, cuda, cuda:N, cuda:0,1, cuda:all (auto)", NULL},
    {"--precision", MG_OPT_CHOICE, NULL, "arithmetic precision (fp32)", "fp32|bf16|fp16"},
    {"--run-dir", MG_OPT_STRING, "DIR", "directory for this run's checkpoints", NULL},
    {"--resume", MG_OPT_CHOICE, NULL, "DIR holds a run: continue if same options (auto)",
     "auto|never|must"},
    {"--checkpoint-every", MG_OPT_STRING, "WHEN", "500steps, 10m or 1epoch (needs --run-dir)",
     NULL},
    {"--keep", MG_OPT_INT, "N", "keep the newest N checkpoints plus the best (3)", NULL},
    {"--time-limit", MG_OPT_STRING, "TIME", "stop (and checkpoint) after e.g. 8h30m", NULL},
    {"--results", MG_OPT_STRING, "PATH",
     "results store (default $KILN_RESULTS or ~/.local/share/kiln)", NULL},
    {"--augment", MG_OPT_FLAG, NULL, "random crop + horizontal flip", NULL},
    {"--val", MG_OPT_INT, "N", "hold out N training images for validation", NULL},
    {"--name", MG_OPT_STRING, "NAME", "run name in the results store (the model's name)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

void mg_run_opts_default(mg_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->epochs = 1;
    o->batch = 64;
    o->lr = 0.001;
    snprintf(o->optimizer, sizeof o->optimizer, "adam");
    o->momentum = NAN;
    o->weight_decay = NAN;
    snprintf(o->schedule, sizeof o->schedule, "constant");
    snprintf(o->device, sizeof o->device, "auto");
    snprintf(o->precision, sizeof o->precision, "fp32");
    o->keep = 3;
    o->val = -1;
    o->resume = -1;
}

/* Copies a string option into dst (size n); error when it does not fit. */
static int str_opt(const mg_args *a, const char *name, char *dst, size_t n, mg_error *err)
{
    const char *v = mg_args_get(a, name);
    if (!v) return 0;
    if (strlen(v) >= n)
        return mg_fail(err, "ValueError", "%%train: %s: value too long (%zu characters at most)",
                       name, n - 1);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

/* One "<number><unit>" group of s at *p; unit letters into u. */
static int number_unit(const char **p, double *v, char *u, size_t un)
{
    char *end;
    *v = strtod(*p, &end);
    if (end == *p || !isfinite(*v) || *v < 0) return -1;
    size_t k = 0;
    while (isalpha((unsigned char)*end) && k + 1 < un)
        u[k++] = (char)tolower((unsigned char)*end++);
    u[k] = 0;
    if (isalpha((unsigned char)*end)) return -1;
    *p = end;
    return 0;
}

int mg_run_parse_duration(const char *text, double *seconds, mg_error *err)
{
    const char *p = text;
    double total = 0;
    int groups = 0;
    while (*p) {
        double v;
        char u[16];
        if (number_unit(&p, &v, u, sizeof u) < 0) goto bad;
        double f = !*u || !strcmp(u, "s") || !strcmp(u, "sec") ? 1
                   : !strcmp(u, "m") || !strcmp(u, "min")      ? 60
                   : !strcmp(u, "h") || !strcmp(u, "hr")       ? 3600
                   : !strcmp(u, "d")                           ? 86400
                                                               : -1;
        if (f < 0 || (!*u && *p)) goto bad;
        total += v * f;
        groups++;
    }
    if (!groups || total <= 0 || total > 366.0 * 86400) goto bad;
    *seconds = total;
    return 0;
bad:
    return mg_fail(err, "ValueError", "'%s' is not a duration (e.g. 8h30m, 45m, 90s, 2h)", text);
}

int mg_run_parse_every(const char *text, mg_every *out, mg_error *err)
{
    const char *p = text;
    double v, s;
    char u[16];
    if (number_unit(&p, &v, u, sizeof u) == 0 && !*p && v > 0 && v == floor(v)) {
        if (!*u || !strcmp(u, "steps") || !strcmp(u, "step")) {
            *out = (mg_every){MG_EVERY_STEPS, v};
            return 0;
        }
        if (!strcmp(u, "epoch") || !strcmp(u, "epochs")) {
            *out = (mg_every){MG_EVERY_EPOCHS, v};
            return 0;
        }
    }
    mg_error ignored;
    if (mg_run_parse_duration(text, &s, &ignored) == 0) {
        *out = (mg_every){MG_EVERY_SECONDS, s};
        return 0;
    }
    return mg_fail(err, "ValueError", "--checkpoint-every: '%s' is not 500steps, 10m or 1epoch",
                   text);
}

int mg_run_opts_from_args(mg_run_opts *o, const mg_args *a, mg_error *err)
{
    if (a->npos > 1)
        return mg_fail(err, "UsageError",
                       "%%train: expected at most one model name, got '%s' "
                       "and '%s'",
                       a->pos[0], a->pos[1]);
    if (a->npos == 1 && strlen(a->pos[0]) >= sizeof o->model)
        return mg_fail(err, "UsageError", "%%train: model name too long");
    if (a->npos == 1) snprintf(o->model, sizeof o->model, "%s", a->pos[0]);
    long epochs, batch, seed, keep, val;
    double lr, mom, wd;
    if (mg_args_int(a, "--epochs", o->epochs, &epochs, err) < 0 ||
        mg_args_int(a, "--batch", o->batch, &batch, err) < 0 ||
        mg_args_int(a, "--seed", (long)o->seed, &seed, err) < 0 ||
        mg_args_int(a, "--keep", o->keep, &keep, err) < 0 ||
        mg_args_int(a, "--val", o->val, &val, err) < 0 ||
        mg_args_float(a, "--lr", o->lr, &lr, err) < 0 ||
        mg_args_float(a, "--momentum", o->momentum, &mom, err) < 0 ||
        mg_args_float(a, "--weight-decay", o->weight_decay, &wd, err) < 0)
        return -1;
    if (epochs < 1 || epochs > 100000)
        return mg_fail(err, "ValueError", "%%train: --epochs must be in 1..100000, got %ld",
                       epochs);
    if (batch < 1 || batch > 65536)
        return mg_fail(err, "ValueError", "%%train: --batch must be in 1..65536, got %ld", batch);
    if (!(lr > 0) || lr > 100)
        return mg_fail(err, "ValueError", "%%train: --lr must be > 0 (and <= 100), got %g", lr);
    if (seed < 0) return mg_fail(err, "ValueError", "%%train: --seed must be >= 0, got %ld", seed);
    if (keep < 1 || keep > 100000)
        return mg_fail(err, "ValueError", "%%train: --keep must be >= 1, got %ld", keep);
    if (val < -1 || val > 100000000)
        return mg_fail(err, "ValueError", "%%train: --val must be >= 0, got %ld", val);
    if (mg_args_has(a, "--momentum") && (mom < 0 || mom >= 1))
        return mg_fail(err, "ValueError", "%%train: --momentum must be in [0, 1), got %g", mom);
    if (mg_args_has(a, "--weight-decay") && (wd < 0 || wd > 1))
        return mg_fail(err, "ValueError", "%%train: --weight-decay must be in [0, 1], got %g", wd);
    o->epochs = (int)epochs, o->batch = (int)batch, o->seed = (uint64_t)seed;
    o->keep = (int)keep, o->val = (int)val, o->lr = lr, o->momentum = mom;
    o->weight_decay = wd;
    if (mg_args_has(a, "--nesterov")) o->nesterov = 1;
    if (mg_args_has(a, "--augment")) o->augment = 1;
    if (str_opt(a, "--data", o->data, sizeof o->data, err) < 0 ||
        str_opt(a, "--optimizer", o->optimizer, sizeof o->optimizer, err) < 0 ||
        str_opt(a, "--schedule", o->schedule, sizeof o->schedule, err) < 0 ||
        str_opt(a, "--device", o->device, sizeof o->device, err) < 0 ||
        str_opt(a, "--precision", o->precision, sizeof o->precision, err) < 0 ||
        str_opt(a, "--run-dir", o->run_dir, sizeof o->run_dir, err) < 0 ||
        str_opt(a, "--results", o->results, sizeof o->results, err) < 0 ||
        str_opt(a, "--name", o->name, sizeof o->name, err) < 0 ||
        str_opt(a, "--checkpoint-every", o->checkpoint_every_text, sizeof o->checkpoint_every_text,
                err) < 0)
        return -1;
    const char *rs = mg_args_get(a, "--resume");
    if (rs)
        o->resume = !strcmp(rs, "never")  ? MG_RESUME_NEVER
                    : !strcmp(rs, "must") ? MG_RESUME_MUST
                                          : MG_RESUME_AUTO;
    mg_error e2;
    if (mg_args_has(a, "--checkpoint-every") &&
        mg_run_parse_every(o->checkpoint_every_text, &o->checkpoint_every, &e2) < 0)
        return mg_fail(err, "ValueError", "%%train: %s", e2.evalue);
    const char *tl = mg_args_get(a, "--time-limit");
    if (tl && mg_run_parse_duration(tl, &o->time_limit_s, &e2) < 0)
        return mg_fail(err, "ValueError", "%%train: --time-limit: %s", e2.evalue);
    return 0;
}

json_t *mg_run_opts_to_json(const mg_run_opts *o)
{
    char results[sizeof o->results]; /* stored, shown and sent: never its credentials */
    rt_results_redact(o->results, results, sizeof results);
    json_t *j = json_pack(
        "{s:s, s:s, s:i, s:i, s:f, s:s, s:b, s:s, s:I, s:s, s:s, s:s, s:s,"
        " s:i, s:f, s:s, s:b, s:i, s:s}",
        "model", o->model, "data", o->data, "epochs", o->epochs, "batch", o->batch, "lr", o->lr,
        "optimizer", o->optimizer, "nesterov", o->nesterov, "schedule", o->schedule, "seed",
        (json_int_t)o->seed, "device", o->device, "precision", o->precision, "run_dir", o->run_dir,
        "checkpoint_every", o->checkpoint_every_text, "keep", o->keep, "time_limit_s",
        o->time_limit_s, "results", results, "augment", o->augment, "val", o->val, "name", o->name);
    if (j && isfinite(o->momentum)) json_object_set_new(j, "momentum", json_real(o->momentum));
    if (j && isfinite(o->weight_decay))
        json_object_set_new(j, "weight_decay", json_real(o->weight_decay));
    return j;
}

static void jstr(const json_t *j, const char *key, char *dst, size_t n)
{
    const char *v = json_string_value(json_object_get(j, key));
    if (v) snprintf(dst, n, "%s", v);
}

int mg_run_opts_from_json(mg_run_opts *o, const json_t *j, mg_error *err)
{
    if (!json_is_object(j)) return mg_fail(err, "ValueError", "hyperparameters: not a JSON object");
    jstr(j, "model", o->model, sizeof o->model);
    jstr(j, "data", o->data, sizeof o->data);
    jstr(j, "optimizer", o->optimizer, sizeof o->optimizer);
    jstr(j, "schedule", o->schedule, sizeof o->schedule);
    jstr(j, "device", o->device, sizeof o->device);
    jstr(j, "precision", o->precision, sizeof o->precision);
    jstr(j, "run_dir", o->run_dir, sizeof o->run_dir);
    jstr(j, "results", o->results, sizeof o->results);
    jstr(j, "name", o->name, sizeof o->name);
    jstr(j, "checkpoint_every", o->checkpoint_every_text, sizeof o->checkpoint_every_text);
    json_t *v;
    if ((v = json_object_get(j, "epochs")) && json_is_integer(v))
        o->epochs = (int)json_integer_value(v);
    if ((v = json_object_get(j, "batch")) && json_is_integer(v))
        o->batch = (int)json_integer_value(v);
    if ((v = json_object_get(j, "seed")) && json_is_integer(v))
        o->seed = (uint64_t)json_integer_value(v);
    if ((v = json_object_get(j, "keep")) && json_is_integer(v))
        o->keep = (int)json_integer_value(v);
    if ((v = json_object_get(j, "val")) && json_is_integer(v)) o->val = (int)json_integer_value(v);
    if ((v = json_object_get(j, "lr")) && json_is_number(v)) o->lr = json_number_value(v);
    if ((v = json_object_get(j, "momentum")) && json_is_number(v))
        o->momentum = json_number_value(v);
    if ((v = json_object_get(j, "weight_decay")) && json_is_number(v))
        o->weight_decay = json_number_value(v);
    if ((v = json_object_get(j, "time_limit_s")) && json_is_number(v))
        o->time_limit_s = json_number_value(v);
    if ((v = json_object_get(j, "nesterov"))) o->nesterov = json_is_true(v);
    if ((v = json_object_get(j, "augment"))) o->augment = json_is_true(v);
    o->checkpoint_every = (mg_every){MG_EVERY_NONE, 0};
    if (o->checkpoint_every_text[0] &&
        mg_run_parse_every(o->checkpoint_every_text, &o->checkpoint_every, err) < 0)
        return -1;
    if (o->epochs < 1 || o->batch < 1 || !(o->lr > 0))
        return mg_fail(err, "ValueError",
                       "hyperparameters: epochs %d, batch %d, lr %g out of "
                       "range",
                       o->epochs, o->batch, o->lr);
    return 0;
}
