"""Hostile programs against tapegrad's locks and hidden references; PyTorch 2.x is the oracle.

Classes of failure covered here:

* Lock held while Python runs: a tensor's autograd lock (or a node's hook list) held while the GIL
  is taken or while a value is dropped whose finalizer (``__del__``) reads the same tensor. Each
  such program deadlocked; PyTorch runs them. Reproducers run in a child interpreter with a timeout,
  so a hang fails the test instead of hanging pytest.
* Errors lost inside Python run by the core (the anomaly-mode location lookup swallowed a
  KeyboardInterrupt).
* Borrow conflicts on a custom function's ctx read from another thread while ``apply`` runs.
* Invisible references: hooks and per-class data held in Rust, which Python's cycle collector
  cannot see (leaks), and ``.grad`` returning a new Python object on every access.
* Missing checks: ``x.grad = ...`` of another dtype / shape / ``x`` itself, and a hook that changes
  the gradient's dtype or shape (PyTorch raises; tapegrad silently changed ``.grad``).
"""

import gc
import subprocess
import sys
import textwrap
import weakref

import pytest

import tapegrad as tg

TIMEOUT = 60


def run_child(code, timeout=TIMEOUT):
    """Runs `code` in a fresh interpreter; fails on a hang, a crash or a non-zero exit."""
    try:
        r = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the program hung (deadlock)")
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "PanicException" not in r.stderr and "panicked" not in r.stderr, r.stderr
    return r.stdout


# ---- lock held while Python runs ------------------------------------------------------------------


def test_anomaly_location_lookup_does_not_hold_the_tensor_lock_across_threads():
    out = run_child(
        """
        import threading, time
        import tapegrad as tg
        x = tg.ones(3, requires_grad=True)
        stop = time.time() + 1.5
        counts = [0, 0]
        def mul():
            with tg.autograd.detect_anomaly():
                while time.time() < stop:
                    y = x * 2
                    del y
                    counts[0] += 1
        def read():
            while time.time() < stop:
                assert x.requires_grad
                counts[1] += 1
        ts = [threading.Thread(target=mul), threading.Thread(target=read)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print(counts[0] > 0 and counts[1] > 0)
        """
    )
    assert out.strip() == "True"


def test_finalizer_running_backward_under_anomaly_while_an_accumulator_is_made():
    # One thread: making x's accumulator under anomaly mode looks up the Python location; a garbage
    # collection there runs a finalizer that uses x (and runs backward with create_graph).
    out = run_child(
        """
        import gc
        import tapegrad as tg
        x = tg.ones(3, requires_grad=True)
        ran = []
        class Bomb:
            def __init__(self):
                self.me = self
            def __del__(self):
                (x * 3).sum().backward(create_graph=True)
                ran.append(x.requires_grad)
        gc.set_threshold(1, 1, 1)
        with tg.autograd.detect_anomaly():
            for _ in range(200):
                Bomb()
                y = x * 2
                del y
        gc.set_threshold(700, 10, 10)
        gc.collect()
        print(len(ran) > 0 and all(ran))
        """
    )
    assert out.strip() == "True"


def test_assigning_grad_drops_the_old_gradient_outside_the_lock():
    out = run_child(
        """
        import tapegrad as tg
        x = tg.ones(3, requires_grad=True)
        seen = []
        class Reader:
            def __del__(self):
                seen.append((x.grad is None, x.requires_grad))
        class Keep(tg.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.reader = Reader()
                return a * 1
            @staticmethod
            def backward(ctx, g):
                return g
        w = tg.ones(3, requires_grad=True)
        x.grad = Keep.apply(w)
        x.grad = None
        print(seen)
        """
    )
    assert out.strip() == "[(True, True)]"


def test_removing_a_hook_drops_it_outside_the_lock():
    out = run_child(
        """
        import tapegrad as tg
        seen = []
        class H:
            def __call__(self, g):
                return g
            def __del__(self):
                seen.append(x.requires_grad)
        x = tg.ones(3, requires_grad=True)
        x.register_hook(H()).remove()
        y = x * 2
        y.register_hook(H()).remove()
        print(seen)
        """
    )
    assert out.strip() == "[True, True]"


def test_ctrl_c_during_a_loop_under_anomaly_mode_is_not_lost():
    # Each SIGINT must stop the loop; before, the location lookup swallowed most of them.
    out = run_child(
        """
        import os, signal, threading, time
        import tapegrad as tg
        x = tg.ones(2, requires_grad=True)
        stopped = 0
        for attempt in range(5):
            threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            deadline = time.time() + 10
            try:
                with tg.autograd.detect_anomaly():
                    while time.time() < deadline:
                        y = x * 2
            except KeyboardInterrupt:
                stopped += 1
        print(stopped)
        """
    )
    assert out.strip() == "5"


def test_ctx_read_from_another_thread_while_apply_runs():
    # forward publishes ctx; another thread reads ctx.needs_input_grad (and saved_tensors) while
    # apply is still running: no panic, and each read sees a consistent value.
    out = run_child(
        """
        import threading, time
        import tapegrad as tg
        box = []
        class F(tg.Function):
            @staticmethod
            def forward(ctx, a, b):
                box[:] = [ctx]
                ctx.save_for_backward(a)
                return a * b
            @staticmethod
            def backward(ctx, g):
                return g, g
        stop = time.time() + 1.5
        bad, reads = [], [0]
        def reader():
            while time.time() < stop:
                if box:
                    try:
                        v = tuple(box[0].needs_input_grad)
                    except RuntimeError as e:
                        bad.append(repr(e))
                        continue
                    if v not in ((False, False), (True, False)):
                        bad.append(v)
                    reads[0] += 1
        t = threading.Thread(target=reader)
        t.start()
        x = tg.ones(3, requires_grad=True)
        y = tg.ones(3)
        with tg.autograd.detect_anomaly():
            while time.time() < stop:
                F.apply(x, y)
        t.join()
        print(bad[:3], reads[0] > 0)
        """
    )
    assert out.strip() == "[] True"


# ---- .grad assignment checks ------------------------------------------------------------------------


def test_grad_assignment_is_checked_like_pytorch():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = tg.ones(3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = tg.ones(3, dtype=tg.int64)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = tg.ones(2)
    assert x.grad is None
    g = tg.full((3,), 2.0)
    x.grad = g
    (x * 1).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    assert x.tolist() == [1.0, 1.0, 1.0]


# ---- hooks that change the gradient -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [tg.float64, tg.int64, tg.bool])
@pytest.mark.parametrize("leaf", [True, False])
def test_a_hook_may_not_change_the_gradient_dtype(dtype, leaf):
    x = tg.ones(3, requires_grad=True)
    t = x if leaf else x * 1

    def to_other(g):
        return g.to(dtype)

    t.register_hook(to_other)
    with pytest.raises(RuntimeError, match="hook 'to_other' has changed the type of value"):
        (t * 2).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("leaf", [True, False])
def test_a_hook_may_not_change_the_gradient_shape(leaf):
    x = tg.ones(3, requires_grad=True)
    t = x if leaf else x * 1
    t.register_hook(lambda g: tg.ones(1))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        (t * 2).sum().backward()
    assert x.grad is None


# ---- invisible references -----------------------------------------------------------------------------


def _collected(make):
    """True when the object `make()` returns a weakref to is freed by one gc.collect()."""
    gc.collect()
    ref = make()
    gc.collect()
    return ref() is None


def test_a_leaf_hook_holding_its_own_tensor_is_collected():
    def make():
        x = tg.ones(3, requires_grad=True)
        x.register_hook(lambda g, x=x: g)
        return weakref.ref(x)

    assert _collected(make)


def test_a_module_hook_on_its_own_parameter_is_collected():
    class Module:
        def __init__(self):
            self.p = tg.ones(3, requires_grad=True)
            self.p.register_hook(self.scale)

        def scale(self, g):
            return g * 2

    def make():
        return weakref.ref(Module())

    assert _collected(make)


def test_a_hook_on_a_non_leaf_holding_its_tensor_is_collected():
    # The cycle runs through the node: y -> grad_fn -> hook -> closure -> y.
    freed = []

    class Sentinel:
        def __del__(self):
            freed.append(True)

    def make():
        x = tg.ones(3, requires_grad=True)
        y = x * 2
        s = Sentinel()
        y.register_hook(lambda g, y=y, s=s: g)
        return weakref.ref(y)

    assert _collected(make)
    assert freed == [True]


def test_a_hook_holding_its_node_is_collected():
    # node object -> node -> hook -> closure -> node object, once the output tensor is gone.
    freed = []

    class Sentinel:
        def __del__(self):
            freed.append(True)

    def make():
        x = tg.ones(3, requires_grad=True)
        y = x * 2
        node, s = y.grad_fn, Sentinel()
        y.register_hook(lambda g, node=node, s=s: g)
        return weakref.ref(x)

    make()
    gc.collect()
    assert freed == [True]


def test_collected_hooks_still_work_while_alive():
    x = tg.ones(3, requires_grad=True)
    x.register_hook(lambda g, x=x: g * 3)
    gc.collect()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_a_function_class_defined_per_call_is_freed():
    # Per-class data lives on the class, so the class (and what `apply` learned about it) dies
    # when the program drops it.
    def make():
        class Double(tg.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = tg.ones(2, requires_grad=True)
        Double.apply(x).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        return weakref.ref(Double)

    refs = [make() for _ in range(20)]
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_subclass_gets_its_own_spec():
    class Base(tg.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Child(Base):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = tg.ones(2, requires_grad=True)
    assert Base.apply(x).tolist() == [2.0, 2.0]
    assert Child.apply(x, tg.full((2,), 3.0)).tolist() == [3.0, 3.0]
    assert Base.apply(x).tolist() == [2.0, 2.0]


def test_custom_gradient_defined_per_call_is_freed():
    def make():
        def triple_per_call(a):
            return a * 3, lambda g: g * 3

        cg = tg.custom_gradient(triple_per_call)
        x = tg.ones(2, requires_grad=True)
        cg(x).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        return weakref.ref(cg)

    def live_classes():
        return [c for c in tg.Function.__subclasses__() if "triple_per_call" in c.__name__]

    refs = [make() for _ in range(20)]
    gc.collect()
    assert all(r() is None for r in refs)
    assert live_classes() == []


def test_grad_is_the_same_python_object_while_the_gradient_is_the_same():
    x = tg.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    assert x.grad is g
    ref = weakref.ref(x.grad)
    assert ref() is g
    (x * 3).sum().backward()  # in-place accumulation keeps the gradient tensor
    assert x.grad is g
    assert g.tolist() == [5.0, 5.0, 5.0]
    x.grad = None
    del g
    gc.collect()
    assert ref() is None


def test_one_python_object_per_tensor_across_threads():
    import threading

    x = tg.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    seen, errors = [], []

    def read():
        try:
            for _ in range(2000):
                seen.append(id(x.grad))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    keep = x.grad
    ts = [threading.Thread(target=read) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors
    assert set(seen) == {id(keep)}


def test_a_function_class_holding_its_output_is_collected():
    # output -> node -> Function class -> class attribute -> output: the node's class reference is
    # visible to the collector.
    freed = []

    class Sentinel:
        def __del__(self):
            freed.append(True)

    def make():
        class Keep(tg.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = tg.ones(2, requires_grad=True)
        Keep.last = Keep.apply(x)
        Keep.sentinel = Sentinel()

    make()
    gc.collect()
    assert freed == [True]
