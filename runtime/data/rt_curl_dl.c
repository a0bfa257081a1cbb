/* rt_curl_dl.c - libcurl loaded on first use, not when the process starts.
 *
 * Linking libcurl makes every process that links the runtime, the kernel above all,
 * map and relocate libcurl and the 19 libraries it pulls in (nghttp2, ssh2, ldap,
 * gssapi, rtmp, psl, ...) before main (the largest single cost of the kernel's start;
 * figures in bench/README.md), for a library that only data-set downloads and the
 * MLflow mirror use. So the build takes libcurl's headers only (curl_dep in meson.build),
 * and this file defines the part of libcurl's API that Kiln calls as forwarders to
 * the real functions, looked up with dlopen/dlsym by the first call (pthread_once).
 * Callers keep writing plain libcurl code; a curl_* function not defined here fails
 * to link: add it to the table and the forwarders.
 *
 * When the library cannot be loaded the forwarders return libcurl's own failure
 * values (CURLE_FAILED_INIT, NULL) and do nothing else; rtp_curl_load() says why.
 * The forwarders are hidden (-fvisibility=hidden), so the loaded libcurl never binds
 * to them. The library is never dlclose'd.
 */
#define CURL_DISABLE_TYPECHECK /* curl.h's type-checking macros would rename the definitions */
#include "rt_curl_dl.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_dl.h"

#define CURL_SONAME "libcurl.so.4"

static struct {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_global_cleanup) *global_cleanup;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_reset) *easy_reset;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_easy_escape) *easy_escape;
    __typeof__(curl_free) *free_mem;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_url) *url;
    __typeof__(curl_url_set) *url_set;
    __typeof__(curl_url_get) *url_get;
    __typeof__(curl_url_cleanup) *url_cleanup;
} fn;
static int loaded;    /* every entry of fn is set */
static char why[400]; /* set when not loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    /* libcurl-gnutls (Debian's libcurl3-gnutls) has the same API and ABI */
    const char *names[] = {CURL_SONAME, "libcurl-gnutls.so.4"};
    const rt_dl_sym syms[] = {
        {"curl_global_init", (void **)&fn.global_init},
        {"curl_global_cleanup", (void **)&fn.global_cleanup},
        {"curl_easy_init", (void **)&fn.easy_init},
        {"curl_easy_setopt", (void **)&fn.easy_setopt},
        {"curl_easy_perform", (void **)&fn.easy_perform},
        {"curl_easy_getinfo", (void **)&fn.easy_getinfo},
        {"curl_easy_reset", (void **)&fn.easy_reset},
        {"curl_easy_cleanup", (void **)&fn.easy_cleanup},
        {"curl_easy_strerror", (void **)&fn.easy_strerror},
        {"curl_easy_escape", (void **)&fn.easy_escape},
        {"curl_free", (void **)&fn.free_mem},
        {"curl_slist_append", (void **)&fn.slist_append},
        {"curl_slist_free_all", (void **)&fn.slist_free_all},
        {"curl_url", (void **)&fn.url},
        {"curl_url_set", (void **)&fn.url_set},
        {"curl_url_get", (void **)&fn.url_get},
        {"curl_url_cleanup", (void **)&fn.url_cleanup},
    };
    rt_dl_result r;
    loaded = rt_dl_load("KILN_LIBCURL", names, 2, syms, sizeof syms / sizeof syms[0], &r);
    snprintf(why, sizeof why, "%s", r.why);
}

static int ready(void)
{
    pthread_once(&once, load_once);
    return loaded;
}

rt_status rtp_curl_load(rt_error *err)
{
    if (ready()) return RT_OK;
    return RT_ERR(err, RT_ENOTFOUND,
                  "cannot load libcurl (%s): %s ---> HINT: install the "
                  "libcurl4 package (apt install libcurl4); Kiln loads it only to download "
                  "data sets and to mirror runs to MLflow",
                  CURL_SONAME, why);
}

/* ---- forwarders: the libcurl API Kiln uses ---- */

CURLcode curl_global_init(long flags)
{
    return ready() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
    if (ready()) fn.global_cleanup();
}

CURL *curl_easy_init(void) { return ready() ? fn.easy_init() : NULL; }

/* The option number says the argument's type (curl.h CURLOPTTYPE_*), as it does for
 * libcurl itself: LONG < OBJECTPOINT (also string, slist, callback data) <
 * FUNCTIONPOINT < OFF_T < BLOB. */
CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
    if (!ready()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT) rc = fn.easy_setopt(c, opt, va_arg(ap, long));
    else if (opt < CURLOPTTYPE_FUNCTIONPOINT) rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
    else if (opt < CURLOPTTYPE_OFF_T) rc = fn.easy_setopt(c, opt, va_arg(ap, void (*)(void)));
    else if (opt < CURLOPTTYPE_BLOB) rc = fn.easy_setopt(c, opt, va_arg(ap, curl_off_t));
    else rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

CURLcode curl_easy_perform(CURL *c) { return ready() ? fn.easy_perform(c) : CURLE_FAILED_INIT; }

/* Every CURLINFO takes one pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
    if (!ready()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = fn.easy_getinfo(c, info, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

void curl_easy_reset(CURL *c)
{
    if (ready()) fn.easy_reset(c);
}

void curl_easy_cleanup(CURL *c)
{
    if (ready()) fn.easy_cleanup(c);
}

const char *curl_easy_strerror(CURLcode rc)
{
    return ready() ? fn.easy_strerror(rc) : "libcurl could not be loaded";
}

char *curl_easy_escape(CURL *c, const char *s, int len)
{
    return ready() ? fn.easy_escape(c, s, len) : NULL;
}

void curl_free(void *p)
{
    if (ready()) fn.free_mem(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    return ready() ? fn.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
    if (ready()) fn.slist_free_all(l);
}

/* The URL API (libcurl >= 7.62): the MLflow mirror takes credentials out of URLs. */
CURLU *curl_url(void) { return ready() ? fn.url() : NULL; }

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
    return ready() ? fn.url_set(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

#if LIBCURL_VERSION_NUM >= 0x080200 /* curl 8.2 made the handle const */
CURLUcode curl_url_get(const CURLU *u, CURLUPart what, char **part, unsigned int flags)
#else
CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags)
#endif
{
    return ready() ? fn.url_get(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

void curl_url_cleanup(CURLU *u)
{
    if (ready()) fn.url_cleanup(u);
}
