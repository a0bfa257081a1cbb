/* mg_run_view.c - what %train shows while it runs: the start line, ONE progress
 * display updated in place (update_display_data, at most 4 updates a second, plus
 * every epoch end and the final state), a line per epoch on stdout, a loss/accuracy
 * SVG plot (mg_plot) updated every epoch, and the summary at the end. Output only:
 * nothing here changes the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mg_images.h"
#include "mg_plot.h"
#include "mg_run_internal.h"
#include "mg_store.h"
#include "rt_results_query.h"

#define UPDATE_EVERY_S 0.25 /* 4 updates a second: smooth enough, cheap for the frontend */

double mgp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int mgp_series_add(mgp_series *s, double x, double y)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, cap * sizeof *nx);
        if (!nx) return -1;
        s->x = nx;
        double *ny = realloc(s->y, cap * sizeof *ny);
        if (!ny) return -1;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return 0;
}

void mgp_curve_add(mg_run *r, mgp_series *s, double x, double y)
{
    if (mgp_series_add(s, x, y) == 0 || r->curve_warned) return;
    r->curve_warned = 1;
    mg_eprintf(r->ctx->out,
               "warning: %%train: out of memory: the loss curves miss points from step %.0f on\n",
               x);
}

void mgp_series_free(mgp_series *s)
{
    free(s->x);
    free(s->y);
    memset(s, 0, sizeof *s);
}

static void show(mg_run *r, json_t *data, const char *id, int *shown)
{
    if (data && r->ctx->out->display)
        r->ctx->out->display(r->ctx->out->user, data, NULL, id, *shown);
    if (data) *shown = 1;
    json_decref(data);
}

static void hms(double s, char *buf, size_t n)
{
    long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%02ld:%02ld", t / 60, t % 60);
}

void mgp_view_start(mg_run *r)
{
    /* unique per run without global state: pid, the clock in ns, the run's address */
    unsigned long long ns = (unsigned long long)(mgp_now() * 1e9);
    snprintf(r->progress_id, sizeof r->progress_id, "kiln-train-%ld-%llx-%p-progress",
             (long)getpid(), ns, (void *)r);
    snprintf(r->plot_id, sizeof r->plot_id, "kiln-train-%ld-%llx-%p-plot", (long)getpid(), ns,
             (void *)r);
    r->start_step = rt_trainer_get_state(r->trainer).step;
    const rt_dataset_splits *d = &r->data->splits;
    char nparams[32], val[64] = "no validation data";
    if (!r->no_val) snprintf(val, sizeof val, "validation on %s (%d)", r->val_name, r->val->n);
    mg_printf(r->ctx->out,
              /* two lines, each short enough not to wrap (JupyterLab breaks a long
               * stream line anywhere, numbers included) */
              "Training %s (%s params) on %s: %d train images, %s,\n  %d epoch%s of batch %d, "
              "%s lr %g%s%s | device %s%s (%d thread%s) | seed %llu\n",
              r->model_name, mg_commas(rt_model_num_params(r->model), nparams), r->data->name,
              d->train.n, val, r->o.epochs, r->o.epochs == 1 ? "" : "s", r->o.batch, r->o.optimizer,
              r->o.lr, strcmp(r->o.schedule, "constant") ? ", schedule " : "",
              strcmp(r->o.schedule, "constant") ? r->o.schedule : "", r->backend->ops->name,
              !strcmp(r->o.device, "auto") ? " (auto)" : "", r->backend->threads,
              r->backend->threads == 1 ? "" : "s", (unsigned long long)r->o.seed);
    if (r->run_id && r->rs)
        mg_printf(r->ctx->out, "Recording as run %lld in %s\n", (long long)r->run_id,
                  rt_results_path(r->rs));
    if (r->start_step > 0)
        mg_printf(r->ctx->out, "Continuing from step %lld\n", (long long)r->start_step);
}

void mgp_view_progress(mg_run *r, const rt_progress *p, int force)
{
    double t = mgp_now();
    if (!force && r->progress_shown && t - r->last_update < UPDATE_EVERY_S) return;
    r->last_update = t;
    const int W = 20;
    int64_t total = p->total_steps > 0 ? p->total_steps : 1;
    int fill = (int)((double)W * (double)p->step / (double)total);
    if (fill > W) fill = W;
    char bar[64], el[48], eta[48];
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = 0;
    int64_t done = p->step - r->start_step;
    hms(p->elapsed_s, el, sizeof el);
    hms(done > 0 ? p->elapsed_s / (double)done * (double)(total - p->step) : 0, eta, sizeof eta);
    char ck[256] = "";
    if (r->last_ckpt_step >= 0)
        snprintf(ck, sizeof ck, ", last checkpoint: step %lld", (long long)r->last_ckpt_step);
    char up[96];
    mg_store_status(r->ctx, up, sizeof up); /* s3:// run directory: the upload state */
    if (up[0]) {
        size_t used = strlen(ck);
        snprintf(ck + used, sizeof ck - used, ", %s", up);
    }
    if (p->skipped_steps > 0) { /* fp16: steps whose gradients overflowed */
        size_t used = strlen(ck);
        snprintf(ck + used, sizeof ck - used, ", %lld skipped (fp16 overflow)",
                 (long long)p->skipped_steps);
    }
    /* short enough for a notebook at its usual width (about 100 columns): "elapsed<left"
     * as tqdm writes it; the checkpoint note may go to a second line */
    char line[600];
    snprintf(line, sizeof line,
             "epoch %lld/%d [%s] step %lld/%lld  loss %.4f  acc %.4f  lr %.3g  "
             "%.0f img/s%s  %s<%s%s",
             (long long)p->epoch + 1, p->epochs, bar, (long long)p->step, (long long)total,
             p->epoch_loss, p->epoch_accuracy, p->lr, p->images_per_s, r->where, el, eta, ck);
    char html[1100];
    snprintf(html, sizeof html,
             "<div style=\"font-family:monospace;white-space:nowrap;overflow-x:auto\">"
             "<progress value=\"%lld\" "
             "max=\"%lld\" style=\"width:8em;vertical-align:middle\"></progress> epoch "
             "<b>%lld</b>/%d &middot; step %lld/%lld &middot; loss <b>%.4f</b> &middot; acc "
             "<b>%.4f</b> &middot; lr %.3g &middot; %.0f&nbsp;img/s%s &middot; "
             "%s&lt;%s%s</div>",
             (long long)p->step, (long long)total, (long long)p->epoch + 1, p->epochs,
             (long long)p->step, (long long)total, p->epoch_loss, p->epoch_accuracy, p->lr,
             p->images_per_s, r->where, el, eta, ck);
    show(r, json_pack("{s:s, s:s}", "text/plain", line, "text/html", html), r->progress_id,
         &r->progress_shown);
    /* the plot's display is made right under the progress, before any epoch line, and
     * then only updated: the epoch lines stay below it and the layout does not jump */
    if (!r->plot_shown && r->ep_loss.n > 0) /* a continued run: its curves so far */
        mgp_view_plot(r);
    else if (!r->plot_shown)
        show(r,
             json_pack("{s:s, s:s}", "text/plain",
                       "<loss/accuracy plot appears after the "
                       "first epoch>",
                       "text/html",
                       "<div style=\"color:#888\"><i>loss/"
                       "accuracy plot appears after the first epoch</i></div>"),
             r->plot_id, &r->plot_shown);
}

void mgp_view_epoch(mg_run *r, const rt_progress *p, double seconds, double images_per_s)
{
    char val[96] = "";
    if (r->has_val)
        snprintf(val, sizeof val, "  %s_loss %.4f  %s_acc %.4f", r->val_name, r->val_loss,
                 r->val_name, r->val_acc);
    mg_printf(r->ctx->out, "epoch %lld/%d  loss %.4f  acc %.4f%s  %.1f s  %.0f img/s%s\n",
              (long long)p->epoch + 1, p->epochs, p->epoch_loss, p->epoch_accuracy, val, seconds,
              images_per_s, r->improved && r->o.early_stop > 0 ? "  (best)" : "");
}

void mgp_view_plot(mg_run *r)
{
    char vl[32], va[32], title[128];
    snprintf(vl, sizeof vl, "%s loss", r->val_name);
    snprintf(va, sizeof va, "%s accuracy", r->val_name);
    snprintf(title, sizeof title, "%s: loss and accuracy", r->model_name);
    mg_plot_series s[] = {
        {"loss (step)", r->step_loss.x, r->step_loss.y, r->step_loss.n},
        {"train loss", r->ep_loss.x, r->ep_loss.y, r->ep_loss.n},
        {vl, r->ep_vloss.x, r->ep_vloss.y, r->ep_vloss.n},
        {"train accuracy", r->ep_acc.x, r->ep_acc.y, r->ep_acc.n},
        {va, r->ep_vacc.x, r->ep_vacc.y, r->ep_vacc.n},
    };
    if (r->no_val) s[2] = s[3]; /* without validation data: no validation curves */
    mg_plot_opts o = {.title = title, .xlabel = "step", .ylabel = "loss / accuracy"};
    char *svg = mg_plot_svg(s, r->no_val ? 3 : 5, &o);
    if (!svg) return;
    char text[160];
    snprintf(text, sizeof text, "<loss/accuracy plot: %zu epochs, %zu steps>", r->ep_loss.n,
             r->step_loss.n);
    show(r, json_pack("{s:s, s:s}", "image/svg+xml", svg, "text/plain", text), r->plot_id,
         &r->plot_shown);
    free(svg);
}

/* The last value of metric key of this run in the results store; 0 when known. */
static int stored_metric(mg_run *r, const char *key, double *v)
{
    if (!r->rs || !r->run_id) return -1;
    rt_results_run run;
    rt_error re = {0};
    if (rt_results_get_run(r->rs, r->run_id, &run, &re) != RT_OK) return -1;
    char buf[64];
    int is_num = 0, found = rt_results_run_value(&run, key, buf, sizeof buf, v, &is_num);
    rt_results_run_free(&run);
    return found && is_num ? 0 : -1;
}

/* Where the run lives, for the user: an s3:// run directory's URL (the local one is
 * only its staging copy), else the run directory. */
static const char *run_home(const mg_run *r)
{
    const char *url = mg_store_url(r->ctx);
    return url ? url : r->o.run_dir;
}

/* "  run directory: ..." (nothing without one); an s3:// one names its staging copy. */
static void summary_run_dir(const mg_run *r, FILE *t)
{
    if (!r->o.run_dir[0]) return;
    if (mg_store_url(r->ctx))
        fprintf(t, "  run directory: %s (staged in %s)\n", run_home(r), r->o.run_dir);
    else fprintf(t, "  run directory: %s\n", r->o.run_dir);
}

void mgp_hint_longer(const mg_run *r, FILE *t)
{
    if (r->o.run_dir[0])
        fprintf(t,
                "  to train longer: a larger --epochs, e.g. %%resume %s --epochs %d (or "
                "this %%train with --epochs %d)\n",
                run_home(r), r->o.epochs + 1, r->o.epochs + 1);
    else fprintf(t, "  to train longer: %%train with --epochs larger than %d\n", r->o.epochs);
}

/* A run (directory) trained again after its last planned step: no step was taken.
 * Says so, with where it stands and its last metrics, and how to train further. */
static void summary_complete(mg_run *r, FILE *t)
{
    int64_t spe = rt_trainer_steps_per_epoch(r->trainer);
    int64_t ep = spe > 0 ? (r->start_step + spe - 1) / spe : 0;
    fprintf(t, "Run %s: already complete at step %lld (epoch %lld of %d); nothing to train\n",
            r->model_name, (long long)r->start_step, (long long)ep, r->o.epochs);
    /* the last metrics: measured here, else the curves the checkpoint carried, else
     * the results store (a continued run in another store has none there) */
    double vl = 0, va = 0, tl = 0, ta = 0;
    int has_v = r->has_val, has_t = 0;
    if (has_v) vl = r->val_loss, va = r->val_acc;
    if (!has_v && r->ep_vloss.n && r->ep_vacc.n)
        vl = r->ep_vloss.y[r->ep_vloss.n - 1], va = r->ep_vacc.y[r->ep_vacc.n - 1], has_v = 1;
    if (!has_v && stored_metric(r, "val_loss", &vl) == 0 &&
        stored_metric(r, "val_accuracy", &va) == 0)
        has_v = 1;
    if (r->ep_loss.n && r->ep_acc.n)
        tl = r->ep_loss.y[r->ep_loss.n - 1], ta = r->ep_acc.y[r->ep_acc.n - 1], has_t = 1;
    if (!has_t && stored_metric(r, "train_loss", &tl) == 0 &&
        stored_metric(r, "train_accuracy", &ta) == 0)
        has_t = 1;
    if (has_v) fprintf(t, "  last %s loss %.4f, accuracy %.4f\n", r->val_name, vl, va);
    if (has_t) fprintf(t, "  last train loss %.4f, accuracy %.4f (epoch mean)\n", tl, ta);
    if (r->run_id) fprintf(t, "  results: run %lld\n", (long long)r->run_id);
    summary_run_dir(r, t);
    mgp_hint_longer(r, t);
}

void mgp_view_summary(mg_run *r, rt_step_event why, int failed, const rt_train_summary *s)
{
    const rt_progress *p = &r->last;
    char status[256], el[48];
    if (failed)
        snprintf(status, sizeof status, "failed after step %lld of %lld", (long long)p->step,
                 (long long)p->total_steps);
    else if (why == RT_STEP_DONE) snprintf(status, sizeof status, "finished");
    else if (why == RT_STEP_EARLY_STOP) {
        rt_watch_state w = rt_trainer_get_state(r->trainer).watch;
        snprintf(status, sizeof status,
                 "stopped early at epoch %lld of %d (best epoch %lld, %s %.4f; --early-stop %d)",
                 (long long)p->epoch + 1, r->o.epochs, (long long)w.best_epoch,
                 rt_monitor_name(r->monitor), w.best, r->o.early_stop);
    } else if (why == RT_STEP_TIME_LIMIT)
        snprintf(status, sizeof status, "stopped by the time limit (%s) after step %lld of %lld",
                 r->o.time_limit_s > 0 ? "--time-limit" : "", (long long)p->step,
                 (long long)p->total_steps);
    else
        snprintf(status, sizeof status, "stopped by an interrupt after step %lld of %lld",
                 (long long)p->step, (long long)p->total_steps);
    hms(s->seconds, el, sizeof el);
    char *text = NULL;
    size_t tl = 0;
    FILE *t = open_memstream(&text, &tl);
    if (!t) return;
    int complete = !failed && why == RT_STEP_DONE && s->steps == 0 && r->start_step > 0;
    /* stopped before the first epoch ended (the placeholder gives way to what there is)
     * or mid-epoch (the plot, last drawn at an epoch's end, gets the steps since) */
    if (r->plot_shown && r->step_loss.n > 0 && (r->ep_loss.n == 0 || why != RT_STEP_DONE))
        mgp_view_plot(r);
    if (complete) {
        summary_complete(r, t);
    } else {
        fprintf(t, "Run %s: %s\n", r->model_name, status);
        fprintf(t, "  steps %lld (epoch %lld of %d), %lld images in %s, %.0f images/s\n",
                (long long)s->steps, (long long)p->epoch + 1, r->o.epochs, (long long)s->images, el,
                s->images_per_s);
        if (r->has_progress)
            fprintf(t, "  train loss %.4f, accuracy %.4f (epoch mean)\n", p->epoch_loss,
                    p->epoch_accuracy);
        if (r->has_val)
            fprintf(t, "  %s loss %.4f, accuracy %.4f\n", r->val_name, r->val_loss, r->val_acc);
        if (s->loss_scale > 0)
            fprintf(t,
                    "  fp16 loss scaling: %lld step%s skipped (inf/NaN gradients), loss "
                    "scale now %g\n",
                    (long long)s->skipped_steps, s->skipped_steps == 1 ? "" : "s", s->loss_scale);
        char np[32];
        fprintf(t, "  model %s: %s parameters; data %s\n", r->model_name,
                mg_commas(rt_model_num_params(r->model), np), r->data->name);
        if (r->run_id) fprintf(t, "  results: run %lld\n", (long long)r->run_id);
        summary_run_dir(r, t);
        if (!failed && why != RT_STEP_DONE && why != RT_STEP_EARLY_STOP && r->o.run_dir[0])
            fprintf(t, "  continue with: %%resume %s\n", run_home(r));
    }
    fclose(t);
    char *esc = text ? mg_html_escape(text) : NULL, *html = NULL;
    if (esc && asprintf(&html,
                        "<pre style=\"margin:0;border-left:3px solid %s;padding-left:6px\">"
                        "%s</pre>",
                        failed                                             ? "#d22"
                        : why == RT_STEP_DONE || why == RT_STEP_EARLY_STOP ? "#1ea03c"
                                                                           : "#e90",
                        esc) < 0)
        html = NULL;
    free(esc);
    int shown = 0;
    if (text && html)
        show(r, json_pack("{s:s, s:s}", "text/plain", text, "text/html", html), NULL, &shown);
    free(text);
    free(html);
}
