"""PyTorch's `test_autograd.py` tests of grad modes, carried over.

Covers part 1 of the file (characters 0-192000): `tg.no_grad`, `tg.enable_grad` as context managers and as
decorators (with and without parentheses) on functions, methods, classes, generators and coroutines, and
custom Functions under `no_grad`. Oracle: `tg.is_grad_enabled()` at each point and whether results have
history, as PyTorch defines them.
"""

import warnings

import pytest

import tapegrad as tg


# covers: test_autograd.py::TestAutograd::test_grad_mode_class_decoration
def test_grad_mode_class_decoration():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):

        @tg.no_grad()
        class Foo:
            def __init__(self):
                assert not tg.is_grad_enabled()

            def foo(self):
                assert tg.is_grad_enabled()  # methods are not decorated

        Foo().foo()


# covers: test_autograd.py::TestAutograd::test_grad_mode_class_decoration
def test_grad_mode_function_and_method_decoration_do_not_warn():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @tg.no_grad()
        def foo():
            assert not tg.is_grad_enabled()

        foo()

        class Foo2:
            @tg.no_grad()
            def __init__(self):
                assert not tg.is_grad_enabled()

            @tg.no_grad()
            def foo(self):
                assert not tg.is_grad_enabled()

        Foo2().foo()
    assert len(w) == 0
    assert tg.is_grad_enabled()


# covers: test_autograd.py::TestAutograd::test_no_grad
def test_no_grad():
    x = tg.ones(5, 5, requires_grad=True)
    y = tg.ones(5, 5) * 4
    with tg.no_grad():
        w = x + y

    def adder(a, b):
        return a + b

    for add in (tg.no_grad()(adder), tg.no_grad(adder)):
        z = add(x, y)
        assert not w.requires_grad
        with pytest.raises(RuntimeError):
            w.backward(tg.ones(5, 5))
        assert w.grad_fn is None
        assert not z.requires_grad
        with pytest.raises(RuntimeError):
            z.backward(tg.ones(5, 5))
        assert z.grad_fn is None
        assert tg.is_grad_enabled()

    with tg.no_grad():
        assert not tg.is_grad_enabled()
        w = add(x, y)
        assert not tg.is_grad_enabled()
    assert not w.requires_grad


# covers: test_autograd.py::TestAutograd::test_enable_grad_decorator_no_paren
def test_enable_grad_decorator_no_paren():
    x = tg.ones(1, requires_grad=True)

    @tg.enable_grad
    def doubler(t):
        return t * 2

    with tg.no_grad():
        z = doubler(x)
    assert z.requires_grad


# covers: test_autograd.py::TestAutograd::test_set_grad_generator_functions
def test_set_grad_generator_functions():
    @tg.no_grad()
    def gen_no_grad():
        for i in range(10):
            assert not tg.is_grad_enabled()
            yield i

    with tg.enable_grad():
        n = 0
        for _ in gen_no_grad():
            assert tg.is_grad_enabled()  # the caller's mode between items
            n += 1
        assert n == 10

    @tg.enable_grad()
    def gen_enable_grad():
        for i in range(10):
            assert tg.is_grad_enabled()
            yield i

    with tg.no_grad():
        n = 0
        for _ in gen_enable_grad():
            assert not tg.is_grad_enabled()
            n += 1
        assert n == 10


# covers: test_autograd.py::TestAutograd::test_set_grad_generator_functions_recursive
def test_set_grad_generator_functions_recursive():
    @tg.enable_grad()
    def enable_dec(depth):
        assert tg.is_grad_enabled()
        if depth > 0:
            no_grad_dec(depth - 1)
            assert tg.is_grad_enabled()

    @tg.no_grad()
    def no_grad_dec(depth):
        assert not tg.is_grad_enabled()
        if depth > 0:
            enable_dec(depth - 1)
            assert not tg.is_grad_enabled()

    def enable_ctx(depth):
        with tg.enable_grad():
            assert tg.is_grad_enabled()
            if depth > 0:
                no_grad_ctx(depth - 1)
                assert tg.is_grad_enabled()

    def no_grad_ctx(depth):
        with tg.no_grad():
            assert not tg.is_grad_enabled()
            if depth > 0:
                enable_ctx(depth - 1)
                assert not tg.is_grad_enabled()

    for outer, expected in ((tg.enable_grad, True), (tg.no_grad, False)):
        with outer():
            assert tg.is_grad_enabled() == expected
            enable_dec(10)
            assert tg.is_grad_enabled() == expected
            enable_ctx(10)
            assert tg.is_grad_enabled() == expected
            no_grad_dec(10)
            assert tg.is_grad_enabled() == expected
            no_grad_ctx(10)
            assert tg.is_grad_enabled() == expected


# covers: test_autograd.py::TestAutograd::test_set_grad_coroutines
def test_set_grad_coroutines():
    def make(mode, inside):
        @mode()
        def coro(n=10):
            assert tg.is_grad_enabled() == inside
            for i in range(n):
                assert tg.is_grad_enabled() == inside
                r = yield i
                assert tg.is_grad_enabled() == inside
                assert r == i
            assert tg.is_grad_enabled() == inside

        return coro

    for mode, inside, outer in ((tg.no_grad, False, tg.enable_grad), (tg.enable_grad, True, tg.no_grad)):
        with outer():
            outside = tg.is_grad_enabled()
            coro, r, sent = make(mode, inside)(), None, 0
            with pytest.raises(StopIteration):
                while True:
                    assert tg.is_grad_enabled() == outside
                    r = coro.send(r)
                    sent += 1
                    assert tg.is_grad_enabled() == outside
            assert sent == 10


class Recoverable(Exception):
    pass


class Secondary(Exception):
    pass


# covers: test_autograd.py::TestAutograd::test_set_grad_coroutines_benign_exceptions
def test_set_grad_coroutines_benign_exceptions():
    def make(mode, inside):
        @mode()
        def coro(n=10):
            raised = False
            for i in range(n):
                try:
                    assert tg.is_grad_enabled() == inside
                    yield (-i if raised else i)
                except Recoverable:
                    assert tg.is_grad_enabled() == inside
                    raised = True

        return coro

    for mode, inside, outer in ((tg.no_grad, False, tg.enable_grad), (tg.enable_grad, True, tg.no_grad)):
        with outer():
            outside = tg.is_grad_enabled()
            coro = make(mode, inside)()
            assert next(coro) == 0
            seen = 0
            with pytest.raises(StopIteration):
                while True:
                    r = coro.throw(Recoverable)
                    assert r < 0
                    seen += 1
                    assert tg.is_grad_enabled() == outside
            assert seen == 9


# covers: test_autograd.py::TestAutograd::test_set_grad_coroutines_critical_exceptions
def test_set_grad_coroutines_critical_exceptions():
    def make(mode, inside):
        @mode()
        def coro(n=10):
            for i in range(n):
                try:
                    assert tg.is_grad_enabled() == inside
                    yield i
                except Recoverable:
                    assert tg.is_grad_enabled() == inside
                    raise Secondary from None

        return coro

    for mode, inside, outer in ((tg.no_grad, False, tg.enable_grad), (tg.enable_grad, True, tg.no_grad)):
        with outer():
            outside = tg.is_grad_enabled()
            coro = make(mode, inside)()
            assert next(coro) == 0
            with pytest.raises(Secondary):
                coro.throw(Recoverable)
            assert tg.is_grad_enabled() == outside


# covers: test_autograd.py::TestAutograd::test_set_grad_coroutines_exit
def test_set_grad_coroutines_exit():
    def make(mode, inside, state):
        @mode()
        def coro():
            for i in range(10):
                try:
                    assert tg.is_grad_enabled() == inside
                    yield i
                except GeneratorExit:
                    assert tg.is_grad_enabled() == inside
                    state.add("GeneratorExit")
                    raise

        return coro

    for mode, inside, outer in ((tg.no_grad, False, tg.enable_grad), (tg.enable_grad, True, tg.no_grad)):
        state = set()
        with outer():
            outside = tg.is_grad_enabled()
            coro = make(mode, inside, state)()
            for _ in range(5):
                next(coro)
            coro.close()
            assert tg.is_grad_enabled() == outside
        assert "GeneratorExit" in state


# covers: test_autograd.py::TestAutograd::test_no_grad_python_function
def test_no_grad_python_function():
    class AddOne(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g

    x = tg.ones(5, 5, requires_grad=True)
    with tg.no_grad():
        y = AddOne.apply(x)
    assert not y.requires_grad
    assert y.grad_fn is None


# covers: test_autograd.py::TestAutograd::test_set_grad_enabled
def test_set_grad_enabled():
    x = tg.tensor([1.0], requires_grad=True)
    with tg.set_grad_enabled(False):
        y = x * 2
    assert not y.requires_grad
    with tg.set_grad_enabled(True):
        y = x * 2
    assert y.requires_grad
    with tg.set_grad_enabled(False):
        tg.set_grad_enabled(True)  # called as a function, it takes effect at once
        y = x * 2
    assert y.requires_grad
    assert tg.is_grad_enabled()


# covers: test_autograd.py::TestAutograd::test_set_grad_enabled_wraps
@pytest.mark.parametrize("decorator", [True, False])
def test_set_grad_enabled_wraps(decorator):
    with tg.enable_grad():
        assert tg.is_grad_enabled()
        if decorator:

            @tg.set_grad_enabled(False)  # decorating must not change the global mode
            def inner(t):
                return t.sin()

        else:

            def inner(t):
                return t.sin()

            obj = tg.set_grad_enabled(False)
            assert not tg.is_grad_enabled()
            inner = obj(inner)  # wrapping restores the mode set before the call
            assert tg.is_grad_enabled()
        assert tg.is_grad_enabled()
        x = tg.zeros(1, requires_grad=True)
        assert not inner(x).requires_grad
