/* rt_sha256.c - SHA-256 of a file or of bytes in memory (OpenSSL EVP), the one thing
 * libcrypto is used for in the runtime (downloads, object-store payloads and
 * manifests), and MD5 of a file, only to check an object store's ETag. */
#include "rt_download.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The digest md (named name in messages) of a file as lowercase hex into hex. */
static rt_status digest_file(const char *path, const EVP_MD *md_type, const char *name, char *hex,
                             rt_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return RT_ERR(err, RT_EIO, "%s: cannot open: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t cap = 1u << 20;
    unsigned char *buf = malloc(cap);
    rt_status st = RT_OK;
    if (!ctx || !buf || !EVP_DigestInit_ex(ctx, md_type, NULL))
        st = RT_ERR(err, RT_ENOMEM, "%s: cannot start %s", path, name);
    while (st == RT_OK) {
        size_t n = fread(buf, 1, cap, f);
        if (n && !EVP_DigestUpdate(ctx, buf, n))
            st = RT_ERR(err, RT_EIO, "%s: %s update failed", path, name);
        if (n < cap) {
            if (ferror(f)) st = RT_ERR(err, RT_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (st == RT_OK &&
        (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != (unsigned)EVP_MD_get_size(md_type)))
        st = RT_ERR(err, RT_EIO, "%s: %s final failed", path, name);
    if (st == RT_OK) {
        for (unsigned i = 0; i < mdlen; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
        hex[2 * mdlen] = '\0';
    }
    free(buf);
    EVP_MD_CTX_free(ctx);
    fclose(f);
    return st;
}

rt_status rt_md5_file(const char *path, char hex[33], rt_error *err)
{
    return digest_file(path, EVP_md5(), "MD5", hex, err);
}

rt_status rt_sha256_file(const char *path, char hex[65], rt_error *err)
{
    return digest_file(path, EVP_sha256(), "SHA-256", hex, err);
}

rt_status rt_sha256_mem(const void *buf, size_t len, char hex[65], rt_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(buf ? buf : "", len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return RT_ERR(err, RT_ENOMEM, "cannot compute a SHA-256 (OpenSSL failed)");
    for (unsigned i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[64] = '\0';
    return RT_OK;
}
