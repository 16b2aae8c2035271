"""``tg.Generator``: a seedable source of random permutations for ``tg.utils.data`` (shuffling,
``random_split``) and the random factories' ``generator=`` (``rand``, ``randn``, ``randint``, ``randperm``,
``normal``, the in-place fills); without one they draw from the process-wide generator (``tg.manual_seed``)."""

from __future__ import annotations

import numpy as np

_DEFAULT_SEED = 67280421310721  # PyTorch's default seed for a new generator


class Generator:
    """A random generator with PyTorch's seeding methods (``manual_seed``, ``initial_seed``,
    ``seed``), used by ``DataLoader(shuffle=True, generator=...)`` and ``random_split``.

    >>> import tapegrad as tg
    >>> g = tg.Generator().manual_seed(0)
    >>> g.initial_seed()
    0
    """

    def __init__(self, device: str = "cpu") -> None:
        if str(device) != "cpu":
            raise RuntimeError(f"tapegrad has only the CPU; a Generator on {device!r} is not possible")
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Reseeds this generator; returns it.

        >>> import tapegrad as tg
        >>> a = tg.Generator().manual_seed(3)._permutation(5)
        >>> b = tg.Generator().manual_seed(3)._permutation(5)
        >>> a == b
        True
        """
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} does not fit in 64 bits")
        self._seed = seed % 2**64
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with.

        >>> import tapegrad as tg
        >>> tg.Generator().manual_seed(7).initial_seed()
        7
        """
        return self._seed

    def seed(self) -> int:
        """Reseeds from the operating system's entropy; returns the new seed.

        >>> import tapegrad as tg
        >>> isinstance(tg.Generator().seed(), int)
        True
        """
        seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.manual_seed(seed)
        return seed

    def _permutation(self, n: int) -> list:
        return [int(i) for i in self._rng.permutation(n)]


def _default_permutation(n: int) -> list:
    """A permutation drawn from the process-wide generator (so ``tg.manual_seed`` makes it repeat)."""
    from . import _tapegrad as _C

    r = _C.rand(2, dtype=_C.float64).numpy()
    seed = int(r[0] * 2**32) << 32 | int(r[1] * 2**32)
    return [int(i) for i in np.random.Generator(np.random.PCG64(seed)).permutation(n)]
