/* test_dl_missing.c - libcurl and libarchive are loaded on first use
 * (runtime/data/rt_*_dl.c); when they cannot be, the download or the archive read
 * fails with RT_ENOTFOUND naming the library and the package to install, and the
 * process goes on. meson runs this with KILN_LIBCURL and KILN_LIBARCHIVE pointing at
 * files that do not exist (a missing package looks the same to dlopen).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rt_dataset.h"
#include "rt_download.h"
#include "t.h"

static char dir[256];

T_TEST(download_without_libcurl)
{
    char dest[300];
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    rt_download_opts o = {.url = "file:///dev/null", .dest = dest};
    rt_error err = {0};
    ASSERT_EQ(rt_download_file(&o, NULL, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "cannot load libcurl");
    ASSERT_STR_CONTAINS(err.msg, "apt install libcurl4");
    ASSERT(access(dest, F_OK) != 0);
    /* the first answer sticks: a second call says the same, without a retry */
    rt_error again = {0};
    ASSERT_EQ(rt_download_file(&o, NULL, &again), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(again.msg, "cannot load libcurl");
}

T_TEST(archive_without_libarchive)
{
    char tgz[300];
    snprintf(tgz, sizeof tgz, "%s/cifar-10-binary.tar.gz", dir);
    FILE *f = fopen(tgz, "wb");
    ASSERT(f != NULL);
    fputs("not read: libarchive is missing", f);
    fclose(f);
    rt_dataset_splits s;
    rt_dataset_opts o = {.name = tgz};
    rt_error err = {0};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "cannot load libarchive");
    ASSERT_STR_CONTAINS(err.msg, "apt install libarchive13");
    unlink(tgz);
}

int main(void)
{
    const char *env[] = {getenv("KILN_LIBCURL"), getenv("KILN_LIBARCHIVE")};
    if (!env[0] || !env[1] || access(env[0], F_OK) == 0 || access(env[1], F_OK) == 0) {
        fprintf(stderr, "set KILN_LIBCURL and KILN_LIBARCHIVE to missing files\n");
        return 99;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-dlm-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    T_RUN(download_without_libcurl);
    T_RUN(archive_without_libarchive);
    rmdir(dir);
    return T_EXIT();
}
