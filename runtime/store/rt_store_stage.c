/* rt_store_stage.c - where an s3:// run is staged on this machine, and fetching its
 * newest checkpoint there (rt_store_stage.h). */
#include "rt_store_stage.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_dir.h"
#include "rt_store_ckpt.h"

rt_status rt_store_staging_dir(const char *url, char *dir, size_t cap, rt_error *err)
{
    const char *base = getenv("KILN_STAGING_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char root[1024];
    if (!rt_store_is_url(url)) return RT_ERR(err, RT_EINVAL, "%s is not an s3:// URL", url);
    if (base && *base) snprintf(root, sizeof root, "%s", base);
    else if (xdg && *xdg) snprintf(root, sizeof root, "%s/kiln/staging", xdg);
    else snprintf(root, sizeof root, "%s/.cache/kiln/staging", home && *home ? home : "/tmp");
    const char *rest = url + strlen(RT_STORE_SCHEME);
    size_t n = strlen(rest);
    while (n && rest[n - 1] == '/') n--;
    if (strstr(rest, "..") || (size_t)snprintf(dir, cap, "%s/%.*s", root, (int)n, rest) >= cap)
        return RT_ERR(err, RT_EINVAL, "%s: no staging directory for it", url);
    rt_error re = {0};
    if (rt_ckpt_dir_ensure(dir, &re) != RT_OK)
        return RT_ERR(err, RT_EIO,
                      "staging directory for %s: %s ---> HINT: set "
                      "KILN_STAGING_DIR to a writable directory",
                      url, re.msg);
    return RT_OK;
}

rt_status rt_store_fetch_run(const char *url, char **path, char **skipped, rt_error *err)
{
    char dir[1024], run[1024], *prefix = NULL;
    rt_store *s = NULL;
    *path = NULL;
    if (skipped) *skipped = NULL;
    /* s3://B/P/NAME.safetensors: that checkpoint of the run s3://B/P */
    size_t n = strlen(url), ext = strlen(RT_CKPT_EXT);
    if (n >= sizeof run) return RT_ERR(err, RT_EINVAL, "%.100s...: URL too long", url);
    memcpy(run, url, n + 1);
    char *slash = strrchr(run, '/');
    const char *name = NULL;
    if (slash && slash - run > (ptrdiff_t)strlen(RT_STORE_SCHEME) && n > ext &&
        !strcmp(run + n - ext, RT_CKPT_EXT)) {
        *slash = '\0';
        name = slash + 1;
    }
    rt_status st = rt_store_staging_dir(run, dir, sizeof dir, err);
    if (st == RT_OK) st = rt_store_open(run, &s, &prefix, err);
    char *sk = NULL;
    if (st == RT_OK) st = rt_store_ckpt_fetch(s, prefix, name, dir, path, &sk, err);
    if (skipped) *skipped = sk;
    else free(sk);
    free(prefix);
    rt_store_close(s);
    return st;
}
