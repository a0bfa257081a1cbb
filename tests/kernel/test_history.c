/* test_history.c - jk_history.c: the three history_request access types as
 * jupyter_kernel_test and IPython define them (line numbers are execution counts,
 * stop is exclusive, search globs are anchored, unique keeps the latest, n the last). */
#include <stdlib.h>

#include "jk_internal.h"
#include "t.h"

static jkp_history *sample(void)
{
    jkp_history *h = jkp_history_create();
    if (!h || jkp_history_add(h, 1, "x = 1", NULL) || jkp_history_add(h, 2, "1+2", "3") ||
        jkp_history_add(h, 3, "2*4", "8") || jkp_history_add(h, 4, "1+2", "3") ||
        jkp_history_add(h, 5, "print(12)", NULL)) {
        fprintf(stderr, "setup: cannot fill the history\n");
        exit(1);
    }
    return h;
}

/* The inputs of a history reply joined with '|', lines in *lines. */
static const char *inputs(json_t *hist, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(hist); i++) {
        json_t *e = json_array_get(hist, i), *in = json_array_get(e, 2);
        if (json_is_array(in)) in = json_array_get(in, 0);
        used += (size_t)snprintf(buf + used, n - used, "%s%lld:%s", i ? "|" : "",
                                 (long long)json_integer_value(json_array_get(e, 1)),
                                 json_string_value(in));
    }
    return buf;
}

static json_t *query(jkp_history *h, const char *req_json)
{
    json_t *req = json_loads(req_json, 0, NULL);
    json_t *r = jkp_history_query(h, req);
    json_decref(req);
    return r;
}

#define CHECK(h, req, want)                                                          \
    do {                                                                             \
        char buf_[512];                                                              \
        json_t *r_ = query(h, req);                                                  \
        const char *got_ = inputs(r_, buf_, sizeof buf_);                            \
        int eq_ = !strcmp(got_, want);                                               \
        if (!eq_) fprintf(stderr, "  %s -> \"%s\", want \"%s\"\n", req, got_, want); \
        json_decref(r_);                                                             \
        ASSERT(eq_);                                                                 \
    } while (0)

T_TEST(tail)
{
    jkp_history *h = sample();
    CHECK(h, "{\"hist_access_type\": \"tail\", \"n\": 2}", "4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"tail\", \"n\": 99}",
          "1:x = 1|2:1+2|3:2*4|4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"tail\"}", "1:x = 1|2:1+2|3:2*4|4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"tail\", \"n\": 0}", "");
    jkp_history_destroy(h);
}

T_TEST(output_pairs_and_session)
{
    jkp_history *h = sample();
    json_t *r = query(h, "{\"hist_access_type\": \"tail\", \"n\": 2, \"output\": true}");
    ASSERT_EQ(json_array_size(r), 2);
    json_t *first = json_array_get(r, 0), *pair = json_array_get(first, 2);
    ASSERT_EQ(json_array_size(first), 3);
    ASSERT_EQ(json_integer_value(json_array_get(first, 0)), 1); /* the session number */
    ASSERT_STR_EQ(json_string_value(json_array_get(pair, 1)), "3");
    ASSERT(json_is_null(json_array_get(json_array_get(json_array_get(r, 1), 2), 1)));
    json_decref(r);
    jkp_history_destroy(h);
}

T_TEST(range)
{
    jkp_history *h = sample();
    CHECK(h, "{\"hist_access_type\": \"range\", \"session\": 1, \"start\": 2, \"stop\": 3}",
          "2:1+2");
    CHECK(h, "{\"hist_access_type\": \"range\", \"session\": 0, \"start\": 4}",
          "4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"range\", \"session\": 7, \"start\": 1}", "");
    jkp_history_destroy(h);
}

T_TEST(search)
{
    jkp_history *h = sample();
    CHECK(h, "{\"hist_access_type\": \"search\", \"pattern\": \"1?2\"}", "2:1+2|4:1+2");
    CHECK(h, "{\"hist_access_type\": \"search\", \"pattern\": \"1?2\", \"unique\": true}", "4:1+2");
    CHECK(h, "{\"hist_access_type\": \"search\", \"pattern\": \"*2*\", \"n\": 2}",
          "4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"search\", \"pattern\": \"2\"}", ""); /* anchored */
    CHECK(h,
          "{\"hist_access_type\": \"search\", \"pattern\": \"*\", \"unique\": true, "
          "\"n\": 3}",
          "3:2*4|4:1+2|5:print(12)");
    CHECK(h, "{\"hist_access_type\": \"nonsense\"}", "");
    jkp_history_destroy(h);
}

int main(void)
{
    T_RUN(tail);
    T_RUN(output_pairs_and_session);
    T_RUN(range);
    T_RUN(search);
    return T_EXIT();
}
