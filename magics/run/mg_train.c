/* mg_train.c - %train [MODEL] [options]: reads the options (mg_run_opts.c), builds a
 * run and trains it (mg_run.c / mg_run_loop.c). A fresh model from the spec and the
 * seed every time - unless --run-dir already holds a run of the same options, then that
 * run continues (--resume auto|never|must, mg_train_resume.c), so a stage notebook run
 * again on a new machine picks up where the last one stopped. The trained model
 * replaces the previous one of that name in the workspace, for %evaluate, %predict
 * and %checkpoint. */
#include "mg_resume.h"
#include "mg_run.h"
#include "mg_store.h"
#include "mg_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_store.h"

/* What the host imposes on every %train (`kiln run --run-dir/--results/--device`, as
 * `kiln sweep` runs its variants): replaces what the cell typed. */
static int apply_settings(const mg_settings *st, mg_run_opts *o, mg_error *err)
{
    if (!st) return 0;
    struct {
        const char *v, *name;
        char *dst;
        size_t n;
    } ov[] = {{st->run_dir, "--run-dir", o->run_dir, sizeof o->run_dir},
              {st->results, "--results", o->results, sizeof o->results},
              {st->device, "--device", o->device, sizeof o->device}};
    for (size_t i = 0; i < sizeof ov / sizeof *ov; i++) {
        if (!ov[i].v) continue;
        if (strlen(ov[i].v) >= ov[i].n)
            return mg_fail(err, "ValueError", "%%train: %s (set by kiln run): value too long",
                           ov[i].name);
        memcpy(ov[i].dst, ov[i].v, strlen(ov[i].v) + 1);
    }
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    mg_run_opts o;
    mg_run_opts_default(&o);
    if (mg_run_opts_from_args(&o, args, err) < 0 || apply_settings(ctx->settings, &o, err) < 0)
        return -1;
    if (o.background) return mg_train_background(ctx, args, &o, err); /* a sweep of one */
    /* checkpoint options only act with a run directory: say so instead of ignoring them */
    if (!o.run_dir[0] && (mg_args_has(args, "--checkpoint-every") || mg_args_has(args, "--keep")))
        mg_eprintf(ctx->out,
                   "warning: %%train: %s%s%s ignored: checkpoints need --run-dir DIR "
                   "(this run writes none)\n",
                   mg_args_has(args, "--checkpoint-every") ? "--checkpoint-every" : "",
                   mg_args_has(args, "--checkpoint-every") && mg_args_has(args, "--keep") ? " and "
                                                                                          : "",
                   mg_args_has(args, "--keep") ? "--keep" : "");
    /* an s3:// run directory: the store is checked now (before any step), its newest
     * checkpoint fetched into the local staging directory, which the run then uses (a
     * versioned URL-v2 is chosen there too, mg_train_resume.c) */
    mg_resume_mode mode = o.resume >= 0   ? (mg_resume_mode)o.resume
                          : ctx->settings ? ctx->settings->train_resume
                                          : MG_RESUME_AUTO;
    char url[sizeof o.run_dir] = "";
    if (rt_store_is_url(o.run_dir)) {
        char *newest = NULL;
        size_t held = 0;
        snprintf(url, sizeof url, "%s", o.run_dir);
        /* never: a new run cannot start over in a store that holds one (its steps
         * would mix with the old run's objects, and no rename sets those aside) */
        rt_store_ckpt *c = NULL;
        if (mode == MG_RESUME_NEVER && mg_store_list(url, &c, &held, NULL, err) < 0) return -1;
        rt_store_ckpt_free(c, held);
        if (held)
            return mg_fail(err, "FileExistsError",
                           "%%train --resume never: %s holds a run "
                           "(%zu checkpoint%s) and a store cannot set it aside ---> HINT: give "
                           "a new s3:// --run-dir, or --resume auto (continues it, or trains "
                           "other options in %s-v2)",
                           url, held, held == 1 ? "" : "s", url);
        if ((mode != MG_RESUME_NEVER && mg_store_fetch(url, 1, ctx->out, &newest, err) < 0) ||
            mg_store_begin(ctx, url, o.keep > 0 ? o.keep : 1, o.run_dir, sizeof o.run_dir, err) < 0)
            return -1;
        free(newest);
    }
    int handled = 0, rc = mg_ckpt_train_autoresume(ctx, &o, mode, &handled, err);
    if (!handled && rc >= 0) {
        mg_run *r = NULL;
        rc = mg_run_create(&r, ctx, &o, err);
        if (rc >= 0) rc = mg_run_loop(r, err);
        mg_run_destroy(r);
    }
    if (url[0]) mg_store_end(ctx, mg_store_drain_budget(o.time_limit_s), ctx->out);
    return rc;
}

const mg_command mg_cmd_train = {
    .name = "train",
    .summary = "Train a model (live progress, per-epoch lines, loss/accuracy plot)",
    .usage =
        "Usage: %train [MODEL] [options]\n\n"
        "Trains MODEL (default: the model defined last) on the data set loaded last (or\n"
        "--data) from a fresh initialisation given by --seed. Shows one progress bar\n"
        "updated in place, a line per epoch (loss, accuracy, validation, time, images/s)\n"
        "and a loss/accuracy plot, then a summary. Validation uses the --val split, or\n"
        "the test split when there is none. An interrupt stops at the next step and\n"
        "keeps the model; --time-limit stops the same way (not an error) so a stage\n"
        "notebook can go on. With --run-dir, checkpoints go there (every\n"
        "--checkpoint-every, default 1epoch, and at the stop). When DIR already holds\n"
        "a run: --resume auto continues it if its options are the ones given (a larger\n"
        "--epochs trains it longer), else trains in a new DIR-v2 beside it; never\n"
        "starts over in DIR (old checkpoints kept); must continues it or fails.\n"
        "Every run is recorded in the results store (--results,\n"
        "else $KILN_RESULTS, else ~/.local/share/kiln/results.sqlite); a store that\n"
        "cannot be written is a warning. Options take $var / {expr} values.\n\n"
        "Example:\n  %train mnist_net --epochs $epochs --lr {lr} --optimizer sgd --momentum 0.9",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = &mg_train_table[0].opt,
    .option_size = sizeof(mg_train_option),
    .option_default = mg_train_option_default,
    .run = run,
};
