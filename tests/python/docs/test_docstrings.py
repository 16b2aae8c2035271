"""Every public function, class and method written in Python in the package has a docstring with
a ``>>>`` example (the examples themselves run in CI: ``pytest --doctest-modules --pyargs tapegrad``)."""

import inspect

import pytest

import tapegrad as tg
from tapegrad import autograd, linalg


def _public_python_objects():
    seen = set()
    for module in (tg, autograd, linalg):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue  # native functions, dtypes, the autograd module
            if not obj.__module__.startswith("tapegrad.") or id(obj) in seen:
                continue  # native classes report module "tapegrad"; Python ones "tapegrad._x"
            seen.add(id(obj))
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                    public = not attr.startswith("_") or attr == "__call__"
                    if public and inspect.isfunction(fn) and fn.__module__.startswith("tapegrad."):
                        yield f"{module.__name__}.{name}.{attr}", fn


OBJECTS = dict(_public_python_objects())


def test_the_walk_finds_the_api():
    assert {"tapegrad.add", "tapegrad.no_grad", "tapegrad.autograd.grad", "tapegrad.Function.forward"} <= set(OBJECTS)


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_has_docstring_with_example(name):
    doc = inspect.getdoc(OBJECTS[name]) or ""
    assert ">>>" in doc, f"{name} needs a docstring with a >>> example"


# The most used native functions and methods carry examples in their Rust doc comments
# (src/python/*.rs); pytest's doctest collection reads only .py files, so these run here.
NATIVE = {"tapegrad.tensor": tg.tensor, "tapegrad.zeros": tg.zeros, "tapegrad.Tensor.backward": tg.Tensor.backward}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_native_examples_run(name):
    import doctest

    test = doctest.DocTestParser().get_doctest(NATIVE[name].__doc__ or "", {}, name, None, 0)
    assert test.examples, f"{name} needs a docstring with a >>> example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"an example of {name} failed (output above)"
