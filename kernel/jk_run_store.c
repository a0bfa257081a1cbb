/* jk_run_store.c - `kiln run` with s3:// notebooks (jk_run.h): the notebook read from
 * an object, and the result notebook written to a local copy in the staging directory
 * of its URL's folder (rt_store_stage.h) and uploaded after every write, so a VM taken
 * back mid-run leaves the cells that ran in the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_run.h"
#include "rt_store_stage.h"

#define MAX_NOTEBOOK ((size_t)256 << 20)

json_t *jk_run_store_load(const char *url)
{
    rt_store *s = NULL;
    char *key = NULL, *text = NULL;
    size_t len = 0;
    rt_error err = {0};
    json_t *nb = NULL;
    rt_status st = rt_store_open(url, &s, &key, &err);
    if (st == RT_OK && !*key)
        st = RT_ERR(&err, RT_EINVAL, "%s names a bucket, not a notebook object", url);
    if (st == RT_OK) st = rt_store_get_mem(s, key, MAX_NOTEBOOK, &text, &len, &err);
    if (st == RT_OK) nb = jk_run_parse(text, len, url);
    else fprintf(stderr, "kiln run: cannot read %s: %s\n", url, err.msg);
    free(text);
    free(key);
    rt_store_close(s);
    return nb;
}

int jk_run_remote_open(jk_run_remote *r, const char *url)
{
    memset(r, 0, sizeof *r);
    r->url = url;
    rt_error err = {0};
    char dir[1024], folder[1024];
    const char *slash = strrchr(url, '/');
    rt_status st = rt_store_open(url, &r->s, &r->key, &err);
    if (st == RT_OK && !*r->key)
        st = RT_ERR(&err, RT_EINVAL, "%s names a bucket, not a notebook object", url);
    if (st == RT_OK &&
        (size_t)snprintf(folder, sizeof folder, "%.*s", (int)(slash - url), url) >= sizeof folder)
        st = RT_ERR(&err, RT_EINVAL, "%.100s...: URL too long", url);
    if (st == RT_OK) st = rt_store_staging_dir(folder, dir, sizeof dir, &err);
    if (st == RT_OK &&
        (size_t)snprintf(r->local, sizeof r->local, "%s/%s", dir, slash + 1) >= sizeof r->local)
        st = RT_ERR(&err, RT_EINVAL, "%.100s...: URL too long", url);
    if (st == RT_OK) return 0;
    fprintf(stderr, "kiln run: cannot write %s: %s\n", url, err.msg);
    jk_run_remote_close(r);
    return -1;
}

int jk_run_remote_upload(jk_run_remote *r)
{
    rt_error err = {0};
    if (rt_store_put_file(r->s, r->key, r->local, &err) == RT_OK) return 0;
    fprintf(stderr, "kiln run: cannot upload %s (kept in %s): %s\n", r->url, r->local, err.msg);
    return -1;
}

void jk_run_remote_close(jk_run_remote *r)
{
    rt_store_close(r->s);
    free(r->key);
    r->s = NULL;
    r->key = NULL;
}
