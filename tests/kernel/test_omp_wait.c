/* test_omp_wait.c - Kiln's OpenMP spin default (runtime/rt_omp_wait.c) as libgomp sees
 * it: `kiln kernel` starts with GOMP_SPINCOUNT=10000 when neither GOMP_SPINCOUNT nor
 * OMP_WAIT_POLICY is set, keeps the user's value of either, and a command that does not
 * train (`kiln --version`) keeps libgomp's own default. libgomp prints the value it read
 * with OMP_DISPLAY_ENV=verbose, at its start, before kiln's main. The restarted process
 * keeps its name, and the shell commands a notebook runs do not inherit the variable.
 *
 * usage: test_omp_wait KILN
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../t.h"

static const char *kiln;

/* The GOMP_SPINCOUNT line libgomp prints for `env -u ... SETTING kiln ARGS`, in out. */
static void spincount(const char *setting, const char *args, char *out, size_t n)
{
    char cmd[4096], line[512];
    snprintf(cmd, sizeof cmd,
             "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u LD_PRELOAD -u KILN_OMP_SPIN_SET %s "
             "OMP_DISPLAY_ENV=verbose '%s' %s 2>&1",
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

/* `kiln run` on a notebook whose shell cell prints its parent's (kiln's) name and what
 * the restart set: the name stays `kiln` (not the `exe` of /proc/self/exe), and the
 * child sees neither GOMP_SPINCOUNT nor the restart's marker. */
T_TEST(restart_keeps_name_and_child_env)
{
    char dir[] = "/tmp/kiln-omp-XXXXXX", nb[128], out[128], cmd[1024], buf[8192];
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(nb, sizeof nb, "%s/nb.ipynb", dir);
    snprintf(out, sizeof out, "%s/out.ipynb", dir);
    FILE *f = fopen(nb, "w");
    ASSERT(f != NULL);
    fputs("{\"cells\":[{\"cell_type\":\"code\",\"execution_count\":null,\"metadata\":{},"
          "\"outputs\":[],\"source\":\"!echo name=$(cat /proc/$PPID/comm); "
          "echo spin=[$GOMP_SPINCOUNT] set=[$KILN_OMP_SPIN_SET]\"}],\"metadata\":{},"
          "\"nbformat\":4,\"nbformat_minor\":5}\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "run %s -o %s", nb, out);
    spincount("", cmd, buf, sizeof buf);
    ASSERT_STR_CONTAINS(buf, "GOMP_SPINCOUNT = '10000'"); /* it did restart */
    f = fopen(out, "r");
    ASSERT(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    ASSERT_STR_CONTAINS(buf, "name=kiln\\n");
    ASSERT_STR_CONTAINS(buf, "spin=[] set=[]\\n");
    unlink(nb);
    unlink(out);
    rmdir(dir);
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
    T_RUN(restart_keeps_name_and_child_env);
    return T_EXIT();
}
