"""Optimizers (``tg.optim``) and learning-rate schedules (``tg.optim.lr_scheduler``), with
PyTorch's names, arguments and update formulas. Each ``step()`` updates a parameter group in one
native call, in place, without the GIL.

>>> import tapegrad as tg
>>> w = tg.zeros(3, requires_grad=True)
>>> opt = tg.optim.Adam([w], lr=1e-2)
>>> sched = tg.optim.lr_scheduler.StepLR(opt, step_size=10)
"""

from . import lr_scheduler
from ._optimizers import SGD, Adagrad, Adam, AdamW, RMSprop
from .optimizer import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
