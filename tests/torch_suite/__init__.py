"""PyTorch's own autograd tests, carried over behaviour by behaviour (see README.md here)."""
