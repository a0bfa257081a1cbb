/* rt_precision.c - the names of --precision (rt_device.h), in every build: with CUDA and
 * without it (the stub), so %train parses the option the same way everywhere. */
#include <strings.h>

#include "rt_device.h"

static const char *const prec_names[] = {"fp32", "bf16", "fp16"};

rt_status rt_precision_parse(const char *name, rt_precision *out, rt_error *err)
{
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, prec_names[i])) {
            *out = (rt_precision)i;
            return RT_OK;
        }
    return RT_ERR(err, RT_EINVAL,
                  "--precision: unknown precision '%s' (expected fp32, bf16 "
                  "or fp16)",
                  name ? name : "(null)");
}

const char *rt_precision_name(rt_precision p) { return (unsigned)p < 3 ? prec_names[p] : "?"; }
