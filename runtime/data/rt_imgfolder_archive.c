/* rt_imgfolder_archive.c - an image folder packed as .zip, .tar, .tar.gz or .tgz, read
 * as a stream with libarchive (nothing is extracted to disk).
 *
 * Members with an image extension are read into memory, each at most RTP_MEMBER_MAX
 * bytes and all of them together at most the memory available when the reading began
 * (rt_mem_available: MemAvailable, the cgroups' limits, ulimit -v): a member's size
 * from its header is weighed before it is allocated, and the bytes really read as they
 * come, so a small archive of huge members (a zip bomb) is refused with RT_ENOMEM
 * instead of filling memory;
 * names with a component starting with '.' or "__MACOSX" are ignored. One top folder
 * shared by every member (photos/cat/1.jpg) is stripped. Then the layout is the one
 * rt_imgfolder_scan.c knows: train/<class>/... (+ val|valid|validation|test) or
 * <class>/...; classes by name, members by name. The cache key covers the archive's
 * path, size and modification time and every member's name and size.
 */
#include "rt_imgfolder_internal.h"

#include "rt_archive_dl.h"
#include "rt_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define RTP_MEMBER_MAX (256u << 20)

typedef struct member {
    char *name;
    uint8_t *data;
    size_t len;
} member;

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const member *)a)->name, ((const member *)b)->name);
}

static int wanted(const char *name)
{
    const char *dot = strrchr(name, '.'), *slash = strrchr(name, '/');
    if (!dot || (slash && dot < slash)) return 0;
    if (strcasecmp(dot, ".png") && strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg")) return 0;
    for (const char *p = name; p; p = strchr(p, '/')) {
        if (*p == '/') p++;
        if (*p == '.' || !strncmp(p, "__MACOSX", 8)) return 0;
    }
    return 1;
}

static void free_members(member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].data);
    }
    free(m);
}

static rt_status members_too_big(const char *path, int n, uint64_t bytes, uint64_t budget,
                                 rt_error *err)
{
    return RT_ERR(err, RT_ENOMEM,
                  "%s: its first %d image member%s hold%s %.1f MiB, more than the %.1f MiB of "
                  "memory available (the least of MemAvailable, the cgroup's limit and ulimit "
                  "-v); refused before allocating it ---> HINT: free memory, or pack fewer "
                  "images",
                  path, n, n == 1 ? "" : "s", n == 1 ? "s" : "", (double)bytes / (1 << 20),
                  (double)budget / (1 << 20));
}

/* Reads every wanted member of path into *out (sorted by name). */
static rt_status read_members(const char *path, member **out, int *count, rt_error *err)
{
    const rtp_archive_fns *ar;
    RT_TRY(rtp_archive_lib(&ar, err));
    struct archive *a = ar->read_new();
    if (!a) return RT_ERR(err, RT_ENOMEM, "%s: cannot start libarchive", path);
    ar->read_support_filter_all(a);
    ar->read_support_format_tar(a);
    ar->read_support_format_gnutar(a);
    ar->read_support_format_zip(a);
    member *m = NULL;
    int n = 0, cap = 0;
    rt_status st = RT_OK;
    const uint64_t budget = rt_mem_available(); /* the members' total, all together */
    uint64_t total = 0;
    if (ar->read_open_filename(a, path, 1 << 16) != ARCHIVE_OK)
        st = RT_ERR(err, RT_EFORMAT, "%s: cannot read the archive: %s", path, ar->error_string(a));
    while (st == RT_OK) {
        struct archive_entry *e;
        int r = ar->read_next_header(a, &e);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            st = RT_ERR(err, RT_EFORMAT, "%s: damaged archive: %s", path, ar->error_string(a));
            break;
        }
        const char *name = ar->entry_pathname(e);
        if (!name || ar->entry_filetype(e) != AE_IFREG) continue;
        while (name[0] == '.' && name[1] == '/') name += 2;
        if (!wanted(name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            member *nm = realloc(m, (size_t)cap * sizeof *nm);
            if (!nm) {
                st = RT_ERR(err, RT_ENOMEM, "out of memory reading %s", path);
                break;
            }
            m = nm;
        }
        member *cur = &m[n];
        *cur = (member){strdup(name), NULL, 0};
        size_t have = 0;
        if (!cur->name) {
            st = RT_ERR(err, RT_ENOMEM, "out of memory reading %s", path);
            break;
        }
        n++;
        /* the size the member's header claims, before anything is allocated for it */
        const la_int64_t claim = ar->entry_size(e);
        if (claim > (la_int64_t)RTP_MEMBER_MAX) {
            st = RT_ERR(err, RT_EFORMAT, "%s:%s: a member of %.1f MiB, too big for an image", path,
                        name, (double)claim / (1 << 20));
            break;
        }
        if (claim > 0 && total + (uint64_t)claim > budget) {
            st = members_too_big(path, n, total + (uint64_t)claim, budget, err);
            break;
        }
        for (;;) {
            if (cur->len == have) {
                size_t want = have        ? 2 * have
                              : claim > 0 ? (size_t)claim + 1 /* its size, and EOF */
                                          : 1 << 16;
                uint8_t *d = have >= RTP_MEMBER_MAX ? NULL : realloc(cur->data, want);
                if (!d) {
                    st = have >= RTP_MEMBER_MAX
                             ? RT_ERR(err, RT_EFORMAT,
                                      "%s:%s: a member over %u MiB, too big "
                                      "for an image",
                                      path, name, RTP_MEMBER_MAX >> 20)
                             : RT_ERR(err, RT_ENOMEM, "out of memory reading %s:%s", path, name);
                    break;
                }
                cur->data = d;
                have = want;
            }
            la_ssize_t got = ar->read_data(a, cur->data + cur->len, have - cur->len);
            if (got < 0) {
                st = RT_ERR(err, RT_EFORMAT, "%s:%s: damaged archive member: %s", path, name,
                            ar->error_string(a));
                break;
            }
            if (got == 0) break;
            cur->len += (size_t)got;
            total += (uint64_t)got;
            if (total > budget) { /* more than its header said, or it said nothing */
                st = members_too_big(path, n, total, budget, err);
                break;
            }
        }
    }
    ar->read_free(a);
    if (st != RT_OK) {
        free_members(m, n);
        return st;
    }
    if (n) qsort(m, (size_t)n, sizeof *m, cmp_member);
    *out = m;
    *count = n;
    return RT_OK;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* The first path component of s (length), 0 when s has no '/'. */
static size_t first_dir(const char *s)
{
    const char *slash = strchr(s, '/');
    return slash ? (size_t)(slash - s) : 0;
}

static int split_of(const char *dir, size_t len)
{
    static const char *const names[] = {"train", "val", "valid", "validation", "test"};
    static const int splits[] = {RTP_SPLIT_TRAIN, RTP_SPLIT_VAL, RTP_SPLIT_VAL, RTP_SPLIT_VAL,
                                 RTP_SPLIT_TEST};
    for (int i = 0; i < 5; i++)
        if (strlen(names[i]) == len && !strncmp(dir, names[i], len)) return splits[i];
    return -1;
}

static int class_of(rtp_img_list *l, const char *name, size_t len, int define)
{
    for (int c = 0; c < l->num_classes; c++)
        if (strlen(l->names[c]) == len && !strncmp(l->names[c], name, len)) return c;
    if (!define || l->num_classes == RT_MAX_CLASSES || len >= sizeof l->names[0]) return -1;
    memcpy(l->names[l->num_classes], name, len);
    l->names[l->num_classes][len] = '\0';
    return l->num_classes++;
}

rt_status rtp_img_scan_archive(const char *path, rtp_img_list *l, rt_error *err)
{
    member *m = NULL;
    int n = 0;
    RT_TRY(read_members(path, &m, &n, err));
    if (n == 0) /* RT_ENOTFOUND: the caller may then try it as CIFAR-10 batches */
        return RT_ERR(err, RT_ENOTFOUND, "%s: no .png, .jpg or .jpeg files in the archive", path);
    struct stat sb;
    uint64_t meta[2] = {0, 0};
    if (stat(path, &sb) == 0) meta[0] = (uint64_t)sb.st_size, meta[1] = (uint64_t)sb.st_mtime;
    l->key = rtp_fnv1a64(l->key, (const uint8_t *)path, strlen(path) + 1);
    l->key = rtp_fnv1a64(l->key, (const uint8_t *)meta, sizeof meta);
    size_t strip = n ? first_dir(m[0].name) : 0; /* a shared top folder ... */
    for (int i = 0; i < n && strip; i++)
        if (strncmp(m[i].name, m[0].name, strip + 1) || !first_dir(m[i].name + strip + 1))
            strip = 0;
    if (strip && split_of(m[0].name, strip) >= 0) strip = 0; /* ... that is not train/ */
    if (strip) strip++;
    int split_layout = 0;
    for (int i = 0; i < n; i++)
        if (split_of(m[i].name + strip, first_dir(m[i].name + strip)) == RTP_SPLIT_TRAIN)
            split_layout = 1;
    l->layout = split_layout ? "split folders" : "folder";
    rt_status st = RT_OK;
    /* pass 0: the classes (train/ only in the split layout), then sorted by name;
     * pass 1: the members, labelled */
    for (int pass = 0; pass < 2 && st == RT_OK; pass++) {
        if (pass == 1) qsort(l->names, (size_t)l->num_classes, sizeof l->names[0], cmp_name);
        for (int i = 0; i < n && st == RT_OK; i++) {
            const char *rel = m[i].name + strip;
            int split = RTP_SPLIT_TRAIN;
            if (split_layout) {
                size_t d = first_dir(rel);
                split = split_of(rel, d);
                if (split < 0) continue; /* not in a split folder */
                rel += d + 1;
            }
            size_t cl = first_dir(rel);
            if (!cl) continue; /* a file beside the class folders */
            int c = class_of(l, rel, cl, pass == 0 && split == RTP_SPLIT_TRAIN);
            if (pass == 0) {
                if (c < 0 && split == RTP_SPLIT_TRAIN)
                    st = RT_ERR(err, RT_EFORMAT,
                                "%s: more than %d classes, or a class name "
                                "over 31 bytes (%s)",
                                path, RT_MAX_CLASSES, m[i].name);
                continue;
            }
            if (c < 0) {
                st = RT_ERR(err, RT_EFORMAT,
                            "%s:%s: class '%.*s' is not among the training "
                            "classes",
                            path, m[i].name, (int)cl, rel);
                break;
            }
            char shown[PATH_MAX];
            snprintf(shown, sizeof shown, "%s:%s", path, m[i].name);
            uint64_t len = m[i].len;
            l->key = rtp_fnv1a64(l->key, (const uint8_t *)m[i].name, strlen(m[i].name) + 1);
            l->key = rtp_fnv1a64(l->key, (const uint8_t *)&len, sizeof len);
            st = rtp_img_list_add(l, shown, m[i].data, m[i].len, c, split, err);
            m[i].data = NULL;
        }
    }
    free_members(m, n);
    if (st == RT_OK && l->num_classes < 2)
        st = l->num_classes == 0 ? RT_ERR(err, RT_EFORMAT,
                                          "%s: no class folders with images in the archive "
                                          "---> HINT: pack a folder laid out as <class>/*.png",
                                          path)
                                 : RT_ERR(err, RT_EFORMAT,
                                          "%s: only one class ('%s'); a classifier needs at "
                                          "least two class folders",
                                          path, l->names[0]);
    return st;
}
