"""The random factories take ``generator=`` (a ``tg.Generator``, its own stream), as PyTorch's do:
same seed, same draws; the process-wide stream is left alone; the draws have the right law."""

import numpy as np
import pytest

import tapegrad as tg


def gen(seed):
    return tg.Generator().manual_seed(seed)


@pytest.mark.parametrize("make", [
    lambda g: tg.rand(4, 3, generator=g),
    lambda g: tg.randn((5,), generator=g),
    lambda g: tg.randint(2, 9, (6,), generator=g),
    lambda g: tg.randperm(7, generator=g),
    lambda g: tg.normal(2.0, 3.0, (4,), generator=g),
    lambda g: tg.normal(tg.zeros(3), tg.ones(3), generator=g),
])
def test_same_seed_same_draws_and_the_global_stream_untouched(make):
    np.testing.assert_array_equal(make(gen(5)).numpy(), make(gen(5)).numpy())
    assert not np.array_equal(make(gen(5)).numpy(), make(gen(6)).numpy())
    tg.manual_seed(0)
    expected = tg.rand(3).numpy()
    tg.manual_seed(0)
    make(gen(1))
    np.testing.assert_array_equal(tg.rand(3).numpy(), expected)


def test_the_laws_of_generator_draws():
    g = gen(0)
    u = tg.rand(200_000, generator=g, dtype=tg.float64).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / u.size)
    z = tg.randn(200_000, generator=g).numpy()
    assert z.dtype == np.float32
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.std() - 1) < 0.01
    k = tg.randint(3, 7, (100_000,), generator=g).numpy()
    assert set(np.unique(k)) == {3, 4, 5, 6}
    counts = np.bincount(k - 3) / k.size
    assert np.all(np.abs(counts - 0.25) < 5 * np.sqrt(0.25 * 0.75 / k.size))
    assert sorted(tg.randperm(50, generator=g).tolist()) == list(range(50))


def test_dtype_and_requires_grad_with_a_generator():
    t = tg.randn(3, dtype=tg.float64, requires_grad=True, generator=gen(2))
    assert t.dtype is tg.float64 and t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating-point"):
        tg.rand(2, dtype=tg.int64, generator=gen(2))


def test_a_generator_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="tg.Generator"):
        tg.rand(2, generator=np.random.default_rng(0))
    with pytest.raises(TypeError, match="tg.Generator"):
        tg.randperm(3, generator=0)
