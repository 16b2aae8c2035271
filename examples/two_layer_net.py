"""The seed program: a two-layer network trained with a ReLU written in Python as a tg.Function.

Run: python examples/two_layer_net.py
"""

import time

import tapegrad as tg


class MyReLU(tg.Function):
    """ReLU as a custom function: saves its input, zeroes the gradient where the input was negative."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def train(steps=500, seed=0, log=print):
    """Trains the network and returns the losses (one per step)."""
    tg.manual_seed(seed)
    dtype = tg.float32
    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10

    x = tg.randn(N, D_in, dtype=dtype)
    y = tg.randn(N, D_out, dtype=dtype)
    w1 = tg.randn(D_in, H, dtype=dtype, requires_grad=True)
    w2 = tg.randn(H, D_out, dtype=dtype, requires_grad=True)

    learning_rate = 1e-6
    losses = []
    for t in range(steps):
        relu = MyReLU.apply
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t == 0 or t % 100 == 99:
            log(t + 1, loss.item())
        loss.backward()
        with tg.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    return losses


if __name__ == "__main__":
    start = time.perf_counter()
    losses = train()
    elapsed = time.perf_counter() - start
    print(f"loss fell from {losses[0]:.4g} to {losses[-1]:.4g} "
          f"({losses[0] / max(losses[-1], 1e-30):.3g}x) in {elapsed:.2f} s, "
          f"{1000 * elapsed / len(losses):.3f} ms per step")
