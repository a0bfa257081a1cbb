/* test_lang_shell.c - `!command`: output arrives chunk by chunk while the command
 * runs (not all at the end), stderr is kept apart, a non-zero exit is reported, an
 * interrupt set from another thread stops `sleep 30` within a couple of seconds with
 * KeyboardInterrupt, and split UTF-8 / invalid bytes never produce invalid text. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "lang_util.h"
#include "t.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Records when the first stdout chunk arrived. */
typedef struct timed {
    capture cap;
    double first_chunk;
} timed;

static void timed_stream(void *u, const char *name, const char *text, size_t len)
{
    timed *t = u;
    if (t->first_chunk == 0) t->first_chunk = now();
    capture_stream(&t->cap, name, text, len);
}

T_TEST(streams_as_it_arrives)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    timed t;
    mg_out o = capture_out(&t.cap);
    o.user = &t;
    o.stream = timed_stream;
    t.first_chunk = 0;
    kl_error err;
    double t0 = now();
    ASSERT_EQ(kl_engine_execute(e, "!echo first; sleep 1; echo second", &o, NULL, &err), 0);
    double end = now();
    ASSERT_STR_EQ(t.cap.out, "first\nsecond\n");
    ASSERT(t.cap.nchunks >= 2);
    /* the first line was forwarded long before the command finished */
    ASSERT(t.first_chunk - t0 < end - t0 - 0.5);
    kl_engine_destroy(e);
}

T_TEST(stderr_and_exit_status)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    run r;
    run_cell(e, "!echo out; echo err 1>&2; exit 3\nafter = 1", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.out, "out\n");
    ASSERT_STR_CONTAINS(r.cap.err, "err\n");
    ASSERT_STR_CONTAINS(r.cap.err, "exited with status 3");
    ASSERT_EQ(json_integer_value(kl_engine_var_get(e, "_exit_code")), 3);
    ASSERT(kl_engine_var_get(e, "after") != NULL); /* the cell went on */
    run_cell(e, "!printf '\\303'; sleep 0.2; printf '\\251 \\377 end'", &r);
    ASSERT_STR_EQ(r.cap.out, "\xc3\xa9 \xef\xbf\xbd end"); /* é kept whole, 0xff -> U+FFFD */
    kl_engine_destroy(e);
}

static void *set_later(void *p)
{
    usleep(300000);
    atomic_store((atomic_int *)p, 1);
    return NULL;
}

T_TEST(interrupt_kills_the_command)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    pthread_t th;
    pthread_create(&th, NULL, set_later, &intr);
    run r;
    double t0 = now();
    run_cell(e, "!echo started; sleep 30; echo never\nnot_reached = 1", &r);
    double took = now() - t0;
    pthread_join(th, NULL);
    ASSERT_EQ(r.rc, -1);
    ASSERT_STR_EQ(r.err.ename, "KeyboardInterrupt");
    ASSERT_STR_EQ(r.cap.out, "started\n");
    ASSERT(took < 5.0);
    ASSERT(kl_engine_var_get(e, "not_reached") == NULL);
    /* the engine stays usable once the caller clears the flag */
    atomic_store(&intr, 0);
    run_cell(e, "!echo again", &r);
    ASSERT_EQ(r.rc, 0);
    ASSERT_STR_EQ(r.cap.out, "again\n");
    kl_engine_destroy(e);
}

T_TEST(sigint_ignoring_command_is_killed)
{
    atomic_int intr = 0;
    kl_engine *e = kl_engine_create(&intr);
    pthread_t th;
    pthread_create(&th, NULL, set_later, &intr);
    run r;
    double t0 = now();
    run_cell(e, "!trap '' INT; sleep 30", &r);
    pthread_join(th, NULL);
    ASSERT_STR_EQ(r.err.ename, "KeyboardInterrupt");
    ASSERT(now() - t0 < 6.0);
    kl_engine_destroy(e);
}

int main(void)
{
    T_RUN(streams_as_it_arrives);
    T_RUN(stderr_and_exit_status);
    T_RUN(interrupt_kills_the_command);
    T_RUN(sigint_ignoring_command_is_killed);
    return T_EXIT();
}
