"""Grad-mode decorators beyond PyTorch's own tests (tests/torch_suite/test_autograd/test_grad_mode.py): coroutines
(``async def``), return values of generators, ``set_grad_enabled`` on generators, and what the
decorated function looks like. Oracle: ``tg.is_grad_enabled()`` inside and outside at each step.
"""

import inspect
import types

import pytest

import tapegrad as tg


@types.coroutine
def _suspend():
    """Hands control back to whoever drives the coroutine, and returns what it is sent."""
    return (yield "suspended")


@pytest.mark.parametrize("mode,inside,outer", [(tg.no_grad, False, tg.enable_grad), (tg.enable_grad, True, tg.no_grad)])
def test_async_function_keeps_the_mode_across_await(mode, inside, outer):
    seen = []

    @mode()
    async def work(n):
        for _ in range(n):
            seen.append(tg.is_grad_enabled())
            got = await _suspend()
            seen.append(tg.is_grad_enabled())
            assert got == "resume"
        return "done"

    assert inspect.iscoroutinefunction(work)
    with outer():
        outside = tg.is_grad_enabled()
        coro = work(3)
        assert coro.send(None) == "suspended"
        assert tg.is_grad_enabled() == outside
        for _ in range(2):
            assert coro.send("resume") == "suspended"
            assert tg.is_grad_enabled() == outside
        with pytest.raises(StopIteration) as stop:
            coro.send("resume")
        assert stop.value.value == "done"
        assert tg.is_grad_enabled() == outside
    assert seen == [inside] * 6


def test_async_function_sees_thrown_exceptions_in_its_mode():
    @tg.no_grad()
    async def work():
        try:
            await _suspend()
        except KeyError:
            return tg.is_grad_enabled()

    coro = work()
    coro.send(None)
    with pytest.raises(StopIteration) as stop:
        coro.throw(KeyError("x"))
    assert stop.value.value is False
    assert tg.is_grad_enabled()


def test_generator_return_value_and_yield_from():
    @tg.no_grad()
    def inner():
        yield tg.is_grad_enabled()
        return "inner result"

    def outer():
        result = yield from inner()
        yield result

    assert inspect.isgeneratorfunction(inner)
    assert list(outer()) == [False, "inner result"]


def test_set_grad_enabled_decorates_generators():
    @tg.set_grad_enabled(False)
    def gen():
        for _ in range(3):
            yield tg.is_grad_enabled()

    assert tg.is_grad_enabled()  # decorating does not change the mode
    seen = []
    for inside in gen():
        seen.append((inside, tg.is_grad_enabled()))
    assert seen == [(False, True)] * 3


def test_generator_closed_before_it_starts():
    @tg.no_grad()
    def gen():
        yield 1

    g = gen()
    g.close()
    assert tg.is_grad_enabled()


@pytest.mark.parametrize("spelling", ["bare", "parens"])
def test_decorated_function_keeps_its_name_and_the_callers_mode(spelling):
    def doubler(t):
        """Doc."""
        return t * 2

    wrapped = tg.no_grad(doubler) if spelling == "bare" else tg.no_grad()(doubler)
    assert wrapped.__name__ == "doubler" and wrapped.__doc__ == "Doc."
    x = tg.ones(2, requires_grad=True)
    assert not wrapped(x).requires_grad
    assert tg.is_grad_enabled()


def test_exception_in_decorated_function_restores_the_mode():
    @tg.no_grad()
    def fails():
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        fails()
    assert tg.is_grad_enabled()


@pytest.mark.parametrize("mode", [1, 0, 1.0, None, "yes"])
def test_set_grad_enabled_needs_a_bool(mode):
    """PyTorch: set_grad_enabled(1) is a TypeError (must be bool); the mode is left unchanged."""
    with pytest.raises(TypeError, match="must be bool"):
        tg.set_grad_enabled(mode)
    assert tg.is_grad_enabled()


def test_set_grad_enabled_refuses_a_function():
    def fn():
        pass

    with pytest.raises(TypeError, match="must be bool"):
        tg.set_grad_enabled(fn)


def test_decorating_a_non_callable_is_refused():
    with pytest.raises(TypeError, match="needs a function"):
        tg.no_grad()(3)
