/* jk_carry.c - the forms a kernel hands to the process that replaces it on a restart.
 *
 * A restart (shutdown_request with restart: true) is followed by a new process on the
 * same connection file, so the file beside it, CONNECTION_FILE.kiln-forms, carries
 * the forms from one to the other (what they hold and why: kernel/forms/fm_carry.c).
 * It is written (mode 0600, then renamed into place) only when restarting, read and
 * removed when the next kernel starts; a plain shutdown or a crash writes nothing.
 * Failing to write or read it loses only the carried forms, with a line on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jk_internal.h"
#include "kl.h"

#define CARRY_SUFFIX ".kiln-forms"

char *jkp_carry_path(const char *connection_file)
{
    size_t n = connection_file ? strlen(connection_file) : 0;
    char *path = n ? malloc(n + sizeof CARRY_SUFFIX) : NULL;
    if (path) {
        memcpy(path, connection_file, n);
        memcpy(path + n, CARRY_SUFFIX, sizeof CARRY_SUFFIX);
    }
    return path;
}

void jkp_carry_in(jkp_kernel *k, const char *path)
{
    json_error_t jerr;
    if (!path || access(path, F_OK) != 0) return;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (unlink(path) != 0) jkp_log("restart: cannot remove %s: %s", path, strerror(errno));
    int n = doc ? kl_engine_forms_carry_in(k->engine, doc) : -1;
    if (n < 0)
        jkp_log("restart: %s is not a forms file (%s); no form carried over", path,
                doc ? "unexpected content" : jerr.text);
    else jkp_log("restart: %d form%s carried over", n, n == 1 ? "" : "s");
    json_decref(doc);
}

void jkp_carry_out(jkp_kernel *k, const char *path)
{
    if (!path || !atomic_load(&k->restart)) return;
    json_t *doc = kl_engine_forms_carry(k->engine);
    if (!doc) return;
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    int fd = -1, ok = 0;
    if (tmp) {
        snprintf(tmp, n, "%s.tmp", path);
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd >= 0) {
        ok = json_dumpfd(doc, fd, JSON_COMPACT) == 0;
        ok = close(fd) == 0 && ok;
        ok = ok && rename(tmp, path) == 0;
        if (!ok) unlink(tmp);
    }
    if (ok)
        jkp_log("restart: %zu form%s handed to the next kernel",
                json_array_size(json_object_get(doc, "forms")),
                json_array_size(json_object_get(doc, "forms")) == 1 ? "" : "s");
    else
        jkp_log("restart: cannot write %s (%s); the forms' values stay only in their cells", path,
                strerror(errno));
    free(tmp);
    json_decref(doc);
}
