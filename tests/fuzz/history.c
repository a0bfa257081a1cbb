/* history.c - fuzz target: history_request contents against a small history
 * (jkp_history_query: tail / range / search with IPython's glob patterns).
 * Input: the request content as JSON. Invariants: a parsed request gets an array
 * (possibly empty) whose entries are [session, line, input] or
 * [session, line, [input, output]], never more entries than the history holds. */
#include <string.h>

#include "fz.h"
#include "jk_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *req = json_loadb((const char *)data, size, 0, NULL);
    if (!req) return 0;
    jkp_history *h = jkp_history_create();
    FZ_CHECK(h != NULL);
    const char *code[] = {"x = 1", "print(x)", "x = 1", "%train net", "!ls *", "[x]?"};
    for (int i = 0; i < 6; i++)
        FZ_CHECK(jkp_history_add(h, i + 1, code[i], i % 2 ? "out" : NULL) == 0);
    json_t *got = jkp_history_query(h, req);
    if (got) {
        FZ_CHECK(json_is_array(got));
        FZ_CHECK(json_array_size(got) <= 6);
        size_t i;
        json_t *e;
        json_array_foreach(got, i, e)
        {
            FZ_CHECK(json_is_array(e) && json_array_size(e) == 3);
            FZ_CHECK(json_is_integer(json_array_get(e, 0)) &&
                     json_is_integer(json_array_get(e, 1)));
            json_t *body = json_array_get(e, 2);
            FZ_CHECK(json_is_string(body) || (json_is_array(body) && json_array_size(body) == 2));
        }
        json_decref(got);
    }
    jkp_history_destroy(h);
    json_decref(req);
    return 0;
}
