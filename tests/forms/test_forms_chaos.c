/* test_forms_chaos.c - allocation-failure sweep (after jansson's test_chaos.c): fail
 * the n-th allocation (the forms code's and jansson's, through tests/support's
 * alloc_fail.h), for every n, while parsing a form, showing it, handling an update and
 * saving the widget state. Every step must end cleanly (a status, no crash), free
 * every block it took, and the kernel variable is either the old or the new value,
 * never garbage. */
#include "../t.h"
#include "alloc_fail.h"
#include "fm_fake.h"

/* Small on purpose: the sweep costs (allocations per round)^2. */
static const char *CODE = "#@title Chaos\n"
                          "epochs = 10  #@param {type:\"slider\", min:1, max:50}\n"
                          "optimizer = \"adam\"  #@param [\"adam\", \"sgd\"]\n";

/* One full round: parse, coerce, show, update, save. */
static void round_trip(int *t_failed_)
{
    fake fk;
    mg_host host;
    mg_out out;
    fake_init(&fk, &host, &out, 1);
    fm_registry *r = fm_registry_create();
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    if (r && fk.vars && fk.cap.log && fm_form_parse(CODE, &f, &err) == 0 && f) {
        json_t *cv = NULL;
        if (fm_form_coerce(f, "optimizer", "sgd", &cv, &err) == 1) json_decref(cv);
        json_object_set_new(fk.vars, "epochs", json_integer(10));
        json_t *meta = json_pack("{s:s}", "cellId", "x");
        if (fm_registry_show(r, f, meta, &host, &out, &err) == 0) {
            const char *id = NULL;
            if (fake_model(&fk, "IntSliderModel", 0, &id)) {
                char *cid = strdup(id);
                json_t *m = json_pack("{s:s,s:{s:s,s:{s:i},s:[]}}", "comm_id", cid, "data",
                                      "method", "update", "state", "value", 20, "buffer_paths");
                if (m) fm_registry_comm_msg(r, "comm_msg", m, &host, &out);
                json_decref(m);
                free(cid);
                json_t *v = json_object_get(fk.vars, "epochs");
                ASSERT(v == NULL || json_integer_value(v) == 10 || json_integer_value(v) == 20);
            }
            json_decref(fm_registry_widget_state(r));
        }
        json_decref(meta); /* f belongs to the registry now, shown or not */
    } else {
        fm_form_destroy(f);
    }
    fm_registry_destroy(r);
    fake_deinit(&fk);
}

T_TEST(every_allocation_may_fail)
{
    alloc_fail_arm(-1);
    round_trip(t_failed_);
    long total = 0;
    for (long n = 0;; n++) {
        long before = alloc_live;
        alloc_fail_arm(n);
        round_trip(t_failed_);
        int reached = alloc_fail_reached();
        alloc_fail_arm(-1);
        if (alloc_live != before)
            T_FAIL_("allocation %ld failed: %ld blocks leaked", n, alloc_live - before);
        if (!reached) { /* the round made fewer than n+1 */
            total = n;
            break;
        }
    }
    printf("  %ld allocation points swept\n", total);
    ASSERT(total > 200); /* the sweep really covered parse, show, update and save */
}

int main(void)
{
    json_set_alloc_funcs(__wrap_malloc, __wrap_free);
    T_RUN(every_allocation_may_fail);
    return T_EXIT();
}
