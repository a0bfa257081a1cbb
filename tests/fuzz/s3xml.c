/* s3xml.c - fuzz target: the S3 server's XML replies as runtime/store reads them, which
 * come from whoever answers at the endpoint: a ListObjectsV2 page
 * (rtp_store_list_page, for the prefix "runs/a/" asked with the token "tok"), and the
 * <Code>, <Message> and <UploadId> of other replies (rtp_store_xml_next).
 * Input: the reply's bytes.
 * Invariants: a refused page says why; an accepted one lists only keys under the
 * prefix, and a continuation token only when it is new and not empty; a value read is
 * never longer than the reply, and reading goes forward. */
#include <string.h>

#include "fz.h"
#include "rt_store_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xml = fz_strdup(data, size);
    if (!xml) return 0;
    const char *prefix = "runs/a/";
    rt_store_entry *e = NULL;
    size_t n = 0, cap = 0;
    char *next = NULL;
    rt_error err = {0};
    rt_status st = rtp_store_list_page(xml, prefix, "tok", &e, &n, &cap, &next, "listing", &err);
    FZ_CHECK(n <= cap);
    if (st == RT_OK) {
        for (size_t i = 0; i < n; i++) FZ_CHECK(strncmp(e[i].key, prefix, strlen(prefix)) == 0);
        FZ_CHECK(!next || (next[0] && strcmp(next, "tok") != 0));
    } else {
        FZ_CHECK(err.msg[0] && !next);
    }
    free(next);
    rt_store_entries_free(e, n);
    static const char *tags[] = {"Code", "Message", "UploadId", "Contents"};
    for (size_t t = 0; t < sizeof tags / sizeof *tags; t++) {
        size_t pos = 0, before = 0;
        int oom = 0;
        char *v;
        while ((v = rtp_store_xml_next(xml, tags[t], &pos, &oom))) {
            FZ_CHECK(strlen(v) <= strlen(xml) && pos > before && pos <= strlen(xml));
            before = pos;
            free(v);
        }
    }
    free(xml);
    return 0;
}
