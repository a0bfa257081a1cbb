/* s3list.c - fuzz target: following a ListObjectsV2 listing page after page
 * (rtp_store_list_turn), as a hostile or broken endpoint serves it: the pages it
 * gives can repeat tokens, loop, go on while listing nothing, or carry huge tokens.
 * Input: pages separated by NUL bytes; the "server" answers the i-th request with page
 * i mod n (so a finite input is an endless listing unless the reader ends it), for the
 * prefix "runs/a/".
 * Invariants: the listing ends (refused or complete) within n + 1 pages whatever the
 * pages say; no token it accepts was accepted before; entries never pass
 * RTP_STORE_LIST_MAX and all lie under the prefix; a refusal says why. */
#include <string.h>

#include "fz.h"
#include "rt_store_internal.h"

#define PAGES_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *all = fz_strdup(data, size);
    if (!all) return 0;
    const char *page[PAGES_MAX];
    size_t n = 0;
    for (size_t off = 0; off <= size && n < PAGES_MAX;) {
        page[n++] = all + off;
        const uint8_t *z = memchr(data + off, 0, size - off);
        if (!z) break;
        all[z - data] = '\0';
        off = (size_t)(z - data) + 1;
    }
    const char *prefix = "runs/a/";
    rtp_store_listing L = {0};
    rt_store_entry *e = NULL;
    size_t ne = 0, cap = 0, turns = 0, nacc = 0;
    char *token = NULL, *accepted[PAGES_MAX + 1];
    rt_error err = {0};
    rt_status st = RT_OK;
    for (;;) {
        char *next = NULL;
        st = rtp_store_list_turn(&L, page[turns % n], prefix, token, &e, &ne, &cap, &next,
                                 "listing", &err);
        turns++;
        FZ_CHECK(ne <= cap && ne <= RTP_STORE_LIST_MAX);
        free(token);
        token = next;
        if (st != RT_OK) {
            FZ_CHECK(err.msg[0] && !next);
            break;
        }
        if (!next) break;
        FZ_CHECK(next[0] && strlen(next) <= RTP_STORE_TOKEN_MAX);
        for (size_t i = 0; i < nacc; i++) FZ_CHECK(strcmp(accepted[i], next) != 0);
        FZ_CHECK(turns <= n); /* page n + 1 repeats page 1's token at the latest */
        accepted[nacc++] = strdup(next);
    }
    FZ_CHECK(turns <= n + 1);
    for (size_t i = 0; i < ne; i++) FZ_CHECK(strncmp(e[i].key, prefix, strlen(prefix)) == 0);
    for (size_t i = 0; i < nacc; i++) free(accepted[i]);
    free(token);
    rtp_store_listing_free(&L);
    rt_store_entries_free(e, ne);
    free(all);
    return 0;
}
