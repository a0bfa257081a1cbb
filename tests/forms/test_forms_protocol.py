"""Colab-style forms through the real kernel (jupyter_client, ipywidgets protocol 2.1).

Needs JUPYTER_PATH pointing at the build's test kernelspec (meson sets it). Checks:
each @param type opens the right widget model (state keys equal to what ipywidgets
8 itself syncs, when ipywidgets is installed); layouts/styles open before the
widgets that use them and everything before the display_data; a comm_msg "update"
changes the variable the next cell sees, with an echo_update whose parent is that
comm_msg and busy/idle around it; bad updates (wrong type, out of range, unknown
model) change nothing and the kernel stays fine; request_state answers with the
full state; re-running the cell closes the old form and restores the code's values;
a malformed annotation is a SyntaxError naming the line.
"""
import json
import os
import queue
import re
import subprocess
import time

import pytest
from jupyter_client.manager import start_new_kernel

import kiln_client
from kiln_client import iopub_for

KERNEL = os.environ.get("KILN_KERNEL_NAME", "kiln")
TIMEOUT = 30

FORM = """#@title Protocol form { display-mode: "form" }
#@markdown Some **markdown**.
epochs = 10  #@param {type:"slider", min:1, max:50, step:1}
rate = 0.5  #@param {type:"slider", min:0, max:1, step:0.1}
lr = 0.001  #@param {type:"number"}
steps = 100  #@param {type:"integer"}
run_name = "mnist"  #@param {type:"string"}
augment = False  #@param {type:"boolean"}
start = "2024-09-19"  #@param {type:"date"}
milestones = [30, 60]  #@param {type:"raw"}
batch = 64  #@param [32, 64, 128] {type:"raw"}
optimizer = "adam"  #@param ["adam", "sgd", "adamw"]
arch = "resnet"  #@param ["resnet", "vgg"] {allow-input: true}
"""

CELL_ID = "forms-protocol-cell"


@pytest.fixture(scope="module")
def kernel():
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def execute(kc, code, cell_id=CELL_ID):
    """(reply, iopub messages) of code run as the cell cell_id. Replies to other requests
    may only be stale kernel_info_replies: on a slow start (valgrind, a loaded CI box)
    wait_for_ready sends a kernel_info_request every second and leaves the extra replies
    queued."""
    return kiln_client.execute(kc, code, TIMEOUT, metadata={"cellId": cell_id} if cell_id else {},
                               stale=("kernel_info_reply",))


def comm_msg(kc, comm_id, data):
    msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    kc.shell_channel.send(msg)
    msgs = iopub_for(kc, msg["header"]["msg_id"], TIMEOUT)
    return msg, msgs


def value_of(kc, name):
    """The text/plain repr of variable `name` as the next cell sees it."""
    reply, msgs = execute(kc, name, cell_id="probe")
    assert reply["content"]["status"] == "ok", reply["content"]
    res = [m for m in msgs if m["msg_type"] == "execute_result"]
    assert res, [m["msg_type"] for m in msgs]
    return res[0]["content"]["data"]["text/plain"]


def opens(msgs):
    return [m for m in msgs if m["msg_type"] == "comm_open"]


def by_model(msgs, name, n=0):
    found = [m for m in opens(msgs) if m["content"]["data"]["state"]["_model_name"] == name]
    return found[n]


@pytest.fixture(scope="module")
def shown(kernel):
    reply, msgs = execute(kernel, FORM)
    assert reply["content"]["status"] == "ok", reply["content"]
    return msgs


def test_busy_first_idle_last(shown):
    assert shown[0]["msg_type"] == "status" and shown[0]["content"]["execution_state"] == "busy"
    assert shown[-1]["content"]["execution_state"] == "idle"


def test_comm_open_order_and_protocol(shown):
    seen = set()
    for m in shown:
        if m["msg_type"] == "display_data":
            break
        if m["msg_type"] != "comm_open":
            continue
        c = m["content"]
        assert c["target_name"] == "jupyter.widget"
        assert m["metadata"]["version"] == "2.1.0"
        assert c["data"]["buffer_paths"] == []
        st = c["data"]["state"]
        for v in st.values():   # every reference names a model opened before
            refs = v if isinstance(v, list) else [v]
            for r in refs:
                if isinstance(r, str) and r.startswith("IPY_MODEL_"):
                    assert r[10:] in seen, f"{st['_model_name']} references {r} before its open"
        seen.add(c["comm_id"])
    displays = [m for m in shown if m["msg_type"] == "display_data"]
    assert len(displays) == 1
    data = displays[0]["content"]["data"]
    view = data["application/vnd.jupyter.widget-view+json"]
    assert view["version_major"] == 2 and view["version_minor"] == 0
    assert by_model(shown, "VBoxModel")["content"]["comm_id"] == view["model_id"]
    assert re.search(r"epochs +=  ?10\n", data["text/plain"])
    idx = shown.index(displays[0])
    assert all(m["msg_type"] != "comm_open" for m in shown[idx:])


EXPECTED = [
    ("IntSliderModel", 0, {"value": 10, "min": 1, "max": 50, "step": 1}),
    ("FloatSliderModel", 0, {"value": 0.5, "min": 0.0, "max": 1.0, "step": 0.1}),
    ("FloatTextModel", 0, {"value": 0.001}),
    ("IntTextModel", 0, {"value": 100}),
    ("TextModel", 0, {"value": "mnist"}),
    ("CheckboxModel", 0, {"value": False}),
    ("DatePickerModel", 0, {"value": {"year": 2024, "month": 8, "date": 19}}),
    ("TextModel", 1, {"value": "[30, 60]"}),
    ("DropdownModel", 0, {"_options_labels": ["32", "64", "128"], "index": 1}),
    ("DropdownModel", 1, {"_options_labels": ["adam", "sgd", "adamw"], "index": 0}),
    ("ComboboxModel", 0, {"options": ["resnet", "vgg"], "value": "resnet"}),
]


@pytest.mark.parametrize("model,n,want", EXPECTED, ids=[f"{m}{n}" for m, n, _ in EXPECTED])
def test_each_type_state(shown, model, n, want):
    st = by_model(shown, model, n)["content"]["data"]["state"]
    assert st["_model_module"] == "@jupyter-widgets/controls"
    assert st["_model_module_version"] == "2.0.0"
    assert st["_view_module_version"] == "2.0.0"
    assert st["_view_name"] == model.replace("Model", "View")
    for k, v in want.items():
        assert st[k] == pytest.approx(v) if isinstance(v, float) else st[k] == v, (k, st[k])


def test_states_match_ipywidgets(shown):
    widgets = pytest.importorskip("ipywidgets")
    owners = {"SliderStyleModel": widgets.IntSlider, "DescriptionStyleModel": widgets.IntText,
              "TextStyleModel": widgets.Text, "CheckboxStyleModel": widgets.Checkbox,
              "LabelStyleModel": widgets.Label, "HTMLStyleModel": widgets.HTML}
    for m in opens(shown):
        st = m["content"]["data"]["state"]
        name = st["_model_name"]
        if name == "LayoutModel":
            ref = widgets.Layout()
        elif name in owners:
            ref = owners[name]().style
        else:
            ref = getattr(widgets, name[:-len("Model")])()
        ref_state = ref.get_state()
        assert set(st) == set(ref_state), (name, set(st) ^ set(ref_state))
        for k in ("_model_module", "_model_module_version", "_view_module",
                  "_view_module_version", "_view_name"):
            assert st[k] == ref_state[k], (name, k)


def test_update_changes_variable(kernel, shown):
    slider = by_model(shown, "IntSliderModel")["content"]["comm_id"]
    req, msgs = comm_msg(kernel, slider, {"method": "update", "state": {"value": 20},
                                          "buffer_paths": []})
    assert msgs[0]["content"]["execution_state"] == "busy"
    echoes = [m for m in msgs if m["msg_type"] == "comm_msg"
              and m["content"]["data"]["method"] == "echo_update"]
    assert echoes and echoes[0]["content"]["data"]["state"] == {"value": 20}
    assert echoes[0]["parent_header"]["msg_id"] == req["header"]["msg_id"]
    assert value_of(kernel, "epochs") == "20"

    dropdown = by_model(shown, "DropdownModel", 1)["content"]["comm_id"]
    comm_msg(kernel, dropdown, {"method": "update", "state": {"index": 1}, "buffer_paths": []})
    assert value_of(kernel, "optimizer") == "'sgd'"
    raw = by_model(shown, "DropdownModel", 0)["content"]["comm_id"]
    comm_msg(kernel, raw, {"method": "update", "state": {"index": 2}, "buffer_paths": []})
    assert value_of(kernel, "batch") == "128"
    check = by_model(shown, "CheckboxModel")["content"]["comm_id"]
    comm_msg(kernel, check, {"method": "update", "state": {"value": True}, "buffer_paths": []})
    assert value_of(kernel, "augment") == "True"
    date = by_model(shown, "DatePickerModel")["content"]["comm_id"]
    comm_msg(kernel, date, {"method": "update", "state": {"value": {"year": 2025, "month": 0,
                                                                    "date": 31}},
                            "buffer_paths": []})
    assert value_of(kernel, "start") == "'2025-01-31'"
    text = by_model(shown, "TextModel", 1)["content"]["comm_id"]
    comm_msg(kernel, text, {"method": "update", "state": {"value": "[1, 2, 3]"},
                            "buffer_paths": []})
    assert value_of(kernel, "milestones") == "[1, 2, 3]"


@pytest.mark.parametrize("model,n,state,var", [
    ("IntSliderModel", 0, {"value": 99}, "epochs"),
    ("IntSliderModel", 0, {"value": "7"}, "epochs"),
    ("FloatSliderModel", 0, {"value": 1.5}, "rate"),
    ("IntTextModel", 0, {"value": 2.5}, "steps"),
    ("DropdownModel", 1, {"index": 9}, "optimizer"),
    ("CheckboxModel", 0, {"value": "yes"}, "augment"),
    ("DatePickerModel", 0, {"value": {"year": 2025, "month": 1, "date": 30}}, "start"),
])
def test_bad_update_refused(kernel, shown, model, n, state, var):
    before = value_of(kernel, var)
    cid = by_model(shown, model, n)["content"]["comm_id"]
    req, msgs = comm_msg(kernel, cid, {"method": "update", "state": state, "buffer_paths": []})
    reverts = [m for m in msgs if m["msg_type"] == "comm_msg"
               and m["content"]["data"]["method"] == "update"]
    assert reverts, "the kernel sends the value it kept"
    assert value_of(kernel, var) == before


def test_unknown_model_refused(kernel):
    before = value_of(kernel, "epochs")
    comm_msg(kernel, "no-such-model-id", {"method": "update", "state": {"value": 3},
                                          "buffer_paths": []})
    assert value_of(kernel, "epochs") == before
    kernel.kernel_info()
    assert kernel.get_shell_msg(timeout=TIMEOUT)["msg_type"] == "kernel_info_reply"


def test_request_state(kernel, shown):
    cid = by_model(shown, "ComboboxModel")["content"]["comm_id"]
    req, msgs = comm_msg(kernel, cid, {"method": "request_state"})
    ups = [m for m in msgs if m["msg_type"] == "comm_msg"]
    assert ups and ups[0]["content"]["data"]["method"] == "update"
    st = ups[0]["content"]["data"]["state"]
    assert st["_model_name"] == "ComboboxModel" and st["options"] == ["resnet", "vgg"]
    assert ups[0]["parent_header"]["msg_id"] == req["header"]["msg_id"]


def test_rerun_writes_widget_values_into_the_code(kernel, shown):
    """Re-running the form cell as it was keeps the values set in the widgets and writes
    them into the cell (set_next_input, replace: true), as Colab does: they used to be
    reset to the code's, so a later restart lost them. Edited code wins."""
    slider = by_model(shown, "IntSliderModel")["content"]["comm_id"]
    comm_msg(kernel, slider, {"method": "update", "state": {"value": 33}, "buffer_paths": []})
    text = by_model(shown, "TextModel")["content"]["comm_id"]  # run_name, the first text
    comm_msg(kernel, text, {"method": "update", "state": {"value": 'a "b"'},
                            "buffer_paths": []})
    assert value_of(kernel, "epochs") == "33"
    reply, msgs = execute(kernel, FORM)
    assert reply["content"]["status"] == "ok"
    closed = {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}
    assert slider in closed
    assert {m["content"]["comm_id"] for m in opens(shown)} <= closed
    payload = reply["content"]["payload"]
    assert len(payload) == 1 and payload[0]["source"] == "set_next_input"
    assert payload[0]["replace"] is True
    code = payload[0]["text"]
    lines = code.splitlines()
    assert 'epochs = 33  #@param {type:"slider", min:1, max:50, step:1}' in lines, code
    assert 'run_name = "a \\"b\\""  #@param {type:"string"}' in lines, code
    assert len(lines) == len(FORM.splitlines()) and lines[0] == FORM.splitlines()[0]
    assert value_of(kernel, "epochs") == "33"
    assert value_of(kernel, "run_name") == "'a \"b\"'"
    assert by_model(msgs, "IntSliderModel")["content"]["data"]["state"]["value"] == 33
    # the written code run again: nothing to write; the values stay
    reply, msgs = execute(kernel, code)
    assert reply["content"]["payload"] == [] and value_of(kernel, "epochs") == "33"
    # code edited by hand wins over the widgets
    reply, msgs = execute(kernel, code.replace("epochs = 33", "epochs = 12"))
    assert reply["content"]["payload"] == [] and value_of(kernel, "epochs") == "12"
    reply, msgs = execute(kernel, FORM)  # the original code again, for the tests below
    assert value_of(kernel, "epochs") == "10"


def test_forms_become_tables_when_the_kernel_exits():
    """On shutdown (and restart) each live form's display is replaced by its text/HTML
    table of the current values, so a notebook saved then never shows "Error displaying
    widget: model not found"."""
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    try:
        reply, msgs = execute(kc, FORM)
        assert reply["content"]["status"] == "ok"
        disp = [m for m in msgs if m["msg_type"] == "display_data"]
        assert len(disp) == 1
        did = disp[0]["content"]["transient"]["display_id"]
        slider = by_model(msgs, "IntSliderModel")["content"]["comm_id"]
        root = by_model(msgs, "VBoxModel")["content"]["comm_id"]
        comm_msg(kc, slider, {"method": "update", "state": {"value": 44}, "buffer_paths": []})
        kc.shutdown()
        ups, deadline = [], time.time() + TIMEOUT
        while not ups and time.time() < deadline:
            try:
                m = kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            if m["msg_type"] == "update_display_data":
                ups.append(m)
        assert ups, "no update_display_data before the kernel exited"
        c = ups[0]["content"]
        assert c["transient"]["display_id"] == did
        assert "application/vnd.jupyter.widget-view+json" not in c["data"]
        assert "epochs" in c["data"]["text/plain"] and "44" in c["data"]["text/plain"]
        assert "<table" in c["data"]["text/html"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _request_states(kc, comm_id):
    """Opens jupyter.widget.control as JupyterLab does after a page reload and returns
    the states its request_states answer holds."""
    open_msg = kc.session.msg("comm_open", {"comm_id": comm_id, "target_name":
                                            "jupyter.widget.control", "data": {}},
                              metadata={"version": "1.0.0"})
    kc.shell_channel.send(open_msg)
    iopub_for(kc, open_msg["header"]["msg_id"], TIMEOUT)
    req, msgs = comm_msg(kc, comm_id, {"method": "request_states"})
    ups = [m for m in msgs if m["msg_type"] == "comm_msg"]
    assert ups and ups[0]["content"]["data"]["method"] == "update_states"
    return ups[0]["content"]["data"]["states"]


def test_forms_carried_over_a_restart():
    """A page reloaded before a restart has no display ids left (and JupyterLab drops the
    old kernel's last messages when a person restarts it), so the old kernel cannot turn
    its forms into tables: the new kernel answers request_states with each form's root
    box holding one HTML widget, the table of the values set before the restart, and
    running the form cell again writes those values into its code, as a re-run before
    the restart would have."""
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    carry = km.connection_file + ".kiln-forms"
    try:
        reply, msgs = execute(kc, FORM, cell_id="carried")
        assert reply["content"]["status"] == "ok"
        slider = by_model(msgs, "IntSliderModel")["content"]["comm_id"]
        root = by_model(msgs, "VBoxModel")["content"]["comm_id"]
        drop = by_model(msgs, "DropdownModel", 1)["content"]["comm_id"]   # optimizer
        comm_msg(kc, slider, {"method": "update", "state": {"value": 37}, "buffer_paths": []})
        comm_msg(kc, drop, {"method": "update", "state": {"index": 1}, "buffer_paths": []})
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        assert not os.path.exists(carry), "the new kernel took the file in and removed it"
        states = _request_states(kc, "ctl-carried")
        assert slider not in states and drop not in states, "the table is carried, not controls"
        kids = states[root]["state"]["children"]
        assert len(kids) == 1 and states[root]["state"]["_dom_classes"] == ["kiln-carried"]
        table = states[kids[0][len("IPY_MODEL_"):]]
        assert table["model_name"] == "HTMLModel"
        html = table["state"]["value"]
        assert "<table" in html and "<code>37</code>" in html and "sgd" in html, html
        layout = table["state"]["layout"][len("IPY_MODEL_"):]
        assert states[layout]["model_name"] == "LayoutModel"  # every model it names is there
        assert value_of(kc, "1 + 1") == "2"
        # another cell with the same code is not that form: the code's values
        reply, _ = execute(kc, FORM, cell_id="other")
        assert reply["content"]["payload"] == [] and value_of(kc, "epochs") == "10"
        # the form's own cell: the values before the restart, written into the code
        reply, msgs = execute(kc, FORM, cell_id="carried")
        assert reply["content"]["status"] == "ok"
        payload = reply["content"]["payload"]
        assert len(payload) == 1 and payload[0]["replace"] is True
        lines = payload[0]["text"].splitlines()
        assert 'epochs = 37  #@param {type:"slider", min:1, max:50, step:1}' in lines
        assert 'optimizer = "sgd"   #@param ["adam", "sgd", "adamw"]' in lines, "\n".join(lines)
        assert value_of(kc, "epochs") == "37" and value_of(kc, "optimizer") == "'sgd'"
        closed = {m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_close"}
        assert root in closed, "the carried models are closed when the cell runs"
        states = _request_states(kc, "ctl-carried-2")
        assert root not in states
        # a plain shutdown hands nothing on
        kc.shutdown()
        km.finish_shutdown(waittime=30)
        assert not os.path.exists(carry)
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)


def test_malformed_forms_file_is_ignored():
    """A forms file that is not one (truncated, edited) carries nothing and says so; the
    kernel starts as usual."""
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    carry = km.connection_file + ".kiln-forms"
    try:
        for text in ('{"version": 1, "forms": [{"cell": 3}]}', '{"version": 1, "for'):
            kc.stop_channels()
            km.shutdown_kernel(now=False, restart=True)
            with open(carry, "w") as f:
                f.write(text)
            km.start_kernel()
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            assert not os.path.exists(carry)
            assert _request_states(kc, "ctl-bad") == {}
            assert value_of(kc, "1 + 1") == "2"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_malformed_annotation_names_line(kernel):
    reply, msgs = execute(kernel, 'malformed_a = 1\nmalformed_x = 5  #@param {type:"slidr"}\n',
                          cell_id="bad")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "SyntaxError"
    assert "line 2" in reply["content"]["evalue"]
    # the code still means what it says: both assignments ran
    assert value_of(kernel, "malformed_a") == "1"
    assert value_of(kernel, "malformed_x") == "5"
    assert value_of(kernel, "1 + 1") == "2"


def test_control_comm_request_states(kernel, shown):
    """What JupyterLab does after a page reload: open jupyter.widget.control and ask for
    every model's state in one message."""
    open_msg = kernel.session.msg("comm_open", {"comm_id": "ctl-1", "target_name":
                                                "jupyter.widget.control", "data": {}},
                                  metadata={"version": "1.0.0"})
    kernel.shell_channel.send(open_msg)
    msgs = iopub_for(kernel, open_msg["header"]["msg_id"], TIMEOUT)
    assert not [m for m in msgs if m["msg_type"] == "comm_close"], "control target refused"
    req, msgs = comm_msg(kernel, "ctl-1", {"method": "request_states"})
    ups = [m for m in msgs if m["msg_type"] == "comm_msg"]
    assert ups and ups[0]["content"]["data"]["method"] == "update_states"
    states = ups[0]["content"]["data"]["states"]
    # (the fixture's form may have been replaced by the re-run test: any live IntSlider)
    sliders = [s for s in states.values() if s["model_name"] == "IntSliderModel"]
    assert len(sliders) == 1 and sliders[0]["model_module"] == "@jupyter-widgets/controls"
    assert sliders[0]["state"]["max"] == 50
    info = kernel.session.msg("comm_info_request", {"target_name": "jupyter.widget"})
    kernel.shell_channel.send(info)
    while True:   # skip stale kernel_info_replies (see execute)
        reply = kernel.get_shell_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == info["header"]["msg_id"]:
            break
        assert reply["msg_type"] == "kernel_info_reply", reply["msg_type"]
    comms = reply["content"]["comms"]
    assert set(states) <= set(comms), "comm_info lists every live widget model"


def _kiln_binary():
    for d in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
        spec = os.path.join(d, "kernels", "kiln", "kernel.json")
        if d and os.path.exists(spec):
            with open(spec) as f:
                return json.load(f)["argv"][0]
    pytest.skip("no kiln test kernelspec on JUPYTER_PATH")


def _stage(tmp_path, tags=("parameters",)):
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "kiln", "display_name": "Kiln", "language": "kiln"}},
          "cells": [{"cell_type": "code", "id": "form", "metadata": {"tags": list(tags)},
                     "source": FORM, "outputs": [], "execution_count": None},
                    {"cell_type": "code", "id": "show", "metadata": {},
                     "source": "print(epochs, optimizer)", "outputs": [],
                     "execution_count": None}]}
    path = tmp_path / "stage.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_kiln_run_fallback_and_saved_state(tmp_path):
    kiln = _kiln_binary()
    src = _stage(tmp_path)
    out = tmp_path / "out.ipynb"
    run = subprocess.run([kiln, "run", str(src), "-o", str(out), "-p", "epochs", "20",
                          "-p", "optimizer", "sgd"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    nb = json.loads(out.read_text())
    form_out = [o for c in nb["cells"] if c.get("id") == "form" for o in c["outputs"]]
    data = form_out[0]["data"]
    assert "text/html" in data and "<table>" in "".join(data["text/html"])
    assert re.search(r"epochs +=  ?10\n", "".join(data["text/plain"]))
    view = data["application/vnd.jupyter.widget-view+json"]
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    assert state["version_major"] == 2 and view["model_id"] in state["state"]
    printed = "".join(o.get("text", "") for c in nb["cells"] for o in c["outputs"]
                      if o["output_type"] == "stream")
    assert "20 sgd" in printed


@pytest.mark.parametrize("name,value,words", [
    ("epochs", "99", "outside the range"), ("optimizer", "rmsprop", "not one of"),
    ("start", "2024-02-30", "date"), ("steps", "ten", "not a number")])
def test_kiln_run_bad_parameter(tmp_path, name, value, words):
    kiln = _kiln_binary()
    src = _stage(tmp_path)
    run = subprocess.run([kiln, "run", str(src), "-o", str(tmp_path / "o.ipynb"), "-p", name,
                          value], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert words in run.stderr and name in run.stderr


def test_kiln_run_overrides_untagged_form_cell(tmp_path):
    kiln = _kiln_binary()
    src = _stage(tmp_path, tags=())
    out = tmp_path / "out.ipynb"
    run = subprocess.run([kiln, "run", str(src), "-o", str(out), "-p", "epochs", "20"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    nb = json.loads(out.read_text())
    printed = "".join(o.get("text", "") for c in nb["cells"] for o in c["outputs"]
                      if o["output_type"] == "stream")
    assert "20 adam" in printed
