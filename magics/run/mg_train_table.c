/* mg_train_table.c - the %train options, one row each (mg_train_option, mg_run_opts.h):
 * what the option is called and takes, where its value lives in mg_run_opts, its
 * default, its bounds, its key in checkpoints and the results store, and whether it
 * defines the run (a run directory's run continues only under the same value).
 * Everything else - parsing, the bounds message, help, completion, the JSON, the
 * resume comparison - reads these rows (mg_run_opts.c). Adding an option: a row here,
 * a field in mg_run_opts, and its use in the trainer. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "mg_run_opts.h"

#define FIELD(f) .offset = offsetof(mg_run_opts, f)
#define TEXT(f) .store = MG_TO_TEXT, FIELD(f), .size = sizeof(((mg_run_opts *)0)->f)

/* SGD's momentum is 0.9 when not given; other optimisers have none. */
static double momentum_acting(const mg_run_opts *o)
{
    if (strcmp(o->optimizer, "sgd")) return NAN;
    return isfinite(o->momentum) ? o->momentum : 0.9;
}

/* --augment's SPEC parses (the flag alone, "", is the data set's default). */
static int augment_ok(const mg_run_opts *o, const char *who, mg_error *err)
{
    rt_augment a;
    rt_error re = {0};
    if (!o->augment_spec[0] || rt_augment_parse(o->augment_spec, &a, &re) == RT_OK) return 0;
    return mg_fail_status(err, &re, "%s: %s", who, re.msg);
}

/* --normalize's numbers parse (the channel count is checked against the data set). */
static int normalize_ok(const mg_run_opts *o, const char *who, mg_error *err)
{
    float mean[4], std[4];
    int nch;
    rt_error re = {0};
    if (!o->normalize[0] || rt_normalize_parse(o->normalize, mean, std, &nch, &re) == RT_OK)
        return 0;
    return mg_fail_status(err, &re, "%s: %s", who, re.msg);
}

static int lr_mult_ok(const mg_run_opts *o, const char *who, mg_error *err)
{
    char prefix[MG_LR_MULT_MAX][128];
    double f[MG_LR_MULT_MAX];
    int n;
    return o->lr_mult[0] ? mg_run_parse_lr_mult(o->lr_mult, who, prefix, f, MG_LR_MULT_MAX, &n, err)
                         : 0;
}

static int freeze_ok(const mg_run_opts *o, const char *who, mg_error *err)
{
    return o->freeze[0] ? mg_run_check_freeze(o->freeze, who, err) : 0;
}

const mg_train_option mg_train_table[] = {
    {.opt = {"--data", MG_OPT_STRING, "NAME", "data set", NULL},
     TEXT(data),
     .key = "data",
     .shown = "default: the one %dataset loaded last",
     .flags = MG_TO_DEFINING | MG_TO_DATA},
    {.opt = {"--epochs", MG_OPT_INT, "N", "epochs to train", NULL},
     .store = MG_TO_INT,
     FIELD(epochs),
     .key = "epochs",
     .def = 1,
     .lo = 1,
     .hi = 100000,
     .flags = MG_TO_DEFINING | MG_TO_AT_LEAST},
    {.opt = {"--batch", MG_OPT_INT, "N", "minibatch size", NULL},
     .store = MG_TO_INT,
     FIELD(batch),
     .key = "batch",
     .def = 64,
     .lo = 1,
     .hi = 65536,
     .flags = MG_TO_DEFINING},
    {.opt = {"--lr", MG_OPT_FLOAT, "LR", "learning rate", NULL},
     .store = MG_TO_REAL,
     FIELD(lr),
     .key = "lr",
     .def = 0.001,
     .lo = 0,
     .hi = 100,
     .flags = MG_TO_DEFINING | MG_TO_OPEN_MIN},
    {.opt = {"--optimizer", MG_OPT_CHOICE, NULL, "optimiser", "adam|sgd|adamw"},
     TEXT(optimizer),
     .key = "optimizer",
     .def_text = "adam",
     .flags = MG_TO_DEFINING},
    {.opt = {"--momentum", MG_OPT_FLOAT, "M", "SGD momentum", NULL},
     .store = MG_TO_REAL,
     FIELD(momentum),
     .key = "momentum",
     .def = NAN,
     .shown = "0.9 with sgd",
     .lo = 0,
     .hi = 1,
     .flags = MG_TO_DEFINING | MG_TO_OPEN_MAX,
     .effective = momentum_acting},
    {.opt = {"--weight-decay", MG_OPT_FLOAT, "WD", "weight decay", NULL},
     .store = MG_TO_REAL,
     FIELD(weight_decay),
     .key = "weight_decay",
     .def = NAN,
     .shown = "adam/sgd 0, adamw 0.01",
     .lo = 0,
     .hi = 1,
     .flags = MG_TO_DEFINING},
    {.opt = {"--nesterov", MG_OPT_FLAG, NULL, "Nesterov momentum (sgd)", NULL},
     .store = MG_TO_FLAG,
     FIELD(nesterov),
     .key = "nesterov",
     .flags = MG_TO_DEFINING},
    {.opt = {"--schedule", MG_OPT_STRING, "SPEC", "step:10:0.1, multistep:30,60, cosine, plateau",
             NULL},
     TEXT(schedule),
     .key = "schedule",
     .def_text = "constant",
     .flags = MG_TO_DEFINING},
    {.opt = {"--seed", MG_OPT_INT, "N", "seed of init, shuffling, dropout, augmentation", NULL},
     .store = MG_TO_U64,
     FIELD(seed),
     .key = "seed",
     .lo = 0,
     .hi = INFINITY,
     .flags = MG_TO_DEFINING},
    {.opt = {"--device", MG_OPT_STRING, "DEV", "auto, cpu, cuda, cuda:N, cuda:0,1, cuda:all", NULL},
     TEXT(device),
     .key = "device",
     .def_text = "auto"},
    {.opt = {"--precision", MG_OPT_CHOICE, NULL, "arithmetic precision", "fp32|bf16|fp16"},
     TEXT(precision),
     .key = "precision",
     .def_text = "fp32",
     .flags = MG_TO_DEFINING},
    {.opt = {"--run-dir", MG_OPT_STRING, "DIR", "directory for this run's checkpoints", NULL},
     TEXT(run_dir),
     .key = "run_dir"},
    {.opt = {"--resume", MG_OPT_CHOICE, NULL, "DIR holds a run: continue if same options",
             "auto|never|must"},
     .store = MG_TO_CHOICE,
     FIELD(resume),
     .def = -1, /* the session's rule (mg_settings.train_resume) */
     .shown = "auto"},
    {.opt = {"--checkpoint-every", MG_OPT_STRING, "WHEN",
             "500steps, 10m or 1epoch (needs --run-dir)", NULL},
     .store = MG_TO_EVERY,
     FIELD(checkpoint_every_text),
     .size = sizeof(((mg_run_opts *)0)->checkpoint_every_text),
     .parsed = offsetof(mg_run_opts, checkpoint_every),
     .key = "checkpoint_every"},
    {.opt = {"--keep", MG_OPT_INT, "N", "keep the newest N checkpoints plus the best", NULL},
     .store = MG_TO_INT,
     FIELD(keep),
     .key = "keep",
     .def = 3,
     .lo = 1,
     .hi = 100000},
    {.opt = {"--time-limit", MG_OPT_STRING, "TIME", "stop (and checkpoint) after e.g. 8h30m", NULL},
     .store = MG_TO_DURATION,
     FIELD(time_limit_s),
     .key = "time_limit_s",
     .shown = ""}, /* 0: none */
    {.opt = {"--results", MG_OPT_STRING, "PATH",
             "results store (default $KILN_RESULTS or ~/.local/share/kiln)", NULL},
     TEXT(results),
     .key = "results",
     .flags = MG_TO_REDACT},
    {.opt = {"--augment", MG_OPT_FLAG, "SPEC",
             "crop:PAD,flip,cutout:SIZE,none; alone: per data set", "crop:|flip|cutout:|none"},
     TEXT(augment_spec),
     .key = "augment",
     .def_text = "none",
     .flags = MG_TO_DEFINING,
     .check = augment_ok,
     .legacy_true = "crop:4,flip"}, /* the one spec plain --augment had */
    {.opt = {"--normalize", MG_OPT_STRING, "MEAN,STD", "means, then stds: 0.1307,0.3081", NULL},
     TEXT(normalize),
     .key = "normalize",
     .shown = "measured",
     .flags = MG_TO_DEFINING,
     .check = normalize_ok},
    {.opt = {"--accumulate", MG_OPT_INT, "K", "micro-batches of --batch an update", NULL},
     .store = MG_TO_INT,
     FIELD(accumulate),
     .key = "accumulate",
     .def = 1,
     .lo = 1,
     .hi = 4096,
     .flags = MG_TO_DEFINING},
    {.opt = {"--clip-grad", MG_OPT_FLOAT, "NORM", "clip the gradients' global L2 norm", NULL},
     .store = MG_TO_REAL,
     FIELD(clip_grad),
     .key = "clip_grad",
     .def = 0,
     .shown = "off",
     .lo = 0,
     .hi = INFINITY,
     .flags = MG_TO_DEFINING | MG_TO_OPEN_MIN},
    {.opt = {"--clip-value", MG_OPT_FLOAT, "V", "clamp every gradient to [-V, V]", NULL},
     .store = MG_TO_REAL,
     FIELD(clip_value),
     .key = "clip_value",
     .def = 0,
     .shown = "off",
     .lo = 0,
     .hi = INFINITY,
     .flags = MG_TO_DEFINING | MG_TO_OPEN_MIN},
    {.opt = {"--label-smoothing", MG_OPT_FLOAT, "EPS", "CrossEntropyLoss(label_smoothing=EPS)",
             NULL},
     .store = MG_TO_REAL,
     FIELD(label_smoothing),
     .key = "label_smoothing",
     .def = 0,
     .lo = 0,
     .hi = 1,
     .flags = MG_TO_DEFINING | MG_TO_OPEN_MAX},
    {.opt = {"--early-stop", MG_OPT_INT, "PATIENCE",
             "stop after PATIENCE epochs that do not improve", NULL},
     .store = MG_TO_INT,
     FIELD(early_stop),
     .key = "early_stop",
     .shown = "off",
     .lo = 0,
     .hi = 100000,
     .flags = MG_TO_DEFINING},
    {.opt = {"--monitor", MG_OPT_CHOICE, NULL, "what --early-stop watches",
             "val_loss|val_acc|train_loss|train_acc"},
     TEXT(monitor),
     .key = "monitor",
     .def_text = "val_loss",
     .flags = MG_TO_DEFINING},
    {.opt = {"--min-delta", MG_OPT_FLOAT, "D", "smallest change of --monitor that improves", NULL},
     .store = MG_TO_REAL,
     FIELD(min_delta),
     .key = "min_delta",
     .def = 0,
     .lo = 0,
     .hi = INFINITY,
     .flags = MG_TO_DEFINING},
    {.opt = {"--restore-best", MG_OPT_FLAG, NULL, "end with the best epoch's weights", NULL},
     .store = MG_TO_FLAG,
     FIELD(restore_best),
     .key = "restore_best",
     .flags = MG_TO_DEFINING},
    {.opt = {"--init", MG_OPT_STRING, "SOURCE", "start from a run dir, checkpoint or .safetensors",
             NULL},
     TEXT(init),
     .key = "init",
     .shown = "none",
     .flags = MG_TO_DEFINING},
    {.opt = {"--init-strict", MG_OPT_FLAG, NULL, "--init: every tensor must match", NULL},
     .store = MG_TO_FLAG,
     FIELD(init_strict),
     .key = "init_strict",
     .flags = MG_TO_DEFINING},
    {.opt = {"--freeze", MG_OPT_STRING, "PREFIX", "keep fixed: PREFIX,..., until:LAYER or body",
             NULL},
     TEXT(freeze),
     .key = "freeze",
     .shown = "none",
     .flags = MG_TO_DEFINING,
     .check = freeze_ok},
    {.opt = {"--lr-mult", MG_OPT_STRING, "PREFIX=F", "lr times F for PREFIX,...", NULL},
     TEXT(lr_mult),
     .key = "lr_mult",
     .shown = "none",
     .flags = MG_TO_DEFINING,
     .check = lr_mult_ok},
    {.opt = {"--val", MG_OPT_INT, "N", "hold out N training images (a fraction: %dataset --val F)",
             NULL},
     .store = MG_TO_INT,
     FIELD(val),
     .key = "val",
     .def = -1, /* as %dataset loaded the data set */
     .shown = "",
     .lo = 0,
     .hi = 100000000,
     .flags = MG_TO_DEFINING | MG_TO_DATA},
    {.opt = {"--name", MG_OPT_STRING, "NAME", "run name in the results store", NULL},
     TEXT(name),
     .key = "name",
     .shown = "the model's name"},
    {.opt = {"--background", MG_OPT_FLAG, NULL,
             "in a process of its own; returns at once (needs --run-dir)", NULL},
     .store = MG_TO_FLAG,
     FIELD(background),
     .key = "background"},
    {.opt = {NULL, 0, NULL, NULL, NULL}},
};
