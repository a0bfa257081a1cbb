/* test_download_file.c - rt_download_file over file:// URLs: no server, no Python,
 * so the transfer, resume, checksum and rename logic also runs under valgrind and
 * the sanitizers (the HTTP behaviours are in test_download.py).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_download.h"
#include "t.h"

#define SIZE 50000

static char dir[256], src[300], url[320];
static char good_hex[65];

static long size_of(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int last_done_ok;
static int on_progress(const char *file, uint64_t done, uint64_t total, void *user)
{
    (void)user;
    last_done_ok = !strcmp(file, "out.bin") && done == SIZE && total == SIZE;
    return 0;
}

T_TEST(good_download)
{
    char dest[320];
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    rt_download_opts o = {
        .url = url, .dest = dest, .sha256_hex = good_hex, .progress = on_progress};
    rt_download_info info;
    rt_error err = {0};
    ASSERT_EQ(rt_download_file(&o, &info, &err), RT_OK);
    ASSERT_EQ(size_of(dest), SIZE);
    ASSERT_EQ(info.bytes, SIZE);
    ASSERT_EQ(info.resumed_from, 0);
    ASSERT(last_done_ok);
    char part[330];
    snprintf(part, sizeof part, "%s.part", dest);
    ASSERT_EQ(size_of(part), -1);
    unlink(dest);
}

T_TEST(resume_from_part)
{
    char dest[320], part[330];
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    FILE *in = fopen(src, "rb"), *out = fopen(part, "wb");
    ASSERT(in && out);
    char buf[12345];
    ASSERT_EQ(fread(buf, 1, sizeof buf, in), sizeof buf);
    fwrite(buf, 1, sizeof buf, out);
    fclose(in);
    fclose(out);
    rt_download_opts o = {.url = url, .dest = dest, .sha256_hex = good_hex};
    rt_download_info info;
    rt_error err = {0};
    ASSERT_EQ(rt_download_file(&o, &info, &err), RT_OK);
    ASSERT_EQ(info.resumed_from, sizeof buf);
    char hex[65];
    ASSERT_EQ(rt_sha256_file(dest, hex, &err), RT_OK);
    ASSERT_STR_EQ(hex, good_hex);
    unlink(dest);
}

T_TEST(checksum_mismatch_deletes_part)
{
    char dest[320], part[330], wrong[65];
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    memcpy(wrong, good_hex, sizeof wrong);
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
    rt_download_opts o = {.url = url, .dest = dest, .sha256_hex = wrong};
    rt_error err = {0};
    ASSERT_EQ(rt_download_file(&o, NULL, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "out.bin: SHA-256 mismatch");
    ASSERT_STR_CONTAINS(err.msg, wrong);
    ASSERT_STR_CONTAINS(err.msg, good_hex);
    ASSERT_EQ(size_of(dest), -1);
    ASSERT_EQ(size_of(part), -1);
}

T_TEST(bad_arguments_and_missing_source)
{
    char dest[320], missing[340];
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    snprintf(missing, sizeof missing, "file://%s/nope.bin", dir);
    rt_error err = {0};
    rt_download_opts none = {.url = NULL, .dest = dest};
    ASSERT_EQ(rt_download_file(&none, NULL, &err), RT_EINVAL);
    rt_download_opts shorthex = {.url = url, .dest = dest, .sha256_hex = "abcd"};
    ASSERT_EQ(rt_download_file(&shorthex, NULL, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "64 hex digits");
    rt_download_opts gone = {.url = missing, .dest = dest};
    ASSERT_EQ(rt_download_file(&gone, NULL, &err), RT_EIO);
    ASSERT_STR_CONTAINS(err.msg, "nope.bin");
    ASSERT_EQ(size_of(dest), -1);
    char nodir[340]; /* the destination directory does not exist */
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/out.bin", dir);
    rt_download_opts baddest = {.url = url, .dest = nodir};
    ASSERT_EQ(rt_download_file(&baddest, NULL, &err), RT_EIO);
    ASSERT_STR_CONTAINS(err.msg, "cannot write");
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-dl-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    snprintf(src, sizeof src, "%s/src.bin", dir);
    snprintf(url, sizeof url, "file://%s", src);
    FILE *f = fopen(src, "wb");
    if (!f) return 99;
    uint32_t x = 12345;
    for (int i = 0; i < SIZE; i++) {
        x = x * 1664525u + 1013904223u;
        fputc((int)(x >> 24), f);
    }
    fclose(f);
    rt_error err = {0};
    if (rt_sha256_file(src, good_hex, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 99;
    }
    T_RUN(good_download);
    T_RUN(resume_from_part);
    T_RUN(checksum_mismatch_deletes_part);
    T_RUN(bad_arguments_and_missing_source);
    unlink(src);
    rmdir(dir);
    return T_EXIT();
}
