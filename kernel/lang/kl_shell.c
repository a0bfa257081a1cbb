/* kl_shell.c - `!command`: runs /bin/sh -c COMMAND in its own process group with
 * stdin from /dev/null, and forwards its stdout and stderr to the cell chunk by
 * chunk as they arrive (poll; a multi-byte character split across reads is held
 * back until complete, invalid bytes become U+FFFD, since outputs are JSON).
 * An interrupt sends SIGINT to the group, then SIGKILL after a grace period, and
 * the cell ends with KeyboardInterrupt. A non-zero exit is reported on stderr and
 * stored in `_exit_code`; the cell goes on, as in IPython. If the shell exits but a
 * background child keeps the pipes open, reading stops shortly after. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kl_internal.h"

#define KILL_GRACE_MS 1000 /* SIGINT first; SIGKILL if the group is still there */
#define DRAIN_MS 200       /* after the shell exits, how long to wait for EOF */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct stream {
    int fd;
    const char *name;
    char carry[8];
    size_t ncarry;
} stream;

static void emit(const mg_out *out, stream *s, const char *data, size_t n, int final)
{
    char buf[4096 + 8];
    memcpy(buf, s->carry, s->ncarry);
    memcpy(buf + s->ncarry, data, n);
    size_t total = s->ncarry + n;
    kl_buf b = {0};
    size_t held = klp_utf8_sanitize(&b, buf, total, final);
    memcpy(s->carry, buf + total - held, held);
    s->ncarry = held;
    if (b.n && !b.oom && out && out->stream) out->stream(out->user, s->name, b.s, b.n);
    kl_buf_free(&b);
}

static pid_t spawn(const char *cmd, int out_fd, int err_fd)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    /* child: async-signal-safe calls only */
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
}

int klp_shell_run(kl_engine *e, const char *cmd, const mg_out *out, int *status, klp_err *err)
{
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0)
        return klp_fail(err, 0, 0, "OSError", "pipe: %s", strerror(errno));
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(po[0]);
        close(po[1]);
        return klp_fail(err, 0, 0, "OSError", "pipe: %s", strerror(errno));
    }
    pid_t pid = spawn(cmd, po[1], pe[1]);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return klp_fail(err, 0, 0, "OSError", "fork: %s", strerror(errno));
    }
    setpgid(pid, pid); /* also in the parent, so the group exists before any kill */
    stream st[2] = {{po[0], "stdout", {0}, 0}, {pe[0], "stderr", {0}, 0}};
    int exited = 0, wstatus = 0, interrupted = 0;
    long long sigint_at = 0, exited_at = 0;
    while (st[0].fd >= 0 || st[1].fd >= 0 || !exited) {
        if (!interrupted && klp_interrupted(e)) {
            interrupted = 1;
            sigint_at = now_ms();
            kill(-pid, SIGINT);
        }
        if (interrupted && sigint_at && now_ms() - sigint_at > KILL_GRACE_MS) {
            kill(-pid, SIGKILL);
            sigint_at = 0;
        }
        if (!exited) {
            pid_t w = waitpid(pid, &wstatus, WNOHANG);
            if (w == pid || (w < 0 && errno == ECHILD)) {
                exited = 1;
                exited_at = now_ms();
            }
        }
        if (exited && now_ms() - exited_at > DRAIN_MS) break;
        struct pollfd pf[2];
        int np = 0;
        for (int i = 0; i < 2; i++)
            if (st[i].fd >= 0) pf[np++] = (struct pollfd){.fd = st[i].fd, .events = POLLIN};
        if (np == 0) {
            if (!exited) {
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        int r = poll(pf, (nfds_t)np, 50);
        if (r < 0 && errno != EINTR) break;
        for (int k = 0; r > 0 && k < np; k++) {
            if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            stream *s = pf[k].fd == st[0].fd ? &st[0] : &st[1];
            char buf[4096];
            ssize_t got = read(s->fd, buf, sizeof buf);
            if (got > 0) {
                emit(out, s, buf, (size_t)got, 0);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                emit(out, s, "", 0, 1);
                close(s->fd);
                s->fd = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (st[i].fd >= 0) {
            emit(out, &st[i], "", 0, 1);
            close(st[i].fd);
        }
    if (!exited) {
        kill(-pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
    }
    int code = WIFEXITED(wstatus)     ? WEXITSTATUS(wstatus)
               : WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus)
                                      : -1;
    *status = code;
    json_object_set_new(e->vars, "_exit_code", json_integer(code));
    if (interrupted)
        return klp_fail(err, 0, 0, "KeyboardInterrupt", "the shell command was interrupted");
    if (code != 0 && out && out->stream) {
        char msg[160];
        int n = snprintf(msg, sizeof msg, "[shell command %s %d]\n",
                         WIFSIGNALED(wstatus) ? "killed by signal" : "exited with status",
                         WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : code);
        out->stream(out->user, "stderr", msg, (size_t)n);
    }
    return 0;
}
