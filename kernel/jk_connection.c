/* jk_connection.c - reads the connection file Jupyter writes for a kernel it starts:
 * transport (tcp or ipc), ip, the five ports, the signing key and scheme.
 *
 * Every problem is an error naming the file's field, so `kiln kernel -f` can say
 * exactly what is wrong; unknown fields (kernel_name, curve keys) are ignored. The
 * key is kept as the raw bytes of the string; "" means signing is off.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"

const char *const jkp_channel_names[JKP_NCHANNELS] = {"shell", "iopub", "stdin", "control", "hb"};

static int get_string(json_t *root, const char *name, int required, const char *def, char *out,
                      size_t n, jk_error *err)
{
    json_t *v = json_object_get(root, name);
    if (!v) {
        if (required) return jkp_fail(err, "missing field \"%s\"", name);
        snprintf(out, n, "%s", def);
        return 0;
    }
    if (!json_is_string(v)) return jkp_fail(err, "field \"%s\" must be a string", name);
    if (json_string_length(v) >= n)
        return jkp_fail(err, "field \"%s\" is too long (%zu bytes)", name, json_string_length(v));
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

static int get_port(json_t *root, int ch, int *port, jk_error *err)
{
    char name[32];
    snprintf(name, sizeof name, "%s_port", jkp_channel_names[ch]);
    json_t *v = json_object_get(root, name);
    if (!v) return jkp_fail(err, "missing field \"%s\"", name);
    if (!json_is_integer(v)) return jkp_fail(err, "field \"%s\" must be an integer", name);
    json_int_t p = json_integer_value(v);
    if (p < 1 || p > 65535)
        return jkp_fail(err, "field \"%s\" = %lld is not a port (1..65535)", name, (long long)p);
    *port = (int)p;
    return 0;
}

static int parse_root(json_t *root, jkp_connection *c, jk_error *err)
{
    if (!json_is_object(root)) return jkp_fail(err, "not a JSON object");
    if (get_string(root, "transport", 0, "tcp", c->transport, sizeof c->transport, err)) return -1;
    if (strcmp(c->transport, "tcp") != 0 && strcmp(c->transport, "ipc") != 0)
        return jkp_fail(err, "field \"transport\" is \"%s\"; expected \"tcp\" or \"ipc\"",
                        c->transport);
    if (get_string(root, "ip", 1, "", c->ip, sizeof c->ip, err)) return -1;
    if (!c->ip[0]) return jkp_fail(err, "field \"ip\" is empty");
    for (int ch = 0; ch < JKP_NCHANNELS; ch++)
        if (get_port(root, ch, &c->ports[ch], err)) return -1;
    if (get_string(root, "signature_scheme", 0, "hmac-sha256", c->scheme, sizeof c->scheme, err))
        return -1;
    json_t *key = json_object_get(root, "key");
    if (!key) return jkp_fail(err, "missing field \"key\" (use \"\" to turn signing off)");
    if (!json_is_string(key)) return jkp_fail(err, "field \"key\" must be a string");
    c->keylen = json_string_length(key);
    c->key = malloc(c->keylen + 1);
    if (!c->key) return jkp_fail(err, "out of memory");
    memcpy(c->key, json_string_value(key), c->keylen + 1);
    return 0;
}

int jkp_connection_parse(const char *json_text, jkp_connection *c, jk_error *err)
{
    memset(c, 0, sizeof *c);
    json_error_t jerr;
    json_t *root = json_loads(json_text, 0, &jerr);
    if (!root) return jkp_fail(err, "invalid JSON at line %d: %s", jerr.line, jerr.text);
    int rc = parse_root(root, c, err);
    json_decref(root);
    if (rc) jkp_connection_deinit(c);
    return rc;
}

int jkp_connection_load(const char *path, jkp_connection *c, jk_error *err)
{
    memset(c, 0, sizeof *c);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        if (jerr.line < 1) /* jansson could not open/read the file */
            return jkp_fail(err, "connection file %s: %s", path, jerr.text);
        return jkp_fail(err, "connection file %s: invalid JSON at line %d: %s", path, jerr.line,
                        jerr.text);
    }
    jk_error why;
    int rc = parse_root(root, c, &why);
    json_decref(root);
    if (rc) {
        jkp_connection_deinit(c);
        return jkp_fail(err, "connection file %s: %s", path, why.msg);
    }
    return 0;
}

void jkp_connection_deinit(jkp_connection *c)
{
    if (!c) return;
    if (c->key) memset(c->key, 0, c->keylen);
    free(c->key);
    c->key = NULL;
    c->keylen = 0;
}

int jkp_connection_endpoint(const jkp_connection *c, int ch, char *buf, size_t n)
{
    int w = !strcmp(c->transport, "ipc") ? snprintf(buf, n, "ipc://%s-%d", c->ip, c->ports[ch])
                                         : snprintf(buf, n, "tcp://%s:%d", c->ip, c->ports[ch]);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}
