/* rt_dl.c - see rt_dl.h. */
#include "rt_dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rt_dl_load(const char *env, const char *const *names, int n, const rt_dl_sym *syms,
               size_t nsyms, rt_dl_result *r)
{
    memset(r, 0, sizeof *r);
    const char *override = env ? getenv(env) : NULL;
    const char *only[1];
    if (override && *override) {
        only[0] = override;
        names = only;
        n = 1;
    }
    const char *pre = names == only ? env : "", *eq = names == only ? "=" : "";
    snprintf(r->file, sizeof r->file, "%s%s%s", pre, eq, n > 0 ? names[0] : "(no file)");
    snprintf(r->why, sizeof r->why, "no file to load");
    for (int i = 0; i < n && !r->handle; i++) {
        r->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (r->handle) {
            snprintf(r->file, sizeof r->file, "%s%s%s", pre, eq, names[i]);
        } else if (i == 0) { /* the first file's reason is the one worth reporting */
            const char *e = dlerror();
            snprintf(r->why, sizeof r->why, "%s", e ? e : "not found");
        }
    }
    if (!r->handle) return 0;
    for (size_t k = 0; k < nsyms; k++)
        if (!(*syms[k].slot = dlsym(r->handle, syms[k].name))) {
            snprintf(r->why, sizeof r->why, "%s lacks %s", r->file, syms[k].name);
            r->handle = NULL; /* stays loaded (never dlclose'd): harmless */
            return 0;
        }
    r->why[0] = '\0';
    return 1;
}

char *rt_dl_site_file(const char *rel, char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = '\0';
    if (k <= 0) return out;
    exe[k] = '\0';
    for (int up = 0; up < 3; up++) { /* strip "kiln", "bin", "kiln_kernel" */
        char *slash = strrchr(exe, '/');
        if (!slash) return out;
        *slash = '\0';
    }
    if (snprintf(out, n, "%s/%s", exe, rel) >= (int)n) out[0] = '\0';
    return out;
}
