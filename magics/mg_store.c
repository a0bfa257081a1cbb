/* mg_store.c - s3:// run directories for %train and %resume (mg_store.h). */
#include "mg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_store.h"
#include "rt_store_ckpt.h"
#include "rt_store_stage.h"
#include "rt_store_sync.h"

#define SLOT "store.sync"

typedef struct mgp_store {
    rt_store_sync *sync;
    int keep;
    char url[1024];     /* uploading to */
    char staging[1024]; /* its staging directory */
} mgp_store;

static void slot_free(void *p)
{
    mgp_store *m = p;
    if (m) rt_store_sync_stop(m->sync);
    free(m);
}

static int open_store(const char *url, rt_store **s, char **prefix, mg_error *err)
{
    rt_error re = {0};
    rt_status st = rt_store_open(url, s, prefix, &re);
    return st == RT_OK ? 0 : mg_fail_status(err, &re, "%s", re.msg);
}

int mg_store_fetch(const char *url, int allow_empty, const mg_out *out, char **path, mg_error *err)
{
    char *skipped = NULL;
    rt_error re = {0};
    rt_status st = rt_store_fetch_run(url, path, &skipped, &re);
    if (skipped && (st == RT_OK || allow_empty))
        for (char *line = strtok(skipped, "\n"); line; line = strtok(NULL, "\n"))
            mg_eprintf(out, "warning: skipped checkpoint %s/%s\n", url, line);
    free(skipped);
    if (st == RT_ENOTFOUND && allow_empty) return 0;
    return st == RT_OK ? 0 : mg_fail_status(err, &re, "%s", re.msg);
}

int mg_store_begin(mg_ctx *ctx, const char *url, int keep, char *dir, size_t cap, mg_error *err)
{
    rt_store *s = NULL;
    char *prefix = NULL;
    rt_error re = {0};
    rt_status ss = rt_store_staging_dir(url, dir, cap, &re);
    if (ss != RT_OK) return mg_fail_status(err, &re, "%s", re.msg);
    if (open_store(url, &s, &prefix, err) < 0) return -1;
    mgp_store *m = calloc(1, sizeof *m);
    rt_status st = m ? rt_store_sync_start(s, prefix, keep, 8, &m->sync, &re)
                     : (rt_store_close(s), RT_ERR(&re, RT_ENOMEM, "out of memory"));
    free(prefix);
    if (st != RT_OK) {
        free(m);
        return mg_fail_status(err, &re, "%s", re.msg);
    }
    m->keep = keep;
    snprintf(m->url, sizeof m->url, "%s", url);
    snprintf(m->staging, sizeof m->staging, "%s", dir);
    if (mg_session_set(ctx->session, SLOT, m, slot_free) != 0) /* m freed by it */
        return mg_fail(err, "MemoryError", "out of memory");
    return 0;
}

int mg_store_list(const char *url, rt_store_ckpt **c, size_t *n, char **skipped, mg_error *err)
{
    rt_store *s = NULL;
    char *prefix = NULL;
    *c = NULL;
    *n = 0;
    if (skipped) *skipped = NULL;
    if (open_store(url, &s, &prefix, err) < 0) return -1;
    rt_error re = {0};
    rt_status st = rt_store_ckpt_list(s, prefix, c, n, skipped, &re);
    free(prefix);
    rt_store_close(s);
    return st == RT_OK ? 0 : mg_fail_status(err, &re, "%s", re.msg);
}

int mg_store_push(const char *url, const char *path, mg_error *err)
{
    rt_store *s = NULL;
    char *prefix = NULL;
    if (open_store(url, &s, &prefix, err) < 0) return -1;
    rt_error re = {0};
    rt_status st = rt_store_ckpt_push(s, prefix, path, &re);
    free(prefix);
    rt_store_close(s);
    return st == RT_OK ? 0 : mg_fail_status(err, &re, "%s", re.msg);
}

/* The URL whose staging directory is dir, a sibling of m's (m->staging + "-vN" is the
 * staging directory of m->url + "-vN"); -1 when dir is not one. */
static int sibling_url(const mgp_store *m, const char *dir, char *url, size_t cap)
{
    size_t n = strlen(m->staging), u = strlen(m->url);
    while (u && m->url[u - 1] == '/') u--;
    if (strncmp(dir, m->staging, n) || strchr(dir + n, '/')) return -1;
    return (size_t)snprintf(url, cap, "%.*s%s", (int)u, m->url, dir + n) < cap ? 0 : -1;
}

const char *mg_store_display(mg_ctx *ctx, const char *dir, char *buf, size_t cap)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    if (!m || !m->sync || sibling_url(m, dir, buf, cap) < 0) return dir;
    return buf;
}

int mg_store_fetch_sibling(mg_ctx *ctx, const char *dir, mg_error *err)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    char url[1024], *path = NULL;
    if (!m || !m->sync || sibling_url(m, dir, url, sizeof url) < 0) return 0;
    int rc = mg_store_fetch(url, 1, ctx->out, &path, err);
    free(path);
    return rc;
}

int mg_store_rehome(mg_ctx *ctx, const char *dir, mg_error *err)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    char url[1024], staging[1024];
    if (!m || !m->sync || !strcmp(dir, m->staging)) return 0;
    if (sibling_url(m, dir, url, sizeof url) < 0)
        return mg_fail(err, "ValueError", "%s is not a staging directory of %s", dir, m->url);
    int keep = m->keep; /* m is freed when the new uploader takes the slot */
    return mg_store_begin(ctx, url, keep, staging, sizeof staging, err);
}

size_t mg_store_after_save(mg_ctx *ctx, const char *path, int64_t step, int keep, const mg_out *out)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    if (!m || !m->sync) return 0;
    rt_error re = {0};
    rt_store_sync_set_keep(m->sync, keep > 0 ? keep : 1);
    if (rt_store_sync_enqueue(m->sync, path, step, &re) != RT_OK)
        mg_eprintf(out, "warning: %s will not be uploaded: %s\n", path, re.msg);
    rt_store_sync_status st;
    rt_store_sync_get_status(m->sync, &st);
    return st.pending;
}

void mg_store_status(mg_ctx *ctx, char *buf, size_t cap)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    buf[0] = '\0';
    if (!m || !m->sync) return;
    rt_store_sync_status st;
    rt_store_sync_get_status(m->sync, &st);
    if (st.pending)
        snprintf(buf, cap, "upload: %zu pending%s", st.pending, st.retrying ? ", retrying" : "");
    else if (st.last_step >= 0) snprintf(buf, cap, "uploaded: step %lld", (long long)st.last_step);
}

const char *mg_store_url(mg_ctx *ctx)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    return m && m->sync ? m->url : NULL;
}

double mg_store_drain_budget(double time_limit_s)
{
    const char *e = getenv("KILN_UPLOAD_WAIT_S");
    if (e && *e) return atof(e);
    if (time_limit_s <= 0) return 60;
    double b = 0.02 * time_limit_s;
    return b < 10 ? 10 : b > 60 ? 60 : b;
}

void mg_store_end(mg_ctx *ctx, double budget_s, const mg_out *out)
{
    mgp_store *m = mg_session_get(ctx->session, SLOT);
    if (!m || !m->sync) return;
    char *local = NULL;
    rt_error re = {0};
    rt_store_sync_status st;
    rt_store_sync_get_status(m->sync, &st);
    if (st.pending)
        mg_printf(out, "uploading %zu checkpoint%s to %s ...\n", st.pending,
                  st.pending == 1 ? "" : "s", m->url);
    if (rt_store_sync_drain(m->sync, budget_s, &local, &re) == RT_OK) {
        rt_store_sync_get_status(m->sync, &st);
        if (st.last_step >= 0)
            mg_printf(out, "uploaded: %s (newest: step %lld)\n", m->url, (long long)st.last_step);
    } else {
        mg_eprintf(out, "warning: %s\n", re.msg);
        for (char *line = local ? strtok(local, "\n") : NULL; line; line = strtok(NULL, "\n"))
            mg_eprintf(out, "  only local: %s\n", line);
    }
    free(local);
    /* Stops the uploader. This fails only where there is no slot to clear and no memory
     * for an empty one: then there is no uploader to stop either. */
    RT_IGNORE(mg_session_set(ctx->session, SLOT, NULL, NULL));
}
