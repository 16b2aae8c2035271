"""``tapegrad.func``: composable function transforms in the style of JAX and ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``linearize``
and ``functional_call``. Arguments and results may be tensors or pytrees (tuples, lists, dicts) of
tensors. Transforms nest -- ``grad(grad(f))``, ``jacfwd(jacrev(f))`` -- and each differentiates
only with respect to its own inputs: an outer variable captured by an inner function is a
constant to the inner transform.

There is no ``vmap``: the Jacobian functions loop over basis vectors (one reverse pass per output
element for ``jacrev``, one forward product per input element for ``jacfwd``). Forward products
use ``tapegrad.autograd.forward_ad`` when it is available and the double-vjp construction
otherwise (see ``tapegrad.autograd.functional``).

At the outermost transform the results are detached unless they depend on something outside the
transform that requires grad (an input, tangent or cotangent, or a captured tensor such as a
module's parameter), in which case the caller can differentiate through them.
"""

from ._transforms import functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functional_call", "linearize"]
