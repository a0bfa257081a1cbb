/* jk_wire.c - the Jupyter wire format: multipart zmq messages
 *   [identities...] "<IDS|MSG>" signature header parent metadata content [buffers...]
 *
 * Receiving: split at the first delimiter frame, check the signature over the exact
 * received bytes (jk_hmac.c) BEFORE any JSON is parsed, then parse the four JSON
 * objects (jansson rejects invalid UTF-8 and NaN) and check the header fields every
 * client relies on. Anything wrong is an error message for the caller to log; nothing
 * here executes or replies. Messages over JKP_MAX_MSG_BYTES or JKP_MAX_FRAMES are
 * drained without being kept. When the signed part of a refused message verifies, the
 * caller gets its identities and header to answer with an error (jkp_msg_refusal);
 * a verified signature seen before is a replay, dropped (jk_replay.c).
 *
 * Sending: every message gets a fresh msg_id (jupyter_client rejects a repeated
 * signature), the process's session, an ISO 8601 UTC date and version "5.4".
 */
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "jk_internal.h"

/* ---- session ---- */

int jkp_session_init(jkp_session *s, jkp_hmac *hmac, jk_error *err)
{
    memset(s, 0, sizeof *s);
    s->hmac = hmac;
    if (!(s->replay = jkp_replay_create())) return jkp_fail(err, "out of memory");
    if (jkp_uuid4(s->session, sizeof s->session) != 0)
        return jkp_fail(err, "cannot read random bytes for the session id");
    snprintf(s->username, sizeof s->username, "kernel");
    atomic_init(&s->counter, 0);
    return 0;
}

void jkp_session_deinit(jkp_session *s)
{
    if (!s) return;
    jkp_hmac_destroy(s->hmac);
    jkp_replay_destroy(s->replay);
    s->hmac = NULL;
    s->replay = NULL;
}

/* ---- parsing ---- */

void jkp_msg_deinit(jkp_msg *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nids; i++) jkp_bytes_deinit(&m->ids[i]);
    for (size_t i = 0; i < m->nbuffers; i++) jkp_bytes_deinit(&m->buffers[i]);
    free(m->ids);
    free(m->buffers);
    json_decref(m->header);
    json_decref(m->parent);
    json_decref(m->metadata);
    json_decref(m->content);
    memset(m, 0, sizeof *m);
}

static json_t *parse_object(const jkp_view *f, const char *what, jk_error *err)
{
    json_error_t jerr;
    json_t *v = json_loadb(f->data, f->len, 0, &jerr);
    if (!v) {
        jkp_fail(err, "malformed JSON in %s: %s (at byte %d)", what, jerr.text, jerr.position);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        jkp_fail(err, "%s is not a JSON object", what);
        return NULL;
    }
    return v;
}

/* "5.4": digits '.' digits, major 5. */
static int version_ok(const char *v)
{
    if (!isdigit((unsigned char)v[0])) return 0;
    char *end;
    long major = strtol(v, &end, 10);
    if (*end != '.' || !isdigit((unsigned char)end[1])) return 0;
    for (end++; isdigit((unsigned char)*end);) end++;
    return major == 5 && (*end == '\0' || *end == '.');
}

static int check_header(jkp_msg *m, jk_error *err)
{
    static const char *const fields[] = {"msg_id", "msg_type", "session", "username", "version"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        json_t *v = json_object_get(m->header, fields[i]);
        if (!json_is_string(v))
            return jkp_fail(err, "header field \"%s\" %s", fields[i],
                            v ? "is not a string" : "is missing");
    }
    m->msg_id = json_string_value(json_object_get(m->header, "msg_id"));
    m->msg_type = json_string_value(json_object_get(m->header, "msg_type"));
    const char *version = json_string_value(json_object_get(m->header, "version"));
    if (!m->msg_id[0] || !m->msg_type[0])
        return jkp_fail(err, "empty msg_id or msg_type in header");
    if (!version_ok(version))
        return jkp_fail(err, "header version \"%.20s\" is not a 5.x protocol version", version);
    return 0;
}

static int copy_frames(const jkp_view *f, size_t n, jkp_bytes **out, size_t *nout, jk_error *err)
{
    *out = NULL;
    *nout = 0;
    if (n == 0) return 0;
    *out = calloc(n, sizeof **out);
    if (!*out) return jkp_fail(err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (jkp_bytes_set(&(*out)[i], f[i].data, f[i].len) != 0)
            return jkp_fail(err, "out of memory");
        (*nout)++;
    }
    return 0;
}

static size_t find_delim(const jkp_view *frames, size_t n)
{
    size_t d = 0;
    const size_t dlen = sizeof JKP_DELIM - 1;
    while (d < n && !(frames[d].len == dlen && !memcmp(frames[d].data, JKP_DELIM, dlen))) d++;
    return d;
}

int jkp_msg_parse(const jkp_view *frames, size_t n, const jkp_hmac *h, jkp_msg *m, jk_error *err)
{
    memset(m, 0, sizeof *m);
    size_t d = find_delim(frames, n);
    if (d == n) return jkp_fail(err, "no <IDS|MSG> delimiter among %zu frames", n);
    if (n - d - 1 < 5)
        return jkp_fail(err, "%zu frames after <IDS|MSG>; need signature + 4 JSON frames",
                        n - d - 1);
    const jkp_view *sig = &frames[d + 1], *parts = &frames[d + 2];
    if (jkp_hmac_verify(h, parts, sig, err) != 0) return -1;

    static const char *const what[4] = {"header", "parent_header", "metadata", "content"};
    json_t **slot[4] = {&m->header, &m->parent, &m->metadata, &m->content};
    for (int i = 0; i < 4; i++) {
        if (!(*slot[i] = parse_object(&parts[i], what[i], err))) goto fail;
    }
    if (check_header(m, err) != 0) goto fail;
    if (copy_frames(frames, d, &m->ids, &m->nids, err) != 0) goto fail;
    if (copy_frames(frames + d + 6, n - d - 6, &m->buffers, &m->nbuffers, err) != 0) goto fail;
    return 0;
fail:
    jkp_msg_deinit(m);
    return -1;
}

int jkp_msg_refusal(const jkp_view *frames, size_t n, const jkp_hmac *h, jkp_msg *m)
{
    memset(m, 0, sizeof *m);
    size_t d = find_delim(frames, n);
    if (d == n || n - d - 1 < 5 || jkp_hmac_verify(h, &frames[d + 2], &frames[d + 1], NULL))
        return -1;
    json_t *header = json_loadb(frames[d + 2].data, frames[d + 2].len, 0, NULL);
    const char *type = json_string_value(json_object_get(header, "msg_type"));
    if (!json_is_object(header) || !type || !type[0] ||
        copy_frames(frames, d, &m->ids, &m->nids, NULL) != 0) {
        json_decref(header);
        jkp_msg_deinit(m);
        return -1;
    }
    m->header = header;
    m->msg_type = type;
    m->msg_id = json_string_value(json_object_get(header, "msg_id"));
    return 0;
}

/* ---- receiving ---- */

/* The signature frame of a message that verified: the replay check's key. */
static int replayed(jkp_session *s, const jkp_view *frames, size_t n)
{
    size_t d = find_delim(frames, n);
    return d + 1 < n && jkp_replay_seen(s->replay, &frames[d + 1]);
}

int jkp_msg_recv(void *sock, jkp_session *s, jkp_msg *m, jk_error *err)
{
    memset(m, 0, sizeof *m);
    size_t n = 0, cap = 0, total = 0;
    zmq_msg_t *parts = NULL;
    int more = 1, rc = 0, nomem = 0;
    size_t seen = 0, bytes = 0; /* frames and bytes consumed, kept or not */
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, 0) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (seen > 0 && e == EINTR) continue; /* the rest of a message is queued whole */
            for (size_t i = 0; i < n; i++) zmq_msg_close(&parts[i]);
            free(parts);
            errno = e;
            return -2;
        }
        more = zmq_msg_more(&part);
        seen++;
        bytes += zmq_msg_size(&part);
        /* keep frames while both limits hold; what is kept is at most the limits */
        int keep = !nomem && n < JKP_MAX_FRAMES && total + zmq_msg_size(&part) <= JKP_MAX_MSG_BYTES;
        if (keep && n == cap) {
            size_t ncap = cap ? 2 * cap : 8;
            zmq_msg_t *p = realloc(parts, ncap * sizeof *p);
            if (p) {
                parts = p;
                cap = ncap;
            } else {
                nomem = 1;
                keep = 0;
            }
        }
        if (!keep) {
            zmq_msg_close(&part);
            continue; /* keep draining the rest of this message */
        }
        total += zmq_msg_size(&part);
        parts[n++] = part;
    }
    jkp_view *views = malloc((n ? n : 1) * sizeof *views);
    if (!views) {
        rc = jkp_fail(err, "out of memory receiving a message");
    } else {
        for (size_t i = 0; i < n; i++)
            views[i] = (jkp_view){zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i])};
        if (nomem || n < seen) {
            if (nomem) jkp_fail(err, "out of memory receiving a message of %zu frames", seen);
            else if (seen > JKP_MAX_FRAMES)
                jkp_fail(err, "message of %zu frames refused (the limit is %d)", seen,
                         JKP_MAX_FRAMES);
            else
                jkp_fail(err, "message of %zu bytes refused (the limit is %zu MiB)", bytes,
                         JKP_MAX_MSG_BYTES >> 20);
            rc = jkp_msg_refusal(views, n, s->hmac, m) == 0 ? -3 : -1;
        } else {
            rc = jkp_msg_parse(views, n, s->hmac, m, err);
            if (rc != 0 && jkp_msg_refusal(views, n, s->hmac, m) == 0) rc = -3;
        }
        if (rc != -1 && replayed(s, views, n)) {
            jkp_msg_deinit(m);
            rc = jkp_fail(err, "replayed message dropped (its signature was seen before)");
        }
        free(views);
    }
    for (size_t i = 0; i < n; i++) zmq_msg_close(&parts[i]);
    free(parts);
    if (seen > JKP_MAX_FRAMES || bytes > JKP_MAX_MSG_BYTES)
        malloc_trim(0); /* libzmq held the whole message; give those pages back now */
    return rc;
}

/* ---- building and sending ---- */

static json_t *make_header(jkp_session *s, const char *msg_type)
{
    char id[96], date[40];
    unsigned long long k = atomic_fetch_add(&s->counter, 1) + 1;
    snprintf(id, sizeof id, "%s_%d_%llu", s->session, (int)getpid(), k);
    jkp_now_iso(date, sizeof date);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", s->session,
                     "username", s->username, "date", date, "msg_type", msg_type, "version",
                     JKP_PROTOCOL_VERSION);
}

int jkp_msg_build(jkp_session *s, const char *msg_type, json_t *parent, json_t *metadata,
                  json_t *content, jkp_bytes out[5], jk_error *err)
{
    memset(out, 0, 5 * sizeof *out);
    json_t *empty = json_object();
    json_t *header = make_header(s, msg_type);
    json_t *objs[4] = {header, parent ? parent : empty, metadata ? metadata : empty,
                       content ? content : empty};
    int rc = 0;
    jkp_view views[4];
    for (int i = 0; i < 4 && rc == 0; i++) {
        char *text = objs[i] ? json_dumps(objs[i], JSON_COMPACT) : NULL;
        if (!text) {
            rc = jkp_fail(err, "cannot serialise %s (out of memory or invalid value)", msg_type);
            break;
        }
        out[i + 1].data = text;
        out[i + 1].len = strlen(text);
        views[i] = (jkp_view){text, out[i + 1].len};
    }
    if (rc == 0) {
        char hex[JKP_HMAC_HEX_MAX];
        rc = jkp_hmac_sign(s->hmac, views, hex, err);
        if (rc == 0 && jkp_bytes_set(&out[0], hex, strlen(hex)) != 0)
            rc = jkp_fail(err, "out of memory");
    }
    json_decref(header);
    json_decref(empty);
    json_decref(metadata);
    json_decref(content);
    if (rc)
        for (int i = 0; i < 5; i++) jkp_bytes_deinit(&out[i]);
    return rc;
}

int jkp_msg_send(void *sock, jkp_session *s, const jkp_bytes *ids, size_t nids,
                 const char *msg_type, json_t *parent, json_t *metadata, json_t *content,
                 jk_error *err)
{
    jkp_bytes f[5];
    if (jkp_msg_build(s, msg_type, parent, metadata, content, f, err) != 0) return -1;
    int rc = 0;
    for (size_t i = 0; i < nids && rc == 0; i++)
        if (zmq_send(sock, ids[i].data, ids[i].len, ZMQ_SNDMORE) < 0) rc = -1;
    if (rc == 0 && zmq_send(sock, JKP_DELIM, sizeof JKP_DELIM - 1, ZMQ_SNDMORE) < 0) rc = -1;
    for (int i = 0; i < 5 && rc == 0; i++)
        if (zmq_send(sock, f[i].data, f[i].len, i < 4 ? ZMQ_SNDMORE : 0) < 0) rc = -1;
    if (rc) jkp_fail(err, "sending %s: %s", msg_type, zmq_strerror(errno));
    for (int i = 0; i < 5; i++) jkp_bytes_deinit(&f[i]);
    return rc;
}

int jkp_reply(void *sock, jkp_session *s, const jkp_msg *req, const char *msg_type,
              json_t *metadata, json_t *content)
{
    jk_error err;
    if (jkp_msg_send(sock, s, req->ids, req->nids, msg_type, req->header, metadata, content,
                     &err) != 0) {
        jkp_log("%s", err.msg);
        return -1;
    }
    return 0;
}
