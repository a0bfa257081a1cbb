/* tm_util.h - what the training-magic tests share: a capturing mg_out (stream text,
 * every display with its display_id and update flag: tests/support/capture.h's, with
 * stream and display only), a fake host (an interrupt that
 * fires after N polls), running a magic line through the registry and the shared
 * argument parser as the engine does, and a tiny IDX data set written to a temp dir
 * (3 classes of 8x8 images, a bright square whose position is the class: learnable
 * in a few steps). Header-only: each test file is its own executable. */
#ifndef TM_UTIL_H
#define TM_UTIL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "capture.h"
#include "mg.h"
#include "rt_results.h"
#include "rt_results_query.h"

static capture tm_c;                 /* tm_c.log: the displays, in order (capture.h) */
static long tm_interrupt_after = -1; /* polls until the interrupt fires; -1 never */
static long tm_polls;

static void tm_reset(void)
{
    capture_reset(&tm_c, 1);
    tm_interrupt_after = -1;
    tm_polls = 0;
}

static int tm_interrupted(void *user)
{
    (void)user;
    tm_polls++;
    return tm_interrupt_after >= 0 && tm_polls > tm_interrupt_after;
}

static mg_out tm_out = {.user = &tm_c, .stream = capture_stream, .display = capture_display};
static mg_host tm_host = {.interrupted = tm_interrupted};
static mg_settings tm_settings; /* what the magics see as the host's settings */

/* Runs "%name args" (body != NULL: the cell form) as the engine does. */
static int tm_magic(mg_session *s, const char *line, const char *body, mg_error *err)
{
    char name[64];
    size_t n = strcspn(line, " ");
    snprintf(name, sizeof name, "%.*s", (int)n, line);
    const mg_command *cmd = mg_registry_find(name);
    if (!cmd) return mg_fail(err, "UsageError", "Line magic function `%%%s` not found.", name);
    mg_args a;
    if (mg_args_parse(cmd, line[n] ? line + n + 1 : "", body, &a, err) < 0) return -1;
    mg_ctx ctx = {.out = &tm_out, .host = &tm_host, .session = s, .settings = &tm_settings};
    int rc = cmd->run(&ctx, &a, err);
    mg_args_deinit(&a);
    return rc;
}

/* ---- a tiny IDX data set ---- */

static int tm_write_gz(const char *dir, const char *name, const uint8_t *hdr, size_t nh,
                       const uint8_t *data, size_t nd)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile f = gzopen(path, "wb");
    if (!f) return -1;
    int ok = gzwrite(f, hdr, (unsigned)nh) == (int)nh && gzwrite(f, data, (unsigned)nd) == (int)nd;
    return gzclose(f) == Z_OK && ok ? 0 : -1;
}

static void tm_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

/* n images of 8x8 with labels in 0..2 into dir as prefix-images/labels. */
static int tm_write_split(const char *dir, const char *img_name, const char *lab_name, int n,
                          unsigned seed)
{
    uint8_t *img = malloc((size_t)n * 64), *lab = malloc((size_t)n), h[16];
    if (!img || !lab) return -1;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int c = (int)((seed >> 16) % 3);
        lab[i] = (uint8_t)c;
        for (int p = 0; p < 64; p++) {
            seed = seed * 1103515245u + 12345u;
            int y = p / 8, x = p % 8, on = y >= 2 && y < 6 && x >= c * 3 && x < c * 3 + 2;
            img[(size_t)i * 64 + (size_t)p] = (uint8_t)((on ? 180 : 20) + (seed >> 16) % 60);
        }
    }
    h[0] = h[1] = 0, h[2] = 8, h[3] = 3;
    tm_be32(h + 4, (uint32_t)n), tm_be32(h + 8, 8), tm_be32(h + 12, 8);
    int rc = tm_write_gz(dir, img_name, h, 16, img, (size_t)n * 64);
    h[3] = 1;
    if (!rc) rc = tm_write_gz(dir, lab_name, h, 8, lab, (size_t)n);
    free(img);
    free(lab);
    return rc;
}

/* Makes a temp dir holding the tiny data set; path into dir (size >= 64). */
static int tm_make_dataset(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/kiln-tm-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    if (tm_write_split(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 300, 1) ||
        tm_write_split(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 90, 2))
        return -1;
    return 0;
}

/* Start of a test program: the tiny data set in a new temp dir (dir) and the path of a
 * results store in it (store). 0, or -1 with a message. */
static inline int tm_start(char *dir, size_t ndir, char *store, size_t nstore)
{
    if (tm_make_dataset(dir, ndir)) {
        fprintf(stderr, "cannot write the test data set\n");
        return -1;
    }
    snprintf(store, nstore, "%s/results.sqlite", dir);
    return 0;
}

/* End of a test program: the session, the captured outputs and the data directory go. */
static inline void tm_teardown(mg_session *s, const char *dir)
{
    mg_session_destroy(s);
    capture_deinit(&tm_c);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* A new session in *s (the old one destroyed): 0, or -1 when it cannot be made. */
static inline int tm_fresh_session(mg_session **s)
{
    mg_session_destroy(*s);
    *s = mg_session_create();
    return *s ? 0 : -1;
}

/* `%dataset DIR --samples N`, then `%%model tiny` with the given layers: 0 or -1. */
static inline int tm_setup_model(mg_session *s, const char *dir, int samples, const char *net,
                                 mg_error *err)
{
    char line[256];
    snprintf(line, sizeof line, "dataset %s --samples %d", dir, samples);
    return tm_magic(s, line, NULL, err) || tm_magic(s, "model tiny", net, err) ? -1 : 0;
}

/* The newest run recorded in the results store at store, into *r (rt_results_run_free):
 * 0, or -1 when the store or its last run cannot be read. */
static inline int tm_last_run(const char *store, rt_results_run *r)
{
    rt_results *rs = NULL;
    rt_error re;
    int64_t run;
    int rc = rt_results_open(store, &rs, &re) == RT_OK &&
                     rt_results_find(rs, "last", &run, &re) == RT_OK &&
                     rt_results_get_run(rs, run, r, &re) == RT_OK
                 ? 0
                 : -1;
    rt_results_close(rs);
    return rc;
}

#endif
