/* rt_error.h - status codes and the error record every fallible runtime call fills.
 *
 * House style: functions return rt_status and take `rt_error *err` last (err may be
 * NULL). RT_ERR() records the file and line of the failure and a printf-style message
 * that should carry a hint for the user ("... ---> HINT: reduce --batch"). Nothing in
 * runtime/ calls exit(); RT_ASSERT is for broken invariants only (programmer errors).
 */
#ifndef RT_ERROR_H
#define RT_ERROR_H

#include <stddef.h>

typedef enum {
    RT_OK = 0,
    RT_EINVAL,       /* bad argument or user input */
    RT_ENOMEM,       /* host allocation failed */
    RT_EIO,          /* file or network I/O failed */
    RT_EFORMAT,      /* a file's bytes are not what was expected (corrupt, wrong version) */
    RT_ENOTFOUND,    /* a file, data set or run does not exist */
    RT_ENODEV,       /* no such device (e.g. CUDA asked for, none present) */
    RT_EDEVICE,      /* a device call failed (recoverable, e.g. out of device memory) */
    RT_EDEVICE_LOST, /* the device is poisoned; restart the kernel */
    RT_EINTERRUPTED  /* stopped by an interrupt or a time limit */
} rt_status;

typedef struct rt_error {
    rt_status code;
    const char *file;
    int line;
    char msg[512];
} rt_error;

/* Fills err (if not NULL) and returns code. */
rt_status rt_error_set(rt_error *err, rt_status code, const char *file, int line, const char *fmt,
                       ...) __attribute__((format(printf, 5, 6)));
/* Clears err to RT_OK with an empty message. err may be NULL. */
void rt_error_clear(rt_error *err);
/* The Python exception a status is reported to the user as (RT_EINVAL -> "ValueError",
 * RT_EIO -> "OSError", RT_ENODEV -> "RuntimeError", ...): the one table every magic
 * uses (mg_fail_status). RT_OK, a failure without a status, is "RuntimeError". */
const char *rt_status_exception(rt_status code);

/* On the declaration of every function that returns a status: a caller that drops it
 * gets a compiler warning (an error under -Dwerror=true). Where ignoring a status is
 * right (cleanup on a path that is already failing), say so with RT_IGNORE and a
 * comment. */
#define RT_MUST_USE __attribute__((warn_unused_result))
/* Discards a status on purpose; the comment beside it says why. (A plain (void) cast
 * does not silence warn_unused_result in gcc.) */
#define RT_IGNORE(expr)                  \
    do {                                 \
        rt_status rt_ignore_s_ = (expr); \
        (void)rt_ignore_s_;              \
    } while (0)

#define RT_ERR(err, code, ...) rt_error_set((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Propagates a non-OK status from expr. */
#define RT_TRY(expr)                              \
    do {                                          \
        rt_status rt_try_s_ = (expr);             \
        if (rt_try_s_ != RT_OK) return rt_try_s_; \
    } while (0)

void rt_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
#define RT_ASSERT(x) ((x) ? (void)0 : rt_assert_fail(#x, __FILE__, __LINE__))

#endif
