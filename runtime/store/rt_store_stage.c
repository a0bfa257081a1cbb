/* rt_store_stage.c - where an s3:// run is staged on this machine, and fetching its
 * newest checkpoint there (rt_store_stage.h). */
#include "rt_store_stage.h"

#include <errno.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_ckpt_dir.h"
#include "rt_store_ckpt.h"

/* dir, created 0700 where missing: each of its directories from root down must be a
 * directory (not a link) this user owns that nobody else can write, since whoever can
 * write there could plant what Kiln then reads or writes through. */
static rt_status private_dir(const char *dir, size_t root_len, const char *url, rt_error *err)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (size_t i = 1;; i++) {
        if (p[i] != '/' && p[i]) continue;
        const char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            return RT_ERR(err, RT_EIO,
                          "staging directory for %s: cannot create '%s': %s ---> HINT: set "
                          "KILN_STAGING_DIR to a writable directory of your own",
                          url, p, strerror(errno));
        struct stat sb;
        if (i >= root_len) {
            const char *bad = NULL;
            if (lstat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
                bad = "is not a plain directory (a symbolic link is not followed)";
            else if (sb.st_uid != geteuid())
                bad = "belongs to another user, who could plant files in it";
            else if ((sb.st_mode & 022) && chmod(p, sb.st_mode & 07755) != 0)
                bad = "can be written by other users, who could plant files in it";
            else if (sb.st_mode & 022) /* ours: made private, as it is created now */
                fprintf(stderr, "kiln: staging directory '%s' was writable by others: now %o\n", p,
                        (unsigned)(sb.st_mode & 07755));
            if (bad)
                return RT_ERR(err, RT_EINVAL,
                              "staging directory for %s: '%s' %s ---> HINT: set KILN_STAGING_DIR "
                              "to a directory of your own "
                              "(mode 0700)",
                              url, p, bad);
        }
        p[i] = c;
        if (!c) return RT_OK;
    }
}

rt_status rt_store_staging_dir(const char *url, char *dir, size_t cap, rt_error *err)
{
    const char *base = getenv("KILN_STAGING_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char root[1024];
    if (!rt_store_is_url(url)) return RT_ERR(err, RT_EINVAL, "%s is not an s3:// URL", url);
    if (!(home && *home)) { /* the user's own home, never a shared /tmp */
        const struct passwd *pw = getpwuid(geteuid());
        home = pw && pw->pw_dir && *pw->pw_dir == '/' ? pw->pw_dir : NULL;
    }
    if (base && *base) snprintf(root, sizeof root, "%s", base);
    else if (xdg && *xdg) snprintf(root, sizeof root, "%s/kiln/staging", xdg);
    else if (home) snprintf(root, sizeof root, "%s/.cache/kiln/staging", home);
    else
        return RT_ERR(err, RT_EINVAL,
                      "%s: no staging directory: HOME is not set and this user has no home "
                      "---> HINT: set KILN_STAGING_DIR to a directory of your own",
                      url);
    const char *rest = url + strlen(RT_STORE_SCHEME);
    size_t n = strlen(rest);
    while (n && rest[n - 1] == '/') n--;
    if (strstr(rest, "..") || (size_t)snprintf(dir, cap, "%s/%.*s", root, (int)n, rest) >= cap ||
        strlen(dir) >= 1024 || root[0] != '/')
        return RT_ERR(err, RT_EINVAL, "%s: no staging directory for it%s", url,
                      root[0] != '/' ? " (KILN_STAGING_DIR must be an absolute path)" : "");
    /* the root's own directory and below: the user's; above it (/home, /) are not */
    size_t root_len = strlen(root);
    while (root_len > 1 && root[root_len - 1] == '/') root_len--;
    const char *top = base && *base ? NULL : strstr(root, "/kiln/staging");
    return private_dir(dir, top ? (size_t)(top - root) + 1 : root_len, url, err);
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
