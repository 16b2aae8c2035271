"""Custom functions from the seed programs, shared by the tests that run them."""

import tapegrad as tg


class MyReLU(tg.Function):
    """The seed's ReLU (examples/two_layer_net.py): saves its input, zeroes the gradient where it is
    negative."""

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
