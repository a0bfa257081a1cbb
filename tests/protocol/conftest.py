"""Fixtures of the protocol tests: a kernel shared by a test module, and a fresh one for
a test (tests/support/kiln_client.py starts them)."""
import pytest
from kiln_client import Kernel


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    yield k
    k.close()


@pytest.fixture
def fresh_kernel():
    k = Kernel()
    yield k
    k.close()
