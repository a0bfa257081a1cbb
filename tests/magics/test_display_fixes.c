/* test_display_fixes.c - QA regressions in what the training magics show (FIX-C):
 * %checkpoint show writes reals in their shortest round-trip form (0.774, not
 * 0.77400000000000002); %train's start line counts parameters with the same
 * thousands separators as the %%model summary; the plot display is created once,
 * right after the progress display, and updated in place each epoch.
 */
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "mg_ckpt_table.h"
#include "t.h"

T_TEST(test_checkpoint_show_reals)
{
    char out[512];
    mgp_ckpt_display_value("{\"name\":\"accuracy\",\"value\":0.77400000000000002,\"mode\":\"max\","
                           "\"step\":1876}", out, sizeof out);
    ASSERT_STR_EQ(out, "{\"name\":\"accuracy\",\"value\":0.774,\"mode\":\"max\",\"step\":1876}");
    /* exponents, negatives and whole reals; strings and dates untouched */
    mgp_ckpt_display_value("{\"lr\":1.0000000000000001e-05,\"m\":-0.90000000000000002,"
                           "\"w\":100.0,\"t\":\"0.77400000000000002\"}", out, sizeof out);
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

int main(void)
{
    T_RUN(test_checkpoint_show_reals);
    return T_EXIT();
}
