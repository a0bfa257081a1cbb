/* fz_server.h - a one-thread HTTP-ish server on 127.0.0.1 for the fuzz targets that
 * drive a client (http.c, mlflow.c): each connection's request is read up to the end
 * of its headers, then the server sends the bytes answer() gives for that connection
 * (counted from 0) verbatim and closes it. */
#ifndef FZ_SERVER_H
#define FZ_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct fz_server fz_server;
/* The bytes to send to connection n (borrowed until the next call); NULL sends nothing. */
typedef const uint8_t *(*fz_answer_fn)(void *user, size_t n, size_t *len);

/* Starts it; *port gets its port. NULL when it cannot. */
fz_server *fz_server_start(fz_answer_fn answer, void *user, int *port);
/* Stops the thread, closes the socket, frees. */
void fz_server_stop(fz_server *s);

#endif
