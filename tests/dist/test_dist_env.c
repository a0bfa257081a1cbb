/* test_dist_env.c - who a process is in a launch (rt_dist_env_read), a single process
 * never opening MPI, and the ranks' own dropout streams (rt_model_set_shard). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "t.h"

static const char *all_vars[] = {"OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_SIZE",
                                 "PMI_RANK",
                                 "PMI_SIZE",
                                 "MPI_LOCALRANKID",
                                 "MPI_LOCALNRANKS",
                                 "SLURM_PROCID",
                                 "SLURM_NTASKS",
                                 "SLURM_LOCALID",
                                 "SLURM_NTASKS_PER_NODE",
                                 "RANK",
                                 "WORLD_SIZE",
                                 "LOCAL_RANK",
                                 "LOCAL_WORLD_SIZE"};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof *all_vars; i++) unsetenv(all_vars[i]);
}

T_TEST(no_launcher_is_one_process)
{
    clear_env();
    rt_dist_env e;
    rt_error err = {0};
    ASSERT_EQ(rt_dist_env_read(&e, &err), RT_OK);
    ASSERT_EQ(e.rank, 0);
    ASSERT_EQ(e.world, 1);
    ASSERT_STR_EQ(e.source, "none");
    ASSERT(rt_dist_is_writer());
}

T_TEST(each_launcher_is_read)
{
    struct {
        const char *r, *s, *lr, *ls, *source;
    } c[] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE", "OpenMPI"},
        {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "Slurm"},
        {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "torchrun"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        clear_env();
        setenv(c[i].r, "5", 1);
        setenv(c[i].s, "8", 1);
        setenv(c[i].lr, "1", 1);
        setenv(c[i].ls, i == 2 ? "4(x2)" : "4", 1); /* Slurm's uneven-node form */
        rt_dist_env e;
        rt_error err = {0};
        ASSERT_EQ(rt_dist_env_read(&e, &err), RT_OK);
        ASSERT_EQ(e.rank, 5);
        ASSERT_EQ(e.world, 8);
        ASSERT_EQ(e.local_rank, 1);
        ASSERT_EQ(e.local_world, 4);
        ASSERT_STR_EQ(e.source, c[i].source);
        ASSERT(!rt_dist_is_writer());
    }
}

T_TEST(openmpi_wins_over_a_stale_torchrun_rank)
{
    clear_env();
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    rt_dist_env e;
    ASSERT_EQ(rt_dist_env_read(&e, NULL), RT_OK);
    ASSERT_EQ(e.rank, 0);
    ASSERT_EQ(e.world, 2);
    ASSERT_EQ(e.local_world, 1); /* not given: 1 */
    ASSERT(rt_dist_is_writer());
}

T_TEST(bad_values_are_refused_by_name)
{
    const char *bad[][2] = {{"2", "2"}, {"x", "2"}, {"-1", "2"}, {"0", "0"}, {"1", "2z"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clear_env();
        setenv("SLURM_PROCID", bad[i][0], 1);
        setenv("SLURM_NTASKS", bad[i][1], 1);
        rt_dist_env e;
        rt_error err = {0};
        ASSERT_EQ(rt_dist_env_read(&e, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, "SLURM_PROCID");
        ASSERT_STR_CONTAINS(err.msg, "SLURM_NTASKS");
        /* a broken launch keeps its files: it counts as the writer */
        ASSERT(rt_dist_is_writer());
    }
}

T_TEST(world_of_one_opens_no_mpi)
{
    clear_env();
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    setenv("KILN_LIBMPI", "/nonexistent/libmpi.so.40", 1); /* would fail if loaded */
    rt_dist *d = (rt_dist *)1;
    rt_error err = {0};
    ASSERT_EQ(rt_dist_world(&d, &err), RT_OK);
    ASSERT(d == NULL);
    ASSERT_EQ(rt_dist_rank(d), 0);
    ASSERT_EQ(rt_dist_size(d), 1);
}

/* The (N, 2) probabilities of a dropout model on a constant input. */
static void dropout_probs(uint32_t shard, float *probs, int *t_failed_)
{
    rt_backend b;
    rt_model *m = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    rt_model_input in = {1, 4, 4, 2};
    ASSERT_EQ(rt_model_create(&m, "flatten\ndropout 0.5\ndense 2", &in, &err), RT_OK);
    ASSERT_EQ(rt_model_attach(m, &b, 4, 7, &err), RT_OK);
    rt_model_set_shard(m, shard);
    float x[4 * 16];
    for (int i = 0; i < 4 * 16; i++) x[i] = 1.0f;
    int32_t y[4] = {0, 1, 0, 1};
    ASSERT_EQ(rt_backend_upload(&b, rt_model_input_tensor(m), x, sizeof x, &err), RT_OK);
    ASSERT_EQ(rt_backend_upload(&b, rt_model_label_tensor(m), y, sizeof y, &err), RT_OK);
    ASSERT_EQ(rt_model_forward(m, 4, 1, 3, &err), RT_OK);
    ASSERT_EQ(rt_model_loss(m, 4, NULL, probs, NULL, &err), RT_OK);
    rt_model_destroy(m);
    rt_backend_close(&b);
}

T_TEST(ranks_draw_their_own_dropout_masks)
{
    float p0[8], again[8], p1[8];
    dropout_probs(0, p0, t_failed_);
    dropout_probs(0, again, t_failed_);
    dropout_probs(1, p1, t_failed_);
    ASSERT(memcmp(p0, again, sizeof p0) == 0); /* the same stream: the same masks */
    int differ = 0; /* rank 1's 4 samples x 16 inputs: all masks equal has p = 2^-64 */
    for (int i = 0; i < 8; i++) differ += p0[i] != p1[i];
    ASSERT(differ > 0);
}

int main(void)
{
    T_RUN(no_launcher_is_one_process);
    T_RUN(each_launcher_is_read);
    T_RUN(openmpi_wins_over_a_stale_torchrun_rank);
    T_RUN(bad_values_are_refused_by_name);
    T_RUN(world_of_one_opens_no_mpi);
    T_RUN(ranks_draw_their_own_dropout_masks);
    return T_EXIT();
}
