/* jk_run_progress.h - `kiln run`'s live displays (the training progress bar) echoed to
 * stderr, so a batch log or a notebook's `!kiln run ...` shell cell shows how far a
 * run is. A display with a display_id whose text/plain is text (not an image, not a
 * "<...>" placeholder) is echoed as one line: on a terminal rewritten in place (\r and
 * erase-to-end-of-line) at most every 0.5 s; otherwise - a pipe, a file, a captured
 * stream - as plain lines with no control codes, the first state at once, then at most
 * one every 10 s, and the last state when the cell ends. */
#ifndef JK_RUN_PROGRESS_H
#define JK_RUN_PROGRESS_H

#include <stdio.h>

#include <jansson.h>

typedef struct jk_run_progress {
    FILE *to;          /* stderr */
    int tty;           /* rewrite in place (to is a terminal) */
    double every;      /* seconds between echoed states */
    double last;       /* when the last state was echoed (0: none yet) */
    int open_line;     /* tty: a line is being rewritten (needs its newline) */
    char pending[640]; /* the newest state not echoed yet ("" if none) */
} jk_run_progress;

void jk_run_progress_init(jk_run_progress *p, FILE *to, int tty);
/* A live display's new state (data: its MIME bundle). */
void jk_run_progress_show(jk_run_progress *p, json_t *data);
/* The cell ended: its newest state if not echoed yet, and the tty line ended. */
void jk_run_progress_end(jk_run_progress *p);

#endif
