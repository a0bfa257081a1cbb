/* mg_fine_tune.c - %fine_tune [MODEL] --init SOURCE --epochs N [--freeze-epochs 1]: what
 * fastai's fine_tune does, as two %train runs. First the head alone: the model starts
 * from SOURCE with every other parameter frozen (--freeze body, or the --freeze given)
 * for --freeze-epochs epochs at --lr under a one-cycle schedule; then the whole model for
 * --epochs epochs at half that rate, one-cycle again, starting from the first run's
 * weights. With --run-dir DIR the runs are DIR/frozen and DIR/unfrozen (the second
 * starts from the first's directory, so both are recorded, checkpointed and continued
 * as any %train run: running the cell again continues where it stopped); without, the
 * second starts from the first's trained model in this kernel. */
#include <stdio.h>
#include <string.h>

#include "mg_resume.h"
#include "mg_run.h"
#include "mg_workspace.h"

static const mg_option options[] = {
    {"--init", MG_OPT_STRING, "SOURCE", "run directory, checkpoint or .safetensors (required)",
     NULL},
    {"--epochs", MG_OPT_INT, "N", "epochs of the whole model (1)", NULL},
    {"--freeze-epochs", MG_OPT_INT, "N", "epochs of the head alone first (1)", NULL},
    {"--lr", MG_OPT_FLOAT, "LR", "the head's rate; the whole model trains at LR/2 (0.002)", NULL},
    {"--freeze", MG_OPT_STRING, "PREFIX", "frozen in the first run (body: all but the head)", NULL},
    {"--init-strict", MG_OPT_FLAG, NULL, "--init: every tensor must match", NULL},
    {"--data", MG_OPT_STRING, "NAME", "data set (the one %dataset loaded last)", NULL},
    {"--batch", MG_OPT_INT, "N", "minibatch size (64)", NULL},
    {"--optimizer", MG_OPT_CHOICE, NULL, "optimiser (adam)", "adam|sgd|adamw"},
    {"--weight-decay", MG_OPT_FLOAT, "WD", "weight decay", NULL},
    {"--seed", MG_OPT_INT, "N", "seed of the new head, shuffling, augmentation (0)", NULL},
    {"--augment", MG_OPT_FLAG, "SPEC", "crop:PAD,flip,cutout:SIZE,none; alone: per data set",
     "crop:|flip|cutout:|none"},
    {"--device", MG_OPT_STRING, "DEV", "auto, cpu, cuda, cuda:N (auto)", NULL},
    {"--run-dir", MG_OPT_STRING, "DIR", "the runs go to DIR/frozen and DIR/unfrozen", NULL},
    {"--results", MG_OPT_STRING, "PATH", "results store", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* One %train run of o: continued when its run directory holds it (--resume auto). */
static int stage(mg_ctx *ctx, mg_run_opts *o, mg_error *err)
{
    mg_resume_mode mode = ctx->settings ? ctx->settings->train_resume : MG_RESUME_AUTO;
    int handled = 0, rc = o->run_dir[0] ? mg_ckpt_train_autoresume(ctx, o, mode, &handled, err) : 0;
    if (!handled && rc >= 0) {
        mg_run *r = NULL;
        rc = mg_run_create(&r, ctx, o, err);
        if (rc >= 0) rc = mg_run_loop(r, err);
        mg_run_destroy(r);
    }
    return rc;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    mg_run_opts o;
    mg_run_opts_default(&o);
    o.lr = 0.002;
    if (mg_run_opts_from_args(&o, args, err) < 0) return -1;
    long fe = 1;
    if (mg_args_int(args, "--freeze-epochs", 1, &fe, err) < 0) return -1;
    if (fe < 1 || fe > 100000)
        return mg_fail(err, "ValueError",
                       "%%fine_tune: --freeze-epochs must be in 1..100000, got %ld", fe);
    if (!o.init[0])
        return mg_fail(err, "UsageError",
                       "%%fine_tune: --init SOURCE is required ---> HINT: a Kiln run directory, "
                       "a checkpoint or a .safetensors state_dict");
    const mg_settings *st = ctx->settings;
    if (st && st->run_dir) snprintf(o.run_dir, sizeof o.run_dir, "%s", st->run_dir);
    if (st && st->results) snprintf(o.results, sizeof o.results, "%s", st->results);
    if (st && st->device) snprintf(o.device, sizeof o.device, "%s", st->device);
    if (strlen(o.run_dir) + 10 >= sizeof o.run_dir)
        return mg_fail(err, "ValueError", "%%fine_tune: --run-dir: value too long");
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_ws_model *e = mg_ws_model_find(ws, o.model);
    if (!e)
        return mg_fail(err, o.model[0] ? "NameError" : "UsageError",
                       "%%fine_tune: no model %s%s%s ---> HINT: define it with %%%%model NAME",
                       o.model[0] ? "named '" : "defined yet", o.model, o.model[0] ? "'" : "");
    char name[64];
    snprintf(name, sizeof name, "%s", e->name);

    mg_run_opts head = o; /* 1: the head alone */
    head.epochs = (int)fe;
    snprintf(head.schedule, sizeof head.schedule, "onecycle");
    if (!head.freeze[0]) snprintf(head.freeze, sizeof head.freeze, "body");
    if (o.run_dir[0]) snprintf(head.run_dir, sizeof head.run_dir, "%s/frozen", o.run_dir);
    mg_printf(ctx->out,
              "fine_tune '%s': %d epoch%s of the head (--freeze %s), then %d of the "
              "whole model at lr %g\n",
              name, head.epochs, head.epochs == 1 ? "" : "s", head.freeze, o.epochs, o.lr / 2);
    if (stage(ctx, &head, err) < 0) return -1;

    mg_run_opts all = o; /* 2: the whole model from the first run's weights */
    all.freeze[0] = 0;
    all.lr = o.lr / 2;
    all.init_strict = 1; /* the same model: every tensor is there */
    snprintf(all.schedule, sizeof all.schedule, "onecycle");
    if (o.run_dir[0]) {
        snprintf(all.init, sizeof all.init, "%s", head.run_dir);
        snprintf(all.run_dir, sizeof all.run_dir, "%s/unfrozen", o.run_dir);
    } else {
        all.init[0] = 0;
        snprintf(all.init_model, sizeof all.init_model, "%s", name);
    }
    return stage(ctx, &all, err);
}

const mg_command mg_cmd_fine_tune = {
    .name = "fine_tune",
    .summary = "Fine-tune a model from other weights: the head first, then the whole model",
    .usage = "Usage: %fine_tune [MODEL] --init SOURCE [--epochs N] [--freeze-epochs N] [--lr LR]\n"
             "                  [--freeze PREFIX] [--run-dir DIR] [options]\n\n"
             "What fastai's fine_tune does, as two %train runs. MODEL starts from SOURCE (a Kiln\n"
             "run directory or checkpoint, or a .safetensors PyTorch state_dict), tensors matched\n"
             "by name and shape: a head of another shape is new. First only the head trains\n"
             "(every other parameter frozen: --freeze body) for --freeze-epochs at --lr with a\n"
             "one-cycle schedule; then the whole model for --epochs at LR/2, one-cycle again.\n"
             "With --run-dir DIR the runs go to DIR/frozen and DIR/unfrozen and continue when\n"
             "the cell runs again.\n\n"
             "Example:\n  %fine_tune net --init resnet18.safetensors --epochs 3 --run-dir runs/ft",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
