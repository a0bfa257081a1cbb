"""Helpers shared by the Python test suites (tests/pytest.ini puts this folder on
sys.path, so a test module imports it by name)."""
import contextlib
import os
import shutil
import tempfile


@contextlib.contextmanager
def results_tmpdir(prefix):
    """A temporary directory for a test module's runs, with the results store in it:
    KILN_RESULTS names results.sqlite there while the block runs; afterwards it is
    restored and the directory removed."""
    d = tempfile.mkdtemp(prefix=prefix)
    old = os.environ.get("KILN_RESULTS")
    os.environ["KILN_RESULTS"] = os.path.join(d, "results.sqlite")
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("KILN_RESULTS", None)
        else:
            os.environ["KILN_RESULTS"] = old
        shutil.rmtree(d, ignore_errors=True)
