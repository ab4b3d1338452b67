"""The generated eager call of a torch op: its checks, then the kernel, and the dispatcher implementation.

:func:`generate` writes, per op, a plain Python ``__call__`` with the op's own parameter names: the
eager checks (no torch mode or transform active, plain tensors on the stream's device, what the op
mutates), then the kernel's own call; and ``_cb_impl``, what torch's dispatcher calls. What a call
gets wrong is diagnosed only once it was refused or failed (:func:`diagnoser`, :func:`binder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Final, Sequence

from .. import diagnostics as D
from .._generated import compile_source
from ..jit import Kernel
from ..launch.arguments import bind_arguments
from ..slots import ScalarKind, SequenceKind, SlotKind, Where, describe_value
from . import eager
from .outputs import Allocation, Like, output_checker
from .runtime import Runtime
from .schema import OpParam, OpPlan

if TYPE_CHECKING:
    import torch

    from ._ceager import EagerCheck

__all__ = ["MISSING", "binder", "diagnoser", "generate", "number_converter", "span", "stream_errors", "writes_checker"]


class _Missing:
    """The generated call's default for every parameter, the class itself: "not given" (an argument is never this object).

    A class rather than an instance: ``torch.compile`` traces the op's Python call
    in place of its C call without a source for its defaults (torch 2.11), and
    builds a class from a default as it is, where an instance of a class it does
    not know stops the trace.
    """

    __slots__ = ()


MISSING: Final = _Missing


def stream_errors(rt: Runtime, plan: OpPlan) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """The generated call's CB705 raisers: (tensors off the capturing device, no stream parameter)."""
    raw, current, capturing = rt.raw_stream, rt.current_device, rt.capturing

    def other_device(device: int) -> None:
        # A capture records the current stream of the current device; a tensor on
        # another device would put the kernel outside the graph being captured.
        raise D.error(
            D.OP_STREAM_MISMATCH,
            kernel=plan.kernel,
            parameter=plan.stream.name if plan.stream else None,
            expected=f"tensors on the capturing device cuda:{current()}",
            got=f"tensors on cuda:{device} while a CUDA graph is being captured on cuda:{current()}",
        )

    def default_stream_only(device: int) -> None:
        stream = raw(device)
        if stream != 0:
            what = "a CUDA graph is being captured" if capturing() else "another stream is current"
            raise D.error(
                D.OP_STREAM_MISMATCH,
                kernel=plan.kernel,
                expected="a stream parameter (stream: cuda.CUstream = None) so the op can launch on torch's current stream",
                got=f"no stream parameter (the kernel launches on the default stream) while {what} (stream {stream:#x})",
            )

    return other_device, default_stream_only


def binder(plan: OpPlan, kernel: Kernel[...]) -> Callable[..., tuple[object, ...]]:
    """The generated call's binding of last resort: every input's value, or what ``kernel(...)`` raises.

    Called with the input values the generated call has so far (:data:`MISSING`
    where none), its extra positional values and its keywords left unclaimed, when
    the generated code's own checks found something off. :func:`bind_arguments` (the
    rule set of ``kernel(...)``, ``bind()`` and ``launch()``) raises the
    CB201/CB202/CB203 for the mistake, or binds the call when there was none.
    """
    inputs = plan.inputs
    names = tuple(p.name for p in inputs)
    kwonly_names = tuple(p.name for p in inputs if p.keyword_only)
    kwonly = frozenset(kwonly_names)
    defaults = {p.name: p.default for p in inputs if p.has_default}
    hints = dict(getattr(kernel, "_hints", {}))  # what each parameter expects, in kernel(...)'s words (CB201)
    missing = MISSING
    n_positional = len(names) - len(kwonly_names)

    def bind(values: tuple[object, ...], extra: tuple[object, ...], kw: dict[str, object]) -> tuple[object, ...]:
        # the call as made, as far as the verdict depends on it: positional values fill a
        # prefix; a keyword that took a free parameter's place (now out of kw) never raises
        # in bind_arguments, so counting it in the prefix gives the same error
        given = 0
        while given < n_positional and values[given] is not missing:
            given += 1
        taken = {n: v for n, v in zip(names[given:], values[given:]) if v is not missing and n not in kwonly}
        kwargs = {**taken, **kw, **{n: v for n, v in zip(names, values) if n in kwonly and v is not missing}}
        bound = bind_arguments(plan.kernel, names, kwonly, defaults, values[:given] + extra, kwargs, hints)
        return tuple(bound[n] for n in names)

    return bind


def diagnoser(plan: OpPlan, kernel: Kernel[...], rt: Runtime) -> Callable[[BaseException, tuple[object, ...]], None]:
    """The CB204 (or CB209) ``kernel(...)`` gives for the first input that cannot be its parameter's value.

    Called with a call's exception (torch's argument parser refusing ``None`` or a
    number for a ``Tensor``, an ``AttributeError`` of the generated code) and the
    op's input values in order. It raises the catalog error, chained to the
    exception, or returns when every value is of its parameter's kind (then
    the caller re-raises the exception unchanged). A catalog error is already
    the diagnosis: it returns at once.
    """
    inputs = plan.inputs
    by_name = {p.name: p for p in kernel.signature.params}
    tensor = rt.Tensor

    def diagnose(exc: BaseException, values: tuple[object, ...]) -> None:
        if isinstance(exc, D.CuteBindError):
            return
        for p, value in zip(inputs, values):
            if p.tensor and not p.sequence and isinstance(value, tensor):
                continue
            if p.tensor and p.sequence and isinstance(value, (list, tuple)) and all(isinstance(t, tensor) for t in value):
                continue
            slot = by_name[p.name].slot
            try:
                if slot is None:  # Constexpr: kernel(...) refuses only what cannot key a compile
                    try:
                        hash(value)
                    except TypeError:
                        raise D.error(
                            D.CONSTEXPR_UNHASHABLE,
                            kernel=plan.kernel,
                            parameter=p.name,
                            expected="a hashable value",
                            got=describe_value(value),
                        ) from None
                    continue
                slot.bind(value, Where(plan.kernel, p.name))  # the slot's own check: kernel(...)'s words
            except D.CuteBindError as err:
                raise err from exc
            except Exception:  # noqa: BLE001 - the slot could not tell: the call's own exception stands
                continue

    return diagnose


def span(t: torch.Tensor) -> tuple[torch.device, int, int, bool, bool] | None:
    """(device, first byte, one past the last byte, non-overlapping and dense, a stride 0 in a dimension of
    extent > 1) of a tensor's elements; None for an empty tensor or one without readable data (no overlap).
    The same reading as the C check (cute_bind/torch/_ceager.c, span_of)."""
    try:
        if t.is_meta or t.numel() == 0:
            return None
        item, base, shape, strides = t.element_size(), t.data_ptr(), tuple(t.shape), t.stride()
    except Exception:  # noqa: BLE001 - a tensor torch cannot give an address for: nothing to compare
        return None
    lo = hi = 0
    zero = False
    dims = []
    for n, st in zip(shape, strides):
        if n > 1:
            dims.append((abs(st), n))
            zero = zero or st == 0
            if st < 0:
                lo += (n - 1) * st
            else:
                hi += (n - 1) * st
    dense = not zero
    expected = 1
    for st, n in sorted(dims):
        if not dense or st != expected:
            dense = False
            break
        expected *= n
    dense = dense and lo == 0
    return t.device, base + lo * item, base + (hi + 1) * item, dense, zero


def writes_checker(plan: OpPlan) -> Callable[[tuple[object, ...]], None]:
    """CB708 for a written tensor (``mutates_args``) that torch's in-place rules refuse, given the op's input values in order.

    Refused, as torch refuses them for its in-place ops: a written tensor with
    stride 0 in a dimension of extent > 1 (several elements one location); two
    written tensors sharing memory; a written tensor partly overlapping an input
    (both non-overlapping and dense, their byte ranges meeting but not equal).
    Allowed: an input that is exactly the written tensor (``op(x, x)``, as
    ``x.mul_(x)``), and layouts torch cannot decide cheaply (not dense), as
    torch allows them.
    """
    inputs = plan.inputs

    def fail(name: str, got: str) -> None:
        raise D.error(
            D.OP_OUTPUT_OVERLAP,
            kernel=plan.kernel,
            parameter=name,
            expected="a written tensor whose elements are each its own memory, shared with no other written tensor and with no part of an input",
            got=got,
        )

    def check(values: tuple[object, ...]) -> None:
        items: list[tuple[str, torch.Tensor, bool]] = []
        for p, v in zip(inputs, values):
            if not p.tensor or v is None:
                continue
            if p.sequence:
                items += [(f"{p.name}[{k}]", t, p.mutated) for k, t in enumerate(v)] if isinstance(v, (list, tuple)) else []
            else:
                items.append((p.name, v, p.mutated))
        spans = [span(t) if any(m for _, _, m in items) else None for _, t, _ in items]
        for i, (name, _, mutated) in enumerate(items):
            a = spans[i]
            if not mutated or a is None:
                continue
            if a[4]:
                fail(
                    name,
                    "a tensor with stride 0 in a dimension of extent > 1 (expanded or broadcast): several of its elements are one memory location",
                )
            for j, (other, _, other_mutated) in enumerate(items):
                b = spans[j]
                if j == i or b is None or a[0] != b[0] or a[2] <= b[1] or b[2] <= a[1]:
                    continue
                if not (a[3] and b[3]):
                    continue  # torch's "too hard to tell": allowed, as torch allows it
                if (a[1], a[2]) == (b[1], b[2]) and not other_mutated:
                    continue  # the same memory as an input: in place, as x.mul_(x)
                what = "another tensor the op writes" if other_mutated else "part of the input"
                fail(name, f"a tensor sharing memory with {what} '{other}'")

    return check


def number_converter(plan: OpPlan, kernel: Kernel[...], p: OpParam, rt: Runtime) -> Callable[[object], object]:
    """A ``Scalar`` (or ``Scalar[]``, ``Scalar?``) input's value as a plain Python number, checked as ``kernel(...)`` checks it.

    The generated call hands the dispatcher its number arguments through this
    (for a value not exactly an ``int``, ``float`` or ``bool``), so that path
    takes what the eager call takes (a NumPy scalar, a one-element integer
    tensor for an integer slot, a 0-d tensor for a float slot: torch's
    ``Scalar`` parser refuses them) and refuses the rest with the eager call's
    code (CB204, CB205) before torch's parser sees it. A ``SymInt``/``SymFloat``/
    ``SymBool`` (a traced size) goes through as it is.
    """
    found = next(q.slot for q in kernel.signature.params if q.name == p.name)
    if found is None:  # a Constexpr parameter has no slot: the schema never routes one here
        raise TypeError(f"parameter '{p.name}' of kernel '{plan.kernel}' has no runtime slot")
    slot: SlotKind = found
    where = Where(plan.kernel, p.name)
    torch = rt.torch
    symbolic = tuple(t for t in (getattr(torch, "SymInt", None), getattr(torch, "SymFloat", None), getattr(torch, "SymBool", None)) if t)
    exact = (int, float, bool)

    def one(kind: SlotKind | None, value: object) -> object:
        if isinstance(value, symbolic):
            return value
        if isinstance(kind, ScalarKind):
            if value.__class__ is float if kind.is_float else value.__class__ in exact:
                return value
            return kind.number(value, where)  # a float slot's int as a float: 2**64 is past Scalar's 64 bits
        if value.__class__ in exact:
            return value
        members = [m for m in getattr(kind, "members", ()) if isinstance(m, ScalarKind)]
        for m in members:  # an optional number or a union of numbers: checked as a whole first (below)
            try:
                return m.number(value, where)
            except D.CuteBindError:
                continue
        return value

    if isinstance(slot, SequenceKind):
        elements = slot.elements

        def convert_seq(value: object) -> object:
            if not isinstance(value, (list, tuple)) or any(isinstance(v, symbolic) for v in value):
                return value
            slot.bind(value, where)  # the sequence's own check (its length, each element): kernel(...)'s words
            kinds = elements if elements is not None and len(elements) == len(value) else (slot.homogeneous,) * len(value)
            return [one(k, v) for k, v in zip(kinds, value)]

        return convert_seq

    def convert(value: object) -> object:
        if value is None or isinstance(value, symbolic):
            return value
        if not isinstance(slot, ScalarKind) and value.__class__ not in exact:
            slot.bind(value, where)  # an optional number: the union's own check first
        return one(slot, value)

    return convert


def generate(
    plan: OpPlan, rt: Runtime, kernel: Kernel[...], allocs: dict[str, tuple[str, Allocation]], several: bool, checker: EagerCheck | None
) -> tuple[Callable[..., object], Callable[..., object], dict[str, Any]]:
    """The generated ``__call__`` (eager checks, then the kernel), the dispatcher implementation, their globals.

    ``__call__`` takes the positional parameters positionally only, each defaulting
    to a "not given" marker, the keyword-only ones by name, and the rest in
    ``*_cb_extra, **_cb_kw``: so no mistake in a call is Python's own ``TypeError``
    of argument binding (raised before any of the op's code runs, where nothing
    could catch it; a repeated argument can only be seen this way). One test of
    the two catch-alls and the last required parameter lets a plain positional
    call through; any other claims its keywords in generated code, and what is
    left over goes to :func:`binder`'s binding, which raises ``kernel(...)``'s
    error. Wrong values are diagnosed only after the call failed
    (:func:`diagnoser`, in ``except`` blocks, which cost nothing until something
    raises).
    """
    inputs = plan.inputs
    sig_parts: list[str] = []
    star = False
    for p in inputs:
        if p.keyword_only and not star:
            sig_parts.append("*")
            star = True
        sig_parts.append(f"{p.name}=_cb_default_{p.name}" if p.has_default else p.name)
    signature = ", ".join(sig_parts)
    ind = "    "
    positional = [p for p in inputs if not p.keyword_only]
    kwonly = [p for p in inputs if p.keyword_only]
    call_parts = [f"{p.name}=_cb_M" for p in positional] + ["/", "*_cb_extra"]
    call_parts += [f"{p.name}=_cb_default_{p.name}" if p.has_default else f"{p.name}=_cb_M" for p in kwonly]
    call_parts.append("**_cb_kw")
    required = [p for p in inputs if not p.has_default]
    required_pos = [p for p in positional if not p.has_default]
    # positional arguments fill a prefix: the last required positional parameter is not given iff any is missing
    unbound = " or ".join(
        ["_cb_kw", "_cb_extra"] + [f"{p.name} is _cb_M" for p in required_pos[-1:] + [k for k in kwonly if not k.has_default]]
    )

    def tuple_of(ps: Sequence[OpParam]) -> str:
        return "(" + ", ".join(p.name for p in ps) + ("," if len(ps) == 1 else "") + ")"

    values = tuple_of(inputs)
    assign = f"{', '.join(p.name for p in inputs)}, = " if inputs else ""
    # a call with keywords, extra or missing arguments: each positional parameter not given
    # positionally takes its keyword out of _cb_kw (its own dict: Python makes a new one per
    # call); a keyword left over (unknown, or repeating a positional argument), an extra
    # positional argument or a required parameter still missing goes to _cb_bind, which
    # raises kernel(...)'s CB201/CB202/CB203 for the call as it was made
    binding = [f"if {unbound}:"]
    for p in positional:
        binding.append(f"{ind}if {p.name} is _cb_M: {p.name} = _cb_kw.pop({p.name!r}, _cb_M)")
    refused = " or ".join(["_cb_kw", "_cb_extra"] + [f"{p.name} is _cb_M" for p in required])
    binding.append(f"{ind}if {refused}:")
    binding.append(f"{ind * 2}{assign}_cb_bind({values}, _cb_extra, _cb_kw)")
    binding += [f"if {p.name} is _cb_M: {p.name} = _cb_default_{p.name}" for p in positional if p.has_default]
    # keyword-only parameters are keyword-only in the schema too
    schema_args = ", ".join(f"{p.name}={p.name}" if p.keyword_only else p.name for p in inputs)
    tensors = [p for p in inputs if p.tensor and not p.sequence and not p.optional]
    optionals = [p for p in inputs if p.tensor and p.optional]  # Tensor?: a tensor or None
    seqs = [p for p in inputs if p.tensor and p.sequence]
    # the device (and so the stream) is the first tensor input's, else the first output's
    device_expr = "-1"
    if tensors:
        device_expr = f"{tensors[0].name}.get_device()"
    elif plan.outputs:
        device_expr = f"{plan.outputs[0]}.get_device()"
    elif seqs:
        device_expr = f"(_cb_seq_device({seqs[0].name}))"
    elif optionals:
        device_expr = f"(_cb_seq_device([_t for _t in {tuple_of(optionals)} if _t is not None]))"
    body: list[str] = []
    if tensors:
        # the device first: a meta tensor (no data) takes the registered op, whose fake runs
        body.append(f"_cb_device = {device_expr}")
        meta_check = f"if _cb_device < 0 and {tensors[0].name}.is_meta: return _cb_overload({schema_args})"
    else:
        meta_check = ""
    # a written tensor torch's in-place rules refuse (CB708): the C check first where the op has one
    # (it says True where nothing overlaps), else and then the Python check, which raises
    writes_lines: list[str] = []
    if any(p.mutated for p in inputs):
        if checker is not None and not optionals and not seqs:  # every tensor input plain: all in the C check
            order = ", ".join([p.name for p in tensors if p.mutated] + [p.name for p in tensors if not p.mutated])
            writes_lines.append(f"if not _cb_writes({sum(p.mutated for p in tensors)}, {order}): _cb_overlap({values})")
        else:
            writes_lines.append(f"_cb_overlap({values})")
    body += writes_lines
    alloc_lines = [f"{name} = {allocs[name][0]}" for name in plan.outputs]
    body += alloc_lines
    if not tensors:
        body.append(f"_cb_device = {device_expr}")
    kernel_args = []
    env_args = []  # the call of a TVM-FFI environment-stream compile: the stream left out
    for p in plan.params:
        value = {"stream": "_cb_stream", "fixed": f"_cb_fixed_{p.name}"}.get(p.role, p.name)
        kernel_args.append(f"{p.name}={value}" if p.keyword_only else value)
        if p.role != "stream":
            env_args.append(kernel_args[-1])
    # capturing on another device than the tensors' is CB705. With one visible device the tensors'
    # device is the current one: _cb_several_devices (fixed when the op is made) skips the lookups
    # (0.2 us for the current device, 0.5 us for the capture test on the H200's host)
    other_device_check = "if _cb_several_devices and _cb_device != _cb_current_device() and _cb_capturing(): _cb_other_device(_cb_device)"
    stream_lines = [
        # torch's current stream of the tensors' device (0 for host tensors); inline, it is per call
        "if _cb_device < 0:",
        "    _cb_stream = 0",
        "else:",
        "    _cb_stream = _cb_raw_stream(_cb_device)",
        "    " + other_device_check,
    ]
    kernel_call = f"_cb_kernel({', '.join(kernel_args)})"
    if plan.stream is None:
        body.append("if _cb_device >= 0: _cb_default_stream_only(_cb_device)")
        body.append(kernel_call)
    elif getattr(kernel, "tvm_ffi", False):
        # a kernel compiled with the TVM-FFI environment stream (quack's make_fake_stream(
        # use_tvm_ffi_env_stream=True)) is called without it: TVM-FFI takes torch's current
        # stream of the tensors' device, the stream passed otherwise, and an explicit stream
        # would key another compile (from the real tensors, not the kernel author's)
        body.append("if _cb_env:")
        body.append("    if _cb_device >= 0 and " + other_device_check[3:])
        body.append(f"    _cb_kernel({', '.join(env_args)})")
        body.append("else:")
        body += ["    " + line for line in stream_lines]
        body.append("    " + kernel_call)
    else:
        body += stream_lines
        body.append(kernel_call)
    mutated = [p.name for p in inputs if p.mutated and not p.sequence and not p.optional]
    mutated_optional = [p.name for p in inputs if p.mutated and p.optional]
    mutated_seqs = [p.name for p in inputs if p.mutated and p.sequence]
    if len(plan.outputs) == 1:
        ret = plan.outputs[0]
    elif plan.outputs:
        ret = "(" + ", ".join(plan.outputs) + ")"
    else:
        ret = "None"
    plain = []
    for p in tensors:
        plain.append(f"({p.name}.__class__ is _cb_Tensor or {p.name}.__class__ is _cb_Parameter)")
    for p in optionals:
        plain.append(f"({p.name} is None or {p.name}.__class__ is _cb_Tensor or {p.name}.__class__ is _cb_Parameter)")
    for p in seqs:
        plain.append(f"_cb_plain_seq({p.name})")
    grads = [f"{p.name}.requires_grad" for p in tensors] + [f"_cb_seq_grad({p.name})" for p in seqs]
    grads += [f"({p.name} is not None and {p.name}.requires_grad)" for p in optionals]
    eager_guard = " and ".join(plain) if plain else "True"
    if grads:
        # grad mode first: under no_grad/inference_mode (serving) the per-tensor requires_grad reads are skipped
        eager_guard += f" and not (_cb_grad_enabled() and ({' or '.join(grads)}))"
    bump_items = mutated + [f"*{n}" for n in mutated_seqs]
    if mutated_optional:  # a Tensor(a!)? given as None has no version to bump
        bump_items.append(f"*[_t for _t in {tuple_of([p for p in inputs if p.name in mutated_optional])} if _t is not None]")
    bump = f"_cb_bump(({', '.join(bump_items)},))" if bump_items else None
    # the C checks (cute_bind.torch.eager) for an op whose tensor inputs are all plain and whose kernel takes
    # the stream: they give the stream, or None where the checks below decide (they run again, in full)
    fast = checker is not None and eager.checks_apply(plan, kernel)
    # the number arguments as the eager call takes them (see number_converter): the dispatcher's
    # Scalar parser refuses a NumPy scalar or a tensor, and its implementation sees the rest as given
    numbers = [p for p in inputs if p.schema_type in ("Scalar", "Scalar[]")]
    to_numbers = [
        f"if {p.name}.__class__ {'is not float' if p.number == 'float' else 'not in _cb_exact'}: {p.name} = _cb_number_{p.name}({p.name})"
        for p in numbers
    ]
    checks = []
    checks.append("if _cb_compiling():")  # traced: values are the tracer's (SymInts, fake tensors); the graph's call checks them
    checks.append(f"{ind}return _cb_overload({schema_args})")
    # the dispatcher's own argument parser refuses None or a number for a Tensor, an int past 64 bits
    # for a Scalar: say it as kernel(...) would
    for test in ("_cb_dispatch_modes() or _cb_function_modes() or _cb_functorch()", f"not ({eager_guard})"):
        checks.append(f"if {test}:")
        checks.append(f"{ind}try:")
        checks += [ind * 2 + line for line in to_numbers]
        checks.append(f"{ind * 2}return _cb_overload({schema_args})")
        checks.append(f"{ind}except Exception as _cb_exc:")
        checks.append(f"{ind * 2}_cb_diagnose(_cb_exc, {values})")
        checks.append(f"{ind * 2}raise")
    checks += body[:1]
    if meta_check:
        checks.append(meta_check)
    src = [f"def __call__({', '.join(call_parts)}):"]
    src += [ind + line for line in binding]
    if fast:
        src.append(f"{ind}if _cb_compiling():")  # first: under torch.compile the C checks are never reached
        src.append(f"{ind * 2}return _cb_overload({schema_args})")
        src.append(f"{ind}_cb_stream = _cb_check({', '.join(p.name for p in tensors)})")
        src.append(f"{ind}if _cb_stream is None:")
        src += [ind * 2 + line for line in checks]
        src += [ind * 2 + line for line in stream_lines]
        src += [ind + line for line in writes_lines]
        src += [ind + line for line in alloc_lines]
        src.append(ind + kernel_call)
    else:
        src += [ind + line for line in checks]
        src += [ind + line for line in body[1:]]
    if bump:
        src.append(ind + bump)
    src.append(f"{ind}return {ret}")
    src.append("")
    src.append(f"def _cb_impl({signature}):")
    # the dispatcher hands None to a Tensor parameter as it is: diagnose after the failure, as the call does
    src.append(f"{ind}try:")
    src += [ind * 2 + line for line in body]
    if bump:  # the op has no ADInplaceOrView kernel: its implementation bumps the versions itself
        src.append(ind * 2 + bump)
    src.append(f"{ind * 2}return {ret}")
    src.append(f"{ind}except Exception as _cb_exc:")
    src.append(f"{ind * 2}_cb_diagnose(_cb_exc, {values})")
    src.append(f"{ind * 2}raise")
    other_device, default_stream_only = stream_errors(rt, plan)
    tensor_cls, param_cls = rt.Tensor, rt.Parameter

    def plain_seq(seq: object) -> bool:
        return isinstance(seq, (tuple, list)) and all(t.__class__ is tensor_cls or t.__class__ is param_cls for t in seq)

    def seq_grad(seq: Sequence[torch.Tensor]) -> bool:
        return any(t.requires_grad for t in seq)

    def seq_device(seq: Sequence[torch.Tensor]) -> int:
        return int(seq[0].get_device()) if len(seq) else -1

    # no __name__: torch.compile reads the globals of an inlined function from
    # its module when it has one, and this generated scope is no module
    namespace: dict[str, Any] = {  # exec's globals: the generated code's names, of every type
        "_cb_compiling": rt.compiling,
        "_cb_dispatch_modes": rt.dispatch_modes,
        "_cb_function_modes": rt.function_modes,
        "_cb_functorch": rt.functorch,
        "_cb_grad_enabled": rt.grad_enabled,
        "_cb_overload": None,  # set once torch has registered the op
        "_cb_kernel": kernel,
        # a TVM-FFI kernel's environment-stream compiles (the compiler's own dict, filled in place; empty: none yet)
        "_cb_env": kernel.compiler.env if getattr(kernel, "tvm_ffi", False) else None,
        "_cb_Tensor": tensor_cls,
        "_cb_Parameter": param_cls,
        "_cb_bump": rt.bump,
        "_cb_raw_stream": rt.raw_stream,
        "_cb_current_device": rt.current_device,
        "_cb_several_devices": several,
        # the C checks' entry (None: the op makes its checks in Python)
        "_cb_check": checker.check if fast and checker is not None else None,
        "_cb_capturing": rt.capturing,
        "_cb_other_device": other_device,
        "_cb_default_stream_only": default_stream_only,
        "_cb_empty_like": rt.empty_like,
        "_cb_contiguous": rt.contiguous,
        "_cb_plain_seq": plain_seq,
        "_cb_seq_grad": seq_grad,
        "_cb_seq_device": seq_device,
        "_cb_M": MISSING,
        "_cb_bind": binder(plan, kernel),
        "_cb_overlap": writes_checker(plan),
        # the C check of the written tensors (True: nothing overlaps; False: the Python check decides)
        "_cb_writes": getattr(checker, "writes", None) or (lambda *tensors: False),
        "_cb_diagnose": diagnoser(plan, kernel, rt),
    }
    for p in inputs:
        if p.has_default:
            namespace[f"_cb_default_{p.name}"] = p.default
    namespace["_cb_exact"] = frozenset((int, float, bool))
    for p in numbers:
        namespace[f"_cb_number_{p.name}"] = number_converter(plan, kernel, p, rt)
    for p in plan.params:
        if p.role == "fixed":
            namespace[f"_cb_fixed_{p.name}"] = p.default
    for name, (_, obj) in allocs.items():
        if isinstance(obj, Like):
            namespace[f"_cb_dtype_{name}"] = obj.dtype
        else:
            namespace[f"_cb_alloc_{name}"] = obj
            namespace[f"_cb_check_{name}"] = output_checker(rt, plan, name)
    code = "\n".join(src) + "\n"
    exec(compile_source(code, f"op {plan.qualname}"), namespace)  # in linecache: tracebacks and pdb show it  # noqa: S102 - generated from the kernel's parameter names only
    call = namespace["__call__"]
    call.__doc__ = f"Call {plan.qualname}{plan.schema()} (eagerly: the kernel {plan.kernel} directly)."
    call.__cute_bind_source__ = code
    return call, namespace["_cb_impl"], namespace
