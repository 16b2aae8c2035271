"""tg.utils.data: datasets, samplers, DataLoader batching/shuffling/collation, random_split."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def _ds(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return x, TensorDataset(tg.tensor(x), tg.arange(n))


def test_tensor_dataset_rows():
    x, ds = _ds()
    assert len(ds) == 10
    row, label = ds[4]
    assert row.tolist() == x[4].tolist() and label.item() == 4
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(tg.zeros(3), tg.zeros(4))


def test_loader_batches_in_order_and_keeps_the_last_short_batch():
    x, ds = _ds(10)
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[0][0].numpy(), x[:4])
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2


def test_shuffle_is_a_permutation_repeatable_with_a_generator():
    _, ds = _ds(50)

    def order(loader):
        return [i for b in loader for i in b[1].tolist()]

    g1 = tg.Generator().manual_seed(7)
    g2 = tg.Generator().manual_seed(7)
    a = order(DataLoader(ds, batch_size=8, shuffle=True, generator=g1))
    b = order(DataLoader(ds, batch_size=8, shuffle=True, generator=g2))
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))
    # each pass draws a new order from the generator
    loader = DataLoader(ds, batch_size=8, shuffle=True, generator=tg.Generator().manual_seed(7))
    assert order(loader) == a and order(loader) != a


def test_shuffle_without_a_generator_follows_manual_seed():
    _, ds = _ds(30)

    def order():
        return [i for b in DataLoader(ds, batch_size=5, shuffle=True) for i in b[1].tolist()]

    tg.manual_seed(3)
    first = order()
    tg.manual_seed(3)
    assert order() == first and sorted(first) == list(range(30))


def test_collate_fn_and_batch_size_none():
    _, ds = _ds(4)
    got = list(DataLoader(ds, batch_size=2, collate_fn=lambda samples: len(samples)))
    assert got == [2, 2]
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 4 and single[2][1].item() == 2


def test_default_collate_types():
    out = default_collate([{"x": 1.5, "y": (1, "a")}, {"x": 2.5, "y": (2, "b")}])
    assert out["x"].dtype == tg.float64 and out["x"].tolist() == [1.5, 2.5]
    assert out["y"][0].dtype == tg.int64 and out["y"][0].tolist() == [1, 2]
    assert out["y"][1] == ["a", "b"]
    arr = default_collate([np.ones(2, dtype=np.float32), np.zeros(2, dtype=np.float32)])
    assert arr.shape == (2, 2) and arr.dtype == tg.float32
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])


def test_custom_map_and_iterable_datasets():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return float(i * i)

    assert [b.tolist() for b in DataLoader(Squares(), batch_size=2)] == [[0.0, 1.0], [4.0, 9.0], [16.0]]

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(5))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)


def test_random_split_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(0))
    assert list(again[0]) == list(parts[0])
    fr = random_split(range(11), [0.5, 0.5], generator=tg.Generator().manual_seed(1))
    assert [len(p) for p in fr] == [6, 5]  # the remainder goes to the first split
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])


def test_samplers_and_subset():
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(5), 0, drop_last=False)
    assert sorted(RandomSampler(range(6), generator=tg.Generator().manual_seed(2))) == list(range(6))
    s = Subset(["a", "b", "c"], [2, 0])
    assert [s[0], s[1]] == ["c", "a"]


def test_loader_argument_errors():
    _, ds = _ds(4)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=2)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=range(4), shuffle=True)
    with pytest.raises(TypeError, match="Generator"):
        list(DataLoader(ds, shuffle=True, generator=np.random.default_rng(0)))
