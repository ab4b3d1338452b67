"""A cute_bind kernel as a torch custom op: eager at the kernel's own call speed, traceable by torch.

:func:`op` defines a torch operator (``torch.library``) whose schema it
writes from the kernel's signature (:mod:`cute_bind.torch.schema`), whose
implementation calls the kernel, and whose fake implementation it generates
(``None`` for a mutating op, the output allocators for a functional one). It returns a
:class:`TorchOp`, and calling that object is where the two worlds split:

- **eager** (plain tensors, no torch mode or transform active, no input that
  needs autograd): straight to ``kernel(*args)``, the kernel's own call path,
  with torch's current stream for the stream parameter and the version counter
  of every mutated tensor bumped, as torch's dispatcher would;
- **anything else** (``torch.compile``, FakeTensor, functionalization,
  ``make_fx``, ``vmap``, an input that requires grad, a tensor subclass, a meta tensor):
  the registered op through the dispatcher, ``torch.ops.<ns>.<name>``.

The call is generated per op (plain Python, the op's own parameter names), so
the eager checks cost a handful of attribute reads and C calls. torch is
imported when an op is made, never by ``import cute_bind``.

Mistakes in a call raise what ``kernel(...)`` raises for them: a missing,
extra, unknown or repeated argument CB201/CB202/CB203 (the binding rules of
:func:`cute_bind.launch.arguments.bind_arguments`), a value of the wrong kind
(``None`` or a number for a tensor) CB204, named by the kernel and parameter.
The diagnosis runs only once a call was refused or failed (see
:func:`generate`); what a correct call pays for being able to get there is
Python's ``**kwargs`` dict and one test (about 30 ns on the CPU), and a call
with keywords their claiming in Python (about 150 ns).
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Mapping, NoReturn, Sequence, Union, overload

from .. import diagnostics as D
from ..jit import Kernel
from . import eager
from .generate import generate
from .outputs import Allocation, Like, OutputSpec, alloc_source, like
from .outputs import fake as make_fake
from .runtime import runtime
from .schema import OpPlan, parse_name, plan_op

if TYPE_CHECKING:
    import torch

_runtime, _generate = runtime, generate  # the names benchmarks/torch_op_variants.py uses

#: an op's extra ``torch.Tag`` values: one, several, or None
Tags = Union["torch.Tag", Sequence["torch.Tag"], None]

__all__ = ["TorchOp", "Like", "like", "op"]


#: every op's torch.library.Library (an op is unregistered when its Library is collected)
_LIBRARIES: list[torch.library.Library] = []


class TorchOp(functools.partial):  # type: ignore[type-arg]  # a partial of any call: its result type varies per op
    """A cute_bind kernel registered as the torch custom op ``torch.ops.<namespace>.<name>``.

    Made by :func:`op`. Call it like the kernel, without the stream and output
    parameters: eagerly it calls the kernel directly (its own fast path, torch's
    current stream); under ``torch.compile``, FakeTensor, functionalization,
    ``vmap`` or autograd it is the registered op.

    Attributes: ``name`` (``"ns::name"``), ``kernel`` (the :class:`cute_bind.Kernel`),
    ``schema`` (the op's schema string), ``library`` (the ``torch.library.Library``
    holding its registrations), ``overload`` (``torch.ops.<ns>.<name>.default``),
    ``plan`` (every parameter's role).

    It is a ``functools.partial`` of its eager call (calling a partial costs
    less than calling an object's ``__call__`` method, and ``torch.compile``
    traces a partial through its function); ``func`` is that call, ``args``
    and ``keywords`` are empty.
    """

    name: str
    kernel: Kernel[...]
    schema: str
    plan: OpPlan
    library: torch.library.Library
    overload: torch._ops.OpOverload
    _impl: Callable[..., object]
    _fake: list[Callable[..., object]]
    _traced: list[bool]
    _python_call: Callable[..., object]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("make a TorchOp with cute_bind.torch.op(...)")

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"a cute_bind.torch op cannot be pickled ({self.name}): make it again with cute_bind.torch.op(...)")

    def __copy__(self) -> TorchOp:
        return self  # one registration with torch per name: a copy is the op itself, as for a function

    def __deepcopy__(self, memo: dict[int, object]) -> TorchOp:
        return self

    def __repr__(self) -> str:
        return f"<cute_bind.torch op {self.name}{self.schema} -> kernel {self.kernel.name}>"

    def register_autograd(self, backward: Callable[..., object], /, *, setup_context: Callable[..., object] | None = None) -> None:
        """Register the op's backward formula (``torch.library.register_autograd`` on the generated op).

        ``backward(ctx, *grads)`` returns one gradient per op input (``None`` for
        non-tensors); ``setup_context(ctx, inputs, output)`` saves what it needs.
        Eager calls with an input that requires grad then go through torch's
        dispatcher, so the formula runs. Register it before the op is first
        traced (``torch.compile``, ``opcheck``, a FakeTensor call): torch keeps
        what it learnt at that trace, so later it raises CB707. Only a functional op
        (one with ``outputs``, no ``mutates_args``) can have one, as in torch.
        """
        if self._traced[0]:
            # torch keeps what it learnt of the op at its first trace: a backward added now is
            # missing from later compiles (gradients silently None), so refuse instead
            raise D.error(
                D.OP_AUTOGRAD_TOO_LATE, kernel=self.kernel.name, parameter=self.name,
                expected="register_autograd before the op is first traced (torch.compile, opcheck, FakeTensor)",
                got="register_autograd after the op was traced",
            )  # fmt: skip
        self._torch().library.register_autograd(self.name, backward, setup_context=setup_context, lib=self.library)

    def register_fake(self, fn: Callable[..., object], /) -> None:
        """Replace the generated fake implementation (rarely needed: it is generated from the output specs)."""
        self._fake[0] = fn

    @staticmethod
    def _torch() -> ModuleType:
        return runtime().torch


def _make(
    name: str,
    kernel: Kernel[...] | Callable[..., object],
    mutates_args: Sequence[str] | str,
    outputs: Mapping[str, OutputSpec] | None,
    tags: Tags,
) -> TorchOp:
    if not isinstance(kernel, Kernel):
        from ..jit import kernel as decorate

        kernel = decorate(kernel)
    outputs = dict(outputs or {})
    plan = plan_op(name, kernel.signature, mutates_args, tuple(outputs))
    rt = runtime()
    torch = rt.torch
    inputs = plan.inputs
    allocs: dict[str, tuple[str, Allocation]] = {}
    for p in plan.params:
        if p.role == "output":
            spec = outputs[p.name]
            allocs[p.name] = alloc_source(p, Like(spec) if isinstance(spec, str) else spec, plan, inputs)
    schema = plan.schema()
    ns, opname = plan.namespace, plan.opname
    if hasattr(torch.ops, ns) and hasattr(getattr(torch.ops, ns), opname):
        raise D.error(
            D.OP_NAME_INVALID, kernel=plan.kernel, expected="a name no other op has", got=f"{name!r}, already registered with torch"
        )
    several = rt.several_devices()
    checker = eager.checker(rt, several)  # the C checks (None: the op makes them in Python)
    call, impl, namespace = generate(plan, rt, kernel, allocs, several, checker)
    impl.__name__ = impl.__qualname__ = opname
    impl.__module__ = getattr(kernel, "__module__", __name__)
    # torch.library's own layers, not torch.library.custom_op: a custom_op adds Python
    # kernels at the Autograd and ADInplaceOrView keys to every call, which is most of
    # its per-call cost through the dispatcher (so under torch.compile). Here the only
    # Python on that path is the implementation; autograd is added by register_autograd.
    user_tags = () if tags is None else tuple(tags) if isinstance(tags, (tuple, list)) else (tags,)
    lib = torch.library.Library(ns, "FRAGMENT")
    try:
        lib.define(opname + schema, tags=(torch.Tag.pt2_compliant_tag, *user_tags))
    except Exception as exc:
        getattr(lib, "_destroy", lambda: None)()  # drop the half-made Library
        raise D.error(
            D.OP_NAME_INVALID,
            kernel=plan.kernel,
            expected="a name and schema torch.library accepts",
            got=f"{name!r}{schema}",
            detail=str(exc)[:200],
        ) from exc
    lib.impl(opname, impl, "CompositeExplicitAutograd")
    fake: list[Callable[..., object]] = [make_fake(rt, plan, allocs)]
    traced = [False]  # the fake runs only under tracing (torch.compile, opcheck, FakeTensor): register_autograd checks it

    def fake_impl(*args: object, **kwargs: object) -> object:
        traced[0] = True
        return fake[0](*args, **kwargs)

    torch.library.register_fake(name, fake_impl, lib=lib)
    _LIBRARIES.append(lib)  # registrations live as long as their Library: keep it for the process
    overload = getattr(getattr(torch.ops, ns), opname).default
    namespace["_cb_overload"] = overload  # the generated call reads it at call time
    obj: TorchOp = functools.partial.__new__(TorchOp, call)
    # the fields TorchOp declares, in the instance dict a partial subclass has (its __init__ refuses direct use)
    vars(obj).update(name=name, kernel=kernel, schema=schema, plan=plan, library=lib, overload=overload,
                     _python_call=call, _impl=impl, _fake=fake, _traced=traced)  # fmt: skip
    eager.install(obj, eager.call_spec(plan, kernel, checker, rt.bump, call), call)  # its C call, where it has one
    obj.__signature__ = _python_signature(plan)  # type: ignore[attr-defined]  # inspect reads it; partial's stub has none
    return obj


def _python_signature(plan: OpPlan) -> inspect.Signature:
    kinds = inspect.Parameter
    params = [kinds(p.name, kinds.KEYWORD_ONLY if p.keyword_only else kinds.POSITIONAL_OR_KEYWORD, default=p.default) for p in plan.inputs]
    return inspect.Signature(params)


@overload
def op(
    name: str,
    kernel: Kernel[...] | Callable[..., object],
    /,
    *,
    mutates_args: Sequence[str] | str = (),
    outputs: Mapping[str, OutputSpec] | None = None,
    tags: Tags = None,
) -> TorchOp: ...


@overload
def op(
    name: str, /, *, mutates_args: Sequence[str] | str = (), outputs: Mapping[str, OutputSpec] | None = None, tags: Tags = None
) -> Callable[[Kernel[...] | Callable[..., object]], TorchOp]: ...


def op(
    name: str,
    kernel: Kernel[...] | Callable[..., object] | None = None,
    /,
    *,
    mutates_args: Sequence[str] | str = (),
    outputs: Mapping[str, OutputSpec] | None = None,
    tags: Tags = None,
) -> TorchOp | Callable[[Kernel[...] | Callable[..., object]], TorchOp]:
    """Register a cute_bind kernel as the torch custom op ``name`` (``"namespace::opname"``).

    ``op(name, kernel, ...)`` returns the :class:`TorchOp`; ``op(name, ...)`` is
    a decorator over a kernel (a :class:`cute_bind.Kernel`, or a ``@cute.jit``
    function, which is wrapped with :func:`cute_bind.kernel` first).

    - ``mutates_args``: the tensor (or pointer) parameters the kernel writes.
      A mutating op returns ``None`` and needs no fake implementation.
    - ``outputs``: tensor parameters the op allocates and returns instead of
      taking them, each mapped to how: an input's name or :func:`like`
      (``like("inp", dtype=torch.float16)``), or a function of the op's inputs
      (in order) returning the new tensor. The same spec is the fake
      implementation under tracing.
    - ``tags``: more ``torch.Tag`` values for the op (it is always ``pt2_compliant_tag``).

    The stream parameter, if the kernel has one, is not part of the op: the
    op passes torch's current stream for the device of its first tensor (a
    kernel compiled with the TVM-FFI environment stream is called without it,
    and TVM-FFI takes that same stream). ``Optional[X]`` parameters are ``X?``
    in the schema (``Tensor? lse``, ``Scalar? window=None``; every number is a
    ``Scalar``, so torch hands the op the value as given and the kernel checks it); a parameter no
    schema type carries (a NamedTuple or dataclass structure) but that has a
    default is not an argument of the op: the op always passes the default.
    Definition errors are CB702-CB704; without torch, CB701.
    """
    parse_name(name, str(getattr(kernel, "name", getattr(kernel, "__name__", "kernel"))))
    if kernel is None:
        return lambda k: _make(name, k, mutates_args, outputs, tags)
    return _make(name, kernel, mutates_args, outputs, tags)
