/* capture.h - an mg_out that records what a cell or a magic shows, for the tests: the
 * stream text (stdout, stderr, and both in the order written), the text/plain of the
 * last execute_result, counts of every kind of output, and optionally an ordered JSON
 * log of every display, result, clear and comm message.
 *
 * The text buffers are part of the struct (a test keeps one on the stack without
 * freeing anything); more than CAPTURE_TEXT_MAX bytes on one of them stops the test
 * program with a message rather than cutting what a test compares. Only the log is
 * allocated: capture_deinit frees it. */
#ifndef CAPTURE_H
#define CAPTURE_H

#include <jansson.h>
#include <stddef.h>

#include "mg.h"

#define CAPTURE_TEXT_MAX 65536

typedef struct capture {
    char out[CAPTURE_TEXT_MAX];    /* stdout */
    char err[CAPTURE_TEXT_MAX];    /* stderr */
    char text[CAPTURE_TEXT_MAX];   /* both, in the order written */
    char result[CAPTURE_TEXT_MAX]; /* text/plain of the last execute_result */
    size_t nout, nerr, ntext;
    int nchunks, nresults, ndisplays, nclears, ncomms; /* calls of each kind */
    /* NULL, or every display, result, clear and comm message in order:
     *   {"type": "display", "data", "metadata", "id": display_id, "update": bool}
     *   {"type": "result", "data", "metadata"}    {"type": "clear", "wait": bool}
     *   {"type": "comm_open", "id", "target", "data", "metadata"}
     *   {"type": "comm_msg", "id", "data", "metadata"}   {"type": "comm_close", "id", "data"}
     * (keys whose value is NULL are left out) */
    json_t *log;
    const char *input_reply; /* what input() answers; NULL: no stdin */
} capture;

/* Empties c and returns the mg_out writing into it: stream, display, result, clear and
 * input, no comms (a frontend without widgets). The log stays NULL. */
mg_out capture_out(capture *c);
/* Empties the text, the counters and the log's entries; with log != 0 the log records
 * from now on (made when c has none). c must be zeroed or have been used before. */
void capture_reset(capture *c, int log);
void capture_deinit(capture *c); /* frees the log */

/* The callbacks, for an mg_out that offers only some of them (user = the capture). */
void capture_stream(void *user, const char *name, const char *text, size_t len);
void capture_display(void *user, json_t *data, json_t *metadata, const char *id, int update);
void capture_result(void *user, json_t *data, json_t *metadata);
void capture_clear(void *user, int wait);
char *capture_input(void *user, const char *prompt, int password);
void capture_comm_open(void *user, const char *id, const char *target, json_t *data,
                       json_t *metadata);
void capture_comm_msg(void *user, const char *id, json_t *data, json_t *metadata);
void capture_comm_close(void *user, const char *id, json_t *data);

/* The n-th log entry of a type (n from 0), or NULL. */
json_t *capture_find(const capture *c, const char *type, int n);
/* Every displayed entry of one MIME type, concatenated in order (new string, "" for
 * none; NULL when out of memory). */
char *capture_shown(const capture *c, const char *mime);
/* Displays whose bundle has mime, and whose text/plain starts with prefix (NULL: any);
 * *id gets the display_id of the first (id may be NULL), *updates how many of them were
 * updates in place (updates may be NULL). */
int capture_count(const capture *c, const char *mime, const char *prefix, const char **id,
                  int *updates);

#endif
