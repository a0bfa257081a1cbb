/* rt_error.c - the error record and the assertion of broken invariants. */
#include "rt_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rt_status rt_error_set(rt_error *err, rt_status code, const char *file, int line, const char *fmt,
                       ...)
{
    if (!err) return code;
    err->code = code;
    err->file = file;
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void rt_error_clear(rt_error *err)
{
    if (!err) return;
    err->code = RT_OK;
    err->file = NULL;
    err->line = 0;
    err->msg[0] = '\0';
}

const char *rt_status_exception(rt_status code)
{
    switch (code) {
    case RT_OK: return "RuntimeError";
    case RT_EINVAL: return "ValueError";
    case RT_ENOMEM: return "MemoryError";
    case RT_EIO: return "OSError";
    case RT_EFORMAT: return "ValueError";
    case RT_ENOTFOUND: return "FileNotFoundError";
    case RT_ENODEV: return "RuntimeError";
    case RT_EDEVICE: return "RuntimeError";
    case RT_EDEVICE_LOST: return "SystemError";
    case RT_EINTERRUPTED: return "KeyboardInterrupt";
    }
    return "RuntimeError";
}

void rt_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "kiln: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
