/* test_connection.c - jk_connection.c: tcp and ipc files, endpoints, and an error that
 * names the field for every kind of bad or missing input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jk_internal.h"
#include "t.h"

#define PORTS                                                            \
    "\"shell_port\": 5001, \"iopub_port\": 5002, \"stdin_port\": 5003, " \
    "\"control_port\": 5004, \"hb_port\": 5005"

T_TEST(tcp_file)
{
    jkp_connection c;
    jk_error err;
    const char *text = "{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\", " PORTS
                       ", \"signature_scheme\": \"hmac-sha256\", \"key\": \"a0436f6c-19\","
                       " \"kernel_name\": \"kiln\", \"curve_publickey\": null}";
    ASSERT_EQ(jkp_connection_parse(text, &c, &err), 0);
    ASSERT_STR_EQ(c.transport, "tcp");
    ASSERT_STR_EQ(c.ip, "127.0.0.1");
    ASSERT_EQ(c.ports[JKP_SHELL], 5001);
    ASSERT_EQ(c.ports[JKP_IOPUB], 5002);
    ASSERT_EQ(c.ports[JKP_STDIN], 5003);
    ASSERT_EQ(c.ports[JKP_CONTROL], 5004);
    ASSERT_EQ(c.ports[JKP_HB], 5005);
    ASSERT_STR_EQ(c.scheme, "hmac-sha256");
    ASSERT_STR_EQ(c.key, "a0436f6c-19");
    ASSERT_EQ(c.keylen, 11);
    char ep[128];
    ASSERT_EQ(jkp_connection_endpoint(&c, JKP_CONTROL, ep, sizeof ep), 0);
    ASSERT_STR_EQ(ep, "tcp://127.0.0.1:5004");
    ASSERT_EQ(jkp_connection_endpoint(&c, JKP_CONTROL, ep, 8), -1); /* too small */
    jkp_connection_deinit(&c);
}

T_TEST(ipc_file_and_defaults)
{
    jkp_connection c;
    jk_error err;
    const char *text =
        "{\"transport\": \"ipc\", \"ip\": \"/tmp/kiln-test\", " PORTS ", \"key\": \"\"}";
    ASSERT_EQ(jkp_connection_parse(text, &c, &err), 0);
    ASSERT_STR_EQ(c.scheme, "hmac-sha256"); /* default */
    ASSERT_EQ(c.keylen, 0);
    char ep[128];
    ASSERT_EQ(jkp_connection_endpoint(&c, JKP_HB, ep, sizeof ep), 0);
    ASSERT_STR_EQ(ep, "ipc:///tmp/kiln-test-5005");
    jkp_connection_deinit(&c);
    /* transport absent = tcp */
    ASSERT_EQ(jkp_connection_parse("{\"ip\": \"0.0.0.0\", " PORTS ", \"key\": \"k\"}", &c, &err),
              0);
    ASSERT_STR_EQ(c.transport, "tcp");
    jkp_connection_deinit(&c);
}

/* Each bad file gives an error mentioning `want`. */
static int fails_with(const char *text, const char *want)
{
    jkp_connection c;
    jk_error err = {{0}};
    int rc = jkp_connection_parse(text, &c, &err);
    if (rc == 0) {
        jkp_connection_deinit(&c);
        fprintf(stderr, "  accepted: %s\n", text);
        return 0;
    }
    if (!strstr(err.msg, want)) {
        fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err.msg, want);
        return 0;
    }
    return c.key == NULL; /* nothing leaked or half-filled */
}

T_TEST(missing_and_bad_fields)
{
    ASSERT(fails_with("{\"ip\": \"127.0.0.1\", \"shell_port\": 1, \"iopub_port\": 2, "
                      "\"stdin_port\": 3, \"control_port\": 4, \"key\": \"k\"}",
                      "hb_port"));
    ASSERT(fails_with("{" PORTS ", \"key\": \"k\"}", "\"ip\""));
    ASSERT(fails_with("{\"ip\": \"127.0.0.1\", " PORTS "}", "\"key\""));
    ASSERT(
        fails_with("{\"ip\": \"127.0.0.1\", " PORTS ", \"key\": 5}", "\"key\" must be a string"));
    ASSERT(fails_with("{\"ip\": 127, " PORTS ", \"key\": \"k\"}", "\"ip\" must be a string"));
    ASSERT(fails_with("{\"ip\": \"\", " PORTS ", \"key\": \"k\"}", "\"ip\" is empty"));
    ASSERT(fails_with("{\"transport\": \"udp\", \"ip\": \"x\", " PORTS ", \"key\": \"k\"}", "udp"));
    ASSERT(fails_with("{\"ip\": \"x\", \"shell_port\": \"5001\", \"iopub_port\": 2, "
                      "\"stdin_port\": 3, \"control_port\": 4, \"hb_port\": 5, \"key\": \"k\"}",
                      "\"shell_port\" must be an integer"));
    ASSERT(fails_with("{\"ip\": \"x\", \"shell_port\": 70000, \"iopub_port\": 2, "
                      "\"stdin_port\": 3, \"control_port\": 4, \"hb_port\": 5, \"key\": \"k\"}",
                      "70000"));
    ASSERT(fails_with("{\"ip\": \"x\", " PORTS ", \"key\": \"k\", \"signature_scheme\": 1}",
                      "signature_scheme"));
    ASSERT(fails_with("[1, 2]", "not a JSON object"));
    ASSERT(fails_with("{\"ip\": ", "invalid JSON"));
}

T_TEST(load_from_files)
{
    jkp_connection c;
    jk_error err;
    ASSERT_EQ(jkp_connection_load("/nonexistent/kiln-conn.json", &c, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "/nonexistent/kiln-conn.json");
    char path[] = "/tmp/kiln-conn-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"ip\": \"127.0.0.1\", " PORTS ", \"key\": \"abc\"}", f);
    fclose(f);
    int rc = jkp_connection_load(path, &c, &err);
    if (rc == 0) {
        ASSERT_STR_EQ(c.key, "abc");
        jkp_connection_deinit(&c);
    }
    f = fopen(path, "w");
    fputs("{\"ip\": \"127.0.0.1\", " PORTS "}", f);
    fclose(f);
    int rc2 = jkp_connection_load(path, &c, &err);
    unlink(path);
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(rc2, -1);
    ASSERT_STR_CONTAINS(err.msg, path);
    ASSERT_STR_CONTAINS(err.msg, "missing field \"key\"");
}

int main(void)
{
    T_RUN(tcp_file);
    T_RUN(ipc_file_and_defaults);
    T_RUN(missing_and_bad_fields);
    T_RUN(load_from_files);
    return T_EXIT();
}
