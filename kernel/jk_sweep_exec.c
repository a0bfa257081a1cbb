/* jk_sweep_exec.c - running a sweep's variants: one child `kiln run` per variant in a
 * free slot (jk_sweep_plan.c), its output in DIR/<variant>/log, its state in
 * DIR/<variant>/status.json (read back when the same sweep runs again: finished and
 * pruned variants are skipped, the others run again and their %train continues from
 * the newest checkpoint in DIR/<variant>/run).
 *  - Children die with the sweep: each asks the kernel for SIGTERM when its parent
 *    goes (PR_SET_PDEATHSIG), so even a kill -9 of the sweep leaves no orphan; SIGTERM
 *    makes `kiln run` interrupt its cell, and %train checkpoints and writes the
 *    notebook before it exits.
 *  - SIGINT, SIGTERM or SIGHUP to the sweep: no new variant starts, every running one
 *    gets SIGTERM, and the sweep waits for them all before it reports.
 *  - --prune halving: every variant runs with kiln run --stop-epoch RUNG; at each rung
 *    the best max(1, n/eta) of the n that reached it (by the monitored metric) go on
 *    to RUNG*eta, the others are pruned; once one is left it trains to its end. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "jk_sweep.h"

static volatile sig_atomic_t stop_signal; /* set by the handler only */

static void on_stop(int sig)
{
    if (!stop_signal) stop_signal = sig;
}

static int mkdir_p1(const char *p) { return mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -1; }

/* DIR/<v>/file to the store, for an s3:// DIR */
static void put(const jk_sweep *sw, const jk_variant *v, const char *file)
{
    char rel[400];
    snprintf(rel, sizeof rel, "%s/%s", v->name, file);
    jk_sweep_store_put(sw, rel);
}

void jk_sweep_save_state(const jk_sweep *sw, const jk_variant *v)
{
    char path[JK_SWEEP_PATH + 32], tmp[JK_SWEEP_PATH + 48];
    snprintf(path, sizeof path, "%s/status.json", v->dir);
    snprintf(tmp, sizeof tmp, "%s/.status.json.%ld", v->dir, (long)getpid());
    json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:s}", "variant", v->name, "state",
                          jk_sweep_state_name(v->state), "rung", v->rung, "exit", v->exit_code,
                          "sweep", sw->name);
    json_t *params = json_object();
    for (int k = 0; params && k < sw->nparams; k++)
        json_object_set_new(params, sw->pnames[k], json_string(v->values[k]));
    if (j && params) json_object_set(j, "params", params);
    if (j && v->slot >= 0 && v->state == JK_V_RUNNING) {
        json_object_set_new(j, "device", json_string(sw->slots[v->slot].device));
        json_object_set_new(j, "threads", json_integer(sw->slots[v->slot].threads));
        json_object_set_new(j, "pid", json_integer(v->pid));
    }
    if (!j || json_dump_file(j, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "kiln sweep: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    json_decref(params);
    json_decref(j);
    put(sw, v, "status.json");
}

/* What an earlier run of the sweep left: finished, pruned and paused variants stay so;
 * anything else (running when the sweep was killed, failed, interrupted) runs again. */
static void load_state(jk_sweep *sw, jk_variant *v)
{
    char path[JK_SWEEP_PATH + 32], rel[400];
    snprintf(path, sizeof path, "%s/status.json", v->dir);
    snprintf(rel, sizeof rel, "%s/status.json", v->name);
    /* s3://: the store's word, as another machine may have run the sweep since */
    if (sw->s && mkdir_p1(v->dir) == 0 && jk_sweep_store_get(sw, rel) == 1) unlink(path);
    json_t *j = json_load_file(path, 0, NULL);
    int s = jk_sweep_state_parse(json_string_value(json_object_get(j, "state")));
    v->state = s == JK_V_FINISHED || s == JK_V_PRUNED || (s == JK_V_PAUSED && sw->halving)
                   ? (jk_variant_state)s
                   : JK_V_PENDING;
    v->rung = v->state == JK_V_PENDING ? 0 : (int)json_integer_value(json_object_get(j, "rung"));
    json_decref(j);
}

/* The child: dies with the sweep, pinned to its slot's cores, output to the log. */
static void child(const jk_sweep *sw, const jk_slot *sl, int log_fd, char **argv, pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent) _exit(127);
    if (sl->ncores > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c = 0; c < sl->ncores; c++) CPU_SET(sl->cores[c], &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            dprintf(log_fd, "kiln sweep: cannot pin to the slot's cores: %s\n", strerror(errno));
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) _exit(127);
    close(log_fd);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO), close(devnull);
    execv(sw->exe, argv);
    fprintf(stderr, "kiln sweep: cannot run %s: %s\n", sw->exe, strerror(errno));
    _exit(127);
}

static int start(jk_sweep *sw, jk_variant *v, int slot, int stop_epoch)
{
    jk_slot *sl = &sw->slots[slot];
    char out[JK_SWEEP_PATH + 16], run_dir[JK_SWEEP_PATH + 16], logp[JK_SWEEP_PATH + 16];
    char threads[16], stop[16], tag_s[600], tag_v[300];
    snprintf(out, sizeof out, "%s/out.ipynb", v->where);
    snprintf(run_dir, sizeof run_dir, "%s/run", v->where);
    snprintf(logp, sizeof logp, "%s/log", v->dir);
    snprintf(threads, sizeof threads, "%d", sl->threads);
    snprintf(stop, sizeof stop, "%d", stop_epoch);
    snprintf(tag_s, sizeof tag_s, "sweep=%s", sw->name);
    snprintf(tag_v, sizeof tag_v, "variant=%s", v->name);
    const char *argv[32 + 3 * JK_SWEEP_MAX_PARAMS];
    int n = 0;
    argv[n++] = sw->exe;
    argv[n++] = "run";
    argv[n++] = sw->notebook;
    argv[n++] = "-o", argv[n++] = out;
    argv[n++] = "--log-output"; /* the cells' streams in the log too */
    for (int k = 0; k < sw->nparams; k++)
        argv[n++] = "-p", argv[n++] = sw->pnames[k], argv[n++] = v->values[k];
    argv[n++] = "--run-dir", argv[n++] = run_dir;
    argv[n++] = "--results", argv[n++] = sw->store;
    argv[n++] = "--device", argv[n++] = sl->device;
    argv[n++] = "--threads", argv[n++] = threads;
    argv[n++] = "--tag", argv[n++] = tag_s;
    argv[n++] = "--tag", argv[n++] = tag_v;
    if (stop_epoch > 0) argv[n++] = "--stop-epoch", argv[n++] = stop;
    argv[n] = NULL;
    if (mkdir_p1(v->dir) < 0) {
        fprintf(stderr, "kiln sweep: cannot create %s: %s\n", v->dir, strerror(errno));
        return -1;
    }
    char rel[400];
    snprintf(rel, sizeof rel, "%s/log", v->name);
    if (sw->s && access(logp, F_OK) != 0) jk_sweep_store_get(sw, rel); /* appended to */
    int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "kiln sweep: cannot write %s: %s\n", logp, strerror(errno));
        return -1;
    }
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    dprintf(fd, "=== kiln sweep %s: %s on %s, %d thread%s%s%s ===\n", sw->name, when, sl->device,
            sl->threads, sl->threads == 1 ? "" : "s", stop_epoch > 0 ? ", to epoch " : "",
            stop_epoch > 0 ? stop : "");
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) child(sw, sl, fd, (char **)argv, parent);
    close(fd);
    if (pid < 0) {
        fprintf(stderr, "kiln sweep: cannot start %s: %s\n", v->name, strerror(errno));
        return -1;
    }
    v->pid = pid;
    v->slot = slot;
    v->state = JK_V_RUNNING;
    sl->busy = 1;
    jk_sweep_save_state(sw, v);
    fprintf(stderr, "kiln sweep: %s: started on %s (%d thread%s)\n", v->name, sl->device,
            sl->threads, sl->threads == 1 ? "" : "s");
    return 0;
}

/* A child ended: its variant's state from how. */
static void ended(jk_sweep *sw, jk_variant *v, int how, int stop_epoch, int signalled)
{
    sw->slots[v->slot].busy = 0;
    v->exit_code = WIFEXITED(how) ? WEXITSTATUS(how) : -WTERMSIG(how);
    if (v->exit_code == 0) v->state = stop_epoch > 0 ? JK_V_PAUSED : JK_V_FINISHED;
    else v->state = signalled ? JK_V_INTERRUPTED : JK_V_FAILED;
    if (v->state == JK_V_PAUSED) v->rung = stop_epoch;
    fprintf(stderr, "kiln sweep: %s: %s", v->name, jk_sweep_state_name(v->state));
    if (v->exit_code)
        fprintf(stderr, " (%s %d)", v->exit_code > 0 ? "exit" : "signal",
                v->exit_code > 0 ? v->exit_code : -v->exit_code);
    fprintf(stderr, "\n");
    v->slot = -1;
    v->pid = 0;
    put(sw, v, "log");
}

/* Runs the variants todo[0..n) (stop_epoch > 0: up to that rung); returns when all of
 * them have ended. */
static void run_round(jk_sweep *sw, jk_variant **todo, int n, int stop_epoch)
{
    int next = 0, running = 0, forwarded = 0;
    while (next < n || running > 0) {
        for (int s = 0; !stop_signal && next < n && s < sw->nslots; s++) {
            if (sw->slots[s].busy) continue;
            jk_variant *v = todo[next++];
            if (start(sw, v, s, stop_epoch) == 0) running++;
            else v->state = JK_V_FAILED, v->exit_code = 127;
        }
        if (stop_signal && !forwarded) {
            forwarded = 1;
            fprintf(stderr, "kiln sweep: stopping: each running variant checkpoints and ends\n");
            for (int i = 0; i < n; i++)
                if (todo[i]->state == JK_V_RUNNING) kill(todo[i]->pid, SIGTERM);
            next = n; /* nothing new starts */
        }
        int how;
        pid_t pid;
        while (running > 0 && (pid = waitpid(-1, &how, WNOHANG)) > 0) {
            for (int i = 0; i < n; i++)
                if (todo[i]->state == JK_V_RUNNING && todo[i]->pid == pid) {
                    ended(sw, todo[i], how, stop_epoch, forwarded);
                    jk_sweep_save_state(sw, todo[i]);
                    running--;
                }
        }
        if (running > 0 || next < n) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL); /* a signal cuts it short */
        }
    }
}

static int by_metric(const jk_sweep *sw, const jk_variant *a, const jk_variant *b)
{
    int na = isnan(a->metric), nb = isnan(b->metric);
    if (na || nb) return na - nb; /* no value: last */
    if (a->metric == b->metric) return 0;
    return (sw->metric_lower ? a->metric < b->metric : a->metric > b->metric) ? -1 : 1;
}

/* Successive halving over the variants not pruned yet. */
static void halving(jk_sweep *sw)
{
    size_t nv = sw->nv > 0 ? (size_t)sw->nv : 1;
    jk_variant **alive = calloc(nv, sizeof *alive), **todo = calloc(nv, sizeof *todo);
    if (!alive || !todo) {
        fprintf(stderr, "kiln sweep: out of memory\n");
        goto out;
    }
    int na = 0;
    for (int i = 0; i < sw->nv; i++)
        if (sw->v[i].state != JK_V_PRUNED) alive[na++] = &sw->v[i];
    for (int rung = sw->first_rung; na > 0 && !stop_signal;) {
        int last = na == 1, nt = 0; /* one left: it trains to its end */
        for (int i = 0; i < na; i++)
            if (alive[i]->state != JK_V_FINISHED &&
                (last || alive[i]->state != JK_V_PAUSED || alive[i]->rung < rung))
                todo[nt++] = alive[i];
        if (nt) {
            if (last) fprintf(stderr, "kiln sweep: %s trains to its end\n", alive[0]->name);
            else
                fprintf(stderr, "kiln sweep: rung %d: %d variant%s to epoch %d\n", rung, nt,
                        nt == 1 ? "" : "s", rung);
            run_round(sw, todo, nt, last ? 0 : rung);
        }
        /* ranked by the rung's epochs only: one that ran further before (interrupted
         * past the rung, then resumed) has no head start */
        if (stop_signal || last || jk_sweep_collect_upto(sw, rung) < 0) break;
        /* rank the ones that reached the rung; the failed drop out */
        int nr = 0, paused = 0;
        for (int i = 0; i < na; i++)
            if (alive[i]->state == JK_V_PAUSED || alive[i]->state == JK_V_FINISHED)
                alive[nr++] = alive[i];
        for (int i = 1; i < nr; i++) /* stable insertion sort, best first */
            for (int j = i; j > 0 && by_metric(sw, alive[j], alive[j - 1]) < 0; j--) {
                jk_variant *t = alive[j];
                alive[j] = alive[j - 1];
                alive[j - 1] = t;
            }
        int keep = nr / sw->eta > 0 ? nr / sw->eta : 1;
        for (int i = keep; i < nr; i++)
            if (alive[i]->state == JK_V_PAUSED) {
                alive[i]->state = JK_V_PRUNED;
                jk_sweep_save_state(sw, alive[i]);
                fprintf(stderr, "kiln sweep: %s: pruned at epoch %d\n", alive[i]->name,
                        alive[i]->rung);
            }
        na = keep < nr ? keep : nr;
        for (int i = 0; i < na; i++) paused += alive[i]->state == JK_V_PAUSED;
        if (!paused) break;
        rung *= sw->eta;
    }
out:
    free(alive);
    free(todo);
}

int jk_sweep_exec(jk_sweep *sw)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: the wait is cut short */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int skipped = 0;
    for (int i = 0; i < sw->nv; i++) {
        load_state(sw, &sw->v[i]);
        skipped += sw->v[i].state == JK_V_FINISHED || sw->v[i].state == JK_V_PRUNED;
    }
    if (skipped)
        fprintf(stderr, "kiln sweep: %d of %d variants already done (finished or pruned)\n",
                skipped, sw->nv);
    if (sw->halving) {
        halving(sw);
    } else {
        jk_variant **todo = calloc(sw->nv > 0 ? (size_t)sw->nv : 1, sizeof *todo);
        int n = 0;
        for (int i = 0; todo && i < sw->nv; i++)
            if (sw->v[i].state == JK_V_PENDING) todo[n++] = &sw->v[i];
        if (!todo) fprintf(stderr, "kiln sweep: out of memory\n");
        else run_round(sw, todo, n, 0);
        free(todo);
    }
    return stop_signal;
}
