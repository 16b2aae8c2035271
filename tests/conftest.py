"""pytest setup for every Python test under tests/: the shared helpers in tests/support/ are importable
by name (`from oracles import check_grads`, `from fd_inputs import ...`), and the shared fixtures."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(params=["double_vjp", "forward_ad"])
def fwd_impl(request, monkeypatch):
    """Runs a test once per engine of tg.func's forward products: the double-vjp construction and
    forward_ad's dual tensors (``tapegrad.autograd.functional._FORWARD_IMPL``)."""
    from tapegrad.autograd import functional

    monkeypatch.setattr(functional, "_FORWARD_IMPL", request.param)
    return request.param
