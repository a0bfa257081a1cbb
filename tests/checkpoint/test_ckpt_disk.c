/* test_ckpt_disk.c - a save that runs out of space fails cleanly: a clear "disk full"
 * error naming the file, no tmp file left, the previous checkpoint untouched.
 * The full disk is a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored -> EFBIG) set in a
 * child process, at many points of the file: before the header, inside it, inside
 * the data, one byte short. */
#include "ck_util.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "rt_ckpt_internal.h"
#include "t.h"

static char dir[256], path[512], tmp[600];

typedef struct {
    int status;
    char msg[512];
} child_result;

/* Saves step 200 over path in a child limited to `limit` bytes a file. */
static int save_limited(rlim_t limit, child_result *res)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        child_result r = {0};
        struct rlimit rl = {limit, limit};
        rt_error err;
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
        r.status = (int)ck_save_sample(path, 200, &err);
        if (r.status) snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        _exit(write(fds[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 4);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], res, sizeof *res);
    close(fds[0]);
    int wst;
    waitpid(pid, &wst, 0);
    return got == (ssize_t)sizeof *res && WIFEXITED(wst) && WEXITSTATUS(wst) == 0 ? 0 : -1;
}

T_TEST(full_disk_at_every_stage)
{
    rt_error err;
    ASSERT_EQ(ck_save_sample(path, 100, &err), RT_OK);
    size_t size;
    unsigned char *b = ck_read(path, &size);
    ASSERT(b);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    free(b);
    rlim_t limits[] = {0,
                       1,
                       7,
                       8,
                       100,
                       (rlim_t)(8 + n - 1),
                       (rlim_t)(8 + n),
                       (rlim_t)(8 + n + 50),
                       (rlim_t)(size / 2 + n / 2),
                       (rlim_t)(size - 1)};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        child_result r;
        if (save_limited(limits[i], &r) != 0)
            T_FAIL_("child for limit %llu died", (unsigned long long)limits[i]);
        if (r.status != RT_EIO || !strstr(r.msg, path) || !strstr(r.msg, "disk full"))
            T_FAIL_("limit %llu: status %d, msg: %s", (unsigned long long)limits[i], r.status,
                    r.msg);
        if (ck_exists(tmp))
            T_FAIL_("limit %llu: %s left behind", (unsigned long long)limits[i], tmp);
        if (!ck_holds_step(path, 100))
            T_FAIL_("limit %llu: the previous checkpoint was damaged",
                    (unsigned long long)limits[i]);
    }
    /* with exactly enough room the save succeeds (same size: same tensors and keys) */
    child_result r;
    ASSERT_EQ(save_limited((rlim_t)size, &r), 0);
    ASSERT_EQ(r.status, RT_OK);
    ASSERT(ck_holds_step(path, 200));
    ASSERT(!ck_exists(tmp));
}

T_TEST(errno_messages)
{
    rt_error err;
    int errs[] = {ENOSPC, EDQUOT, EFBIG};
    for (size_t i = 0; i < 3; i++) {
        ASSERT_EQ(rtp_ckpt_errno_error(&err, errs[i], "writing checkpoint", "/x/y"), RT_EIO);
        ASSERT_STR_CONTAINS(err.msg, "disk full");
        ASSERT_STR_CONTAINS(err.msg, "'/x/y'");
        ASSERT_STR_CONTAINS(err.msg, "HINT");
    }
    ASSERT_EQ(rtp_ckpt_errno_error(&err, EACCES, "creating checkpoint", "/x/y"), RT_EIO);
    ASSERT_STR_CONTAINS(err.msg, "writable");
}

int main(void)
{
    if (ck_tmpdir(dir, sizeof dir) != 0) return 99;
    snprintf(path, sizeof path, "%s/ckpt-step00000100.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    T_RUN(full_disk_at_every_stage);
    T_RUN(errno_messages);
    ck_rmrf(dir);
    return T_EXIT();
}
