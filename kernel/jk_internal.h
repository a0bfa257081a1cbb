/* jk_internal.h - private declarations shared by the kernel/jk_*.c files (the Jupyter
 * protocol side of `kiln kernel`). Nothing outside kernel/ includes this.
 *
 * Layers, bottom up: errors/log/ids (jk_util.c), HMAC (jk_hmac.c), connection file
 * (jk_connection.c), wire codec (jk_wire.c), per-thread IOPub sender (jk_iopub.c),
 * then the threads (jk_publisher.c, jk_heartbeat.c, jk_control.c) and the shell
 * handlers (jk_dispatch.c and one file per message family).
 *
 * Threads and ownership: every zmq socket has exactly one owning thread. The shell
 * thread (the process's main thread) owns shell, stdin and one IOPub PUSH; the control
 * thread owns control and its own IOPub PUSH; the publisher owns the real PUB; the
 * heartbeat owns hb. Fields of jkp_kernel marked [shell] are touched by the shell
 * thread only; the rest are immutable after start, or atomics.
 */
#ifndef JK_INTERNAL_H
#define JK_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "rt_error.h" /* RT_MUST_USE */

#define JKP_PROTOCOL_VERSION "5.4"
/* The cell language's own version (kernel_info_reply's language_info.version), not the
 * build's: it changes only when the language does, so the notebooks that carry it in
 * their metadata stay unmodified when JupyterLab opens them with a newer kiln. */
#define JKP_LANGUAGE_VERSION "0.1.0"
#define JKP_DELIM "<IDS|MSG>"
/* Limits on what a peer can make the kernel hold before its signature is checked
 * (docs/kernel.md, docs/security.md). ZMQ_MAXMSGSIZE is set to JKP_MAX_MSG_BYTES on
 * every socket, so libzmq drops the connection of a peer that announces a bigger frame
 * before reading it. A message of more frames, or more bytes in all, is drained
 * without being kept; if its signed part verifies, the sender gets an error reply. */
#define JKP_MAX_MSG_BYTES ((size_t)64 << 20)
#define JKP_MAX_FRAMES 1024
/* How many signatures of verified messages are remembered to drop replays (jk_replay.c);
 * jupyter_client's Session keeps 2^16 too. */
#define JKP_REPLAY_HISTORY 65536
#define JKP_HMAC_HEX_MAX 129 /* 2 x 64-byte digest (sha512) + NUL */

/* ---- errors, log, ids (jk_util.c), UTF-8 text (jk_text.c) ---- */

typedef struct jk_error {
    char msg[256];
} jk_error;
/* Fills err (may be NULL) and returns -1, so `return jkp_fail(err, ...)` reads well. */
int jkp_fail(jk_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line to stderr, prefixed "kiln: ". Thread-safe (one fprintf). */
void jkp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ISO 8601 UTC now with microseconds and 'Z' into buf (>= 32 bytes). */
void jkp_now_iso(char *buf, size_t n);
/* A random UUID4 in canonical text form into buf (>= 37 bytes). 0 or -1. */
int jkp_uuid4(char *buf, size_t n);
/* Number of Unicode code points in s (UTF-8), and the byte offset of code point cp. */
size_t jkp_utf8_len(const char *s);
size_t jkp_utf8_offset(const char *s, size_t cp);

/* ---- byte strings ---- */

typedef struct jkp_view { /* borrowed bytes */
    const void *data;
    size_t len;
} jkp_view;
typedef struct jkp_bytes { /* owned bytes (malloc), NUL-terminated for convenience */
    char *data;
    size_t len;
} jkp_bytes;
RT_MUST_USE int jkp_bytes_set(jkp_bytes *b, const void *data, size_t len); /* copies; 0 or -1 */
void jkp_bytes_deinit(jkp_bytes *b);

/* ---- HMAC signing (jk_hmac.c) ---- */

typedef struct jkp_hmac jkp_hmac;
/* scheme "hmac-sha256" etc.; key raw bytes; keylen 0 = signing off. */
jkp_hmac *jkp_hmac_create(const char *scheme, const void *key, size_t keylen, jk_error *err);
void jkp_hmac_destroy(jkp_hmac *h); /* accepts NULL */
/* Length of the hex signature (2 x digest), 0 when signing is off. */
size_t jkp_hmac_hexlen(const jkp_hmac *h);
/* Hex HMAC over the 4 parts (header, parent, metadata, content) into hex (>= hexlen+1).
 * With signing off, writes "". Thread-safe. */
RT_MUST_USE int jkp_hmac_sign(const jkp_hmac *h, const jkp_view parts[4], char *hex, jk_error *err);
/* 0 when sig is the right signature; -1 with err otherwise (length checked first,
 * constant-time compare). Always 0 with signing off. */
RT_MUST_USE int jkp_hmac_verify(const jkp_hmac *h, const jkp_view parts[4], const jkp_view *sig,
                                jk_error *err);

/* ---- replay protection (jk_replay.c) ---- */

typedef struct jkp_replay jkp_replay;
jkp_replay *jkp_replay_create(void);
void jkp_replay_destroy(jkp_replay *r); /* accepts NULL */
/* 1 if this signature was seen among the last JKP_REPLAY_HISTORY ones (a replay), else
 * remembers it and returns 0. An empty signature (signing off) is never a replay.
 * Thread-safe. */
int jkp_replay_seen(jkp_replay *r, const jkp_view *sig);

/* ---- connection file (jk_connection.c) ---- */

enum { JKP_SHELL, JKP_IOPUB, JKP_STDIN, JKP_CONTROL, JKP_HB, JKP_NCHANNELS };
typedef struct jkp_connection {
    char transport[8]; /* "tcp" | "ipc" */
    char ip[256];
    int ports[JKP_NCHANNELS];
    char scheme[32]; /* "hmac-sha256" */
    char *key;       /* owned, may be "" */
    size_t keylen;
} jkp_connection;
RT_MUST_USE int jkp_connection_load(const char *path, jkp_connection *c, jk_error *err);
RT_MUST_USE int jkp_connection_parse(const char *json_text, jkp_connection *c, jk_error *err);
void jkp_connection_deinit(jkp_connection *c);
/* "tcp://ip:port" or "ipc://ip-port" for channel ch into buf. */
int jkp_connection_endpoint(const jkp_connection *c, int ch, char *buf, size_t n);
extern const char *const jkp_channel_names[JKP_NCHANNELS];

/* ---- messages (jk_wire.c) ---- */

typedef struct jkp_msg {
    jkp_bytes *ids; /* routing identities before <IDS|MSG> */
    size_t nids;
    json_t *header, *parent, *metadata, *content; /* owned; all objects */
    jkp_bytes *buffers;
    size_t nbuffers;
    const char *msg_type, *msg_id; /* borrowed from header */
} jkp_msg;

/* The identity a whole process signs and stamps with; shared by all threads. */
typedef struct jkp_session {
    jkp_hmac *hmac;
    jkp_replay *replay; /* signatures seen, owned */
    char session[40];   /* uuid4 of this process */
    char username[32];
    atomic_ullong counter; /* msg_id = <session>_<counter> */
} jkp_session;
RT_MUST_USE int jkp_session_init(jkp_session *s, jkp_hmac *hmac /* stolen */, jk_error *err);
void jkp_session_deinit(jkp_session *s);

/* Verifies (before any JSON parsing) and parses frames into m. -1 with err on any
 * malformation; m is then empty. */
RT_MUST_USE int jkp_msg_parse(const jkp_view *frames, size_t n, const jkp_hmac *h, jkp_msg *m,
                              jk_error *err);
void jkp_msg_deinit(jkp_msg *m); /* accepts NULL / zeroed */
/* For frames that were refused (by jkp_msg_parse or for their size): if the signed part
 * verifies and the header is an object with a string msg_type, fills m->ids, m->header
 * and m->msg_type (msg_id may be NULL) so the sender can be told why, and returns 0.
 * Otherwise -1 and m is empty: an unauthenticated sender gets nothing back. */
int jkp_msg_refusal(const jkp_view *frames, size_t n, const jkp_hmac *h, jkp_msg *m);
/* Receives one multipart message from sock and parses it. Returns 0; -1 for a bad or
 * unauthenticated message or a replay (err says why; m is empty; the socket is fine);
 * -3 for a signed message refused (err says why; m as jkp_msg_refusal leaves it, to
 * answer with jkp_refuse); -2 for a socket error (errno set). */
RT_MUST_USE int jkp_msg_recv(void *sock, jkp_session *s, jkp_msg *m, jk_error *err);
/* Builds the 5 signed frames (signature, header, parent, metadata, content) of a new
 * message. parent borrowed (NULL = {}); metadata and content stolen (NULL = {}). */
RT_MUST_USE int jkp_msg_build(jkp_session *s, const char *msg_type, json_t *parent,
                              json_t *metadata, json_t *content, jkp_bytes out[5], jk_error *err);
/* Builds and sends on sock after the given identity frames (borrowed). Same ownership
 * as jkp_msg_build. */
RT_MUST_USE int jkp_msg_send(void *sock, jkp_session *s, const jkp_bytes *ids, size_t nids,
                             const char *msg_type, json_t *parent, json_t *metadata,
                             json_t *content, jk_error *err);
/* Sends a reply to req on sock (its identities, parent = req header). */
int jkp_reply(void *sock, jkp_session *s, const jkp_msg *req, const char *msg_type,
              json_t *metadata, json_t *content);

/* ---- IOPub sending, one per thread (jk_iopub.c) ---- */

#define JKP_IOPUB_INPROC "inproc://kiln-iopub"
typedef struct jkp_iopub {
    void *sock; /* PUSH connected to JKP_IOPUB_INPROC */
    jkp_session *session;
    pthread_mutex_t lock; /* engine code may publish from a helper thread */
} jkp_iopub;
RT_MUST_USE int jkp_iopub_init(jkp_iopub *io, void *zctx, jkp_session *s, jk_error *err);
void jkp_iopub_deinit(jkp_iopub *io);
/* Publishes msg_type with parent (borrowed header, NULL = {}); metadata and content
 * stolen (NULL = {}). */
void jkp_publish(jkp_iopub *io, const char *msg_type, json_t *parent, json_t *metadata,
                 json_t *content);
void jkp_publish_status(jkp_iopub *io, json_t *parent, const char *state);

/* ---- the running kernel (jk_kernel.c) ---- */

typedef struct kl_engine kl_engine;
typedef struct jkp_history jkp_history;
typedef struct jkp_comms jkp_comms;
typedef struct jkp_exec jkp_exec;

typedef struct jkp_kernel {
    void *zctx;
    jkp_session session;
    atomic_int interrupt; /* set by interrupt_request and SIGINT; the engine polls it */
    atomic_int shutdown;  /* set by shutdown_request (either channel) */
    atomic_int restart;   /* ... with restart: true */
    /* [shell] */
    void *shell, *stdin_sock;
    jkp_iopub iopub;
    kl_engine *engine;
    int execution_count;
    jkp_history *history;
    jkp_comms *comms;
    jkp_msg *aborting; /* requests queued when an execute failed (stop_on_error) */
    size_t naborting;
} jkp_kernel;

/* Where a request came from: the socket to reply on and the thread's IOPub sender. */
typedef struct jkp_chan {
    jkp_kernel *k;
    void *sock;
    jkp_iopub *iopub;
    const char *name; /* "shell" | "control" */
    void *notify;     /* control: PAIR to main, told "shutdown"; NULL on shell */
} jkp_chan;

typedef void (*jkp_handler_fn)(jkp_chan *ch, const jkp_msg *req);
typedef struct jkp_handler {
    const char *msg_type;
    jkp_handler_fn fn;
} jkp_handler;

/* jk_dispatch.c: busy -> handler (unknown types: logged) -> idle, parent = req. */
void jkp_dispatch(jkp_chan *ch, const jkp_handler *table, const jkp_msg *req);
extern const jkp_handler jkp_shell_handlers[]; /* terminated by {NULL, NULL} */
/* A signed request that was refused (jkp_msg_recv's -3): busy -> "<type>_reply" with
 * status "error" saying why -> idle, so the client never waits on silence. Types not
 * ending in "_request" get nothing but the log line. */
void jkp_refuse(jkp_chan *ch, const jkp_msg *req, const char *why);
/* stop_on_error, in two steps as ipykernel does. snapshot (in the failing handler,
 * before its idle): takes every request already queued on shell into k->aborting.
 * run (after the idle): answers the execute_requests among them "aborted" and serves
 * the others normally. Requests sent after the failure was seen run normally. */
void jkp_abort_snapshot(jkp_chan *ch);
void jkp_abort_run(jkp_chan *ch);

/* Handlers, one message family a file. */
void jkp_handle_kernel_info(jkp_chan *ch, const jkp_msg *req); /* jk_kernel_info.c */
void jkp_handle_shutdown(jkp_chan *ch, const jkp_msg *req);    /* jk_control.c */

/* jk_carry.c: forms handed over a restart through CONNECTION_FILE.kiln-forms (path:
 * new string). _in takes the file in (and removes it) when the kernel starts; _out
 * writes it when the kernel goes for a restart. */
char *jkp_carry_path(const char *connection_file);
void jkp_carry_in(jkp_kernel *k, const char *path);
void jkp_carry_out(jkp_kernel *k, const char *path);
void jkp_handle_interrupt(jkp_chan *ch, const jkp_msg *req);   /* jk_control.c */
void jkp_handle_execute(jkp_chan *ch, const jkp_msg *req);     /* jk_execute.c */
void jkp_handle_is_complete(jkp_chan *ch, const jkp_msg *req); /* jk_complete_inspect.c */
void jkp_handle_complete(jkp_chan *ch, const jkp_msg *req);
void jkp_handle_inspect(jkp_chan *ch, const jkp_msg *req);
void jkp_handle_history(jkp_chan *ch, const jkp_msg *req);       /* jk_history.c */
void jkp_handle_comm_info(jkp_chan *ch, const jkp_msg *req);     /* jk_comm.c */
void jkp_handle_comm_frontend(jkp_chan *ch, const jkp_msg *req); /* comm_open/msg/close */

/* ---- outputs of a running request (jk_outputs.c, jk_stdin.c) ---- */

typedef struct mg_out mg_out;
struct jkp_exec {
    jkp_chan *ch;
    const jkp_msg *req; /* parent of every output */
    int silent, allow_stdin;
    int count;         /* execution_count for execute_result */
    char *result_text; /* text/plain of the execute_result (history output), owned */
};
/* Fills out with the IOPub implementation of mg_out writing for x. */
void jkp_outputs_init(mg_out *out, jkp_exec *x);
/* mg_out.input: input_request on stdin, blocks for input_reply (jk_stdin.c). */
char *jkp_stdin_input(jkp_exec *x, const char *prompt, int password);

/* ---- history (jk_history.c) and comms (jk_comm.c), shell thread only ---- */

jkp_history *jkp_history_create(void);
void jkp_history_destroy(jkp_history *h);
/* Records one stored execution (copies code and output; output may be NULL). */
RT_MUST_USE int jkp_history_add(jkp_history *h, int line, const char *code, const char *output);
/* history_reply "history" array for a history_request content. New ref. */
json_t *jkp_history_query(const jkp_history *h, json_t *request);

jkp_comms *jkp_comms_create(void);
void jkp_comms_destroy(jkp_comms *c);
RT_MUST_USE int jkp_comms_add(jkp_comms *c, const char *comm_id, const char *target_name);
void jkp_comms_remove(jkp_comms *c, const char *comm_id);
/* {comm_id: {target_name}} filtered by target (NULL = all). New ref. */
json_t *jkp_comms_info(const jkp_comms *c, const char *target);

/* ---- threads (jk_publisher.c, jk_heartbeat.c, jk_control.c) ---- */

/* A thread serving one socket, stopped by "stop" over an inproc PAIR. The thread owns
 * sock (and sock2) from start on and closes them when it ends. */
typedef struct jkp_worker {
    pthread_t tid;
    int started;
    void *ctl;  /* main's end of the PAIR */
    void *peer; /* the thread's end */
    void *sock, *sock2;
    jkp_kernel *k;
} jkp_worker;
RT_MUST_USE int jkp_worker_start(jkp_worker *w, jkp_kernel *k, const char *name,
                                 void *(*fn)(void *), jk_error *err);
void jkp_worker_stop(jkp_worker *w); /* sends "stop", joins, closes ctl; accepts unstarted */
void *jkp_publisher_main(void *w);   /* sock = PUB/XPUB, sock2 = PULL (inproc) */
void *jkp_heartbeat_main(void *w);   /* sock = ROUTER echo */
void *jkp_control_main(void *w);     /* sock = control ROUTER; says "shutdown" on peer */

#endif
