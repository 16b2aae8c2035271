"""Datasets and loaders with PyTorch's names: ``Dataset``, ``TensorDataset``, ``Subset``,
``random_split``, samplers and ``DataLoader`` (``batch_size``, ``shuffle`` with a ``generator`` or the
process-wide seed of ``tg.manual_seed``, ``drop_last``, ``collate_fn``). Loading runs in the calling
process (``num_workers=0``).

>>> import tapegrad as tg
>>> from tapegrad.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(tg.arange(6).reshape(3, 2), tg.tensor([0, 1, 0]))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=2)]
[[0, 1], [0]]
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Generic, Iterable, Iterator, List, TypeVar

import numpy as np

from .. import _tapegrad as _C
from .._generator import Generator, _default_permutation
from .._tapegrad import Tensor

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "BatchSampler", "DataLoader", "default_collate"]


def _permutation(n: int, generator: Generator | None) -> List[int]:
    if generator is None:
        return _default_permutation(n)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tapegrad.Generator, got {type(generator).__name__}")
    return generator._permutation(n)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    >>> from tapegrad.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> [Squares()[i] for i in range(4)]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class IterableDataset(Dataset[T_co]):
    """A dataset that is an iterable of samples (``__iter__``); a ``DataLoader`` batches it in order.

    >>> from tapegrad.utils.data import DataLoader, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self): return iter(range(5))
    >>> [b.tolist() for b in DataLoader(Count(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of each tensor (all of the same first size).

    >>> import tapegrad as tg
    >>> from tapegrad.utils.data import TensorDataset
    >>> ds = TensorDataset(tg.tensor([[1.0], [2.0]]), tg.tensor([0, 1]))
    >>> len(ds), ds[1]
    (2, (tensor([2.]), tensor(1)))
    """

    def __init__(self, *tensors: Tensor) -> None:
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset takes tensors, got {type(t).__name__}")
            if t.ndim == 0:
                raise ValueError("TensorDataset takes tensors with at least one dimension")
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0] if self.tensors else 0


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``.

    >>> from tapegrad.utils.data import Subset
    >>> s = Subset([10, 11, 12, 13], [3, 0])
    >>> len(s), s[0], s[1]
    (2, 13, 10)
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return [self.dataset[self.indices[i]] for i in idx]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Any, lengths: Sequence[int | float],
                 generator: Generator | None = None) -> List[Subset]:
    """Splits ``dataset`` into non-overlapping random subsets of the given lengths (or fractions
    that sum to 1; the remainder goes one by one to the first subsets, as in PyTorch).

    >>> import tapegrad as tg
    >>> from tapegrad.utils.data import random_split
    >>> a, b = random_split(range(10), [0.7, 0.3], generator=tg.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (7, 3, True)
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if any(not isinstance(x, numbers.Integral) or x < 0 for x in lengths):
        raise ValueError(f"lengths must be non-negative integers or fractions that sum to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _permutation(n, generator)
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + int(length)]))
        offset += int(length)
    return out


class Sampler(Generic[T_co]):
    """Base class of index samplers: an iterable of dataset indices.

    >>> from tapegrad.utils.data import SequentialSampler
    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0 .. len(data_source) - 1`` in order.

    >>> from tapegrad.utils.data import SequentialSampler
    >>> len(SequentialSampler([5, 6]))
    2
    """

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A new random permutation of the indices on every pass, from ``generator`` or (without one)
    from a seed drawn from the process-wide generator, so ``tg.manual_seed`` makes it repeat.

    >>> import tapegrad as tg
    >>> from tapegrad.utils.data import RandomSampler
    >>> sorted(RandomSampler(range(4), generator=tg.Generator().manual_seed(1)))
    [0, 1, 2, 3]
    """

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        if replacement or num_samples is not None:
            raise ValueError("RandomSampler: replacement and num_samples are not supported by tapegrad yet")
        self.data_source = data_source
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        return iter(_permutation(len(self.data_source), self.generator))

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler(Sampler[List[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``).

    >>> from tapegrad.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=True))
    [[0, 1], [2, 3]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


def default_collate(batch: List[Any]) -> Any:
    """Stacks a list of samples into a batch, as PyTorch's ``default_collate``: tensors are stacked,
    NumPy arrays become stacked tensors, Python floats a float64 tensor, ints an int64 tensor (bools
    a bool tensor), strings stay a list, and tuples, lists and dicts are collated field by field.

    >>> import tapegrad as tg
    >>> from tapegrad.utils.data import default_collate
    >>> default_collate([(tg.tensor([1.0]), 0), (tg.tensor([2.0]), 1)])
    [tensor([[1.],
            [2.]]), tensor([0, 1])]
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _C.stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.hasobject or elem.dtype.kind in "SUO":
            raise TypeError(f"default_collate: batch must contain tensors, numbers, dicts or lists; found {elem.dtype}")
        return _C.stack([_C.tensor(b) for b in batch], 0)  # copies (and widens dtypes tapegrad lacks)
    if isinstance(elem, np.generic):
        return _C.tensor(np.array(batch))
    if isinstance(elem, bool):
        return _C.tensor(batch, dtype=_C.bool)
    if isinstance(elem, float):
        return _C.tensor(batch, dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(batch, dtype=_C.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; "
                    f"found {type(elem).__name__}")


class DataLoader(Generic[T_co]):
    """Batches of a dataset: ``batch_size`` samples at a time (None: one sample, uncollated),
    shuffled on every pass when ``shuffle`` (by ``generator`` or the process-wide seed), the last
    short batch dropped when ``drop_last``, and assembled by ``collate_fn`` (``default_collate``).

    >>> import tapegrad as tg
    >>> from tapegrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(tg.arange(5))
    >>> [b[0].tolist() for b in DataLoader(ds, batch_size=2, drop_last=True)]
    [[0, 1], [2, 3]]
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Iterable[int] | None = None, batch_sampler: Iterable[List[int]] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[List[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 generator: Generator | None = None) -> None:
        if num_workers != 0:
            raise ValueError("num_workers > 0 is not supported by tapegrad: the loader runs in the calling process")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None else (lambda x: x))

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            yield from self._iter_iterable()
            return
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
        else:
            for i in self.sampler:  # type: ignore[union-attr]
                yield self.collate_fn(self.dataset[i])

    def _iter_iterable(self) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch: List[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return len(self.sampler)  # type: ignore[arg-type]
