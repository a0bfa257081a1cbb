/* jk_run.c - `kiln run NOTEBOOK.ipynb [-o OUT.ipynb] [-p NAME VALUE]...`: executes a
 * notebook's code cells in order with the cell engine, headless, and writes the
 * result notebook (nbformat 4.5, cell ids, outputs as nbclient records them).
 *  - -p NAME VALUE, as papermill: a cell tagged "injected-parameters" is inserted
 *    after the cell tagged "parameters" (or first; an old injected cell is replaced).
 *    VALUE is checked against the parameter's #@param annotation when it has one,
 *    else read as a literal of the cell language, else taken as a string.
 *  - Default output: NOTEBOOK with .ipynb replaced by .out.ipynb (never overwrites
 *    the input). Written atomically before the first cell (an unwritable path is
 *    refused at once), after every cell, and when a cell fails.
 *  - NOTEBOOK and OUT may be s3:// object URLs (jk_run_store.c): the notebook is read
 *    from the store; the result is written to a local copy and uploaded each time.
 *  - Exit status: 0 all cells ran; 1 a cell raised (the run stops there, the error
 *    is in the cell's outputs); 2 bad usage or unreadable notebook.
 *  - SIGINT/SIGTERM interrupt the running cell (KeyboardInterrupt), like a kernel.
 * Progress goes to stderr: a line per cell and the live displays' (training progress)
 * text, jk_run_progress.c (in place on a terminal, plain lines otherwise: no control
 * codes in a captured stream); --log-output echoes the cells' streams there too (for
 * batch-job logs), as papermill's flag of that name does.
 *  - Under a launcher (mpirun, srun, torchrun-style variables; runtime/dist/rt_dist.h) every
 *    rank runs the notebook and only rank 0 writes the result notebook. At the end a
 *    rank that failed leaves without finalising MPI, so the launcher stops the others
 *    at once instead of after their collective timeout. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fm.h"
#include "jk_cli.h"
#include "jk_nbout.h"
#include "jk_run.h"
#include "kl.h"
#include "rt_dist.h"
#include "rt_file.h"

static atomic_int run_interrupt; /* set from the signal handler only */

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&run_interrupt, 1);
}

typedef struct run_opts {
    const char *in, *out;
    int nparams, log_output, no_resume;
    const char **names, **values;
    mg_settings imposed; /* --run-dir, --results, --device, --threads, --tag, --stop-epoch */
    const char **tags;
} run_opts;

static const char usage_text[] =
    "usage: kiln run NOTEBOOK.ipynb [-o OUT.ipynb] [-p NAME VALUE]... [--log-output]\n"
    "                [--no-resume]\n"
    "  NOTEBOOK and OUT may be s3://BUCKET/KEY.ipynb objects (AWS_* settings)\n"
    "  -o, --output OUT   where to write the executed notebook (default NOTEBOOK.out.ipynb)\n"
    "  -p, --parameter NAME VALUE\n"
    "                     override a parameter (papermill-style injected cell)\n"
    "  --log-output       also echo the cells' stdout/stderr to stderr as they run\n"
    "  --no-resume        start %train runs over even where their --run-dir already\n"
    "                     holds checkpoints (old ones are moved to previous-<time>/)\n"
    "  every %train of the notebook, whatever its cell says (how kiln sweep runs a variant):\n"
    "  --run-dir DIR      checkpoints in DIR      --results PATH   the results store\n"
    "  --device DEV       the device              --threads N      N CPU threads\n"
    "  --tag KEY=VALUE    a parameter added to the run's results-store record\n"
    "  --stop-epoch N     stop after epoch N with a checkpoint (not an error)\n"
    "  --device-path      on the CPU, train through the GPU's trainer path (a check)\n";

static int parse_args(int argc, char **argv, run_opts *o)
{
    o->names = calloc((size_t)argc, sizeof *o->names);
    o->values = calloc((size_t)argc, sizeof *o->values);
    o->tags = calloc((size_t)argc, sizeof *o->tags);
    if (!o->names || !o->values || !o->tags) return -1;
    o->imposed.tags = o->tags;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) return fprintf(stderr, "kiln run: %s needs a path\n", a), -1;
            o->out = argv[++i];
        } else if (!strcmp(a, "--log-output")) {
            o->log_output = 1;
        } else if (!strcmp(a, "--no-resume")) {
            o->no_resume = 1; /* %train's default --resume becomes never */
        } else if (!strcmp(a, "--device-path")) {
            o->imposed.device_path = 1; /* as kiln kernel --device-path */
        } else if (!strcmp(a, "--run-dir") || !strcmp(a, "--results") || !strcmp(a, "--device") ||
                   !strcmp(a, "--tag")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return fprintf(stderr, "kiln run: %s needs a value\n", a), -1;
            const char *v = argv[++i];
            if (!strcmp(a, "--tag")) {
                if (!strchr(v, '=') || v[0] == '=')
                    return fprintf(stderr, "kiln run: --tag %s: not KEY=VALUE\n", v), -1;
                o->tags[o->imposed.ntags++] = v;
            } else if (!strcmp(a, "--run-dir")) o->imposed.run_dir = v;
            else if (!strcmp(a, "--results")) o->imposed.results = v;
            else o->imposed.device = v;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--stop-epoch")) {
            char *end = NULL;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || !end || *end || end == argv[i + 1] || v < 1 || v > 100000)
                return fprintf(stderr, "kiln run: %s needs a whole number >= 1\n", a), -1;
            i++;
            if (!strcmp(a, "--threads")) o->imposed.threads = (int)v;
            else o->imposed.stop_epoch = (int)v;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--parameter")) {
            if (i + 2 >= argc) return fprintf(stderr, "kiln run: %s needs NAME VALUE\n", a), -1;
            o->names[o->nparams] = argv[++i];
            o->values[o->nparams++] = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return fprintf(stderr, "kiln run: unknown option %s\n%s", a, usage_text), -1;
        } else if (!o->in) {
            o->in = a;
        } else {
            return fprintf(stderr, "kiln run: more than one notebook given (%s)\n", a), -1;
        }
    }
    if (!o->in) return fprintf(stderr, "%s", usage_text), -1;
    return 0;
}

/* ---- notebook helpers ---- */

static void new_cell_id(json_t *cells, char *buf, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();;
         seed = seed * 1103515245u + 12345u) {
        unsigned v = seed;
        for (size_t k = 0; k < 8 && k + 1 < n; k++, v = v * 2654435761u + 7u)
            buf[k] = hex[(v >> 13) & 15];
        buf[n < 9 ? n - 1 : 8] = 0;
        int clash = 0;
        size_t i;
        json_t *c;
        json_array_foreach(cells, i, c)
        {
            const char *id = json_string_value(json_object_get(c, "id"));
            if (id && !strcmp(id, buf)) clash = 1;
        }
        if (!clash) return;
    }
}

/* Checks that nb is an nbformat-4 notebook kiln run can execute; NULL if so, else why. */
static const char *notebook_problem(json_t *nb)
{
    if (!json_is_object(nb)) return "the top level is not a JSON object";
    if (json_integer_value(json_object_get(nb, "nbformat")) != 4)
        return "\"nbformat\" is not 4 (only nbformat 4 notebooks are supported)";
    if (!json_is_array(json_object_get(nb, "cells"))) return "\"cells\" is not a list";
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(nb, "cells"), i, c)
    {
        json_t *src = json_object_get(c, "source");
        if (!json_is_object(c) || !json_is_string(json_object_get(c, "cell_type")) ||
            !(json_is_string(src) || json_is_array(src)))
            return "a cell lacks \"cell_type\" or \"source\"";
    }
    return NULL;
}

/* nb (stolen) if valid, else NULL after printing why, naming what. */
static json_t *checked(json_t *nb, const json_error_t *jerr, const char *what)
{
    if (!nb) {
        if (jerr->line > 0)
            fprintf(stderr, "kiln run: cannot read %s: %s (line %d, column %d)\n", what, jerr->text,
                    jerr->line, jerr->column);
        else fprintf(stderr, "kiln run: cannot read %s: %s\n", what, jerr->text);
        return NULL;
    }
    const char *why = notebook_problem(nb);
    if (why) {
        fprintf(stderr, "kiln run: %s is not a valid notebook: %s\n", what, why);
        json_decref(nb);
        return NULL;
    }
    return nb;
}

static int load(const char *path, json_t **nb_out)
{
    json_error_t jerr;
    *nb_out = checked(json_load_file(path, 0, &jerr), &jerr, path);
    return *nb_out ? 0 : -1;
}

/* nbformat 4.5: every cell has an id; code cells have outputs and execution_count. */
static void normalise(json_t *nb)
{
    json_t *cells = json_object_get(nb, "cells");
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
    {
        if (!json_is_string(json_object_get(c, "id"))) {
            char id[16];
            new_cell_id(cells, id, sizeof id);
            json_object_set_new(c, "id", json_string(id));
        }
        if (!json_is_object(json_object_get(c, "metadata")))
            json_object_set_new(c, "metadata", json_object());
        if (!strcmp(json_string_value(json_object_get(c, "cell_type")), "code")) {
            json_object_set_new(c, "outputs", json_array());
            json_object_set_new(c, "execution_count", json_null());
        }
    }
    if (json_integer_value(json_object_get(nb, "nbformat_minor")) < 5)
        json_object_set_new(nb, "nbformat_minor", json_integer(5));
    json_t *meta = json_object_get(nb, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(nb, "metadata", meta);
    }
    if (!json_object_get(meta, "kernelspec"))
        json_object_set_new(meta, "kernelspec",
                            json_pack("{s:s, s:s, s:s}", "name", "kiln", "display_name", "Kiln",
                                      "language", "kiln"));
    if (!json_object_get(meta, "language_info"))
        json_object_set_new(meta, "language_info", json_pack("{s:s}", "name", "kiln"));
}

json_t *jk_run_parse(const char *text, size_t len, const char *what)
{
    json_error_t jerr;
    json_t *nb = checked(json_loadb(text, len, 0, &jerr), &jerr, what);
    if (nb) normalise(nb);
    return nb;
}

/* Written through rt_file: a random O_EXCL temporary name beside path (no planted
 * file or symlink is followed), fsync, rename. The notebook keeps the mode of the file
 * it replaces, or gets what the umask gives a new file. */
static int save(json_t *nb, const char *path, jk_run_remote *remote)
{
    if (remote && rt_dist_is_writer()) /* an s3:// URL: its local copy, then uploaded */
        return save(nb, remote->local, NULL) < 0 ? -1 : jk_run_remote_upload(remote);
    if (!rt_dist_is_writer()) return 0; /* rank 0 writes the result */
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : RT_FILE_MODE_UMASK;
    rt_file w;
    rt_error err = {0};
    rt_status s = rt_file_begin(&w, path, &err);
    if (s == RT_OK) {
        if (json_dumpf(nb, w.f, JSON_INDENT(1)) != 0 || fputc('\n', w.f) == EOF) {
            rt_file_abort(&w);
            s = RT_ERR(&err, RT_EIO, "cannot write %s: %s", path,
                       errno ? strerror(errno) : "write failed");
        } else {
            s = rt_file_commit(&w, mode, &err);
        }
    }
    if (s != RT_OK) fprintf(stderr, "kiln run: %s\n", err.msg);
    return s == RT_OK ? 0 : -1;
}

static char *default_out(const char *in)
{
    size_t n = strlen(in);
    char *o = malloc(n + 16);
    if (!o) return NULL;
    if (n > 6 && !strcmp(in + n - 6, ".ipynb"))
        snprintf(o, n + 16, "%.*s.out.ipynb", (int)(n - 6), in);
    else snprintf(o, n + 16, "%s.out.ipynb", in);
    return o;
}

/* ---- execution ---- */

/* After each cell the result notebook is written again (as papermill does), so a
 * batch job killed mid-run (SIGKILL, a reclaimed VM) leaves the cells that ran. */
static int execute_all(json_t *nb, kl_engine *eng, jk_nbout *w, const char *out_path,
                       jk_run_remote *remote)
{
    json_t *cells = json_object_get(nb, "cells");
    size_t ncode = 0, done = 0, i;
    json_t *c;
    json_array_foreach(cells, i, c) ncode +=
        !strcmp(json_string_value(json_object_get(c, "cell_type")), "code");
    int count = 0;
    json_array_foreach(cells, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "cell_type")), "code")) continue;
        done++;
        char *src = jk_cell_source(c);
        if (!src) return -1;
        if (!src[strspn(src, " \t\r\n")]) {
            free(src);
            continue;
        }
        json_object_set_new(c, "execution_count", json_integer(++count));
        jk_nbout_begin_cell(w, json_object_get(c, "outputs"), count);
        fprintf(stderr, "kiln run: cell %zu/%zu [%d]\n", done, ncode, count);
        atomic_store(&run_interrupt, 0);
        kl_error err;
        int rc = kl_engine_execute(eng, src, &w->out, json_object_get(c, "metadata"), &err);
        free(src);
        if (w->progress) jk_run_progress_end(w->progress);
        if (rc < 0) {
            jk_nbout_error(w, err.ename, err.evalue, err.traceback);
            fprintf(stderr, "kiln run: cell %zu raised %s: %s\n", done, err.ename, err.evalue);
            kl_error_deinit(&err);
            return 1;
        }
        if (save(nb, out_path, remote) < 0)
            fprintf(stderr, "kiln run: warning: the result notebook is written again at the end\n");
    }
    return 0;
}

int jk_run_main(int argc, char **argv)
{
    run_opts o = {0};
    int pr = parse_args(argc, argv, &o);
    int status = 2;
    json_t *nb = NULL;
    kl_engine *eng = NULL;
    char *out_path = NULL;
    jk_nbout w;
    jk_run_remote remote = {0}, *rem = NULL;
    int w_ok = 0;
    if (pr != 0) {
        status = pr > 0 ? 0 : 2;
        goto done;
    }
    if (rt_store_is_url(o.in) ? !(nb = jk_run_store_load(o.in)) : load(o.in, &nb) < 0) goto done;
    normalise(nb);
    if (o.nparams && jk_run_inject(nb, o.nparams, o.names, o.values) < 0) goto done;
    out_path = o.out ? strdup(o.out) : default_out(o.in);
    if (!out_path || (rt_store_is_url(out_path) && jk_run_remote_open(&remote, out_path) < 0))
        goto done;
    if (remote.s) rem = &remote;
    if (jk_nbout_init(&w) < 0) goto done;
    w_ok = 1;
    w.log_output = o.log_output;
    jk_run_progress progress;
    jk_run_progress_init(&progress, stderr, isatty(STDERR_FILENO));
    w.progress = rt_dist_is_writer() ? &progress : NULL; /* one rank's progress, not N */
    eng = kl_engine_create(&run_interrupt);
    if (!eng) goto done;
    mg_settings *st = kl_engine_settings(eng);
    st->run_dir = o.imposed.run_dir;
    st->results = o.imposed.results;
    st->device = o.imposed.device;
    st->threads = o.imposed.threads;
    st->stop_epoch = o.imposed.stop_epoch;
    st->device_path = o.imposed.device_path;
    st->tags = o.imposed.tags;
    st->ntags = o.imposed.ntags;
    if (o.no_resume) st->train_resume = MG_RESUME_NEVER;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* written once before the first cell: an output path that cannot be written is
     * refused now, not after hours of training */
    if (save(nb, out_path, rem) < 0) goto done;
    int rc = execute_all(nb, eng, &w, out_path, rem);
    json_t *state = kl_engine_widget_state(eng);
    if (state && json_object_size(json_object_get(state, "state")))
        json_object_set_new(json_object_get(nb, "metadata"), "widgets",
                            json_pack("{s:O}", "application/vnd.jupyter.widget-state+json", state));
    json_decref(state);
    if (save(nb, out_path, rem) < 0) goto done;
    if (rt_dist_is_writer()) fprintf(stderr, "kiln run: wrote %s\n", out_path);
    status = rc == 0 ? 0 : 1;
done:
    rt_dist_finish(status == 0);
    if (w_ok) jk_nbout_deinit(&w);
    kl_engine_destroy(eng);
    json_decref(nb);
    jk_run_remote_close(&remote);
    free(out_path);
    free(o.names);
    free(o.values);
    free(o.tags);
    return status;
}
