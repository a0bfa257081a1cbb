/* mg_run_opts_lists.c - the syntax of the %train options that are lists: --lr-mult
 * PREFIX=F,... and --freeze PREFIX,...|until:LAYER|body (the option table's checks; the
 * run applies them to its tensors in mg_run_init.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_run_opts.h"

int mg_run_next_item(const char **p, char *buf, size_t n)
{
    if (!**p) return 0;
    size_t len = strcspn(*p, ",");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), *p);
    *p += len + ((*p)[len] == ',');
    return 1;
}

int mg_run_parse_lr_mult(const char *text, const char *who, char (*prefix)[128], double *factor,
                         int max, int *n, mg_error *err)
{
    const char *p = text;
    char item[256];
    *n = 0;
    while (mg_run_next_item(&p, item, sizeof item)) {
        char *eq = strchr(item, '='), *end = NULL;
        double f = eq ? strtod(eq + 1, &end) : NAN;
        if (!eq || eq == item || !end || end == eq + 1 || *end || (size_t)(eq - item) >= 128)
            return mg_fail(err, "ValueError",
                           "%s: --lr-mult '%s': expected PREFIX=FACTOR[,PREFIX=FACTOR...] "
                           "(layer2=0.1,fc=1)",
                           who, text);
        if (!(f > 0 && f <= 1000))
            return mg_fail(err, "ValueError",
                           "%s: --lr-mult %s: the factor must be in (0, 1000] ---> HINT: "
                           "--freeze keeps parameters fixed",
                           who, item);
        if (*n >= max)
            return mg_fail(err, "ValueError", "%s: --lr-mult: more than %d prefixes", who, max);
        snprintf(prefix[*n], 128, "%.*s", (int)(eq - item), item);
        factor[(*n)++] = f;
    }
    if (*n == 0)
        return mg_fail(err, "ValueError", "%s: --lr-mult '%s': expected PREFIX=FACTOR", who, text);
    return 0;
}

int mg_run_check_freeze(const char *text, const char *who, mg_error *err)
{
    const char *p = text;
    char item[256];
    int n = 0;
    while (mg_run_next_item(&p, item, sizeof item)) {
        n++;
        if (!item[0] || !strcmp(item, "until:"))
            return mg_fail(err, "ValueError",
                           "%s: --freeze '%s': expected PREFIX[,PREFIX...], until:LAYER or body",
                           who, text);
    }
    if (!n)
        return mg_fail(err, "ValueError",
                       "%s: --freeze '%s': expected PREFIX[,PREFIX...], until:LAYER or body", who,
                       text);
    return 0;
}
