/* test_store_stage.c - the staging directory of an s3:// run (rt_store_stage.h) is the
 * user's own:
 *  - created 0700 under KILN_STAGING_DIR; a directory of this user that others can
 *    write is made private first;
 *  - a directory on the way that is a symlink, or (as root) belongs to another user,
 *    is refused naming it and KILN_STAGING_DIR;
 *  - with HOME unset it is under the user's own home from the password database, never
 *    under /tmp/.cache. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_store_stage.h"
#include "t.h"

static char root[256];

static mode_t mode_of(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_mode & 07777 : 0;
}

T_TEST(created_private_and_others_writable_made_private)
{
    char dir[1024], want[600];
    rt_error err = {0};
    snprintf(want, sizeof want, "%s/stage", root);
    ASSERT_EQ(mkdir(want, 0700), 0);
    ASSERT_EQ(chmod(want, 0777), 0); /* ours, but anyone could plant files in it */
    setenv("KILN_STAGING_DIR", want, 1);
    ASSERT_EQ(rt_store_staging_dir("s3://bucket/runs/a", dir, sizeof dir, &err), RT_OK);
    snprintf(want, sizeof want, "%s/stage/bucket/runs/a", root);
    ASSERT_STR_EQ(dir, want);
    ASSERT_EQ(mode_of(dir), 0700u);
    snprintf(want, sizeof want, "%s/stage", root);
    ASSERT_EQ(mode_of(want), 0755u);
}

T_TEST(a_symlink_or_another_users_directory_is_refused)
{
    char dir[1024], p[600], q[600];
    rt_error err = {0};
    snprintf(p, sizeof p, "%s/elsewhere", root);
    snprintf(q, sizeof q, "%s/stage/evil", root);
    ASSERT_EQ(mkdir(p, 0700), 0);
    ASSERT_EQ(symlink(p, q), 0); /* planted: the bucket's folder points elsewhere */
    ASSERT_EQ(rt_store_staging_dir("s3://evil/run", dir, sizeof dir, &err), RT_EINVAL);
    printf("symlink: %s\n", err.msg);
    ASSERT_STR_CONTAINS(err.msg, "is not a plain directory");
    ASSERT_STR_CONTAINS(err.msg, "KILN_STAGING_DIR");
    if (geteuid() != 0) {
        printf("skipped: another user's directory (needs root to make one)\n");
        return;
    }
    snprintf(p, sizeof p, "%s/stage/theirs", root);
    ASSERT_EQ(mkdir(p, 0755), 0);
    ASSERT_EQ(chown(p, 65534, 65534), 0);
    ASSERT_EQ(rt_store_staging_dir("s3://theirs/run", dir, sizeof dir, &err), RT_EINVAL);
    printf("another user's: %s\n", err.msg);
    ASSERT_STR_CONTAINS(err.msg, "belongs to another user");
}

T_TEST(without_home_it_is_the_users_own_home)
{
    const struct passwd *pw = getpwuid(geteuid());
    if (!pw || !pw->pw_dir || access(pw->pw_dir, W_OK) != 0) {
        printf("skipped: this user has no writable home\n");
        return;
    }
    char dir[1024], want[1024];
    rt_error err = {0};
    unsetenv("KILN_STAGING_DIR");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    char bucket[64];
    snprintf(bucket, sizeof bucket, "kiln-stage-test-%d", (int)getpid());
    char url[128];
    snprintf(url, sizeof url, "s3://%s", bucket);
    ASSERT_EQ(rt_store_staging_dir(url, dir, sizeof dir, &err), RT_OK);
    snprintf(want, sizeof want, "%s/.cache/kiln/staging/%s", pw->pw_dir, bucket);
    ASSERT_STR_EQ(dir, want);
    ASSERT(strncmp(dir, "/tmp/.cache", 11) != 0 || strcmp(pw->pw_dir, "/tmp") == 0);
    rmdir(dir);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/kiln-stage-XXXXXX");
    if (!mkdtemp(root)) return 1;
    T_RUN(created_private_and_others_writable_made_private);
    T_RUN(a_symlink_or_another_users_directory_is_refused);
    T_RUN(without_home_it_is_the_users_own_home);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return T_EXIT();
}
