/* test_wire_case.c - runs one data-driven wire case (tests/kernel/wire/make_cases.py
 * describes the layout): parses the case's frames with the case's key and checks the
 * expected fields (valid/) or the error message (invalid/).
 * usage: test_wire_case CASE_DIR valid|invalid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"
#include "t.h"

static const char *case_dir, *case_kind;

/* Whole file into a NUL-terminated buffer; NULL if absent. */
static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", case_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = 2 * (n + got + 1);
            buf = realloc(buf, cap);
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* Undoes make_cases.py's escaping (\xNN, \\) in place; returns the new length. */
static size_t unescape(char *s)
{
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1] == 'x' && s[i + 2] && s[i + 3]) {
            char hex[3] = {s[i + 2], s[i + 3], 0};
            s[o++] = (char)strtol(hex, NULL, 16);
            i += 3;
        } else if (s[i] == '\\' && s[i + 1] == '\\') {
            s[o++] = '\\';
            i++;
        } else {
            s[o++] = s[i];
        }
    }
    s[o] = '\0';
    return o;
}

typedef struct frames {
    jkp_view v[64];
    size_t n;
    char *text;
} frames;

static int load_frames(frames *fr)
{
    fr->n = 0;
    fr->text = slurp("frames", NULL);
    if (!fr->text) return -1;
    char *line = fr->text;
    while (*line && fr->n < 64) {
        char *nl = strchr(line, '\n');
        if (!nl) return -1;
        *nl = '\0';
        size_t len = unescape(line);
        fr->v[fr->n++] = (jkp_view){line, len};
        line = nl + 1;
    }
    return 0;
}

static int bytes_eq(const jkp_bytes *b, const char *want_escaped)
{
    char *w = strdup(want_escaped);
    size_t wl = unescape(w);
    int eq = b->len == wl && memcmp(b->data, w, wl) == 0;
    free(w);
    return eq;
}

T_TEST(wire_case)
{
    size_t keylen = 0;
    char *key = slurp("key", &keylen);
    jk_error err = {{0}};
    jkp_hmac *h = key ? jkp_hmac_create("hmac-sha256", key, keylen, &err)
                      : jkp_hmac_create("hmac-sha256", "secret-key", 10, &err);
    free(key);
    ASSERT(h != NULL);
    frames fr;
    ASSERT_EQ(load_frames(&fr), 0);
    jkp_msg m;
    int rc = jkp_msg_parse(fr.v, fr.n, h, &m, &err);
    jkp_hmac_destroy(h);
    if (!strcmp(case_kind, "invalid")) {
        char *want = slurp("error", NULL);
        free(fr.text);
        ASSERT(want != NULL);
        want[strcspn(want, "\n")] = '\0';
        printf("  error: %s\n", err.msg);
        int ok = rc == -1 && strstr(err.msg, want) != NULL;
        if (!ok)
            fprintf(stderr, "  rc=%d, error \"%s\" should contain \"%s\"\n", rc, err.msg, want);
        free(want);
        ASSERT(ok);
        ASSERT(m.header == NULL && m.ids == NULL); /* nothing half-parsed left */
        return;
    }
    if (rc != 0) fprintf(stderr, "  unexpected error: %s\n", err.msg);
    ASSERT_EQ(rc, 0);
    char *exp = slurp("expected", NULL);
    int bad = 0;
    for (char *line = exp; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *val = strchr(line, ' ');
        if (val) *val++ = '\0';
        else val = line + strlen(line);
        char got[256] = "";
        int ok = 1;
        if (!strcmp(line, "msg_type")) ok = !strcmp(m.msg_type, val);
        else if (!strcmp(line, "msg_id")) ok = !strcmp(m.msg_id, val);
        else if (!strcmp(line, "identities")) ok = m.nids == (size_t)atoi(val);
        else if (!strcmp(line, "buffers")) ok = m.nbuffers == (size_t)atoi(val);
        else if (!strncmp(line, "identity", 8)) {
            size_t i = (size_t)atoi(line + 8);
            ok = i < m.nids && bytes_eq(&m.ids[i], val);
        } else if (!strncmp(line, "buffer", 6)) {
            size_t i = (size_t)atoi(line + 6);
            ok = i < m.nbuffers && bytes_eq(&m.buffers[i], val);
        } else if (!strcmp(line, "code")) {
            const char *c = json_string_value(json_object_get(m.content, "code"));
            ok = c && !strcmp(c, val);
        } else {
            snprintf(got, sizeof got, "unknown expected field");
            ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "  field %s: expected \"%s\" %s\n", line, val, got);
            bad = 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(exp);
    free(fr.text);
    jkp_msg_deinit(&m);
    ASSERT(!bad);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CASE_DIR valid|invalid\n", argv[0]);
        return 99;
    }
    case_dir = argv[1];
    case_kind = argv[2];
    printf("case %s (%s)\n", case_dir, case_kind);
    T_RUN(wire_case);
    return T_EXIT();
}
