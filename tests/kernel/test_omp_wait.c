/* test_omp_wait.c - Kiln's OpenMP spin default (runtime/rt_omp_wait.c) as libgomp sees
 * it: `kiln kernel` starts with GOMP_SPINCOUNT=10000 when neither GOMP_SPINCOUNT nor
 * OMP_WAIT_POLICY is set, keeps the user's value of either, and a command that does not
 * train (`kiln --version`) keeps libgomp's own default. libgomp prints the value it read
 * with OMP_DISPLAY_ENV=verbose, at its start, before kiln's main.
 *
 * usage: test_omp_wait KILN
 */
#include <stdio.h>
#include <string.h>

#include "../t.h"

static const char *kiln;

/* The GOMP_SPINCOUNT line libgomp prints for `env -u ... SETTING kiln ARGS`, in out. */
static void spincount(const char *setting, const char *args, char *out, size_t n)
{
    char cmd[4096], line[512];
    snprintf(cmd, sizeof cmd,
             "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u LD_PRELOAD %s OMP_DISPLAY_ENV=verbose "
             "'%s' %s 2>&1",
             setting, kiln, args);
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p))
        if (strstr(line, "GOMP_SPINCOUNT")) snprintf(out, n, "%s", line);
    pclose(p);
}

T_TEST(kernel_gets_the_default)
{
    char s[512];
    spincount("", "kernel", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '10000'");
    spincount("", "run", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '10000'");
}

T_TEST(the_users_setting_stays)
{
    char s[512];
    spincount("GOMP_SPINCOUNT=7", "kernel", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '7'");
    spincount("OMP_WAIT_POLICY=passive", "kernel", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '0'");
    spincount("OMP_WAIT_POLICY=active", "kernel", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '30000000000'");
}

T_TEST(other_commands_do_not_restart)
{
    char s[512];
    spincount("", "--version", s, sizeof s);
    ASSERT_STR_CONTAINS(s, "GOMP_SPINCOUNT = '300000'");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_omp_wait KILN\n");
        return 99;
    }
    kiln = argv[1];
    T_RUN(kernel_gets_the_default);
    T_RUN(the_users_setting_stays);
    T_RUN(other_commands_do_not_restart);
    return T_EXIT();
}
