/* t.h - a tiny test harness (after libuv's typed ASSERT_* and redis testhelp.h).
 * Each test file is its own executable: define tests with T_TEST, run them from
 * main with T_RUN, and return T_EXIT(). A failed check prints both values and the
 * file:line, marks the test failed and returns from it. Exit 77 = skip (meson). */
#ifndef T_H
#define T_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int t_failures_ = 0, t_count_ = 0;

#define T_TEST(name) static void name(int *t_failed_)
#define T_RUN(name)                                       \
    do {                                                  \
        int t_f_ = 0;                                     \
        t_count_++;                                       \
        name(&t_f_);                                      \
        if (t_f_) t_failures_++;                          \
        printf("%s %s\n", t_f_ ? "FAIL" : "ok  ", #name); \
        fflush(stdout);                                   \
    } while (0)
#define T_EXIT() \
    (printf("%d passed, %d failed\n", t_count_ - t_failures_, t_failures_), t_failures_ ? 1 : 0)

#define T_FAIL_(...)                                      \
    do {                                                  \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                     \
        fputc('\n', stderr);                              \
        *t_failed_ = 1;                                   \
        return;                                           \
    } while (0)

#define ASSERT(c)                                      \
    do {                                               \
        if (!(c)) T_FAIL_("assertion failed: %s", #c); \
    } while (0)
#define ASSERT_EQ(a, b)                                                  \
    do {                                                                 \
        long long a_ = (long long)(a), b_ = (long long)(b);              \
        if (a_ != b_) T_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); \
    } while (0)
#define ASSERT_NE(a, b)                                           \
    do {                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);       \
        if (a_ == b_) T_FAIL_("%s != %s: both %lld", #a, #b, a_); \
    } while (0)
#define ASSERT_STR_EQ(a, b)                                                                        \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_))                                                          \
            T_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)
#define ASSERT_STR_CONTAINS(a, b)                                                      \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (!a_ || !b_ || !strstr(a_, b_))                                             \
            T_FAIL_("%s contains %s: \"%s\" lacks \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                    b_ ? b_ : "(null)");                                               \
    } while (0)
#define ASSERT_NEAR(a, b, tol)                                                         \
    do {                                                                               \
        double a_ = (double)(a), b_ = (double)(b);                                     \
        if (!(fabs(a_ - b_) <= (tol)))                                                 \
            T_FAIL_("%s ~= %s: %.9g vs %.9g (tol %g)", #a, #b, a_, b_, (double)(tol)); \
    } while (0)

#endif
