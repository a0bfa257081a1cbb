/* jk_comm.c - comms: the registry of open comm ids and their targets, comm_info_request,
 * and comm_open / comm_msg / comm_close from the frontend.
 *
 * Frontend messages go to the engine (kl_engine_comm_msg), whose widgets answer through
 * an mg_out with the comm message as parent. A comm_open for a target the engine does
 * not serve is answered with a comm_close on IOPub (what ipykernel does), so the
 * frontend does not wait on a dead comm. Comms the kernel opens (jk_outputs.c) are
 * registered too, so comm_info lists both kinds. Shell thread only: no locking.
 */
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"
#include "kl.h"
#include "mg.h"

typedef struct comm_entry {
    char *id, *target;
} comm_entry;

struct jkp_comms {
    comm_entry *v;
    size_t n, cap;
};

jkp_comms *jkp_comms_create(void) { return calloc(1, sizeof(jkp_comms)); }

void jkp_comms_destroy(jkp_comms *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].id);
        free(c->v[i].target);
    }
    free(c->v);
    free(c);
}

static comm_entry *find(const jkp_comms *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].id, id)) return &c->v[i];
    return NULL;
}

int jkp_comms_add(jkp_comms *c, const char *comm_id, const char *target_name)
{
    if (!comm_id || find(c, comm_id)) return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        comm_entry *v = realloc(c->v, cap * sizeof *v);
        if (!v) return -1;
        c->v = v;
        c->cap = cap;
    }
    comm_entry e = {strdup(comm_id), strdup(target_name ? target_name : "")};
    if (!e.id || !e.target) {
        free(e.id);
        free(e.target);
        return -1;
    }
    c->v[c->n++] = e;
    return 0;
}

void jkp_comms_remove(jkp_comms *c, const char *comm_id)
{
    comm_entry *e = comm_id ? find(c, comm_id) : NULL;
    if (!e) return;
    free(e->id);
    free(e->target);
    *e = c->v[--c->n];
}

json_t *jkp_comms_info(const jkp_comms *c, const char *target)
{
    json_t *out = json_object();
    for (size_t i = 0; i < c->n && out; i++)
        if (!target || !strcmp(target, c->v[i].target))
            json_object_set_new(out, c->v[i].id, json_pack("{s:s}", "target_name", c->v[i].target));
    return out;
}

void jkp_handle_comm_info(jkp_chan *ch, const jkp_msg *req)
{
    const char *target = json_string_value(json_object_get(req->content, "target_name"));
    json_t *comms = jkp_comms_info(ch->k->comms, target);
    jkp_reply(ch->sock, &ch->k->session, req, "comm_info_reply", NULL,
              json_pack("{s:s, s:o}", "status", "ok", "comms", comms ? comms : json_object()));
}

void jkp_handle_comm_frontend(jkp_chan *ch, const jkp_msg *req)
{
    jkp_kernel *k = ch->k;
    const char *id = json_string_value(json_object_get(req->content, "comm_id"));
    if (!id) {
        jkp_log("%s without a comm_id ignored", req->msg_type);
        return;
    }
    jkp_exec x = {ch, req, 0, 0, k->execution_count, NULL};
    mg_out out;
    jkp_outputs_init(&out, &x);
    atomic_store(&k->interrupt, 0);
    int rc = kl_engine_comm_msg(k->engine, req->msg_type, req->content, &out);
    free(x.result_text);
    if (!strcmp(req->msg_type, "comm_open")) {
        const char *target = json_string_value(json_object_get(req->content, "target_name"));
        if (rc == 0) {
            if (jkp_comms_add(k->comms, id, target) != 0) jkp_log("comm %s: out of memory", id);
            return;
        }
        jkp_log("comm_open: no comm target '%.64s' registered; closing %.64s",
                target ? target : "(none)", id);
        jkp_publish(ch->iopub, "comm_close", req->header, NULL,
                    json_pack("{s:s, s:{}}", "comm_id", id, "data"));
    } else if (!strcmp(req->msg_type, "comm_close")) {
        jkp_comms_remove(k->comms, id);
    } else if (rc != 0) {
        jkp_log("comm_msg for unknown comm %.64s ignored", id);
    }
}
