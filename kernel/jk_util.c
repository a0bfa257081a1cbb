/* jk_util.c - small helpers of the protocol side: error records, the stderr log,
 * ISO 8601 dates, UUIDs and owned byte strings. No zmq, no JSON here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "jk_internal.h"

int jkp_fail(jk_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void jkp_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kiln: %s\n", line);
}

void jkp_now_iso(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

int jkp_uuid4(char *buf, size_t n)
{
    unsigned char b[16];
    if (n < 37 || getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(buf, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}

int jkp_bytes_set(jkp_bytes *b, const void *data, size_t len)
{
    b->data = malloc(len + 1);
    if (!b->data) {
        b->len = 0;
        return -1;
    }
    if (len) memcpy(b->data, data, len);
    b->data[len] = '\0';
    b->len = len;
    return 0;
}

void jkp_bytes_deinit(jkp_bytes *b)
{
    if (!b) return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
}
