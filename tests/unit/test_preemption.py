"""The run loop's signal guard: SIGTERM, SIGUSR1 and a first Ctrl-C ask for a stop after the iteration; a second
Ctrl-C stops at once; handlers are given back on exit and an ignored SIGINT stays ignored."""

import os
import signal
import time

import pytest

from horde.train.session import PreemptionGuard


@pytest.fixture
def default_sigint():
    """Python's own Ctrl-C handler while the test runs (a test runner's worker may ignore SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.01)  # the handler runs here


def test_first_ctrl_c_asks_for_a_stop_and_the_second_stops_at_once(default_sigint):
    seen = []
    with PreemptionGuard(on_signal=seen.append) as guard:
        _send(signal.SIGINT)
        assert guard.requested and guard.signum == signal.SIGINT and seen == [signal.SIGINT]
        _send(signal.SIGTERM)  # a scheduler's signal on top: still one stop, one notice
        assert guard.signum == signal.SIGINT and seen == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            _send(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # given back: Ctrl-C is Python's again
        _send(signal.SIGINT)


def test_ctrl_c_after_a_preemption_signal_stops_at_once(default_sigint):
    previous = signal.getsignal(signal.SIGTERM)
    with PreemptionGuard() as guard:
        _send(signal.SIGUSR1)
        assert guard.requested and guard.signum == signal.SIGUSR1
        with pytest.raises(KeyboardInterrupt):
            _send(signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) == previous


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with PreemptionGuard() as guard:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            _send(signal.SIGINT)
            assert not guard.requested
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
