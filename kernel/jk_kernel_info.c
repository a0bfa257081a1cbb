/* jk_kernel_info.c - kernel_info_reply, on shell and control (jupyter_server nudges
 * both). Says protocol 5.4, names the language and implementation "kiln" (the
 * implementation carries the build's version, the language its own), and gives
 * editors Python highlighting: the cell language is a Python subset plus magics. */
#include "jk_internal.h"
#include "kiln_config.h"

void jkp_handle_kernel_info(jkp_chan *ch, const jkp_msg *req)
{
    json_t *content =
        json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:s, s:b, "
                  "s:[]}",
                  "status", "ok", "protocol_version", JKP_PROTOCOL_VERSION, "implementation",
                  "kiln", "implementation_version", KILN_VERSION, "language_info", "name", "kiln",
                  "version", JKP_LANGUAGE_VERSION, "mimetype", "text/x-kiln", "file_extension",
                  ".kiln", "pygments_lexer", "python", "codemirror_mode", "python",
                  "nbconvert_exporter", "script", "banner",
                  "Kiln " KILN_VERSION " - a native Jupyter kernel for training CNNs.\n"
                  "%lsmagic lists the magics; NAME? shows help.",
                  "debugger", 0, "help_links"); /* no public home page yet: no links */
    if (!content) jkp_log("kernel_info_reply: cannot build the content");
    jkp_reply(ch->sock, &ch->k->session, req, "kernel_info_reply", NULL, content);
}
