/* test_start_no_cuda.c - a start that does not use a GPU maps no CUDA library.
 *
 * usage: test_start_no_cuda KILN
 * `kiln --version` under LD_DEBUG=files (the loader's log of every object it maps,
 * dlopen included) loads no libcudart, libcudnn, libcublas or libcuda: the CUDA runtime
 * is linked statically and loads the driver at the first CUDA call, cuDNN and cuBLAS
 * are dlopen'ed by the first CUDA backend (runtime/cuda/cudnn_dl.c, cuda_blas_dl.c).
 * Linked, libcudart + libcudnn cost every start ~0.6 ms. (That none is in kiln's
 * NEEDED list is tests/kernel's kiln_needed.)
 * Exit 0 pass, 1 fail, 99 setup error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const forbidden[] = {"libcudart", "libcudnn", "libcublas", "libcuda."};
enum { NFORBIDDEN = sizeof forbidden / sizeof forbidden[0] };

static int is_forbidden(const char *s)
{
    for (int i = 0; i < NFORBIDDEN; i++)
        if (strstr(s, forbidden[i])) return 1;
    return 0;
}

/* Runs `kiln --version` with LD_DEBUG=files (the loader's log of every object it maps,
 * dlopen included, on stderr) and fails if a CUDA library shows up. */
static int check_start(const char *kiln)
{
    int fd[2];
    if (pipe(fd)) return 99;
    fflush(stdout); /* or the child's freopen writes our buffer a second time */
    pid_t pid = fork();
    if (pid < 0) return 99;
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        if (!freopen("/dev/null", "w", stdout)) _exit(99);
        setenv("LD_DEBUG", "files", 1);
        execl(kiln, kiln, "--version", (char *)NULL);
        _exit(99);
    }
    close(fd[1]);
    FILE *in = fdopen(fd[0], "r");
    char line[1024];
    int bad = 0, lines = 0;
    while (in && fgets(line, sizeof line, in)) {
        lines++;
        if (strstr(line, "file=") && is_forbidden(line)) {
            printf("  FAIL: kiln --version loads %s", line);
            bad = 1;
        }
    }
    if (in) fclose(in);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || lines == 0) {
        fprintf(stderr, "kiln --version failed (status %d) or LD_DEBUG printed nothing\n", st);
        return 99;
    }
    printf("  kiln --version: %d loader lines, %s\n", lines,
           bad ? "a CUDA library loaded" : "no CUDA library loaded");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s KILN\n", argv[0]);
        return 99;
    }
    printf("%s:\n", argv[1]);
    int b = check_start(argv[1]);
    if (b == 99) return 99;
    printf("%s\n", b ? "FAIL" : "ok");
    return b;
}
