"""PyTorch's test/test_autograd.py (and test/autograd/test_inference_mode.py), carried over by subject."""
