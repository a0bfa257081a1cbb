/* jk_install.c - `kiln install [--user | --sys-prefix | --prefix DIR] [--name NAME]`:
 * writes DIR/kernels/NAME/kernel.json (argv = this binary's absolute path from
 * /proc/self/exe + "kernel -f {connection_file}", interrupt_mode "message") and the
 * two logos, so `jupyter kernelspec list` shows Kiln.
 *   --user (default)  $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
 *                     ~/.local/share/jupyter
 *   --sys-prefix      `python3 -c 'import sys; print(sys.prefix)'`/share/jupyter
 *   --prefix DIR      DIR/share/jupyter
 * Logos are looked up next to the binary: <bindir>/../share/kiln (installed) and
 * <builddir>/kernelspec (build tree); without them the kernelspec still works. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "jk_cli.h"

static const char usage_text[] =
    "usage: kiln install [--user | --sys-prefix | --prefix DIR] [--name NAME]\n"
    "  --user        install for this user (default)\n"
    "  --sys-prefix  install into python3's sys.prefix (the active environment)\n"
    "  --prefix DIR  install into DIR/share/jupyter/kernels\n"
    "  --name NAME   kernelspec name (default kiln)\n";

static int mkdirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in) return -1;
    FILE *out = fopen(to, "wb");
    int rc = out ? 0 : -1;
    char buf[8192];
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (ferror(in)) rc = -1;
    fclose(in);
    if (out && fclose(out) != 0) rc = -1;
    return rc;
}

static int python_prefix(char *out, size_t n)
{
    FILE *p = popen("python3 -c 'import sys; print(sys.prefix)' 2>/dev/null", "r");
    if (!p) return -1;
    int ok = fgets(out, (int)n, p) != NULL;
    int st = pclose(p);
    if (!ok || st != 0) return -1;
    out[strcspn(out, "\r\n")] = 0;
    return out[0] ? 0 : -1;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 64) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.' || *s == '_'))
            return 0;
    return 1;
}

static int kernels_dir(int mode, const char *prefix, char *out, size_t n)
{
    char base[PATH_MAX];
    if (mode == 2) {
        if (python_prefix(base, sizeof base) < 0) {
            fprintf(stderr, "kiln install: --sys-prefix: cannot ask python3 for sys.prefix\n");
            return -1;
        }
        if (snprintf(out, n, "%s/share/jupyter/kernels", base) >= (int)n) return -1;
    } else if (mode == 3) {
        if (snprintf(out, n, "%s/share/jupyter/kernels", prefix) >= (int)n) return -1;
    } else {
        const char *d = getenv("JUPYTER_DATA_DIR"), *x = getenv("XDG_DATA_HOME");
        const char *home = getenv("HOME");
        int k;
        if (d && *d) k = snprintf(out, n, "%s/kernels", d);
        else if (x && *x) k = snprintf(out, n, "%s/jupyter/kernels", x);
        else if (home && *home) k = snprintf(out, n, "%s/.local/share/jupyter/kernels", home);
        else {
            fprintf(stderr, "kiln install: --user: HOME is not set\n");
            return -1;
        }
        if (k >= (int)n) return -1;
    }
    return 0;
}

static void install_logos(const char *exe, const char *dest)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    static const char *const where[] = {"%s/../share/kiln/%s", "%s/../kernelspec/%s"};
    static const char *const logos[] = {"logo-32x32.png", "logo-64x64.png"};
    for (int l = 0; l < 2; l++) {
        int done = 0;
        for (int w = 0; w < 2 && !done; w++) {
            char from[PATH_MAX * 2], to[PATH_MAX * 2];
            if (snprintf(from, sizeof from, where[w], dir, logos[l]) >= (int)sizeof from ||
                snprintf(to, sizeof to, "%s/%s", dest, logos[l]) >= (int)sizeof to)
                continue;
            done = access(from, R_OK) == 0 && copy_file(from, to) == 0;
        }
        if (!done)
            fprintf(stderr, "kiln install: warning: %s not found next to %s\n", logos[l], exe);
    }
}

int jk_install_main(int argc, char **argv)
{
    int mode = 1;       /* 1 user, 2 sys-prefix, 3 prefix */
    unsigned given = 0; /* bit per destination named: more than one is an error */
    const char *prefix = NULL, *name = "kiln";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--user")) mode = 1, given |= 1u;
        else if (!strcmp(argv[i], "--sys-prefix")) mode = 2, given |= 2u;
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
            mode = 3, given |= 4u, prefix = argv[++i];
        else if (!strncmp(argv[i], "--prefix=", 9)) mode = 3, given |= 4u, prefix = argv[i] + 9;
        else if (!strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!strncmp(argv[i], "--name=", 7)) name = argv[i] + 7;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        } else {
            fprintf(stderr, "kiln install: unknown or incomplete option %s\n%s", argv[i],
                    usage_text);
            return 2;
        }
    }
    if (given & (given - 1)) { /* as `jupyter kernelspec install`: one destination */
        fprintf(stderr,
                "kiln install: --user, --sys-prefix and --prefix are exclusive; "
                "give one\n%s",
                usage_text);
        return 2;
    }
    if (!valid_name(name)) {
        fprintf(stderr, "kiln install: invalid kernel name '%s' (letters, digits, '-', '.', '_')\n",
                name);
        return 2;
    }
    char exe[PATH_MAX], kdir[PATH_MAX], dest[PATH_MAX * 2], path[PATH_MAX * 2 + 16];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "kiln install: cannot find this binary (/proc/self/exe): %s\n",
                strerror(errno));
        return 1;
    }
    exe[n] = 0;
    if (kernels_dir(mode, prefix, kdir, sizeof kdir) < 0) return 1;
    snprintf(dest, sizeof dest, "%s/%s", kdir, name);
    if (mkdirs(dest) < 0) {
        fprintf(stderr, "kiln install: cannot create %s: %s\n", dest, strerror(errno));
        return 1;
    }
    char display[96];
    snprintf(display, sizeof display, strcmp(name, "kiln") ? "Kiln (%s)" : "Kiln", name);
    json_t *spec = json_pack("{s:[s,s,s,s], s:s, s:s, s:s, s:{}, s:{s:b}}", "argv", exe, "kernel",
                             "-f", "{connection_file}", "display_name", display, "language", "kiln",
                             "interrupt_mode", "message", "env", "metadata", "debugger", 0);
    snprintf(path, sizeof path, "%s/kernel.json", dest);
    int rc = spec ? json_dump_file(spec, path, JSON_INDENT(1)) : -1;
    json_decref(spec);
    if (rc < 0) {
        fprintf(stderr, "kiln install: cannot write %s\n", path);
        return 1;
    }
    install_logos(exe, dest);
    printf("Installed kernelspec %s in %s\n", name, dest);
    return 0;
}
