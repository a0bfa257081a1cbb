/* rt_store_config.c - credentials, region and endpoint from the standard AWS
 * environment and shared files; s3:// URL parsing.
 *
 * Order (the AWS CLI's): AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
 * AWS_SESSION_TOKEN) from the environment; else the profile AWS_PROFILE (default
 * "default") of AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials). Region:
 * AWS_REGION, AWS_DEFAULT_REGION, the profile's "region" in AWS_CONFIG_FILE (default
 * ~/.aws/config), else us-east-1. Endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
 * the profile's "endpoint_url", else AWS itself. Secrets are copied into memory that
 * rtp_store_config_free wipes; nothing here prints them.
 */
#include "rt_store_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* The value of key in section [section] of an INI file, malloc'd; NULL when absent
 * (or the file does not exist). Lines are wiped after reading: they may hold secrets. */
static char *ini_get(const char *path, const char *section, const char *key, int *oom)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[4096], *out = NULL;
    int in = 0;
    while (!out && fgets(line, sizeof line, f)) {
        char *t = trim(line);
        if (*t == '[') {
            char *end = strchr(t, ']');
            if (end) {
                *end = '\0';
                in = strcmp(trim(t + 1), section) == 0;
            }
        } else if (in && *t != '#' && *t != ';') {
            char *eq = strchr(t, '=');
            if (eq) {
                *eq = '\0';
                if (strcmp(trim(t), key) == 0) {
                    out = strdup(trim(eq + 1));
                    if (!out) *oom = 1;
                }
            }
        }
        explicit_bzero(line, sizeof line);
    }
    fclose(f);
    return out;
}

static char *home_file(const char *var, const char *rel)
{
    const char *p = env(var), *home = env("HOME");
    if (p) return strdup(p);
    if (!home) return NULL;
    size_t n = strlen(home) + strlen(rel) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", home, rel);
    return s;
}

void rtp_store_key_mask(const char *key, char out[16])
{
    size_t n = key ? strlen(key) : 0;
    snprintf(out, 16, "****%s", n >= 4 ? key + n - 4 : "");
}

static void wipe_free(char *s)
{
    if (s) explicit_bzero(s, strlen(s));
    free(s);
}

void rtp_store_config_free(rtp_store_config *c)
{
    wipe_free(c->access_key);
    wipe_free(c->secret_key);
    wipe_free(c->session_token);
    free(c->region);
    free(c->endpoint);
    free(c->source);
    memset(c, 0, sizeof *c);
}

/* The authority of URL (after "scheme://", up to the path) holds an '@'. */
static int endpoint_has_userinfo(const char *url)
{
    const char *a = strstr(url, "://");
    a = a ? a + 3 : url;
    size_t n = strcspn(a, "/?#");
    return memchr(a, '@', n) != NULL;
}

/* An http:// URL whose host is not this machine (localhost, 127.x, ::1). */
static int plain_remote(const char *url)
{
    if (strncasecmp(url, "http://", 7) != 0) return 0;
    const char *h = url + 7;
    static const char *const local[] = {"localhost", "127.", "[::1]"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++) {
        size_t n = strlen(local[i]);
        if (strncasecmp(h, local[i], n) == 0 &&
            (local[i][n - 1] == '.' || h[n] == ':' || h[n] == '/' || !h[n]))
            return 0;
    }
    return 1;
}

static rt_status oom_error(rtp_store_config *c, rt_error *err)
{
    rtp_store_config_free(c);
    return RT_ERR(err, RT_ENOMEM, "out of memory reading the object store settings");
}

rt_status rtp_store_config_load(rtp_store_config *c, rt_error *err)
{
    memset(c, 0, sizeof *c);
    int oom = 0;
    const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    char *cred_file = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    char *conf_file = home_file("AWS_CONFIG_FILE", ".aws/config");
    char conf_section[300];
    snprintf(conf_section, sizeof conf_section, "%s%s",
             strcmp(profile, "default") == 0 ? "" : "profile ", profile);
    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        c->access_key = dup_or_null(env("AWS_ACCESS_KEY_ID"));
        c->secret_key = dup_or_null(env("AWS_SECRET_ACCESS_KEY"));
        c->session_token = dup_or_null(env("AWS_SESSION_TOKEN"));
        c->source = strdup("the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)");
        oom = !c->access_key || !c->secret_key || !c->source ||
              (env("AWS_SESSION_TOKEN") && !c->session_token);
    } else if (cred_file) {
        c->access_key = ini_get(cred_file, profile, "aws_access_key_id", &oom);
        c->secret_key = ini_get(cred_file, profile, "aws_secret_access_key", &oom);
        c->session_token = ini_get(cred_file, profile, "aws_session_token", &oom);
        size_t n = strlen(cred_file) + strlen(profile) + 32;
        if ((c->source = malloc(n)))
            snprintf(c->source, n, "profile '%s' of %s", profile, cred_file);
        else oom = 1;
    }
    if (!oom) {
        const char *r = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
        c->region = r           ? strdup(r)
                    : conf_file ? ini_get(conf_file, conf_section, "region", &oom)
                                : NULL;
        if (!c->region && !oom) c->region = strdup("us-east-1");
        oom = oom || !c->region;
    }
    if (!oom) {
        const char *e =
            env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3") : env("AWS_ENDPOINT_URL");
        c->endpoint = e           ? strdup(e)
                      : conf_file ? ini_get(conf_file, conf_section, "endpoint_url", &oom)
                                  : NULL;
        oom = oom || (e && !c->endpoint);
        size_t n = c->endpoint ? strlen(c->endpoint) : 0;
        while (n && c->endpoint[n - 1] == '/') c->endpoint[--n] = '\0';
    }
    int have = c->access_key && c->secret_key;
    char *where = cred_file;
    cred_file = NULL;
    free(conf_file);
    if (oom) {
        free(where);
        return oom_error(c, err);
    }
    const char *evar = env("AWS_ENDPOINT_URL_S3") ? "AWS_ENDPOINT_URL_S3"
                       : env("AWS_ENDPOINT_URL")  ? "AWS_ENDPOINT_URL"
                                                  : "the profile's endpoint_url";
    if (c->endpoint && endpoint_has_userinfo(c->endpoint)) { /* never shown: it is a secret */
        free(where);
        rtp_store_config_free(c);
        return RT_ERR(err, RT_EINVAL,
                      "%s must not carry credentials (user:password@host): Kiln shows the "
                      "endpoint in messages, which are saved in notebooks ---> HINT: write "
                      "http(s)://HOST:PORT and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                      "(or a ~/.aws/credentials profile) instead",
                      evar);
    }
    if (have && c->endpoint && c->session_token && plain_remote(c->endpoint))
        fprintf(stderr,
                "kiln: the object store endpoint %s is plain http to another host: the "
                "session token (AWS_SESSION_TOKEN) crosses the network unencrypted; use "
                "https\n",
                c->endpoint);
    if (!have) {
        rt_status s =
            RT_ERR(err, RT_EINVAL,
                   "no credentials for the object store: neither AWS_ACCESS_KEY_ID and "
                   "AWS_SECRET_ACCESS_KEY are set nor does profile '%s' of %s have "
                   "aws_access_key_id and aws_secret_access_key ---> HINT: set both "
                   "variables (e.g. in the notebook VM's secrets), or AWS_PROFILE to a profile "
                   "that has them",
                   profile, where ? where : "~/.aws/credentials");
        free(where);
        rtp_store_config_free(c);
        return s;
    }
    free(where);
    return RT_OK;
}

/* S3's bucket naming rules (3-63 of a-z 0-9 . -, starting and ending with a letter
 * or digit), relaxed to also allow '_' and upper case, which some S3-compatible
 * stores accept. */
static int bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)b[i]) && b[i] != '.' && b[i] != '-' && b[i] != '_') return 0;
    return isalnum((unsigned char)b[0]) && isalnum((unsigned char)b[n - 1]);
}

rt_status rtp_store_url_parse(const char *url, char **bucket, char **prefix, rt_error *err)
{
    *bucket = *prefix = NULL;
    if (!rt_store_is_url(url)) return RT_ERR(err, RT_EINVAL, "'%s' is not an s3:// URL", url);
    const char *b = url + strlen(RT_STORE_SCHEME);
    const char *slash = strchr(b, '/');
    size_t n = slash ? (size_t)(slash - b) : strlen(b);
    if (strchr(b, '@')) /* user:key@bucket; the key may hold '/', so look everywhere */
        return RT_ERR(err, RT_EINVAL,
                      "an s3:// URL must not carry credentials (user:key@bucket) "
                      "---> HINT: write s3://BUCKET/PREFIX and set AWS_ACCESS_KEY_ID and "
                      "AWS_SECRET_ACCESS_KEY (or a ~/.aws/credentials profile) instead");
    if (!bucket_ok(b, n))
        return RT_ERR(err, RT_EINVAL,
                      "'%.*s' in '%s' is not a bucket name (3-63 letters, digits, '.', "
                      "'-') ---> HINT: write s3://BUCKET or s3://BUCKET/PREFIX",
                      (int)(n > 80 ? 80 : n), b, url);
    const char *p = slash ? slash : b + n;
    while (*p == '/') p++;
    size_t pn = strlen(p);
    while (pn && p[pn - 1] == '/') pn--;
    *bucket = strndup(b, n);
    *prefix = strndup(p, pn);
    if (!*bucket || !*prefix) {
        free(*bucket);
        free(*prefix);
        *bucket = *prefix = NULL;
        return RT_ERR(err, RT_ENOMEM, "out of memory parsing '%s'", url);
    }
    return RT_OK;
}

int rt_store_is_url(const char *s)
{
    return s && strncmp(s, RT_STORE_SCHEME, strlen(RT_STORE_SCHEME)) == 0;
}
