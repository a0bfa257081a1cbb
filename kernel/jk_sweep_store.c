/* jk_sweep_store.c - `kiln sweep NOTEBOOK -o s3://BUCKET/PREFIX`: the sweep's folder
 * lives in the store. The sweep works in the URL's local staging directory
 * (rt_store_stage.h) as it would in a local DIR, and every file it writes there is
 * uploaded under PREFIX: sweep.json, each <variant>/status.json whenever it changes,
 * <variant>/log when the variant's process ends, summary.csv and summary.svg. The
 * variants themselves write to the store: their %train's run directory is
 * s3://BUCKET/PREFIX/<variant>/run (checkpoints uploaded as they are written, and
 * fetched back to continue) and kiln run's notebook s3://BUCKET/PREFIX/<variant>/out.ipynb
 * (uploaded after every cell). A run of the same sweep on another machine reads each
 * variant's status.json from the store, so it skips what finished and continues the
 * rest from the store's checkpoints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jk_sweep.h"
#include "rt_store.h"
#include "rt_store_stage.h"

static int key_of(const jk_sweep *sw, const char *rel, char *key, size_t cap)
{
    return (size_t)snprintf(key, cap, "%s%s%s", sw->prefix, sw->prefix[0] ? "/" : "", rel) < cap
               ? 0
               : -1;
}

int jk_sweep_store_open(jk_sweep *sw, int check_only)
{
    if (!sw->url) return 0;
    rt_error err = {0};
    rt_status st = rt_store_open(sw->url, &sw->s, &sw->prefix, &err);
    if (st == RT_OK && !check_only)
        st = rt_store_staging_dir(sw->url, sw->local, sizeof sw->local, &err);
    if (st != RT_OK) {
        fprintf(stderr, "kiln sweep: -o %s: %s\n", sw->url, err.msg);
        jk_sweep_store_close(sw);
        return -1;
    }
    if (check_only) return 0;
    sw->dir = sw->local;
    size_t ul = strlen(sw->url);
    while (ul > 0 && sw->url[ul - 1] == '/') ul--;
    for (int i = 0; i < sw->nv; i++) {
        jk_variant *v = &sw->v[i];
        if (snprintf(v->dir, sizeof v->dir, "%s/%s", sw->local, v->name) >= (int)sizeof v->dir ||
            snprintf(v->where, sizeof v->where, "%.*s/%s", (int)ul, sw->url, v->name) >=
                (int)sizeof v->where) {
            fprintf(stderr, "kiln sweep: -o %s: the path of %s is too long\n", sw->url, v->name);
            jk_sweep_store_close(sw);
            return -1;
        }
    }
    return 0;
}

void jk_sweep_store_put(const jk_sweep *sw, const char *rel)
{
    if (!sw->s) return;
    char key[JK_SWEEP_PATH + 300], path[2 * JK_SWEEP_PATH];
    rt_error err = {0};
    snprintf(path, sizeof path, "%s/%s", sw->dir, rel);
    if (key_of(sw, rel, key, sizeof key) < 0 || access(path, F_OK) != 0) return;
    if (rt_store_put_file(sw->s, key, path, &err) != RT_OK)
        fprintf(stderr, "kiln sweep: cannot upload %s to %s/%s (kept locally): %s\n", path, sw->url,
                rel, err.msg);
}

int jk_sweep_store_get(const jk_sweep *sw, const char *rel)
{
    if (!sw->s) return 1;
    char key[JK_SWEEP_PATH + 300], path[2 * JK_SWEEP_PATH];
    rt_error err = {0};
    snprintf(path, sizeof path, "%s/%s", sw->dir, rel);
    if (key_of(sw, rel, key, sizeof key) < 0) return -1;
    rt_status st = rt_store_get_file(sw->s, key, path, &err);
    if (st == RT_OK) return 0;
    if (st == RT_ENOTFOUND) return 1;
    fprintf(stderr, "kiln sweep: cannot read %s/%s: %s\n", sw->url, rel, err.msg);
    return -1;
}

void jk_sweep_store_close(jk_sweep *sw)
{
    rt_store_close(sw->s);
    free(sw->prefix);
    sw->s = NULL;
    sw->prefix = NULL;
}
