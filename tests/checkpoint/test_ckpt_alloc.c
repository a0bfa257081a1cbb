/* test_ckpt_alloc.c - allocation-failure sweep (after jansson's test_chaos.c): fail the
 * n-th host allocation, for every n, while saving over a good checkpoint, opening and
 * reading one, and scanning a run directory. Every outcome must be RT_OK or RT_ENOMEM
 * (never a misreported "corrupt file"), a failed save must leave the previous file
 * intact and no tmp file, and nothing may leak.
 *
 * Linked with -Wl,--wrap=malloc,... so the checkpoint library's own allocations go
 * through the counters of tests/support/alloc_fail.h; jansson's through json_set_alloc_funcs. */
#include "ck_util.h"

#include <jansson.h>

#include "rt_ckpt_dir.h"
#include "t.h"
#include "alloc_fail.h"

static char dir[256], path[512], tmp[600];

/* One pass over the API; returns the first non-OK status (or RT_OK) in *first. */
static int exercise(rt_status *first, char *msg, size_t cap)
{
    rt_error err;
    rt_status s[4];
    s[0] = ck_save_sample(path, 200, &err);
    if (s[0] != RT_OK) snprintf(msg, cap, "save: %s", err.msg);
    rt_ckpt_reader *r = NULL;
    s[1] = rt_ckpt_reader_open(path, 0, &r, &err);
    if (s[1] == RT_OK) {
        float w[CK_W_N];
        rt_ckpt_metric m;
        s[1] = rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, w, sizeof w,
                                  &err);
        if (s[1] == RT_OK) s[1] = rt_ckpt_reader_metric(r, "metric", &m, &err);
        rt_ckpt_reader_destroy(r);
    }
    if (s[1] != RT_OK) snprintf(msg, cap, "open: %s", err.msg);
    char *latest = NULL, *skipped = NULL;
    s[2] = rt_ckpt_dir_latest(dir, &latest, &skipped, &err);
    if (s[2] != RT_OK) snprintf(msg, cap, "latest: %s", err.msg);
    free(latest);
    free(skipped);
    s[3] = rt_ckpt_dir_rotate(dir, 1, 1, NULL, &err);
    if (s[3] != RT_OK) snprintf(msg, cap, "rotate: %s", err.msg);
    *first = RT_OK;
    for (int i = 0; i < 4; i++) {
        if (s[i] != RT_OK && s[i] != RT_ENOMEM) {
            *first = s[i];
            return -1;
        }
        if (*first == RT_OK) *first = s[i];
    }
    return 0;
}

T_TEST(sweep)
{
    rt_error err;
    long n, enomem = 0;
    for (n = 0; n < 100000; n++) {
        alloc_fail_at = -1;
        ASSERT_EQ(ck_save_sample(path, 100, &err), RT_OK);
        long live_before = alloc_live;
        alloc_fail_arm(n);
        rt_status first;
        char msg[700] = "";
        if (exercise(&first, msg, sizeof msg) != 0)
            T_FAIL_("allocation %ld failed: status %d instead of ENOMEM: %s", n, (int)first, msg);
        int injected = alloc_fail_reached();
        alloc_fail_at = -1;
        if (alloc_live != live_before)
            T_FAIL_("allocation %ld failed: %ld allocations leaked", n, alloc_live - live_before);
        if (ck_exists(tmp)) T_FAIL_("allocation %ld failed: tmp file left", n);
        if (!ck_holds_step(path, 100) && !ck_holds_step(path, 200))
            T_FAIL_("allocation %ld failed: the checkpoint is damaged", n);
        if (!injected) break;         /* every allocation has had its turn */
        enomem += first == RT_ENOMEM; /* RT_OK: recovered (a JSON parse is retried once) */
    }
    printf("  swept %ld allocation points, %ld reported out of memory\n", n, enomem);
    ASSERT(enomem >= 50); /* the save path alone reports dozens */
    ASSERT(n > 50);
}

int main(void)
{
    json_set_alloc_funcs(alloc_fail_json_malloc, __wrap_free);
    if (ck_tmpdir_fast(dir, sizeof dir) != 0) return 99;
    snprintf(path, sizeof path, "%s/ckpt-step00000100.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* a damaged newer file, so listing and resume selection take their report paths */
    char junk[600];
    snprintf(junk, sizeof junk, "%s/ckpt-step00000900.safetensors", dir);
    if (ck_write(junk, "\x10\0\0\0\0\0\0\0{\"a\":1}", 15) != 0) return 99;
    T_RUN(sweep);
    ck_rmrf(dir);
    return T_EXIT();
}
