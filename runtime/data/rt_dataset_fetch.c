/* rt_dataset_fetch.c - downloads the files a data set lacks into one directory.
 *
 * Each file goes through rt_download_file (verified, resumable, atomic), so a
 * file present under its final name is never half-written. The expected hash is
 * the table's, or the --sha256sums manifest's when one is given (then every file
 * must be listed). A transfer that is cut off is resumed up to 3 times before the
 * error reaches the user; an interrupt is never retried.
 */
#include "rt_data_internal.h"
#include "rt_download.h"

#include <stdio.h>
#include <string.h>

#define FETCH_RETRIES 3

rt_status rtp_fetch(const char *dir, const rtp_fetch_file *files, int n,
                    const rt_dataset_opts *opts, rt_error *err)
{
    RT_TRY(rtp_mkdir_p(dir, err));
    for (int i = 0; i < n; i++) {
        char dest[PATH_MAX], hex[65];
        if (snprintf(dest, sizeof dest, "%s/%s", dir, files[i].name) >= (int)sizeof dest)
            return RT_ERR(err, RT_EINVAL, "%s: path too long", dir);
        if (rtp_is_file(dest)) continue;
        const char *sha = files[i].sha256;
        if (opts->sha256sums) {
            RT_TRY(rtp_manifest_lookup(opts->sha256sums, files[i].name, hex, err));
            sha = hex;
        }
        rt_download_opts d = {.url = files[i].url,
                              .dest = dest,
                              .sha256_hex = sha,
                              .progress = opts->progress,
                              .user = opts->user,
                              .should_stop = opts->should_stop,
                              .retries = FETCH_RETRIES};
        RT_TRY(rt_download_file(&d, NULL, err));
    }
    return RT_OK;
}
