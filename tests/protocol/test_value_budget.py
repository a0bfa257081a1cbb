"""The cell language's values have a total budget (256 MiB unless KILN_VALUE_BUDGET
says otherwise): a cell that builds 1.2 GB of strings out of 60 MB pieces, each far
under the per-operation limit, fails with a MemoryError naming the budget and the
setting, the kernel's memory stays bounded, and the next cell runs."""
import threading

from kiln_client import execute, outputs
from test_wire_limits import RSS_BOUNDS, sampler

MiB = 1 << 20
PIECES = 20  # 20 x 60 MB: the 1.2 GB the review's kernel held without a word


def test_many_strings_pass_the_budget_and_the_kernel_goes_on(fresh_kernel):
    reply, _ = execute(fresh_kernel.kc, "warm = 1", timeout=60)
    assert reply["content"]["status"] == "ok"
    idle = fresh_kernel.rss_kib()
    stop, peak = threading.Event(), [idle]
    t = threading.Thread(target=sampler, args=(fresh_kernel.pid, stop, peak))
    t.start()
    code = "s = 'x' * 60_000_000\n" + "".join(f"a{i} = s + '{i}'\n" for i in range(PIECES))
    try:
        reply, msgs = execute(fresh_kernel.kc, code, timeout=120)
    finally:
        stop.set()
        t.join()
    content = reply["content"]
    assert content["status"] == "error", content
    assert content["ename"] == "MemoryError"
    assert "budget of 256 MiB" in content["evalue"]
    assert "KILN_VALUE_BUDGET" in content["evalue"]
    err = outputs(msgs, "error")
    assert err and err[0]["ename"] == "MemoryError"
    print(f"{PIECES} x 60 MB: idle {idle} KiB, peak {peak[0]} KiB ({content['evalue']})")
    if RSS_BOUNDS:
        # the budget, plus one operation's working copy, plus the allocator's slack
        assert peak[0] - idle < 400 * 1024, (idle, peak[0])

    # the kernel serves; what fitted was kept, and deleting it gives the room back
    reply, msgs = execute(fresh_kernel.kc, "len(a0)", timeout=60)
    assert reply["content"]["status"] == "ok"
    assert outputs(msgs, "execute_result")[0]["data"]["text/plain"] == "60000001"
    reply, msgs = execute(fresh_kernel.kc, "del a0, a1, a2\nb = s + 'b'\nlen(b)", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert outputs(msgs, "execute_result")[0]["data"]["text/plain"] == "60000001"
    if RSS_BOUNDS:
        assert fresh_kernel.rss_kib() - idle < 400 * 1024
