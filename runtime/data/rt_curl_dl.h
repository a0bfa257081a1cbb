/* rt_curl_dl.h - libcurl is loaded on first use (rt_curl_dl.c), not linked.
 *
 * Code that uses libcurl includes <curl/curl.h> and calls curl_* as usual: the
 * functions Kiln calls are defined in rt_curl_dl.c as forwarders to the library,
 * which is dlopen'ed by the first of them. They return libcurl's own failure values
 * when it cannot be loaded; call rtp_curl_load() first for an error that says why.
 */
#ifndef RT_CURL_DL_H
#define RT_CURL_DL_H

#include "rt_error.h"

/* Loads libcurl once per process (thread-safe; later calls return the first
 * result). RT_ENOTFOUND naming the library and its package when it is missing.
 * KILN_LIBCURL in the environment names another file to load (tests use it). */
RT_MUST_USE rt_status rtp_curl_load(rt_error *err);

#endif
