/* manifest.c - fuzz target: the checkpoint manifests of an object store
 * (rtp_store_manifest_parse), which come from the bucket and so from whoever can
 * write to it. The manifest's part name becomes a local file name (the download goes
 * to DIR/NAME) and an object key, its SHA-256 is compared with the download's.
 * Input: the manifest's bytes.
 * Invariants: a refused manifest says why; an accepted one names a plain file (not
 * empty, ".", "..", no '/', no control character), has a 64-digit lowercase hex
 * SHA-256, an XXH3 that is empty or 16 hex digits, and a size and step >= 0. */
#include <string.h>

#include "fz.h"
#include "rt_store_internal.h"

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return strlen(s) == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rt_store_ckpt c;
    memset(&c, 0, sizeof c);
    char why[700] = "";
    if (rtp_store_manifest_parse((const char *)data, size, &c, why, sizeof why)) {
        FZ_CHECK(c.name && c.name[0] && strcmp(c.name, ".") && strcmp(c.name, ".."));
        FZ_CHECK(!strchr(c.name, '/'));
        for (const char *p = c.name; *p; p++) FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
        FZ_CHECK(is_hex(c.sha256, 64));
        FZ_CHECK(!c.xxh3[0] || is_hex(c.xxh3, 16));
        FZ_CHECK(c.step >= 0);
        free(c.name);
    } else {
        FZ_CHECK(why[0] && c.name == NULL);
    }
    return 0;
}
