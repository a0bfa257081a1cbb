/* mg_sweep.c - %sweep NOTEBOOK -o DIR -p NAME V1,V2 [...]: `kiln sweep` (the same
 * options, docs/sweeps.md) started in the background from a notebook. The cell returns
 * at once and shows one table, updated in place (a display id) about every second by a
 * helper thread: a row per variant with its state, epochs done, the metric, images/s
 * and device, read from DIR (sweep.json, <variant>/status.json) and the results store.
 * The notebook stays usable: other cells run, %results works.
 *   %sweep status   the table now          %sweep wait   until the sweep ends
 *   %sweep stop     every variant checkpoints and ends (SIGTERM to the sweep)
 * An interrupt during wait or stop stops the sweep; so does the kernel's shutdown
 * (the session's slot destructor), and the kernel dying any other way (the sweep asked
 * for SIGTERM when its parent goes): no orphan process is left. The sweep runs in its
 * own process group, so interrupting another cell does not touch it. Where outputs
 * cannot outlive their cell (kiln run) %sweep waits for the end instead.
 * The sweep's output is DIR/sweep.log. One sweep at a time per kernel. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mg.h"
#include "mg_sweep.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "rt_file.h"
#include "rt_store_stage.h"

#define SLOT "sweep.job"
#define MAX_WORDS 256
#define STOP_GRACE_S 120 /* a variant's step and checkpoint; then the group is killed */

typedef struct sweep_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int th_started;
    char *argv[MAX_WORDS + 2]; /* kiln sweep ARGS..., owned */
    char dir[2048], log[2100];
    mg_out *live; /* detached output of the starting cell; NULL: none */
    char display_id[64];
    pid_t pid;      /* 0 until started; -1 when it could not start */
    int done, wait; /* the sweep's wait status once done */
    int stopped;    /* a stop was asked for */
    /* %train --background: one kiln run, its results row tagged background=tag */
    int single;
    char tag[64], store[2048], run_dir[2048], out_nb[2100];
} sweep_job;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- words: shell-like, quotes and backslashes ---- */

static int split(const char *line, char **words, int max)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) return n;
        if (n == max) return -2;
        char *w = malloc(strlen(p) + 1), *o = w, q = 0;
        if (!w) return -3;
        for (; *p && (q || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
            if (q && *p == q) q = 0;
            else if (!q && (*p == '"' || *p == '\'')) q = *p;
            else if (*p == '\\' && q != '\'' && p[1]) *o++ = *++p;
            else *o++ = *p;
        }
        *o = 0;
        words[n++] = w;
        if (q) return -1;
    }
}

/* ---- the table ---- */

static json_t *load(const char *dir, const char *name, const char *file)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s%s%s", dir, name ? name : "", name ? "/" : "", file);
    return json_load_file(path, 0, NULL);
}

static const char *param_of(const rt_results_run *r, const char *key)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].key, key)) return r->params[i].value;
    return NULL;
}

static const rt_results_summary *metric_of(const rt_results_run *r, const char *key)
{
    const rt_results_summary *m = NULL;
    for (size_t i = 0; i < r->nmetrics; i++)
        if (!strcmp(r->metrics[i].key, key) && (!m || r->metrics[i].kind == RT_RESULTS_EPOCH))
            m = &r->metrics[i];
    return m;
}

/* The table of the sweep in dir as text and HTML (new strings); -1 when it cannot be
 * built (out of memory). */
static int render(const char *dir, char **text_out, char **html_out)
{
    json_t *man = load(dir, NULL, "sweep.json");
    const char *name = json_string_value(json_object_get(man, "name"));
    const char *metric = json_string_value(json_object_get(man, "metric"));
    const char *state = json_string_value(json_object_get(man, "state"));
    const char *store = json_string_value(json_object_get(man, "results"));
    json_t *vars = json_object_get(man, "variants");
    if (!metric) metric = "val_accuracy";
    int lower = strstr(metric, "loss") != NULL;
    rt_results *rs = NULL;
    rt_results_list l = {0};
    if (name && store && store[0] && access(store, F_OK) == 0) {
        rt_results_config cfg = {.path = store, .readonly = 1};
        rt_error err = {0};
        char where[400];
        snprintf(where, sizeof where, "sweep=%s", name);
        const char *w[] = {where};
        rt_results_query q = {.status = -1, .nwhere = 1, .where = w};
        if (rt_results_open_config(&cfg, &rs, &err) != RT_OK) rs = NULL;
        if (rs && rt_results_list_runs(rs, &q, &l, &err) != RT_OK) l = (rt_results_list){0};
    }
    char *text = NULL, *html = NULL;
    size_t tn = 0, hn = 0;
    FILE *t = open_memstream(&text, &tn), *h = open_memstream(&html, &hn);
    if (!t || !h) {
        if (t) fclose(t), free(text);
        if (h) fclose(h), free(html);
        rt_results_list_free(&l);
        rt_results_close(rs);
        json_decref(man);
        return -1;
    }
    size_t nv = json_array_size(vars), finished = 0;
    char *ename = mg_html_escape(name ? name : dir), *edir = mg_html_escape(dir);
    fprintf(h,
            "<div><b>sweep %s</b>: %s (%s)<table><tr><th>variant</th><th>state</th>"
            "<th>epoch</th><th>%s</th><th>images/s</th><th>device</th></tr>",
            ename ? ename : "", state ? state : "starting", edir ? edir : "", metric);
    free(ename);
    free(edir);
    fprintf(t, "%-32s %-11s %5s %12s %9s  %s\n", "variant", "state", "epoch", metric, "images/s",
            "device");
    for (size_t i = 0; i < nv; i++) {
        const char *v = json_string_value(json_array_get(vars, i));
        if (!v) continue;
        json_t *st = load(dir, v, "status.json");
        const char *vs = json_string_value(json_object_get(st, "state"));
        const char *dev = json_string_value(json_object_get(st, "device"));
        const rt_results_run *run = NULL;
        for (size_t k = 0; k < l.n; k++) {
            const char *pv = param_of(&l.runs[k], "variant");
            if (pv && !strcmp(pv, v) && (!run || l.runs[k].id > run->id)) run = &l.runs[k];
        }
        const rt_results_summary *m = run ? metric_of(run, metric) : NULL;
        const rt_results_summary *ips = run ? metric_of(run, "images_per_s") : NULL;
        char ep[16] = "-", mv[32] = "-", iv[32] = "-";
        if (m) snprintf(ep, sizeof ep, "%ld", m->count);
        if (m && !isnan(lower ? m->min : m->max))
            snprintf(mv, sizeof mv, "%.4f", lower ? m->min : m->max);
        if (ips && !isnan(ips->last)) snprintf(iv, sizeof iv, "%.0f", ips->last);
        if (!vs) vs = "pending";
        finished += !strcmp(vs, "finished");
        fprintf(t, "%-32s %-11s %5s %12s %9s  %s\n", v, vs, ep, mv, iv, dev ? dev : "");
        char *ev = mg_html_escape(v);
        fprintf(h, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
                ev ? ev : "", vs, ep, mv, iv, dev ? dev : "");
        free(ev);
        json_decref(st);
    }
    fprintf(t, "%zu of %zu finished; %s\n", finished, nv, state ? state : "starting");
    fputs("</table></div>", h);
    int ok = fclose(t) == 0;
    ok = fclose(h) == 0 && ok;
    rt_results_list_free(&l);
    rt_results_close(rs);
    json_decref(man);
    if (!ok || !text || !html) {
        free(text);
        free(html);
        return -1;
    }
    *text_out = text;
    *html_out = html;
    return 0;
}

/* %train --background's table: the run's state, epoch, metric, images/s, where. */
static int render_run(const sweep_job *j, const char *state, char **text_out, char **html_out)
{
    rt_results *rs = NULL;
    rt_results_list l = {0};
    if (access(j->store, F_OK) == 0) {
        rt_results_config cfg = {.path = j->store, .readonly = 1};
        rt_error err = {0};
        const char *w[] = {j->tag};
        rt_results_query q = {.status = -1, .nwhere = 1, .where = w};
        if (rt_results_open_config(&cfg, &rs, &err) != RT_OK) rs = NULL;
        if (rs && rt_results_list_runs(rs, &q, &l, &err) != RT_OK) l = (rt_results_list){0};
    }
    const rt_results_run *run = l.n ? &l.runs[l.n - 1] : NULL;
    const rt_results_summary *m = run ? metric_of(run, "val_accuracy") : NULL;
    const rt_results_summary *ips = run ? metric_of(run, "images_per_s") : NULL;
    const char *epochs = run ? param_of(run, "epochs") : NULL;
    char ep[32] = "-", mv[32] = "-", iv[32] = "-";
    if (m) snprintf(ep, sizeof ep, "%ld of %s", m->count, epochs ? epochs : "?");
    if (m && !isnan(m->last)) snprintf(mv, sizeof mv, "%.4f", m->last);
    if (ips && !isnan(ips->last)) snprintf(iv, sizeof iv, "%.0f", ips->last);
    char *text = NULL, *html = NULL;
    size_t tn = 0, hn = 0;
    FILE *t = open_memstream(&text, &tn);
    if (t) {
        fprintf(t,
                "%%train in the background: %s\n  epoch %s, val_accuracy %s, images/s %s\n"
                "  run directory %s; notebook %s; log %s\n",
                state, ep, mv, iv, j->run_dir, j->out_nb, j->log);
        if (fclose(t) != 0) free(text), text = NULL;
    }
    char *er = mg_html_escape(j->run_dir);
    FILE *h = open_memstream(&html, &hn);
    if (h) {
        fprintf(h,
                "<div><b>%%train in the background</b>: %s<table><tr><th>epoch</th>"
                "<th>val_accuracy</th><th>images/s</th><th>run directory</th></tr><tr><td>%s"
                "</td><td>%s</td><td>%s</td><td>%s</td></tr></table></div>",
                state, ep, mv, iv, er ? er : "");
        if (fclose(h) != 0) free(html), html = NULL;
    }
    free(er);
    rt_results_list_free(&l);
    rt_results_close(rs);
    if (!text || !html) {
        free(text);
        free(html);
        return -1;
    }
    *text_out = text;
    *html_out = html;
    return 0;
}

static const char *state_of(const sweep_job *j, int done)
{
    if (!done) return "running";
    int code = WIFEXITED(j->wait) ? WEXITSTATUS(j->wait) : 128 + WTERMSIG(j->wait);
    return code == 0 ? "finished" : j->stopped ? "interrupted" : "failed";
}

static void show(const mg_out *out, const sweep_job *j, int done, const char *display_id,
                 int update)
{
    char *text = NULL, *html = NULL;
    if (!out || !out->display) return;
    if (j->single ? render_run(j, state_of(j, done), &text, &html) < 0
                  : render(j->dir, &text, &html) < 0)
        return;
    json_t *data = json_pack("{s:s, s:s}", "text/plain", text, "text/html", html);
    if (data) out->display(out->user, data, NULL, display_id, update);
    json_decref(data);
    free(text);
    free(html);
}

/* ---- the helper thread: starts the sweep, refreshes the table, reaps it ---- */

static void *monitor(void *arg)
{
    sweep_job *j = arg;
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) { /* async-signal-safe calls only until exec */
        setpgid(0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent) _exit(127);
        int fd = open(j->log, O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(127);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0) dup2(in, STDIN_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv("/proc/self/exe", j->argv);
        _exit(127);
    }
    pthread_mutex_lock(&j->mu);
    j->pid = pid > 0 ? pid : -1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    int how = 0;
    double last = 0;
    while (pid > 0) {
        pid_t r = waitpid(pid, &how, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) break;
        pthread_mutex_lock(&j->mu);
        mg_out *live = j->live;
        pthread_mutex_unlock(&j->mu);
        if (live && now_s() - last >= 1.0) {
            show(live, j, 0, j->display_id, 1);
            last = now_s();
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&j->mu);
    j->wait = pid > 0 ? how : 127 << 8;
    if (j->live) show(j->live, j, 1, j->display_id, 1);
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Waits until the sweep ended; stops it on an interrupt (host may be NULL), and kills its
 * whole process group when it outlives the grace period after a stop. */
static void wait_done(sweep_job *j, const mg_host *host, int stop)
{
    double stopped_at = 0;
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        if (!stop && host && host->interrupted && host->interrupted(host->user)) stop = 1;
        if (stop && !stopped_at && j->pid > 0) {
            j->stopped = 1;
            kill(j->pid, SIGTERM);
            stopped_at = now_s();
        }
        if (stopped_at && now_s() - stopped_at > STOP_GRACE_S && j->pid > 0) {
            kill(-j->pid, SIGKILL);
            stopped_at = now_s();
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    pthread_mutex_unlock(&j->mu);
}

static void job_free(void *p)
{
    sweep_job *j = p;
    if (!j) return;
    if (j->th_started) {
        wait_done(j, NULL, 1); /* the kernel is going: every variant checkpoints */
        pthread_join(j->th, NULL);
    }
    if (j->live && j->live->release) j->live->release(j->live);
    for (int i = 0; j->argv[i]; i++) free(j->argv[i]);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* ---- the subcommands ---- */

static int finish(mg_ctx *ctx, sweep_job *j, mg_error *err)
{
    show(ctx->out, j, 1, NULL, 0);
    int code = WIFEXITED(j->wait) ? WEXITSTATUS(j->wait) : 128 + WTERMSIG(j->wait);
    if (code == 0) return 0;
    if (j->single)
        return j->stopped ? mg_fail(err, "KeyboardInterrupt",
                                    "%%train --background: stopped; the run checkpointed in %s "
                                    "(%%resume %s continues it)",
                                    j->run_dir, j->run_dir)
                          : mg_fail(err, "RuntimeError",
                                    "%%train --background: the run failed (exit %d); see %s "
                                    "and %s",
                                    code, j->out_nb, j->log);
    if (code > 128)
        return mg_fail(err, "KeyboardInterrupt",
                       "%%sweep: stopped; every running variant checkpointed (the same %%sweep "
                       "again resumes them)");
    if (code == 1)
        return mg_fail(err, "RuntimeError",
                       "%%sweep: a variant failed (its state is 'failed' above; its log is "
                       "%s/VARIANT/log, the sweep's %s)",
                       j->dir, j->log);
    return mg_fail(err, "RuntimeError", "%%sweep: kiln sweep ended with status %d (see %s)", code,
                   j->log);
}

/* kiln sweep ARGS --dry-run, synchronously: bad arguments, a missing parameter or an
 * unreadable notebook are the cell's error before anything starts. */
static int dry_run(char **argv, int n, mg_error *err)
{
    int fds[2];
    if (pipe(fds) < 0) return mg_fail(err, "OSError", "%%sweep: pipe: %s", strerror(errno));
    argv[n] = "--dry-run";
    argv[n + 1] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0) dup2(nul, STDOUT_FILENO);
        close(fds[0]);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    argv[n] = NULL;
    close(fds[1]);
    char msg[1024] = "";
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], msg + got, sizeof msg - 1 - got)) > 0) got += (size_t)r;
    msg[got] = 0;
    close(fds[0]);
    int how = 0;
    if (pid < 0 || waitpid(pid, &how, 0) < 0)
        return mg_fail(err, "OSError", "%%sweep: cannot run kiln sweep: %s", strerror(errno));
    if (WIFEXITED(how) && WEXITSTATUS(how) == 0) return 0;
    char *nl = strchr(msg, '\n'); /* the first line says why */
    if (nl) *nl = 0;
    const char *why = !strncmp(msg, "kiln sweep: ", 12) ? msg + 12 : msg;
    return mg_fail(err, "ValueError", "%%sweep: %s", why[0] ? why : "kiln sweep refused it");
}

/* Refuses when this process is not kiln (only it has the sweep and run commands) or
 * a job of this kernel is still running. */
static int refuse(mg_ctx *ctx, const char *who, mg_error *err)
{
    char self[4096];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sn > 0 ? sn : 0] = 0;
    const char *base = strrchr(self, '/');
    if (!base || strcmp(base + 1, "kiln"))
        return mg_fail(err, "OSError", "%s: this process is not the kiln binary (%s)", who,
                       self[0] ? self : "unknown");
    sweep_job *old = mg_session_get(ctx->session, SLOT);
    if (!old) return 0;
    pthread_mutex_lock(&old->mu);
    int running = !old->done;
    pthread_mutex_unlock(&old->mu);
    if (running)
        return mg_fail(err, "UsageError",
                       "%s: %s in %s is still running ---> HINT: %%sweep wait or %%sweep stop "
                       "first",
                       who, old->single ? "a %train --background" : "the sweep",
                       old->single ? old->run_dir : old->dir);
    return 0;
}

static sweep_job *job_new(void)
{
    sweep_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    return j;
}

static void new_id(sweep_job *j, char *id, size_t n, const char *prefix)
{
    static const char hex[] = "0123456789abcdef";
    unsigned long seed =
        (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16) ^ (unsigned long)(size_t)j;
    snprintf(id, n, "%s", prefix);
    for (size_t k = strlen(id); k + 1 < n && k < strlen(prefix) + 16;
         k++, seed = seed * 6364136223846793005ul + 1) {
        id[k] = hex[(seed >> 33) & 15];
        id[k + 1] = 0;
    }
}

/* Starts j's process on its helper thread, shows its table, keeps it in the session;
 * where outputs cannot outlive the cell (kiln run), waits for the end. */
static int launch(mg_ctx *ctx, sweep_job *j, const char *who, mg_error *err)
{
    int background = ctx->out->detach != NULL;
    new_id(j, j->display_id, sizeof j->display_id, "kiln-sweep-");
    if (pthread_create(&j->th, NULL, monitor, j) != 0) {
        job_free(j);
        return mg_fail(err, "OSError", "%s: cannot start its thread", who);
    }
    j->th_started = 1;
    pthread_mutex_lock(&j->mu);
    while (!j->pid) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    if (mg_session_set(ctx->session, SLOT, j, job_free) < 0) /* frees j: stops it */
        return mg_fail(err, "MemoryError", "%s: out of memory", who);
    if (j->pid < 0) return mg_fail(err, "OSError", "%s: cannot start a kiln process", who);
    /* a sweep's table once it has listed its variants (a few milliseconds) */
    for (double t0 = now_s(); !j->single && now_s() - t0 < 10;) {
        json_t *man = load(j->dir, NULL, "sweep.json");
        pid_t owner = (pid_t)json_integer_value(json_object_get(man, "pid"));
        json_decref(man);
        pthread_mutex_lock(&j->mu);
        int done = j->done;
        pthread_mutex_unlock(&j->mu);
        if (owner == j->pid || done) break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    show(ctx->out, j, 0, j->display_id, 0);
    mg_out *live = background ? ctx->out->detach(ctx->out->user) : NULL;
    pthread_mutex_lock(&j->mu);
    j->live = live; /* the helper thread updates the table from now on */
    pthread_mutex_unlock(&j->mu);
    if (!background) { /* kiln run: nothing can update the table later */
        wait_done(j, ctx->host, 0);
        return finish(ctx, j, err);
    }
    return 0;
}

static int start(mg_ctx *ctx, const char *line, mg_error *err)
{
    if (refuse(ctx, "%sweep", err) < 0) return -1;
    sweep_job *j = job_new();
    if (!j) return mg_fail(err, "MemoryError", "%%sweep: out of memory");
    j->argv[0] = strdup("kiln");
    j->argv[1] = strdup("sweep");
    int n = j->argv[0] && j->argv[1] ? split(line, j->argv + 2, MAX_WORDS - 2) : -3;
    if (n < 0) {
        job_free(j);
        return n == -1   ? mg_fail(err, "UsageError", "%%sweep: unterminated quote")
               : n == -2 ? mg_fail(err, "UsageError", "%%sweep: too many words")
                         : mg_fail(err, "MemoryError", "%%sweep: out of memory");
    }
    n += 2;
    for (int i = 2; i + 1 < n; i++)
        if (!strcmp(j->argv[i], "-o") || !strcmp(j->argv[i], "--output"))
            snprintf(j->dir, sizeof j->dir, "%s", j->argv[i + 1]);
    if (!j->dir[0]) {
        job_free(j);
        return mg_fail(err, "UsageError",
                       "%%sweep: -o DIR is missing (usage: %%sweep NOTEBOOK -o DIR -p NAME "
                       "V1,V2 ...)");
    }
    if (dry_run(j->argv, n, err) < 0) {
        job_free(j);
        return -1;
    }
    if (rt_store_is_url(j->dir)) { /* the table reads the sweep's staging copy */
        rt_error e = {0};
        char url[sizeof j->dir];
        memcpy(url, j->dir, sizeof url);
        if (rt_store_staging_dir(url, j->dir, sizeof j->dir, &e) != RT_OK) {
            job_free(j);
            return mg_fail_status(err, &e, "%%sweep: -o %s: %s", url, e.msg);
        }
    }
    snprintf(j->log, sizeof j->log, "%s/sweep.log", j->dir);
    if (rt_file_make_dirs(j->dir, 0777) < 0) {
        int e = errno;
        job_free(j);
        return mg_fail(err, "OSError", "%%sweep: -o: cannot create the folder: %s", strerror(e));
    }
    unlink(j->log); /* this start's log only */
    return launch(ctx, j, "%sweep", err);
}

int mg_sweep_background(mg_ctx *ctx, const char *notebook, const char *run_dir, const char *results,
                        mg_error *err)
{
    if (refuse(ctx, "%train --background", err) < 0) return -1;
    sweep_job *j = job_new();
    if (!j) return mg_fail(err, "MemoryError", "%%train --background: out of memory");
    j->single = 1;
    snprintf(j->dir, sizeof j->dir, "%s", run_dir);
    snprintf(j->run_dir, sizeof j->run_dir, "%s", run_dir);
    snprintf(j->out_nb, sizeof j->out_nb, "%s/background.out.ipynb", run_dir);
    snprintf(j->log, sizeof j->log, "%s/background.log", run_dir);
    new_id(j, j->tag, sizeof j->tag, "background=");
    if (rt_results_resolve_path(results && results[0] ? results : NULL, j->store, sizeof j->store) <
        0)
        j->store[0] = 0;
    const char *argv[] = {"kiln",    "run",          notebook, "-o",
                          j->out_nb, "--log-output", "--tag",  j->tag};
    for (size_t i = 0; i < sizeof argv / sizeof *argv; i++)
        if (!(j->argv[i] = strdup(argv[i]))) {
            job_free(j);
            return mg_fail(err, "MemoryError", "%%train --background: out of memory");
        }
    unlink(j->log);
    return launch(ctx, j, "%train --background", err);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    const char *line = args->raw ? args->raw : "";
    while (*line == ' ' || *line == '\t') line++;
    size_t w = strcspn(line, " \t\n");
    sweep_job *j = mg_session_get(ctx->session, SLOT);
    int is_status = w == 6 && !strncmp(line, "status", 6);
    int is_wait = w == 4 && !strncmp(line, "wait", 4);
    int is_stop = w == 4 && !strncmp(line, "stop", 4);
    if (!is_status && !is_wait && !is_stop) return start(ctx, line, err);
    if (line[w + strspn(line + w, " \t\n")])
        return mg_fail(err, "UsageError", "%%sweep %.*s takes no arguments", (int)w, line);
    if (!j)
        return mg_fail(err, "UsageError",
                       "%%sweep %.*s: no sweep was started in this kernel ---> HINT: %%sweep "
                       "NOTEBOOK -o DIR -p NAME V1,V2",
                       (int)w, line);
    if (is_status) {
        pthread_mutex_lock(&j->mu);
        int done = j->done;
        pthread_mutex_unlock(&j->mu);
        show(ctx->out, j, done, NULL, 0);
        return 0;
    }
    wait_done(j, ctx->host, is_stop);
    return finish(ctx, j, err);
}

static const mg_option options[] = {
    {"-o", MG_OPT_STRING, "DIR", "the sweep's folder (one subfolder a variant)", NULL},
    {"-p", MG_OPT_STRING, "NAME VALUES", "a parameter's values: V1,V2 or LO:HI[:log|:int]", NULL},
    {"--parallel", MG_OPT_INT, "N", "variants at once (one per device)", NULL},
    {"--devices", MG_OPT_STRING, "D", "cpu, cuda:0,1 or all (all)", NULL},
    {"--metric", MG_OPT_STRING, "KEY", "the table's order (val_accuracy)", NULL},
    {"--name", MG_OPT_STRING, "NAME", "the sweep's name in the results store (DIR's name)", NULL},
    {"--results", MG_OPT_STRING, "PATH", "the results store", NULL},
    {"--random", MG_OPT_INT, "K", "K variants sampled from the values", NULL},
    {"--seed", MG_OPT_INT, "N", "the sampling seed (0)", NULL},
    {"--prune", MG_OPT_CHOICE, NULL, "successive halving", "halving"},
    {"--eta", MG_OPT_INT, "N", "halving: keep 1/N at each rung (3)", NULL},
    {"--rung-epochs", MG_OPT_INT, "N", "halving: the first rung (1 epoch)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

const mg_command mg_cmd_sweep = {
    .name = "sweep",
    .summary = "Run a stage notebook once per variant, in the background (kiln sweep)",
    .usage = "Usage: %sweep NOTEBOOK -o DIR -p NAME V1,V2 [-p NAME ...] [--parallel N]\n"
             "              [--devices cpu|cuda:0,1|all] [--metric KEY] [--random K]\n"
             "              [--prune halving]\n"
             "       %sweep status | wait | stop\n\n"
             "Starts `kiln sweep` with these options (docs/sweeps.md) and returns at once;\n"
             "the cell shows a table, updated in place, of every variant's state, epoch,\n"
             "metric, images/s and device. Other cells run meanwhile. status shows the\n"
             "table now, wait waits for the end (an error if a variant failed), stop makes\n"
             "every running variant checkpoint and end; an interrupt during wait or stop,\n"
             "and the kernel's shutdown, stop it too. The same %sweep again skips the\n"
             "finished variants and resumes the others.\n\n"
             "Example:\n  %sweep stage.ipynb -o sweeps/lr -p lr 0.001,0.003 --parallel 2",
    .flags = MG_LINE | MG_RAW_ARGS,
    .options = options,
    .run = run,
    .positional = "status|wait|stop",
};
