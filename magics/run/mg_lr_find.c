/* mg_lr_find.c - %lr_find [MODEL] [--start LR --end LR --steps N]: the learning-rate
 * range test of fastai's lr_find and Lightning's Tuner.lr_find.
 *
 * The model is built as %train starts it (its spec, initialised from --seed) as a run
 * of its own (mg_run_create) and trained for up to --steps steps on training batches,
 * the rate of step i (0-based) being start * (end / start)^(i / (steps - 1)), so the
 * rates are evenly spaced on a log scale from --start to --end. The loss is smoothed as
 * both libraries do (an exponential moving average, beta 0.98, with bias correction);
 * the test stops when the smoothed loss passes 4 times its lowest (after the first
 * step) or the loss is no longer finite. The suggested rate is Lightning's: the rate of
 * the steepest descent of the smoothed loss (the minimum of its gradient, central
 * differences as numpy.gradient), leaving out the first 10 and the last point.
 *
 * Shows a loss-against-learning-rate plot (log x axis) with the suggestion marked,
 * prints the suggestion and sets the variable suggested_lr to it. The run's model and
 * optimiser are its own and are freed after: the model of that name in the session
 * (trained weights, batch-norm statistics), the last run's optimiser state (%checkpoint
 * save) and the results store are untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_plot.h"
#include "mg_run.h"

#define BETA 0.98
#define DIVERGE 4.0
#define SKIP_BEGIN 10
#define SKIP_END 1
#define MAX_STEPS 10000

static const mg_option OPTIONS[] = {
    {"--start", MG_OPT_FLOAT, "LR", "the first learning rate (1e-7)", NULL},
    {"--end", MG_OPT_FLOAT, "LR", "the last learning rate (10)", NULL},
    {"--steps", MG_OPT_INT, "N", "steps of the test, one rate each (100)", NULL},
    {"--data", MG_OPT_STRING, "NAME", "data set (the one loaded last)", NULL},
    {"--batch", MG_OPT_INT, "N", "minibatch size (64)", NULL},
    {"--optimizer", MG_OPT_CHOICE, NULL, "optimiser (adam)", "adam|sgd|adamw"},
    {"--momentum", MG_OPT_FLOAT, "M", "SGD momentum (0.9 with sgd)", NULL},
    {"--weight-decay", MG_OPT_FLOAT, "WD", "weight decay (the optimiser's)", NULL},
    {"--seed", MG_OPT_INT, "N", "seed of init, shuffling, dropout (0)", NULL},
    {"--device", MG_OPT_STRING, "DEV", "auto, cpu, cuda, cuda:N (auto)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

typedef struct lr_opts {
    double start, end;
    long steps;
} lr_opts;

static int read_opts(const mg_args *args, lr_opts *lo, mg_error *err)
{
    if (mg_args_float(args, "--start", 1e-7, &lo->start, err) < 0 ||
        mg_args_float(args, "--end", 10.0, &lo->end, err) < 0 ||
        mg_args_int(args, "--steps", 100, &lo->steps, err) < 0)
        return -1;
    if (!(lo->start > 0) || !isfinite(lo->start))
        return mg_fail(err, "ValueError", "%%lr_find: --start must be > 0, got %g", lo->start);
    if (!(lo->end > lo->start) || !(lo->end <= 1e4))
        return mg_fail(err, "ValueError",
                       "%%lr_find: --end must be above --start (%g) and at most 1e4, got %g",
                       lo->start, lo->end);
    if (lo->steps < 2 || lo->steps > MAX_STEPS)
        return mg_fail(err, "ValueError", "%%lr_find: --steps must be in 2..%d, got %ld", MAX_STEPS,
                       lo->steps);
    return 0;
}

/* The index of the steepest descent of y[0..n) (numpy.gradient's central differences,
 * one-sided at the ends) leaving out the first SKIP_BEGIN and the last SKIP_END points,
 * as Lightning; -1 when fewer than 2 points are left. */
static long steepest(const double *y, long n)
{
    long a = SKIP_BEGIN, b = n - SKIP_END;
    if (b - a < 2) return -1;
    long best = -1;
    double gmin = INFINITY;
    for (long i = a; i < b; i++) {
        double g = i == a       ? y[a + 1] - y[a]
                   : i == b - 1 ? y[b - 1] - y[b - 2]
                                : (y[i + 1] - y[i - 1]) / 2.0;
        if (isfinite(g) && g < gmin) gmin = g, best = i;
    }
    return best;
}

static void show_plot(const mg_ctx *ctx, const double *lrs, const double *sm, long n, long sug)
{
    double ylo = INFINITY, yhi = -INFINITY;
    for (long i = 0; i < n; i++) {
        if (sm[i] < ylo) ylo = sm[i];
        if (sm[i] > yhi) yhi = sm[i];
    }
    char label[64] = "";
    double mx[2], my[2] = {ylo, yhi};
    mg_plot_series s[2] = {{"loss (smoothed)", lrs, sm, (size_t)n}, {NULL, NULL, NULL, 0}};
    if (sug >= 0) {
        snprintf(label, sizeof label, "suggested %.3g", lrs[sug]);
        mx[0] = mx[1] = lrs[sug];
        s[1] = (mg_plot_series){label, mx, my, 2};
    }
    mg_plot_opts o = {.title = "Learning-rate range test",
                      .xlabel = "learning rate (log scale)",
                      .ylabel = "loss",
                      .log_x = 1};
    char *svg = mg_plot_svg(s, sug >= 0 ? 2 : 1, &o);
    if (!svg) return;
    char text[160];
    snprintf(text, sizeof text, "<loss against learning rate: %ld steps, %.3g to %.3g>", n, lrs[0],
             lrs[n - 1]);
    json_t *data = json_pack("{s:s, s:s}", "image/svg+xml", svg, "text/plain", text);
    if (data) ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(svg);
}

/* The test itself over a run; lrs, sm hold room for lo->steps points; *n = points kept. */
static int range_test(mg_ctx *ctx, mg_run *r, const lr_opts *lo, double *lrs, double *sm, long *n,
                      int *diverged, mg_error *err)
{
    double avg = 0, best = INFINITY;
    *n = 0;
    *diverged = 0;
    for (long i = 0; i < lo->steps; i++) {
        double lr = lo->start * pow(lo->end / lo->start, (double)i / (double)(lo->steps - 1));
        double loss = NAN;
        rt_step_event ev;
        mg_error e;
        if (mg_run_probe_step(r, lr, &loss, &ev, &e) < 0)
            return mg_fail(err, e.ename, "%%lr_find: %s", e.evalue);
        if (ev == RT_STEP_STOPPED)
            return mg_fail(err, "KeyboardInterrupt", "%%lr_find: interrupted after step %ld of %ld",
                           i, lo->steps);
        if (ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END)
            return mg_fail(err, "RuntimeError", "%%lr_find: the run stopped at step %ld of %ld",
                           i + 1, lo->steps);
        if (!isfinite(loss)) { /* the loss overflowed: diverged */
            *diverged = 1;
            break;
        }
        avg = BETA * avg + (1.0 - BETA) * loss;
        double smoothed = avg / (1.0 - pow(BETA, (double)(i + 1)));
        lrs[*n] = lr, sm[*n] = smoothed, (*n)++;
        if (i > 0 && smoothed > DIVERGE * best) {
            *diverged = 1;
            break;
        }
        if (smoothed < best) best = smoothed;
    }
    (void)ctx;
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    lr_opts lo;
    if (read_opts(args, &lo, err) < 0) return -1;
    mg_run_opts o;
    mg_run_opts_default(&o);
    if (mg_run_opts_from_args_as(&o, args, "%lr_find", err) < 0) return -1;
    /* `kiln run --device` (a sweep's device) applies here as to %train */
    if (ctx->settings && ctx->settings->device)
        snprintf(o.device, sizeof o.device, "%s", ctx->settings->device);
    o.epochs = (int)lo.steps; /* every epoch has a step at least: the run never runs out */
    o.lr = lo.start;
    double *lrs = malloc(sizeof(double) * (size_t)lo.steps);
    double *sm = malloc(sizeof(double) * (size_t)lo.steps);
    mg_run *r = NULL;
    int rc = !lrs || !sm ? mg_fail(err, "MemoryError", "%%lr_find: out of memory") : 0;
    if (rc == 0) {
        mg_error e;
        if (mg_run_create(&r, ctx, &o, &e) < 0) { /* its messages say %train */
            const char *m = strncmp(e.evalue, "%train: ", 8) ? e.evalue : e.evalue + 8;
            rc = mg_fail(err, e.ename, "%%lr_find: %s", m);
        }
    }
    long n = 0;
    int diverged = 0;
    if (rc == 0) {
        mg_printf(ctx->out,
                  "Learning-rate range test of %s on %s: up to %ld steps of batch %d, rates "
                  "%.3g to %.3g (the model is a copy: the session's is not changed)\n",
                  mg_run_model_name(r), mg_run_dataset_name(r), lo.steps, o.batch, lo.start,
                  lo.end);
        rc = range_test(ctx, r, &lo, lrs, sm, &n, &diverged, err);
    }
    mg_run_destroy(r);
    if (rc == 0) {
        long sug = steepest(sm, n);
        if (diverged)
            mg_printf(ctx->out, "stopped at step %ld (lr %.3g): the loss diverged\n", n,
                      n ? lrs[n - 1] : lo.start);
        if (sug >= 0) {
            mg_printf(ctx->out,
                      "suggested learning rate: %.3g (steepest descent of the smoothed loss, "
                      "step %ld); set as suggested_lr\n",
                      lrs[sug], sug + 1);
            const mg_host *h = ctx->host;
            if (h && h->var_set) h->var_set(h->user, "suggested_lr", json_real(lrs[sug]));
        } else {
            mg_eprintf(ctx->out,
                       "warning: %%lr_find: too few steps before the loss diverged to suggest a "
                       "rate ---> HINT: a lower --start or more --steps\n");
        }
        if (n > 0) show_plot(ctx, lrs, sm, n, sug);
    }
    free(lrs);
    free(sm);
    return rc;
}

const mg_command mg_cmd_lr_find = {
    .name = "lr_find",
    .summary = "Learning-rate range test: loss against an exponentially rising rate",
    .usage = "Usage: %lr_find [MODEL] [--start 1e-7] [--end 10] [--steps 100] [options]\n\n"
             "Trains MODEL (default: the model defined last), initialised from --seed as\n"
             "%train starts it, for up to --steps steps on training batches, each at a\n"
             "higher learning rate, evenly spaced on a log scale from --start to --end\n"
             "(fastai's lr_find, Lightning's Tuner.lr_find). The loss is smoothed (moving\n"
             "average, beta 0.98) and the test stops once it passes 4 times its lowest.\n"
             "Shows the smoothed loss against the learning rate (log axis) and suggests the\n"
             "rate of its steepest descent, also set as the variable suggested_lr. The test\n"
             "trains a copy: the session's model (trained weights, batch-norm statistics),\n"
             "the last run's optimiser state and the results store are not changed.\n\n"
             "Example:\n  %lr_find cnn --end 1\n  %train cnn --lr $suggested_lr",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = OPTIONS,
    .run = run,
};
