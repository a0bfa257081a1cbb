/* schedule.c - fuzz target: learning-rate schedule options (rt_schedule_parse), as
 * --schedule and checkpoint metadata give them.
 * Input: the option text. Invariants: a parsed schedule formats to canonical text
 * that parses back to the same canonical text; resolving it for a small run either
 * fails with a message or gives finite learning rates at its first and last step. */
#include <math.h>
#include <string.h>

#include "fz.h"
#include "rt_schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_strdup(data, size);
    if (!text) return 0;
    rt_schedule s, t;
    rt_error err = {0};
    if (rt_schedule_parse(&s, text, &err) == RT_OK) {
        char a[512], b[512];
        FZ_CHECK(rt_schedule_format(&s, a, sizeof a) < (int)sizeof a);
        FZ_CHECK(rt_schedule_parse(&t, a, &err) == RT_OK);
        FZ_CHECK(rt_schedule_format(&t, b, sizeof b) < (int)sizeof b);
        FZ_CHECK(!strcmp(a, b));
        if (rt_schedule_resolve(&s, 10, 3, &err) == RT_OK) {
            double first = rt_schedule_lr(&s, 0.1, 0), last = rt_schedule_lr(&s, 0.1, 29);
            FZ_CHECK(isfinite(first) && isfinite(last));
        } else {
            FZ_CHECK(err.msg[0] != '\0');
        }
    } else {
        FZ_CHECK(err.msg[0] != '\0');
    }
    free(text);
    return 0;
}
