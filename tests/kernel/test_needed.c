/* test_needed.c - the kiln binary's DT_NEEDED list: what the loader maps before main.
 *
 * usage: test_needed BINARY [-forbid PREFIX | -require PREFIX]...
 * Reads the ELF dynamic section (64-bit, native byte order) and fails when a needed
 * library starts with a -forbid prefix or none starts with a -require prefix. Kiln
 * loads libcurl and libarchive on first use (runtime/data/rt_*_dl.c) because linking
 * them cost ~4.7 ms of the kernel's start, and OpenBLAS when the CPU backend first
 * opens (runtime/cpu/cpu_blas_dl.c, 1.6-2.9 ms), cuDNN/cuBLAS with the first CUDA
 * backend and the CUDA runtime statically (~0.6 ms); a -forbid here catches a build
 * change that links one of them again. The -require entries show the parser read the list.
 * Exit 0 pass, 1 fail, 99 setup error (unreadable or not ELF64).
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the whole file; NULL on failure. Caller frees. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *p = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) &&
            fread(p, 1, (size_t)n, f) != (size_t)n) {
            free(p);
            p = NULL;
        }
        *len = n > 0 ? (size_t)n : 0;
    }
    fclose(f);
    return p;
}

/* Calls back with each DT_NEEDED name; the count, or -1 when the file is malformed. */
static int each_needed(const unsigned char *p, size_t len, void (*fn)(const char *name, void *user),
                       void *user)
{
    const Elf64_Ehdr *eh = (const void *)p;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > len || (len - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        return -1;
    const Elf64_Shdr *sh = (const void *)(p + eh->e_shoff);
    int n = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNAMIC) continue;
        if (sh[i].sh_link >= eh->e_shnum) return -1;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
            str->sh_offset > len || str->sh_size > len - str->sh_offset || !str->sh_size)
            return -1;
        const Elf64_Dyn *d = (const void *)(p + sh[i].sh_offset);
        const char *strtab = (const char *)(p + str->sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *d && d[k].d_tag != DT_NULL; k++) {
            if (d[k].d_tag != DT_NEEDED) continue;
            if (d[k].d_un.d_val >= str->sh_size || strtab[str->sh_size - 1]) return -1;
            fn(strtab + d[k].d_un.d_val, user);
            n++;
        }
    }
    return n;
}

typedef struct check {
    int argc;
    char **argv;
    int *seen; /* per argv index: a needed library matched it */
} check;

static void on_needed(const char *name, void *user)
{
    check *c = user;
    printf("  NEEDED %s\n", name);
    for (int i = 2; i + 1 < c->argc; i += 2)
        if (!strncmp(name, c->argv[i + 1], strlen(c->argv[i + 1]))) c->seen[i + 1] = 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc % 2) {
        fprintf(stderr, "usage: %s BINARY [-forbid PREFIX | -require PREFIX]...\n", argv[0]);
        return 99;
    }
    size_t len = 0;
    unsigned char *p = slurp(argv[1], &len);
    if (!p) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 99;
    }
    check c = {argc, argv, calloc((size_t)argc, sizeof(int))};
    printf("%s:\n", argv[1]);
    int n = c.seen ? each_needed(p, len, on_needed, &c) : -1;
    free(p);
    if (n < 0) {
        fprintf(stderr, "%s: not a readable ELF64 file\n", argv[1]);
        free(c.seen);
        return 99;
    }
    int fail = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        int forbid = !strcmp(argv[i], "-forbid");
        if (!forbid && strcmp(argv[i], "-require")) {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            free(c.seen);
            return 99;
        }
        if (forbid == c.seen[i + 1]) {
            printf("FAIL: %s %s* %s\n", argv[1], argv[i + 1],
                   forbid ? "is linked: load it on first use instead (see "
                            "runtime/data/rt_*_dl.c, runtime/cpu/cpu_blas_dl.c)"
                          : "is not in the NEEDED list");
            fail = 1;
        }
    }
    free(c.seen);
    printf("%d needed libraries, %s\n", n, fail ? "FAIL" : "ok");
    return fail;
}
