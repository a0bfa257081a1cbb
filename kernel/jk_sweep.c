/* jk_sweep.c - `kiln sweep NOTEBOOK -o DIR -p NAME V1,V2,... [-p ...]`: runs one
 * `kiln run` of NOTEBOOK per variant (the cartesian grid of the values, or --random K
 * samples of them), each in DIR/<variant>/, several at once (jk_sweep_plan.c places
 * them), then prints and writes the summary (jk_sweep_report.c). This file: the
 * options, the variants and their names, the check of the parameters before anything
 * runs, and the exit status (0 all variants finished, 1 one failed, 2 bad usage,
 * 128+signal when a signal stopped the sweep). docs/sweeps.md is the user's guide. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jk_cli.h"
#include "jk_run.h"
#include "jk_sweep.h"
#include "rt_results.h"
#include "rt_store.h"
#include "rt_file.h"

static const char usage_text[] =
    "usage: kiln sweep NOTEBOOK.ipynb -o DIR -p NAME VALUES [-p NAME VALUES]...\n"
    "                  [--parallel N] [--devices cpu|cuda:0,1|all] [--metric KEY]\n"
    "                  [--name NAME] [--results PATH] [--random K [--seed N]]\n"
    "                  [--prune halving [--eta N] [--rung-epochs N]] [--dry-run]\n"
    "  runs NOTEBOOK once per variant, each in DIR/<variant>/ (out.ipynb, run/, log)\n"
    "  -p NAME V1,V2,...  values of a parameter of the notebook's parameters cell; the\n"
    "                     variants are every combination (the grid)\n"
    "  -p NAME LO:HI[:log|:int]  a range, sampled by --random K (uniform, log-uniform,\n"
    "                     whole numbers); a list is sampled from too\n"
    "  --parallel N       variants at once (default: one per device)\n"
    "  --devices D        cpu (the cores are split between the variants), cuda:0,1 (one\n"
    "                     variant per GPU), all (every GPU, else cpu; the default)\n"
    "  --metric KEY       the summary's order (default val_accuracy; a loss: lowest first)\n"
    "  --name NAME        the sweep's name in the results store (default: DIR's name)\n"
    "  --results PATH     the results store (default $KILN_RESULTS or ~/.local/share/kiln)\n"
    "  --random K, --seed N   K variants sampled from the values (seed 0)\n"
    "  --prune halving    successive halving: all train to the first rung, the best 1/eta\n"
    "                     continue from their checkpoints to eta times further, and so on\n"
    "  --eta N (3)        --rung-epochs N (1): the first rung\n"
    "  --dry-run          print the variants and where each runs; run nothing\n"
    "  The same command again skips finished variants and resumes the others.\n";

const char *jk_sweep_state_name(jk_variant_state s)
{
    static const char *n[] = {"pending", "running", "finished",   "paused",
                              "pruned",  "failed",  "interrupted"};
    return (unsigned)s < sizeof n / sizeof *n ? n[s] : "?";
}

int jk_sweep_state_parse(const char *name)
{
    for (int s = JK_V_PENDING; s <= JK_V_INTERRUPTED; s++)
        if (name && !strcmp(name, jk_sweep_state_name((jk_variant_state)s))) return s;
    return -1;
}

static int whole(const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end = NULL;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi)
        return fprintf(stderr, "kiln sweep: %s needs a whole number in %d..%d, got '%s'\n", opt, lo,
                       hi, v ? v : ""),
               -1;
    *out = (int)x;
    return 0;
}

static int parse_args(int argc, char **argv, jk_sweep *sw)
{
    sw->eta = 3;
    sw->first_rung = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int n = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (!strcmp(a, "--dry-run")) {
            sw->dry_run = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (sw->notebook)
                return fprintf(stderr, "kiln sweep: more than one notebook given (%s)\n", a), -1;
            sw->notebook = a;
            continue;
        }
        if (!v) return fprintf(stderr, "kiln sweep: %s needs a value\n%s", a, usage_text), -1;
        i++;
        if (!strcmp(a, "-p") || !strcmp(a, "--parameter")) {
            if (i + 1 >= argc) return fprintf(stderr, "kiln sweep: -p needs NAME VALUES\n"), -1;
            if (sw->nparams == JK_SWEEP_MAX_PARAMS)
                return fprintf(stderr, "kiln sweep: at most %d parameters\n", JK_SWEEP_MAX_PARAMS),
                       -1;
            for (int k = 0; k < sw->nparams; k++)
                if (!strcmp(sw->pnames[k], v))
                    return fprintf(stderr, "kiln sweep: -p %s given twice\n", v), -1;
            sw->pnames[sw->nparams] = v;
            sw->pspecs[sw->nparams++] = argv[++i];
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) sw->dir = v;
        else if (!strcmp(a, "--name")) sw->name = v;
        else if (!strcmp(a, "--metric")) sw->metric = v;
        else if (!strcmp(a, "--results")) sw->results = v;
        else if (!strcmp(a, "--devices")) sw->devices = v;
        else if (!strcmp(a, "--parallel")) {
            if (whole(a, v, 1, JK_SWEEP_MAX_SLOTS, &sw->parallel) < 0) return -1;
        } else if (!strcmp(a, "--random")) {
            if (whole(a, v, 1, 100000, &sw->random_k) < 0) return -1;
        } else if (!strcmp(a, "--seed")) {
            if (whole(a, v, 0, INT_MAX, &n) < 0) return -1;
            sw->seed = (uint64_t)n;
        } else if (!strcmp(a, "--eta")) {
            if (whole(a, v, 2, 100, &sw->eta) < 0) return -1;
        } else if (!strcmp(a, "--rung-epochs")) {
            if (whole(a, v, 1, 100000, &sw->first_rung) < 0) return -1;
        } else if (!strcmp(a, "--prune")) {
            if (strcmp(v, "halving"))
                return fprintf(stderr, "kiln sweep: --prune %s: only 'halving' is known\n", v), -1;
            sw->halving = 1;
        } else return fprintf(stderr, "kiln sweep: unknown option %s\n%s", a, usage_text), -1;
    }
    if (!sw->notebook || !sw->dir || !sw->nparams)
        return fprintf(stderr, "kiln sweep: %s\n%s",
                       !sw->notebook ? "no notebook given"
                       : !sw->dir    ? "no -o DIR given"
                                     : "no -p NAME VALUES given",
                       usage_text),
               -1;
    if (rt_store_is_url(sw->dir)) sw->url = sw->dir; /* jk_sweep_store.c */
    if (!sw->metric) sw->metric = "val_accuracy";
    sw->metric_lower = strstr(sw->metric, "loss") != NULL;
    return 0;
}

/* ---- values: lists and ranges ---- */

typedef struct pspec {
    int is_range, log, integer;
    double lo, hi;
    char **items; /* a list */
    int nitems;
} pspec;

static void pspec_free(pspec *p)
{
    for (int i = 0; i < p->nitems; i++) free(p->items[i]);
    free(p->items);
}

/* "a,b,c" or "LO:HI[:log|:int]" */
static int pspec_parse(const char *name, const char *text, pspec *p)
{
    memset(p, 0, sizeof *p);
    const char *c1 = strchr(text, ':');
    if (c1 && !strchr(text, ',')) {
        char *end;
        p->lo = strtod(text, &end);
        int ok = end == c1;
        p->hi = ok ? strtod(c1 + 1, &end) : 0;
        ok = ok && end != c1 + 1 && (!*end || *end == ':');
        if (ok && *end == ':') {
            p->log = !strcmp(end + 1, "log");
            p->integer = !strcmp(end + 1, "int");
            ok = p->log || p->integer;
        }
        ok = ok && isfinite(p->lo) && isfinite(p->hi) && p->lo < p->hi && (!p->log || p->lo > 0);
        if (!ok)
            return fprintf(stderr,
                           "kiln sweep: -p %s %s: a range is LO:HI, LO:HI:log (LO > 0) or "
                           "LO:HI:int with LO < HI\n",
                           name, text),
                   -1;
        p->is_range = 1;
        return 0;
    }
    for (const char *s = text;; s++) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (!n) return fprintf(stderr, "kiln sweep: -p %s %s: an empty value\n", name, text), -1;
        char **grown = realloc(p->items, (size_t)(p->nitems + 1) * sizeof *grown);
        if (!grown || !(grown[p->nitems] = strndup(s, n))) {
            if (grown) p->items = grown;
            return fprintf(stderr, "kiln sweep: out of memory\n"), -1;
        }
        p->items = grown;
        p->nitems++;
        if (!e) break;
        s = e;
    }
    return 0;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static char *sample(const pspec *p, uint64_t *rng)
{
    double u = (double)(splitmix(rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    char buf[64];
    if (!p->is_range) return strdup(p->items[(size_t)(u * p->nitems) % (size_t)p->nitems]);
    if (p->integer) {
        long lo = (long)ceil(p->lo), hi = (long)floor(p->hi);
        snprintf(buf, sizeof buf, "%ld", lo + (long)(u * (double)(hi - lo + 1)));
    } else {
        double x =
            p->log ? exp(log(p->lo) + u * (log(p->hi) - log(p->lo))) : p->lo + u * (p->hi - p->lo);
        snprintf(buf, sizeof buf, "%.4g", x);
    }
    return strdup(buf);
}

/* ---- variants ---- */

/* NAME=VALUE pairs sorted by name, joined by ','; anything but letters, digits and
 * . _ + - = , becomes '_'. Too long: cut, with a hash of the whole name. */
static void variant_name(const jk_sweep *sw, jk_variant *v)
{
    int order[JK_SWEEP_MAX_PARAMS];
    for (int k = 0; k < sw->nparams; k++) { /* by name: insertion sort of a few */
        int j = k;
        for (; j > 0 && strcmp(sw->pnames[order[j - 1]], sw->pnames[k]) > 0; j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
    char full[4096];
    size_t n = 0;
    full[0] = 0;
    for (int k = 0; k < sw->nparams && n < sizeof full; k++)
        n += (size_t)snprintf(full + n, sizeof full - n, "%s%s=%s", k ? "," : "",
                              sw->pnames[order[k]], v->values[order[k]]);
    for (char *c = full; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._+-=,", *c)) *c = '_';
    if (strlen(full) < 200) {
        snprintf(v->name, sizeof v->name, "%s", full);
        return;
    }
    uint64_t h = 1469598103934665603ull;
    for (const char *c = full; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    snprintf(v->name, sizeof v->name, "%.180s-%016llx", full, (unsigned long long)h);
}

static int add_variant(jk_sweep *sw, char **values)
{
    jk_variant *grown = realloc(sw->v, (size_t)(sw->nv + 1) * sizeof *grown);
    if (!grown) return -1;
    sw->v = grown;
    jk_variant *v = &sw->v[sw->nv];
    memset(v, 0, sizeof *v);
    for (int k = 0; k < sw->nparams; k++) v->values[k] = values[k];
    variant_name(sw, v);
    for (int i = 0; i < sw->nv; i++)
        if (!strcmp(sw->v[i].name, v->name)) return 1; /* the same values again */
    v->metric = NAN;
    v->slot = -1;
    if (snprintf(v->dir, sizeof v->dir, "%s/%s", sw->dir, v->name) >= (int)sizeof v->dir) return -1;
    memcpy(v->where, v->dir, sizeof v->where);
    sw->nv++;
    return 0;
}

static int make_variants(jk_sweep *sw, pspec *ps)
{
    char *vals[JK_SWEEP_MAX_PARAMS];
    if (sw->random_k) {
        uint64_t rng = sw->seed * 0x2545f4914f6cdd1dull + 1;
        for (int tries = 0; sw->nv < sw->random_k && tries < sw->random_k * 20; tries++) {
            int k = 0, rc;
            for (; k < sw->nparams && (vals[k] = sample(&ps[k], &rng)); k++) {}
            if (k < sw->nparams || (rc = add_variant(sw, vals)) < 0) {
                while (k-- > 0) free(vals[k]);
                return -1;
            }
            if (rc == 1)
                for (k = 0; k < sw->nparams; k++) free(vals[k]);
        }
        if (sw->nv < sw->random_k)
            fprintf(stderr, "kiln sweep: the values give %d different variants, not %d\n", sw->nv,
                    sw->random_k);
        return 0;
    }
    int idx[JK_SWEEP_MAX_PARAMS] = {0};
    for (int k = 0; k < sw->nparams; k++)
        if (ps[k].is_range)
            return fprintf(stderr, "kiln sweep: -p %s %s: a range needs --random K\n",
                           sw->pnames[k], sw->pspecs[k]),
                   -1;
    for (;;) {
        int k = 0, rc;
        for (; k < sw->nparams && (vals[k] = strdup(ps[k].items[idx[k]])); k++) {}
        if (k < sw->nparams || (rc = add_variant(sw, vals)) < 0) {
            while (k-- > 0) free(vals[k]);
            return -1;
        }
        if (rc == 1)
            for (k = 0; k < sw->nparams; k++) free(vals[k]);
        /* the last parameter varies fastest */
        for (k = sw->nparams - 1; k >= 0 && ++idx[k] == ps[k].nitems; k--) idx[k] = 0;
        if (k < 0) return 0;
    }
}

static json_t *load_notebook(const char *path)
{
    if (rt_store_is_url(path)) return jk_run_store_load(path);
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "kiln sweep: cannot read %s: %s\n", path, strerror(errno)), NULL;
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char buf[65536];
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + got > cap) {
            char *grown = realloc(text, cap = (len + got) * 2);
            if (!grown) break;
            text = grown;
        }
        memcpy(text + len, buf, got);
        len += got;
    }
    fclose(f);
    json_t *nb = text ? jk_run_parse(text, len, path) : NULL;
    free(text);
    return nb;
}

/* Before anything runs: the parameters cell assigns every -p NAME, and each variant's
 * values fit their #@param annotations (jk_run_inject on a copy says why not). */
static int check_notebook(jk_sweep *sw)
{
    json_t *nb = load_notebook(sw->notebook);
    if (!nb) return -1;
    char why[512];
    int rc = jk_run_params_check(nb, sw->nparams, sw->pnames, why, sizeof why);
    if (rc < 0) fprintf(stderr, "kiln sweep: %s: %s; nothing was run\n", sw->notebook, why);
    for (int i = 0; rc == 0 && i < sw->nv; i++) {
        json_t *copy = json_deep_copy(nb);
        if (!copy ||
            jk_run_inject(copy, sw->nparams, sw->pnames, (const char **)sw->v[i].values) < 0) {
            fprintf(stderr, "kiln sweep: variant %s cannot run; nothing was run\n", sw->v[i].name);
            rc = -1;
        }
        json_decref(copy);
    }
    json_decref(nb);
    return rc;
}

static void free_sweep(jk_sweep *sw)
{
    for (int i = 0; i < sw->nv; i++)
        for (int k = 0; k < sw->nparams; k++) free(sw->v[i].values[k]);
    free(sw->v);
}

static void print_plan(const jk_sweep *sw)
{
    printf("%d variant%s, %d at once:\n", sw->nv, sw->nv == 1 ? "" : "s", sw->nslots);
    for (int s = 0; s < sw->nslots; s++) {
        const jk_slot *sl = &sw->slots[s];
        printf("  slot %d: %s, %d thread%s", s, sl->device, sl->threads,
               sl->threads == 1 ? "" : "s");
        for (int c = 0; c < sl->ncores; c++) printf("%s%d", c ? "," : ", cores ", sl->cores[c]);
        printf("\n");
    }
    for (int i = 0; i < sw->nv; i++) printf("  %s\n", sw->v[i].name);
}

/* DIR/sweep.json: the sweep's name, metric, variants in order, process and state
 * (running, done, failed, interrupted), for %sweep's live table. */
static void write_manifest(const jk_sweep *sw, const char *state, int status)
{
    char path[JK_SWEEP_PATH + 16], tmp[JK_SWEEP_PATH + 40];
    snprintf(path, sizeof path, "%s/sweep.json", sw->dir);
    snprintf(tmp, sizeof tmp, "%s/.sweep.json.%ld", sw->dir, (long)getpid());
    char store[JK_SWEEP_PATH] = ""; /* the local file: no URL, no credentials */
    if (rt_results_resolve_path(sw->store, store, sizeof store) < 0) store[0] = 0;
    json_t *names = json_array();
    for (int i = 0; names && i < sw->nv; i++)
        json_array_append_new(names, json_string(sw->v[i].name));
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:s, s:i}", "name", sw->name, "notebook",
                          sw->notebook, "metric", sw->metric, "results", store, "variants",
                          names ? names : json_array(), "pid", (json_int_t)getpid(), "state", state,
                          "exit", status);
    if (!j || json_dump_file(j, tmp, JSON_INDENT(1)) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "kiln sweep: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    json_decref(j);
    jk_sweep_store_put(sw, "sweep.json");
}

int jk_sweep_main(int argc, char **argv)
{
    jk_sweep sw;
    memset(&sw, 0, sizeof sw);
    int pr = parse_args(argc, argv, &sw);
    if (pr != 0) return pr > 0 ? 0 : 2;
    if (!sw.name) {
        const char *slash = strrchr(sw.dir, '/');
        while (slash && !slash[1] && slash > sw.dir) { /* DIR/ */
            const char *s = slash - 1;
            while (s > sw.dir && *s != '/') s--;
            slash = *s == '/' ? s : NULL;
        }
        sw.name = slash ? slash + 1 : sw.dir;
    }
    pspec ps[JK_SWEEP_MAX_PARAMS];
    int nps = 0, status = 2;
    for (; nps < sw.nparams; nps++)
        if (pspec_parse(sw.pnames[nps], sw.pspecs[nps], &ps[nps]) < 0) goto done;
    if (make_variants(&sw, ps) < 0 || check_notebook(&sw) < 0 || jk_sweep_plan(&sw) < 0 ||
        jk_sweep_store_open(&sw, sw.dry_run) < 0)
        goto done;
    if (sw.dry_run) {
        print_plan(&sw);
        status = 0;
        goto done;
    }
    ssize_t n = readlink("/proc/self/exe", sw.exe, sizeof sw.exe - 1);
    if (n <= 0) {
        fprintf(stderr, "kiln sweep: cannot find the kiln binary: %s\n", strerror(errno));
        goto done;
    }
    sw.exe[n] = 0;
    if (sw.results) snprintf(sw.store, sizeof sw.store, "%s", sw.results);
    else if (rt_results_resolve_path(NULL, sw.store, sizeof sw.store) < 0) {
        fprintf(stderr, "kiln sweep: cannot tell where the results store is\n");
        goto done;
    }
    if (rt_file_make_dirs(sw.dir, 0777) < 0) {
        fprintf(stderr, "kiln sweep: cannot create %s: %s\n", sw.dir, strerror(errno));
        goto done;
    }
    write_manifest(&sw, "running", 0);
    int sig = jk_sweep_exec(&sw);
    int collected = jk_sweep_collect(&sw);
    int reported = jk_sweep_report(&sw);
    int failed = 0;
    for (int i = 0; i < sw.nv; i++) failed += sw.v[i].state == JK_V_FAILED;
    status = sig ? 128 + sig : failed || collected < 0 || reported < 0 ? 1 : 0;
    write_manifest(&sw, sig ? "interrupted" : failed ? "failed" : "done", status);
done:
    jk_sweep_store_close(&sw);
    while (nps-- > 0) pspec_free(&ps[nps]);
    free_sweep(&sw);
    return status;
}
