/* rt_results_proc.c - who is writing a run, and is that process still alive?
 *
 * A run records host name, pid and a process start token "BOOTID:STARTTIME" (the
 * kernel's boot id and field 22 of /proc/PID/stat). A running run whose host is this
 * host is dead when /proc/PID is gone or holds a process with another start token
 * (pid reuse, or a reboot). Without /proc we fall back to kill(pid, 0). Runs of other
 * hosts cannot be judged here and are left alone.
 */
#include "rt_results_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void read_line(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(buf, (int)n, f)) buf[strcspn(buf, "\r\n")] = '\0';
    fclose(f);
}

/* Field 22 (starttime) of /proc/PID/stat; 0 when unreadable or a zombie. The command name
 * (field 2) may hold spaces and parentheses, so parse after the last ')'. */
static unsigned long long proc_starttime(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    /* a zombie (killed, not yet reaped) is gone for our purpose */
    if (p[0] == ' ' && (p[1] == 'Z' || p[1] == 'X')) return 0;
    /* after ')' come fields 3..: state is field 3, starttime field 22 */
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p) return 0;
    }
    unsigned long long v = 0;
    if (sscanf(p, " %llu", &v) != 1) return 0;
    return v;
}

static void start_token(long pid, char *buf, size_t n)
{
    char boot[64];
    read_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
    snprintf(buf, n, "%s:%llu", boot, proc_starttime(pid));
}

void rtp_proc_self(rtp_proc_id *id)
{
    memset(id, 0, sizeof *id);
    if (gethostname(id->host, sizeof id->host - 1) != 0) strcpy(id->host, "unknown");
    id->pid = (long)getpid();
    start_token(id->pid, id->start, sizeof id->start);
}

int rtp_proc_alive(const char *host, long pid, const char *start)
{
    rtp_proc_id self;
    rtp_proc_self(&self);
    if (!host || strcmp(host, self.host) != 0) return -1;
    if (pid <= 0) return 0;
    if (pid == self.pid && start && strcmp(start, self.start) == 0) return 1;
    if (access("/proc/self/stat", R_OK) == 0) {
        if (proc_starttime(pid) == 0) return 0;
        char tok[128];
        start_token(pid, tok, sizeof tok);
        return start && strcmp(tok, start) == 0;
    }
    if (kill((pid_t)pid, 0) == 0 || errno == EPERM) return 1;
    return 0;
}

double rtp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rtp_mono_ms(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
