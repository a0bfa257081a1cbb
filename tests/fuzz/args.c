/* args.c - fuzz target: the option parser every magic shares (mg_args_parse), for
 * every magic in the registry (the cell target runs only a few magics), and
 * mg_args_wants_help. Input: an argument line.
 * Invariants: a parse either succeeds with every option one of the magic's own and
 * counts within MG_MAX_ARGS, or fails with a message naming the magic; nothing leaks. */
#include <string.h>

#include "fz.h"
#include "mg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fz_strdup(data, size);
    if (!line) return 0;
    size_t n = 0;
    const mg_command *const *all = mg_registry_all(&n);
    (void)mg_args_wants_help(line);
    for (size_t i = 0; i < n; i++) {
        const mg_command *cmd = all[i];
        if (cmd->flags & MG_RAW_ARGS) continue; /* they read the raw text themselves */
        mg_args a;
        mg_error err;
        memset(&err, 0, sizeof err);
        if (mg_args_parse(cmd, line, NULL, &a, &err) == 0) {
            FZ_CHECK(a.npos >= 0 && a.npos <= MG_MAX_ARGS && a.nopt >= 0 && a.nopt <= MG_MAX_ARGS);
            for (int k = 0; k < a.nopt; k++) {
                int own = 0;
                for (const mg_option *o = cmd->options; o && o->name; o = mg_option_next(cmd, o))
                    own |= o == a.opt[k];
                FZ_CHECK(own && a.val[k] != NULL);
            }
            for (int k = 0; k < a.npos; k++) FZ_CHECK(a.pos[k] != NULL);
            mg_args_deinit(&a);
        } else {
            FZ_CHECK(err.evalue[0] != '\0');
            FZ_CHECK(strstr(err.evalue, cmd->name) != NULL || err.ename[0] != '\0');
        }
    }
    free(line);
    return 0;
}
