"""The seed network again, written with the layers users build models from: ``tg.nn.Linear`` for
the weights, the custom ReLU (a Python ``tg.Function``) inside a ``tg.nn.Module``, ``tg.nn.MSELoss``
and ``tg.optim.SGD``. Started from the seed's weights, it follows the seed's loss curve.

Run: python examples/two_layer_net_nn.py
"""

import time

import tapegrad as tg
from tapegrad import nn


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


class TwoLayerNet(nn.Module):
    """``Linear -> MyReLU -> Linear`` without biases, as the seed's ``relu(x @ w1) @ w2``."""

    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.linear1 = nn.Linear(d_in, hidden, bias=False)
        self.linear2 = nn.Linear(hidden, d_out, bias=False)

    def forward(self, x):
        return self.linear2(MyReLU.apply(self.linear1(x)))


def train(steps=500, seed=0, log=print):
    """Trains the network and returns the losses (one per step). The data and the initial weights
    are drawn exactly as the seed draws them, so both programs see the same numbers."""
    tg.manual_seed(seed)
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = tg.randn(N, D_in)
    y = tg.randn(N, D_out)
    w1, w2 = tg.randn(D_in, H), tg.randn(H, D_out)

    model = TwoLayerNet(D_in, H, D_out)
    with tg.no_grad():  # Linear keeps its weight as (out, in): the transpose of the seed's matrices
        model.linear1.weight.copy_(w1.t())
        model.linear2.weight.copy_(w2.t())
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = tg.optim.SGD(model.parameters(), lr=1e-6)

    losses = []
    for t in range(steps):
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        if t == 0 or t % 100 == 99:
            log(t + 1, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


if __name__ == "__main__":
    start = time.perf_counter()
    losses = train()
    elapsed = time.perf_counter() - start
    print(f"loss fell from {losses[0]:.4g} to {losses[-1]:.4g} "
          f"({losses[0] / max(losses[-1], 1e-30):.3g}x) in {elapsed:.2f} s, "
          f"{1000 * elapsed / len(losses):.3f} ms per step")
