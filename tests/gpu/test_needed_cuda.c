/* test_needed_cuda.c - no CUDA library is mapped before kiln's main, nor by a start that
 * does not use a GPU.
 *
 * usage: test_needed_cuda KILN
 * 1. kiln's DT_NEEDED list (read from the ELF dynamic section, as tests/kernel/
 *    test_needed.c does) names no libcudart, libcudnn, libcublas or libcuda: the CUDA
 *    runtime is linked statically and loads the driver at the first CUDA call, cuDNN and
 *    cuBLAS are dlopen'ed by the first CUDA backend (runtime/cuda/cudnn_dl.c,
 *    cuda_blas_dl.c). Linked, libcudart + libcudnn cost every start ~0.6 ms.
 * 2. `kiln --version` under LD_DEBUG=files loads none of them either (the static
 *    runtime's constructors only record the kernels' fat binaries).
 * Exit 0 pass, 1 fail, 99 setup error.
 */
#include <elf.h>
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

/* The DT_NEEDED names of an ELF64 file, printed; the number forbidden, -1 if malformed. */
static int check_needed(const unsigned char *p, size_t len, int *has_libc)
{
    const Elf64_Ehdr *eh = (const void *)p;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > len || (len - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        return -1;
    const Elf64_Shdr *sh = (const void *)(p + eh->e_shoff);
    int bad = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNAMIC) continue;
        if (sh[i].sh_link >= eh->e_shnum) return -1;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
            str->sh_offset > len || str->sh_size > len - str->sh_offset || !str->sh_size)
            return -1;
        const Elf64_Dyn *d = (const void *)(p + sh[i].sh_offset);
        const char *strtab = (const char *)(p + str->sh_offset);
        if (strtab[str->sh_size - 1]) return -1;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++) {
            if (d[k].d_tag != DT_NEEDED) continue;
            if (d[k].d_un.d_val >= str->sh_size) return -1;
            const char *name = strtab + d[k].d_un.d_val;
            int no = is_forbidden(name);
            printf("  NEEDED %s%s\n", name, no ? "   <- FAIL: load it on first use" : "");
            bad += no;
            if (!strncmp(name, "libc.", 5)) *has_libc = 1;
        }
    }
    return bad;
}

static int check_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *p = NULL;
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
        (p = malloc((size_t)n)) && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    if (f) fclose(f);
    if (!p) {
        fprintf(stderr, "cannot read %s\n", path);
        return 99;
    }
    int libc = 0, bad = check_needed(p, (size_t)n, &libc);
    free(p);
    if (bad < 0 || !libc) {
        fprintf(stderr, "%s: %s\n", path, bad < 0 ? "not a readable ELF64 file"
                                                  : "no libc in NEEDED: the parser is wrong");
        return 99;
    }
    return bad ? 1 : 0;
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
    int a = check_file(argv[1]);
    if (a == 99) return 99;
    int b = check_start(argv[1]);
    if (b == 99) return 99;
    printf("%s\n", a || b ? "FAIL" : "ok");
    return a || b;
}
