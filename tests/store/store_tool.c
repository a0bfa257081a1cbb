/* store_tool.c - a command-line front to rt_store for tests/store/test_store.py.
 *
 *   store_tool URL open                  check the store (credentials, bucket)
 *   store_tool URL put KEY FILE          upload a file (multipart above the part size)
 *   store_tool URL putmem KEY TEXT       upload bytes from memory
 *   store_tool URL get KEY FILE          download to FILE (via FILE.part)
 *   store_tool URL cat KEY               print an object (rt_store_get_mem)
 *   store_tool URL ls [PREFIX]           print "SIZE KEY" lines
 *   store_tool URL rm KEY                delete
 *   store_tool URL ckpt-push FILE        checkpoint + manifest under the URL's prefix
 *   store_tool URL ckpt-ls               "STEP SIZE NAME" of complete checkpoints, then
 *                                        "skipped: ..." lines
 *   store_tool URL ckpt-fetch DIR        newest complete valid one into DIR: prints
 *                                        "fetched PATH", then "skipped: ..." lines
 *   store_tool URL ckpt-prune KEEP       prints "deleted N"
 *
 *   store_tool URL sync KEEP CAP         background uploader driven from stdin, one
 *                                        command a line: "put PATH STEP", "status"
 *                                        (prints "pending N last S retrying R error E"),
 *                                        "drain SECONDS" (prints "drained" or
 *                                        "local-only PATH" lines + "error: ..."), "quit"
 *   store_tool URL mirror MAXMB          mirror the data set at URL (rt_store_mirror)
 *                                        into the staging directory: prints "mirrored PATH"
 *   store_tool make FILE STEP KB         (no URL) write a Kiln checkpoint of step STEP
 *                                        with KB kilobytes of tensor data
 * Prints "error: MESSAGE" on stderr and exits 1 on failure (2 for usage). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_store.h"
#include "rt_store_ckpt.h"
#include "rt_store_mirror.h"
#include "rt_store_sync.h"

/* The stdin-driven uploader (see the header comment). */
static rt_status sync_loop(rt_store *s, const char *prefix, int keep, int cap, rt_error *err)
{
    rt_store_sync *y = NULL;
    RT_TRY(rt_store_sync_start(s, prefix, keep, (size_t)cap, &y, err));
    char line[4096], path[4000];
    long long step;
    double secs;
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "put %3999s %lld", path, &step) == 2) {
            rt_error e = {0};
            if (rt_store_sync_enqueue(y, path, step, &e) != RT_OK) printf("error: %s\n", e.msg);
            else printf("queued\n");
        } else if (strncmp(line, "status", 6) == 0) {
            rt_store_sync_status st;
            rt_store_sync_get_status(y, &st);
            printf("pending %zu last %lld retrying %d error %s\n", st.pending,
                   (long long)st.last_step, st.retrying, st.last_error);
        } else if (sscanf(line, "drain %lf", &secs) == 1) {
            char *local = NULL;
            rt_error e = {0};
            if (rt_store_sync_drain(y, secs, &local, &e) == RT_OK) {
                printf("drained\n");
            } else {
                for (char *l = local ? strtok(local, "\n") : NULL; l; l = strtok(NULL, "\n"))
                    printf("local-only %s\n", l);
                printf("error: %s\n", e.msg);
            }
            free(local);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
        fflush(stdout);
    }
    rt_store_sync_stop(y);
    return RT_OK;
}

/* A checkpoint with one F32 tensor of kb KiB whose values depend on step. */
static int make(const char *path, long step, long kb)
{
    size_t n = (size_t)kb * 256;
    float *x = malloc(n * sizeof *x);
    rt_ckpt_writer *w = NULL;
    rt_error err = {0};
    int64_t shape[1] = {(int64_t)n};
    if (!x) return 1;
    for (size_t i = 0; i < n; i++) x[i] = (float)(step * 1000003 + (long)i % 9973) * 0.25f;
    rt_status st = rt_ckpt_writer_create(&w, &err);
    if (st == RT_OK) st = rt_ckpt_writer_add_tensor(w, "model.x", RT_ST_F32, 1, shape, x, &err);
    if (st == RT_OK) st = rt_ckpt_writer_set_meta_i64(w, "step", step, &err);
    if (st == RT_OK) st = rt_ckpt_writer_set_meta_i64(w, "epoch", 0, &err);
    if (st == RT_OK) st = rt_ckpt_writer_save(w, path, &err);
    rt_ckpt_writer_destroy(w);
    free(x);
    if (st != RT_OK) fprintf(stderr, "error: %s\n", err.msg);
    return st == RT_OK ? 0 : 1;
}

/* "skipped: NAME: REASON", one line each ("NAME: REASON\n" lines in skipped). */
static void print_skipped(const char *skipped)
{
    for (const char *p = skipped; p && *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("skipped: %.*s\n", n, p);
        p += n + (nl != NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "make") == 0)
        return make(argv[2], atol(argv[3]), atol(argv[4]));
    if (argc == 4 && strcmp(argv[2], "mirror") == 0) { /* opens the store itself */
        char local[2048];
        rt_error e = {0};
        if (rt_store_mirror(argv[1], (uint64_t)atol(argv[3]) << 20, local, sizeof local, NULL,
                            &e) != RT_OK) {
            fprintf(stderr, "error: %s\n", e.msg);
            return 1;
        }
        printf("mirrored %s\n", local);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: store_tool URL open|put|putmem|get|cat|ls|rm ...\n");
        return 2;
    }
    const char *cmd = argv[2];
    rt_error err = {0};
    rt_store *s = NULL;
    char *prefix = NULL;
    rt_status st = rt_store_open(argv[1], &s, &prefix, &err);
    if (st == RT_OK && strcmp(cmd, "open") == 0) {
        printf("ok %s prefix '%s' at %s\n", rt_store_bucket_url(s), prefix, rt_store_endpoint(s));
    } else if (st == RT_OK && strcmp(cmd, "put") == 0 && argc == 5) {
        st = rt_store_put_file(s, argv[3], argv[4], &err);
    } else if (st == RT_OK && strcmp(cmd, "putmem") == 0 && argc == 5) {
        st = rt_store_put_mem(s, argv[3], argv[4], strlen(argv[4]), &err);
    } else if (st == RT_OK && strcmp(cmd, "get") == 0 && argc == 5) {
        st = rt_store_get_file(s, argv[3], argv[4], &err);
    } else if (st == RT_OK && strcmp(cmd, "cat") == 0 && argc == 4) {
        char *buf = NULL;
        size_t len = 0;
        st = rt_store_get_mem(s, argv[3], 1 << 20, &buf, &len, &err);
        if (st == RT_OK) fwrite(buf, 1, len, stdout);
        free(buf);
    } else if (st == RT_OK && strcmp(cmd, "ls") == 0) {
        rt_store_entry *e = NULL;
        size_t n = 0;
        st = rt_store_list(s, argc > 3 ? argv[3] : "", &e, &n, &err);
        for (size_t i = 0; st == RT_OK && i < n; i++)
            printf("%llu %s\n", (unsigned long long)e[i].size, e[i].key);
        rt_store_entries_free(e, n);
    } else if (st == RT_OK && strcmp(cmd, "rm") == 0 && argc == 4) {
        st = rt_store_delete(s, argv[3], &err);
    } else if (st == RT_OK && strcmp(cmd, "sync") == 0 && argc == 5) {
        rt_store *taken = s;
        s = NULL; /* the uploader owns it now */
        st = sync_loop(taken, prefix, atoi(argv[3]), atoi(argv[4]), &err);
    } else if (st == RT_OK && strcmp(cmd, "ckpt-push") == 0 && argc == 4) {
        st = rt_store_ckpt_push(s, prefix, argv[3], &err);
    } else if (st == RT_OK && strcmp(cmd, "ckpt-ls") == 0) {
        rt_store_ckpt *c = NULL;
        size_t n = 0;
        char *skipped = NULL;
        st = rt_store_ckpt_list(s, prefix, &c, &n, &skipped, &err);
        for (size_t i = 0; st == RT_OK && i < n; i++)
            printf("%lld %llu %s\n", (long long)c[i].step, (unsigned long long)c[i].size,
                   c[i].name);
        print_skipped(skipped);
        free(skipped);
        rt_store_ckpt_free(c, n);
    } else if (st == RT_OK && strcmp(cmd, "ckpt-fetch") == 0 && argc == 4) {
        char *path = NULL, *skipped = NULL;
        st = rt_store_ckpt_fetch(s, prefix, NULL, argv[3], &path, &skipped, &err);
        if (st == RT_OK) printf("fetched %s\n", path);
        if (st == RT_OK) print_skipped(skipped);
        free(path);
        free(skipped);
    } else if (st == RT_OK && strcmp(cmd, "ckpt-prune") == 0 && argc == 4) {
        size_t deleted = 0;
        st = rt_store_ckpt_prune(s, prefix, atoi(argv[3]), &deleted, &err);
        if (st == RT_OK) printf("deleted %zu\n", deleted);
    } else if (st == RT_OK) {
        fprintf(stderr, "store_tool: bad command\n");
        rt_store_close(s);
        free(prefix);
        return 2;
    }
    rt_store_close(s);
    free(prefix);
    if (st != RT_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    return 0;
}
