/* test_lang_budget.c - the total budget of the cell language's values
 * (KILN_VALUE_BUDGET): many values each under the per-operation limits are refused
 * together with a MemoryError that names the budget and the setting, the engine keeps
 * running, freeing values gives the budget back, and a value held by several names is
 * counted once. The engines here run under a 16 MiB budget so the test stays fast. */
#include <stdlib.h>

#include "lang_util.h"
#include "t.h"

static atomic_int intr;

static kl_engine *engine_with_budget(const char *setting)
{
    if (setting) setenv("KILN_VALUE_BUDGET", setting, 1);
    else unsetenv("KILN_VALUE_BUDGET");
    kl_engine *e = kl_engine_create(&intr);
    unsetenv("KILN_VALUE_BUDGET");
    return e;
}

#define EXPECT_OVER(r)                                            \
    do {                                                          \
        ASSERT_EQ((r).rc, -1);                                    \
        ASSERT_STR_EQ((r).err.ename, "MemoryError");              \
        ASSERT_STR_CONTAINS((r).err.evalue, "budget of 16 MiB");  \
        ASSERT_STR_CONTAINS((r).err.evalue, "KILN_VALUE_BUDGET"); \
    } while (0)

T_TEST(concatenations_add_up)
{
    kl_engine *e = engine_with_budget("16M");
    run r;
    /* 4 MB each: every one is far below the 64 MiB a single string may have */
    run_cell(e, "s = 'x' * 4000000\na = s + '1'\nb = s + '2'\nc = s + '3'\nd = s + '4'", &r);
    EXPECT_OVER(r);
    ASSERT_STR_CONTAINS(r.tb, "line 5"); /* four of them fit, the fifth does not */
    ASSERT(kl_engine_var_get(e, "c") != NULL);
    ASSERT(kl_engine_var_get(e, "d") == NULL);
    /* the engine goes on; freeing values gives their share back */
    run_cell(e, "del a, b, c\nd = s + '4'\nlen(d)", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.result, "4000001");
    kl_engine_destroy(e);
}

T_TEST(one_statement_of_many_values)
{
    kl_engine *e = engine_with_budget("16M");
    run r;
    /* no name holds the parts until the statement ends: they count all the same */
    run_cell(e, "s = 'y' * 3000000\nt = [s + 'a', s + 'b', s + 'c', s + 'd', s + 'e', s + 'f']",
             &r);
    EXPECT_OVER(r);
    ASSERT(kl_engine_var_get(e, "t") == NULL);
    run_cell(e, "u = [s + 'a', s + 'b']\nlen(u)", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.result, "2");
    kl_engine_destroy(e);
}

T_TEST(lists_and_ranges)
{
    kl_engine *e = engine_with_budget("16M");
    run r;
    run_cell(e, "r = range(1000000)", &r); /* an int and a slot each: ~40 MB */
    EXPECT_OVER(r);
    run_cell(e, "z = [0] * 550000\nz2 = z + z\nz3 = z2 + z", &r); /* 4.4, 8.8, 13.2 MB of slots */
    EXPECT_OVER(r);
    ASSERT(kl_engine_var_get(e, "z2") != NULL);
    /* a list made longer by += counts too */
    run_cell(e, "del z2\nq = z + z\nq += z", &r);
    EXPECT_OVER(r);
    ASSERT_STR_CONTAINS(r.tb, "line 3");
    run_cell(e, "q += z", &r);
    EXPECT_OVER(r);
    run_cell(e, "del z, q\nsmall = list(range(1000))\nsum(small)", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.result, "499500");
    kl_engine_destroy(e);
}

T_TEST(shared_values_count_once)
{
    kl_engine *e = engine_with_budget("16M");
    run r;
    run_cell(e, "s = 'z' * 6000000\na = s\nb = s\nc = [s, s, s]\nd = {'k': s}\nlen(a + 'q')", &r);
    if (r.rc != 0) T_FAIL_("raised %s: %s", r.err.ename, r.err.evalue);
    ASSERT_STR_EQ(r.cap.result, "6000001");
    kl_engine_destroy(e);
}

T_TEST(setting)
{
    /* the default lets a few hundred MB through: 3 x 30 MB */
    kl_engine *e = engine_with_budget(NULL);
    run r;
    run_cell(e, "s = 'x' * 30000000\na = s + '1'\nb = s + '2'\nlen(b)", &r);
    ASSERT_EQ(r.rc, 0);
    kl_engine_destroy(e);
    /* what cannot be read keeps the default (and is said on stderr) */
    e = engine_with_budget("lots");
    run_cell(e, "s = 'x' * 30000000\na = s + '1'\nlen(a)", &r);
    ASSERT_EQ(r.rc, 0);
    kl_engine_destroy(e);
    e = engine_with_budget("1GiB");
    run_cell(e,
             "s = 'x' * 60000000\na = s + '1'\nb = s + '2'\nc = s + '3'\nd = s + '4'\n"
             "len(d)",
             &r);
    ASSERT_EQ(r.rc, 0);
    kl_engine_destroy(e);
    e = engine_with_budget("2m");
    run_cell(e, "s = 'x' * 3000000", &r);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_CONTAINS(r.err.evalue, "budget of 2 MiB");
    kl_engine_destroy(e);
}

int main(void)
{
    T_RUN(concatenations_add_up);
    T_RUN(one_statement_of_many_values);
    T_RUN(lists_and_ranges);
    T_RUN(shared_values_count_once);
    T_RUN(setting);
    return T_EXIT();
}
