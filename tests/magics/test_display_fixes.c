/* test_display_fixes.c - QA regressions in what the training magics show (FIX-C):
 * %checkpoint show writes reals in their shortest round-trip form (0.774, not
 * 0.77400000000000002); %train's start line counts parameters with the same
 * thousands separators as the %%model summary; the plot display is created once,
 * right after the progress display, and updated in place each epoch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "mg_ckpt_table.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[256];
static mg_session *g_s;
static mg_error g_err;

T_TEST(test_checkpoint_show_reals)
{
    char out[512];
    mgp_ckpt_display_value("{\"name\":\"accuracy\",\"value\":0.77400000000000002,\"mode\":\"max\","
                           "\"step\":1876}",
                           out, sizeof out);
    ASSERT_STR_EQ(out, "{\"name\":\"accuracy\",\"value\":0.774,\"mode\":\"max\",\"step\":1876}");
    /* exponents, negatives and whole reals; strings and dates untouched */
    mgp_ckpt_display_value("{\"lr\":1.0000000000000001e-05,\"m\":-0.90000000000000002,"
                           "\"w\":100.0,\"t\":\"0.77400000000000002\"}",
                           out, sizeof out);
    ASSERT_STR_EQ(out, "{\"lr\":1e-05,\"m\":-0.9,\"w\":100.0,\"t\":\"0.77400000000000002\"}");
    mgp_ckpt_display_value("2026-11-30T10:00:00Z", out, sizeof out);
    ASSERT_STR_EQ(out, "2026-11-30T10:00:00Z");
    mgp_ckpt_display_value("0.1.0", out, sizeof out);
    ASSERT_STR_EQ(out, "0.1.0");
    mgp_ckpt_display_value("0.30000000000000004", out, sizeof out);
    ASSERT_STR_EQ(out, "0.30000000000000004"); /* already the shortest */
    /* a short buffer truncates, never overruns */
    mgp_ckpt_display_value("{\"value\":0.77400000000000002}", out, 8);
    ASSERT_EQ(strlen(out), 7u);
}

/* Every display's data with how much stream text had been written when it came. */
static json_t *g_order;

static void order_display(void *user, json_t *data, json_t *metadata, const char *id, int update)
{
    capture_display(user, data, metadata, id, update);
    json_array_append_new(g_order, json_pack("{s:s?, s:b, s:I, s:b}", "id", id, "update", update,
                                             "at", (json_int_t)tm_c.nout, "svg",
                                             json_object_get(data, "image/svg+xml") != NULL));
}

/* The %%model summary and %train's start line count the parameters alike. */
T_TEST(test_param_count_separators)
{
    char line[512];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "model wide",
                       "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\n"
                       "dense 16\nrelu\ndense 3\n",
                       &g_err),
              0);
    char *all = strdup(tm_c.out);
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        char *more = NULL;
        if (tp && asprintf(&more, "%s%s", all, tp) > 0) free(all), all = more;
    }
    /* 4*9+4 + 64*16+16 + 16*3+3 = 1,131 */
    ASSERT_STR_CONTAINS(all, "Total params: 1,131");
    free(all);
    tm_reset();
    snprintf(line, sizeof line, "train wide --epochs 1 --batch 64 --results %s", g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "Training wide (1,131 params) on ");
}

/* The plot's display comes right after the progress display, before the first epoch
 * line, as a placeholder; each epoch then updates it in place (it was created after the
 * epoch-1 line, so epoch 2's line jumped below it). */
T_TEST(test_plot_display_placed_once)
{
    char line[512];
    tm_reset();
    g_order = json_array();
    tm_out.display = order_display;
    snprintf(line, sizeof line, "train wide --epochs 3 --batch 64 --results %s", g_store);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    tm_out.display = capture_display;
    ASSERT_EQ(rc, 0);
    ASSERT(json_array_size(g_order) >= 5);
    json_t *prog = json_array_get(g_order, 0), *plot = json_array_get(g_order, 1);
    const char *epoch1 = strstr(tm_c.out, "epoch 1/3  loss");
    ASSERT(epoch1 != NULL);
    /* progress then plot, both new displays, both before any epoch line */
    ASSERT(!json_is_true(json_object_get(prog, "update")));
    ASSERT(!json_is_true(json_object_get(plot, "update")));
    ASSERT(!json_is_true(json_object_get(plot, "svg")));
    const char *pid = json_string_value(json_object_get(plot, "id"));
    ASSERT(pid != NULL && strstr(pid, "-plot"));
    ASSERT(json_integer_value(json_object_get(plot, "at")) <= (json_int_t)(epoch1 - tm_c.out));
    int svgs = 0;
    size_t i;
    json_t *d;
    json_array_foreach(g_order, i, d)
    {
        const char *id = json_string_value(json_object_get(d, "id"));
        if (i >= 2 && id &&
            (!strcmp(id, pid) || !strcmp(id, json_string_value(json_object_get(prog, "id")))))
            ASSERT(json_is_true(json_object_get(d, "update")));
        if (id && !strcmp(id, pid) && json_is_true(json_object_get(d, "svg"))) svgs++;
    }
    ASSERT_EQ(svgs, 3); /* one update per epoch */
    ASSERT_EQ(capture_count(&tm_c, "text/plain",
                            "<loss/accuracy plot appears after the first epoch>", NULL, NULL),
              1);
    json_decref(g_order);
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store)) return 99;
    T_RUN(test_checkpoint_show_reals);
    T_RUN(test_param_count_separators);
    T_RUN(test_plot_display_placed_once);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
