"""Ctrl-C during long autograd work: KeyboardInterrupt stops it early, and the graph stays usable.

Each scenario runs in a fresh interpreter, so a stray SIGINT can never reach pytest itself, and an
abort (instead of an exception) is seen as a non-zero return code. SIGINT is sent by a helper thread
with ``os.kill`` once the long work has provably begun (a custom node at its start sets an event), so
nothing depends on guessing how long the work takes. "Stopped early" is proved by a marker node in
the middle of the work that never runs.
"""

import json
import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent(
    """
    import json, os, signal, threading
    import numpy as np
    import tapegrad as tg

    started = threading.Event()
    ran = []

    def interrupt_when_started():
        assert started.wait(60)
        os.kill(os.getpid(), signal.SIGINT)

    class Marker(tg.Function):
        '''Identity; its backward records its name and may announce that backward has begun.'''
        @staticmethod
        def forward(ctx, x, name):
            ctx.name = name
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            ran.append(ctx.name)
            if ctx.name == "start":
                started.set()
            return g, None

    def send_sigint_once_started():
        t = threading.Thread(target=interrupt_when_started, daemon=True)
        t.start()
        return t
    """
)


def run_script(body, timeout=120):
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert "PanicException" not in proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_interrupt_long_builtin_backward_then_backward_again():
    # A 300,000-node chain of built-in multiplications, with a Marker at each end and one in the middle.
    result = run_script(
        """
        n = 300_000
        x = tg.tensor([1.0], dtype=tg.float64, requires_grad=True)
        y = Marker.apply(x, "end")
        for i in range(n):
            y = y * 1.000001
            if i == n // 2:
                y = Marker.apply(y, "middle")
        loss = Marker.apply(y, "start").sum()

        t = send_sigint_once_started()
        outcome = "completed"
        try:
            loss.backward(retain_graph=True)
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        t.join(60)
        first = {"outcome": outcome, "ran": list(ran), "grad_after_interrupt": x.grad is not None,
                 "grad_enabled": tg.is_grad_enabled()}

        ran.clear()
        loss.backward()
        print(json.dumps({"first": first, "ran_again": ran, "grad": x.grad.item(),
                          "expected": 1.000001 ** n}))
        """
    )
    first = result["first"]
    assert first["outcome"] == "KeyboardInterrupt"
    # stopped within the first half of the chain: the middle marker never ran, nor did the leaf
    assert first["ran"] == ["start"]
    assert first["grad_after_interrupt"] is False
    assert first["grad_enabled"] is True
    assert result["ran_again"] == ["start", "middle", "end"]
    assert abs(result["grad"] - result["expected"]) <= 1e-9 * result["expected"]


def test_interrupt_chain_of_python_nodes_then_backward_again():
    # 30,000 custom Python nodes: the interrupt may land in Python code or in the engine's check;
    # either way KeyboardInterrupt stops the pass early.
    result = run_script(
        """
        class Double(tg.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        n = 30_000
        x = tg.tensor([1.0], dtype=tg.float64, requires_grad=True)
        y = Marker.apply(x, "end")
        for i in range(n):
            y = Double.apply(y) * 0.5
            if i == n // 2:
                y = Marker.apply(y, "middle")
        loss = Marker.apply(y, "start").sum()

        t = send_sigint_once_started()
        outcome = "completed"
        try:
            loss.backward(retain_graph=True)
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        t.join(60)
        first = {"outcome": outcome, "ran": list(ran), "grad_after_interrupt": x.grad is not None}
        ran.clear()
        loss.backward()
        print(json.dumps({"first": first, "ran_again": ran, "grad": x.grad.item()}))
        """
    )
    assert result["first"] == {"outcome": "KeyboardInterrupt", "ran": ["start"], "grad_after_interrupt": False}
    assert result["ran_again"] == ["start", "middle", "end"]
    assert result["grad"] == 1.0


def test_interrupt_long_custom_backward_loop_then_backward_again():
    # A custom backward that loops (up to ~10^8 steps, far longer than the test allows) until told to
    # stop: Ctrl-C ends it with KeyboardInterrupt, unchanged, and the retained graph works afterwards.
    result = run_script(
        """
        class Slow(tg.Function):
            long_loop = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                steps = 0
                if Slow.long_loop:
                    started.set()
                    while steps < 10**8:
                        steps += 1
                return 2 * x * g

        x = tg.tensor([3.0, -1.0], dtype=tg.float64, requires_grad=True)
        loss = (Slow.apply(x) * tg.tensor([1.0, 5.0], dtype=tg.float64)).sum()
        t = send_sigint_once_started()
        outcome = "completed"
        try:
            loss.backward(retain_graph=True)
        except KeyboardInterrupt as e:
            outcome = type(e).__name__
        t.join(60)
        grad_after_interrupt = x.grad is not None
        Slow.long_loop = False
        loss.backward()
        print(json.dumps({"outcome": outcome, "grad_after_interrupt": grad_after_interrupt,
                          "grad": x.grad.tolist(), "grad_enabled": tg.is_grad_enabled()}))
        """
    )
    assert result == {"outcome": "KeyboardInterrupt", "grad_after_interrupt": False, "grad": [6.0, -10.0],
                      "grad_enabled": True}


def test_interrupt_long_custom_forward_leaves_library_usable():
    # Ctrl-C inside a custom forward (which runs with grad mode off): grad mode comes back on, and
    # the same Function works at once.
    result = run_script(
        """
        class SlowForward(tg.Function):
            long_loop = True

            @staticmethod
            def forward(ctx, x):
                steps = 0
                if SlowForward.long_loop:
                    started.set()
                    while steps < 10**8:
                        steps += 1
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = tg.tensor([1.0, 2.0], requires_grad=True)
        t = send_sigint_once_started()
        outcome = "completed"
        try:
            SlowForward.apply(x)
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        t.join(60)
        enabled = tg.is_grad_enabled()
        SlowForward.long_loop = False
        y = SlowForward.apply(x)
        y.sum().backward()
        print(json.dumps({"outcome": outcome, "grad_enabled": enabled, "name": y.grad_fn.name(),
                          "grad": x.grad.tolist()}))
        """
    )
    assert result == {"outcome": "KeyboardInterrupt", "grad_enabled": True, "name": "SlowForwardBackward",
                      "grad": [3.0, 3.0]}
