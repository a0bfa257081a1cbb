/* rt_ckpt_dir.c - run directories: naming, listing, newest-valid selection, rotation.
 *
 * Order is by step: the metadata's when the file is valid, else the number in its
 * name, so a damaged newest file still sorts as the newest and is reported as skipped
 * rather than silently ignored. Only validated, Kiln-named files are ever deleted, and
 * the newest valid checkpoint is always kept.
 */
#include "rt_ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_ckpt_internal.h"

void rt_ckpt_dir_name(int64_t step, char *buf, size_t cap)
{
    snprintf(buf, cap, RT_CKPT_DIR_PREFIX "%08" PRId64 RT_CKPT_EXT, step);
}

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s%s%s", dir, a && dir[a - 1] == '/' ? "" : "/", name);
    return p;
}

rt_status rt_ckpt_dir_path(const char *dir, int64_t step, char **path, rt_error *err)
{
    char name[64];
    rt_ckpt_dir_name(step, name, sizeof name);
    if (!(*path = join(dir, name)))
        return RT_ERR(err, RT_ENOMEM, "out of memory naming a checkpoint in '%s'", dir);
    return RT_OK;
}

rt_status rt_ckpt_dir_ensure(const char *dir, rt_error *err)
{
    char *p = strdup(dir);
    if (!p) return RT_ERR(err, RT_ENOMEM, "out of memory creating '%s'", dir);
    rt_status s = RT_OK;
    for (char *q = p + 1; s == RT_OK; q++) {
        if (*q != '/' && *q) continue;
        char c = *q;
        *q = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            s = rtp_ckpt_errno_error(err, errno, "creating run directory", p);
        *q = c;
        if (!c) break;
    }
    struct stat st;
    if (s == RT_OK && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        s = RT_ERR(err, RT_EINVAL, "run directory '%s' exists but is not a directory", dir);
    free(p);
    return s;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int kiln_named(const char *name)
{
    return strncmp(name, RT_CKPT_DIR_PREFIX, strlen(RT_CKPT_DIR_PREFIX)) == 0 &&
           ends_with(name, RT_CKPT_EXT);
}

/* The step a file sorts by: its metadata's, else the one in its name, else -1. */
static int64_t sort_step(const rt_ckpt_entry *e)
{
    int64_t step;
    if (e->step >= 0) return e->step;
    if (kiln_named(e->name) && sscanf(e->name, RT_CKPT_DIR_PREFIX "%" SCNd64, &step) == 1)
        return step;
    return -1;
}

static int entry_cmp(const void *a, const void *b)
{
    const rt_ckpt_entry *x = a, *y = b;
    int64_t sx = sort_step(x), sy = sort_step(y);
    if (sx != sy) return sx < sy ? -1 : 1;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Opens one file and fills e's metadata fields, or e->error. Only running out of
 * memory is an error: a damaged file is an entry that says why. */
static rt_status examine(rt_ckpt_entry *e, unsigned flags, rt_error *err)
{
    rt_error why;
    rt_ckpt_reader *r = NULL;
    e->step = e->epoch = -1;
    rt_status s = rt_ckpt_reader_open(e->path, flags, &r, &why);
    if (s == RT_ENOMEM) return RT_ERR(err, s, "%s", why.msg);
    if (s != RT_OK) {
        snprintf(e->error, sizeof e->error, "%s", why.msg);
        return RT_OK;
    }
    e->valid = 1;
    if (rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_STEP, &e->step, NULL) != RT_OK) e->step = -1;
    if (rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_EPOCH, &e->epoch, NULL) != RT_OK) e->epoch = -1;
    const char *c = rt_ckpt_reader_meta(r, RT_CKPT_KEY_CREATED);
    snprintf(e->created, sizeof e->created, "%s", c ? c : "");
    s = rt_ckpt_reader_metric(r, RT_CKPT_KEY_METRIC, &e->metric, err);
    e->has_metric = s == RT_OK;
    if (s != RT_ENOMEM) {
        s = rt_ckpt_reader_metric(r, RT_CKPT_KEY_BEST_METRIC, &e->best, err);
        e->has_best = s == RT_OK && e->best.step >= 0;
    }
    rt_ckpt_reader_destroy(r);
    return s == RT_ENOMEM ? s : RT_OK;
}

static rt_status add_entry(rt_ckpt_list *l, size_t *cap, const char *dir, const char *name,
                           unsigned flags, rt_error *err)
{
    if (l->count == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        rt_ckpt_entry *items = realloc(l->items, ncap * sizeof *items);
        if (!items) return RT_ERR(err, RT_ENOMEM, "out of memory listing '%s'", dir);
        l->items = items;
        *cap = ncap;
    }
    rt_ckpt_entry *e = &l->items[l->count];
    memset(e, 0, sizeof *e);
    e->path = join(dir, name);
    e->name = strdup(name);
    if (!e->path || !e->name) {
        free(e->path);
        free(e->name);
        return RT_ERR(err, RT_ENOMEM, "out of memory listing '%s'", dir);
    }
    l->count++;
    struct stat st;
    if (stat(e->path, &st) != 0 || !S_ISREG(st.st_mode)) {
        l->count--; /* vanished, or a directory named *.safetensors */
        free(e->path);
        free(e->name);
        return RT_OK;
    }
    e->size = (uint64_t)st.st_size;
    e->mtime = (int64_t)st.st_mtime;
    return examine(e, flags, err);
}

rt_status rt_ckpt_dir_scan(const char *dir, unsigned flags, rt_ckpt_list *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) return rtp_ckpt_errno_error(err, errno, "listing run directory", dir);
    size_t cap = 0;
    rt_status s = RT_OK;
    struct dirent *de;
    while (s == RT_OK && (errno = 0, de = readdir(d)) != NULL)
        if (de->d_name[0] != '.' && ends_with(de->d_name, RT_CKPT_EXT))
            s = add_entry(out, &cap, dir, de->d_name, flags, err);
    if (s == RT_OK && errno != 0) s = rtp_ckpt_errno_error(err, errno, "listing", dir);
    closedir(d);
    if (s != RT_OK) {
        rt_ckpt_list_deinit(out);
        return s;
    }
    if (out->count) qsort(out->items, out->count, sizeof *out->items, entry_cmp);
    return RT_OK;
}

void rt_ckpt_list_deinit(rt_ckpt_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].path);
        free(l->items[i].name);
    }
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

long rt_ckpt_list_newest_valid(const rt_ckpt_list *l)
{
    for (size_t i = l->count; i-- > 0;)
        if (l->items[i].valid) return (long)i;
    return -1;
}

/* "name: reason\n" for every invalid entry after index `from` into *out (NULL when
 * there is none). */
static rt_status skipped_report(const rt_ckpt_list *l, long from, char **out, rt_error *err)
{
    size_t len = 0;
    *out = NULL;
    for (size_t i = (size_t)(from + 1); i < l->count; i++)
        if (!l->items[i].valid) len += strlen(l->items[i].name) + strlen(l->items[i].error) + 3;
    if (!len) return RT_OK;
    char *p = *out = malloc(len + 1);
    if (!p) return RT_ERR(err, RT_ENOMEM, "out of memory listing checkpoints");
    for (size_t i = (size_t)(from + 1); i < l->count; i++)
        if (!l->items[i].valid) p += sprintf(p, "%s: %s\n", l->items[i].name, l->items[i].error);
    return RT_OK;
}

rt_status rt_ckpt_dir_latest(const char *dir, char **path, char **skipped, rt_error *err)
{
    *path = *skipped = NULL;
    rt_ckpt_list l;
    RT_TRY(rt_ckpt_dir_scan(dir, 0, &l, err));
    long i = rt_ckpt_list_newest_valid(&l);
    char *report = NULL;
    rt_status s = skipped_report(&l, i, &report, err);
    if (s == RT_OK && i < 0)
        s = RT_ERR(err, RT_ENOTFOUND,
                   "no valid checkpoint in '%s' (%zu file(s) examined)%s%.300s"
                   " ---> HINT: check --run-dir, or start the run afresh with %%train",
                   dir, l.count, report ? ":\n" : "", report ? report : "");
    else if (s == RT_OK && !(*path = strdup(l.items[i].path)))
        s = RT_ERR(err, RT_ENOMEM, "out of memory listing '%s'", dir);
    if (s == RT_OK) *skipped = report;
    else free(report);
    rt_ckpt_list_deinit(&l);
    return s;
}

/* Index of the best valid Kiln-named entry, or -1: the checkpoint of the step the
 * newest's best_metric names (the run's best epoch, as its early stopping and
 * --restore-best judge it: --min-delta counts), else the best by the newest's metric. */
static long best_entry(const rt_ckpt_list *l, long newest)
{
    if (l->items[newest].has_best)
        for (size_t i = 0; i < l->count; i++) {
            const rt_ckpt_entry *e = &l->items[i];
            if (e->valid && kiln_named(e->name) && e->step == l->items[newest].best.step)
                return (long)i;
        }
    const rt_ckpt_metric *ref = &l->items[newest].metric;
    if (!l->items[newest].has_metric) return -1;
    long best = -1;
    for (size_t i = 0; i < l->count; i++) {
        const rt_ckpt_entry *e = &l->items[i];
        if (!e->valid || !kiln_named(e->name) || !e->has_metric || !e->metric.has_value ||
            strcmp(e->metric.name, ref->name) != 0)
            continue;
        double v = e->metric.value, b = best >= 0 ? l->items[best].metric.value : 0;
        if (best < 0 || (ref->higher_is_better ? v >= b : v <= b)) best = (long)i;
    }
    return best;
}

rt_status rt_ckpt_dir_rotate(const char *dir, int keep_last, int keep_best, size_t *removed,
                             rt_error *err)
{
    if (removed) *removed = 0;
    rt_ckpt_list l;
    RT_TRY(rt_ckpt_dir_scan(dir, 0, &l, err));
    long newest = rt_ckpt_list_newest_valid(&l);
    long best = keep_best && newest >= 0 ? best_entry(&l, newest) : -1;
    int kept = 0;
    rt_status s = RT_OK;
    for (long i = (long)l.count - 1; i >= 0; i--) {
        const rt_ckpt_entry *e = &l.items[i];
        if (!e->valid || !kiln_named(e->name)) continue;
        if (kept < (keep_last < 1 ? 1 : keep_last)) {
            kept++;
            continue;
        }
        if (i == best) continue;
        if (remove(e->path) != 0 && errno != ENOENT) {
            if (s == RT_OK)
                s = rtp_ckpt_errno_error(err, errno, "removing old checkpoint", e->path);
        } else if (removed) {
            (*removed)++;
        }
    }
    rt_ckpt_list_deinit(&l);
    return s;
}
