"""A kernel's signature as a torch operator schema, read once when the op is made.

Every runtime parameter of a :class:`cute_bind.Kernel` becomes one role:

- an **input** of the op: tensors and pointers are ``Tensor`` (``Tensor(aN!)``
  when listed in ``mutates_args``), number scalars (integer, float, half and
  Boolean slots) ``Scalar``, ``Constexpr[int|float|bool|str]`` the
  plain schema type (a compile-time value is always concrete), a
  homogeneous sequence the list of its element type, and ``Optional[X]``
  (``X | None``, and unions like ``Int32 | int | None`` whose members share
  one schema type) the optional type ``X?`` (``Tensor?``, ``Scalar?``);
- **fixed**: a parameter of a kind no schema type carries (a NamedTuple or
  dataclass structure, an optional structure) that has a default: the op
  always passes that default (FlashAttention-4's ``aux_data``), and it is not
  an argument of the op;
- an **output**: a tensor parameter named in ``outputs``, allocated by the op
  and returned, so it is not in the schema's arguments;
- the **stream**: never in the schema; the op passes torch's current stream.

Why ``Scalar`` for every number: torch's argument parser converts a value for
``SymInt``, ``float`` or ``bool`` before the op's implementation sees it (a
tensor ``2.5`` for an ``Int32`` becomes 2, ``2`` or ``None`` for a ``Boolean``
becomes ``True`` or ``False``), so ``torch.ops.<ns>.<name>`` would take
silently what the op's eager call refuses. ``Scalar`` hands the implementation
the Python number as given (a ``bool``, ``int``, ``float`` or ``complex``, or a
``SymInt`` from a dynamic shape, which stays symbolic under ``torch.compile``),
and the kernel's own slot check refuses it there with the eager call's code
(CB204, CB205). What ``Scalar`` itself refuses (a tensor, a NumPy scalar, a
string, an int past 64 bits) is torch's own error on that door.

Nothing here imports torch: the plan is plain data, and the schema a string.
"""

from __future__ import annotations

import inspect
import keyword
import math
import typing
from dataclasses import dataclass
from typing import Any, Iterable

from .. import diagnostics as D
from ..jit.signature import Defaulted, KernelSignature, Param
from ..slots import OptionalKind, ScalarKind, SequenceKind, SlotKind, StreamKind

__all__ = ["OpParam", "OpPlan", "plan_op", "parse_name"]

_EMPTY = inspect.Parameter.empty

#: names the generated call code uses for itself; a kernel parameter may not take them
RESERVED_PREFIX = "_cb_"

_CONSTEXPR_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}


@dataclass(frozen=True)
class OpParam(Defaulted):
    """One kernel parameter as the op sees it.

    ``role`` is ``"input"``, ``"output"``, ``"stream"`` or ``"fixed"`` (always
    its ``default``); ``schema_type`` the schema type of an input (``None``
    otherwise, and without the ``?`` of an optional one); ``tensor`` is true for a
    ``Tensor``, ``Tensor?`` or ``Tensor[]`` input or an output; ``sequence`` for a
    list type; ``optional`` for an input that may be ``None`` (``Tensor?``).
    """

    name: str
    role: str
    schema_type: str | None = None
    tensor: bool = False
    sequence: bool = False
    mutated: bool = False
    default: object = _EMPTY
    keyword_only: bool = False
    optional: bool = False
    number: str | None = None


@dataclass(frozen=True)
class OpPlan:
    """The whole op: its qualified name, every kernel parameter's role, the schema string."""

    qualname: str
    kernel: str
    params: tuple[OpParam, ...]
    outputs: tuple[str, ...]

    @property
    def namespace(self) -> str:
        return self.qualname.split("::")[0]

    @property
    def opname(self) -> str:
        return self.qualname.split("::")[1]

    @property
    def inputs(self) -> tuple[OpParam, ...]:
        return tuple(p for p in self.params if p.role == "input")

    @property
    def stream(self) -> OpParam | None:
        return next((p for p in self.params if p.role == "stream"), None)

    def schema(self) -> str:
        """The schema without the op name, e.g. ``(Tensor(a0!) out, Tensor inp, Scalar alpha) -> ()``."""
        args = []
        alias = 0
        star = False
        for p in self.inputs:
            if p.keyword_only and not star:
                args.append("*")
                star = True
            t = p.schema_type or ""
            if p.mutated:
                t = f"Tensor(a{alias}!)" + ("[]" if p.sequence else "")
                alias += 1
            if p.optional:
                t += "?"
            text = f"{t} {p.name}"
            if p.has_default:
                text += "=" + _default_text(p.default, t, p.number)
            args.append(text)
        if not self.outputs:
            ret = "()"
        elif len(self.outputs) == 1:
            ret = "Tensor"
        else:
            ret = "(" + ", ".join("Tensor" for _ in self.outputs) + ")"
        return "(" + ", ".join(args) + ") -> " + ret


def _default_text(value: Any, schema_type: str, number: str | None = None) -> str:
    """A default as the schema spells it for its slot's kind: torch reads ``Scalar b=1`` as the int 1,
    ``Scalar n=True`` as a bool, ``Scalar x=1`` as an int (``number``: the slot's kind, see :class:`OpParam`)."""
    if value is None:  # an optional input's
        return "None"
    if number is None:  # a Constexpr's plain type, or a union of several number kinds: the value's own
        number = schema_type if schema_type in ("bool", "float", "int") else "bool" if isinstance(value, bool) else None
        number = number or ("float" if isinstance(value, float) else "int")
    if number == "bool":  # a Boolean slot also takes 0/1 as its default
        return "True" if value else "False"
    if number == "float":  # a float slot's 1 is 1.0, as the kernel reads it
        return repr(float(value))
    return str(int(value))  # a number parameter's True/False default is 1/0


def parse_name(name: object, kernel: str) -> tuple[str, str]:
    """``"ns::name"`` into its two identifiers, or CB704."""
    if isinstance(name, str) and name.count("::") == 1:
        ns, op = name.split("::")
        if ns.isidentifier() and op.isidentifier() and not keyword.iskeyword(op):
            return ns, op
    raise D.error(
        D.OP_NAME_INVALID,
        kernel=kernel,
        expected='a name "namespace::opname" of two Python identifiers, e.g. "mylib::scale"',
        got=repr(name),
    )


def _number_kind(slot: ScalarKind) -> str:
    if slot.is_bool:
        return "bool"
    return "float" if slot.is_float else "int"


def _kinds(slots: Iterable[SlotKind]) -> str | None:
    """The one number kind of these slots, or None (several, or not all scalars)."""
    kinds = {_number_kind(s) if isinstance(s, ScalarKind) else None for s in slots}
    return kinds.pop() if len(kinds) == 1 else None


def _element_type(slot: SlotKind) -> tuple[str, bool] | None:
    """(schema type, is a tensor) of one element kind, or None where no schema type fits: the kind's own
    :meth:`~cute_bind.slots.SlotKind.schema_element` (every number kind is a Scalar: see the module's docstring)."""
    return slot.schema_element()


def _unsupported(kernel: str, p: Param, got: str, why: str) -> Exception:
    return D.error(
        D.OP_PARAMETER_UNSUPPORTED,
        kernel=kernel,
        parameter=p.name,
        expected="a tensor, pointer, scalar, stream, homogeneous sequence of those, or Constexpr[int|float|bool|str]",
        got=got,
        detail=why,
    )


def _input(kernel: str, p: Param) -> OpParam:
    """The schema view of one input parameter, or CB702."""
    slot = p.slot
    schema_type: str | None = None
    number: str | None = None
    tensor = sequence = optional = False
    if slot is None:  # Constexpr
        args = typing.get_args(p.annotation)
        schema_type = _CONSTEXPR_TYPES.get(args[0]) if len(args) == 1 and isinstance(args[0], type) else None
        if schema_type is None:
            raise _unsupported(kernel, p, repr(p.annotation), "a compile-time value needs a plain type the schema can carry")
    elif isinstance(slot, SequenceKind):
        kinds = set()
        if slot.homogeneous is not None:
            kinds.add(_element_type(slot.homogeneous))
        for e in slot.elements or ():
            kinds.add(_element_type(e))
        if len(kinds) != 1 or None in kinds:
            raise _unsupported(
                kernel,
                p,
                slot.describe(),
                "a sequence must have one element kind (tensors, pointers or one scalar type) to be a schema list",
            )
        ((schema_type, tensor),) = kinds  # type: ignore[misc]  # a set of one pair, checked above
        schema_type = f"{schema_type}[]"
        sequence = True
        number = None if tensor else _kinds(((slot.homogeneous,) if slot.homogeneous is not None else ()) + tuple(slot.elements or ()))
    elif isinstance(slot, OptionalKind):
        optional = True
        members = {_element_type(m) for m in slot.members}
        if len(members) != 1 or None in members:
            spelled = " | ".join(m.describe() for m in slot.members)
            why = (
                f"its members ({spelled}) have no one torch schema type"
                if len(slot.members) > 1
                else f"the {slot.element.kind} slot kind has no torch schema type"
            )
            raise _unsupported(kernel, p, slot.describe(), why + "; give it a default to have the op pass that value always")
        ((schema_type, tensor),) = members  # type: ignore[misc]  # a set of one pair, checked above
        number = None if tensor else _kinds(slot.members)
    else:
        element = _element_type(slot)
        if element is None:
            raise _unsupported(
                kernel,
                p,
                slot.describe(),
                f"the {slot.kind} slot kind has no torch schema type; give it a default to have the op pass that value always",
            )
        schema_type, tensor = element
        number = None if tensor else _kinds((slot,))
    if p.keyword_only and tensor:
        raise _unsupported(
            kernel, p, "a keyword-only tensor parameter", "torch custom ops take tensors positionally; make it an ordinary parameter"
        )
    default = p.default
    if p.has_default:
        finite = isinstance(default, (bool, int, float)) and not (isinstance(default, float) and not math.isfinite(default))
        ok = (optional and default is None) or (not tensor and not sequence and finite)
        if not ok:
            raise _unsupported(
                kernel,
                p,
                f"default {default!r}",
                "a schema default must be a finite number or a bool on a scalar parameter, or None on an optional one",
            )
    return OpParam(
        name=p.name,
        role="input",
        schema_type=schema_type,
        tensor=tensor,
        sequence=sequence,
        default=default,
        keyword_only=p.keyword_only,
        optional=optional,
        number=number,
    )


def _schema_less(slot: SlotKind | None) -> bool:
    """Whether a parameter of this kind has no torch schema type at all (a structure, an optional structure)."""
    if slot is None or isinstance(slot, (SequenceKind, StreamKind)):
        return False
    if isinstance(slot, OptionalKind):
        return all(_element_type(m) is None for m in slot.members)
    return _element_type(slot) is None


def _names(value: Any, what: str, kernel: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        names = tuple(value)
    except TypeError:
        names = (value,)
    for n in names:
        if not isinstance(n, str):
            raise D.error(
                D.OP_SPEC_INVALID, kernel=kernel, parameter=repr(n), expected=f"{what}: parameter names (strings)", got=repr(value)
            )
    return names


def plan_op(qualname: str, sig: KernelSignature, mutates_args: Iterable[str] | str, outputs: Iterable[str]) -> OpPlan:
    """Every parameter's role and schema type; CB702/CB703/CB704 for what cannot be an op."""
    kernel = sig.name
    parse_name(qualname, kernel)
    mutated = _names(mutates_args, "mutates_args", kernel)
    outs = _names(outputs, "outputs", kernel)
    by_name = {p.name: p for p in sig.params}
    for what, names in (("mutates_args", mutated), ("outputs", outs)):
        for n in names:
            p = by_name.get(n)
            if p is None:
                raise D.error(
                    D.OP_SPEC_INVALID,
                    kernel=kernel,
                    parameter=n,
                    expected=f"{what}: names of the kernel's parameters ({', '.join(by_name)})",
                    got=repr(n),
                )
            slot = p.slot
            if isinstance(slot, OptionalKind) and not slot.is_union:  # Optional[cute.Tensor]: given, or allocated
                slot = slot.element
            element = _element_type(slot) if slot is not None and not isinstance(slot, SequenceKind) else None
            is_tensor = element is not None and element[1]
            if isinstance(p.slot, SequenceKind) and what == "mutates_args":
                inner = {_element_type(e) for e in ((p.slot.homogeneous,) if p.slot.homogeneous else p.slot.elements or ())}
                is_tensor = inner == {("Tensor", True)}
            if not is_tensor:
                kind = "Constexpr" if p.slot is None else p.slot.describe()
                need = "a tensor or pointer parameter" + (" (or a sequence of them)" if what == "mutates_args" else "")
                raise D.error(D.OP_SPEC_INVALID, kernel=kernel, parameter=n, expected=f"{what}: {need}", got=f"a {kind} parameter")
    both = sorted(set(mutated) & set(outs))
    if both:
        raise D.error(
            D.OP_SPEC_INVALID,
            kernel=kernel,
            parameter=both[0],
            expected="a parameter in mutates_args or in outputs, not both",
            got="listed in both",
        )
    if not mutated and not outs:
        raise D.error(
            D.OP_SPEC_INVALID,
            kernel=kernel,
            expected="mutates_args naming the tensors the kernel writes, or outputs for the tensors the op allocates",
            got="neither",
        )
    params: list[OpParam] = []
    for p in sig.params:
        if p.name.startswith(RESERVED_PREFIX):
            raise _unsupported(kernel, p, repr(p.name), f"names starting with {RESERVED_PREFIX!r} are used by the generated op")
        if isinstance(p.slot, StreamKind):
            params.append(OpParam(name=p.name, role="stream", keyword_only=p.keyword_only))
        elif p.name in outs:
            params.append(OpParam(name=p.name, role="output", tensor=True, keyword_only=p.keyword_only))
        elif p.has_default and p.name not in mutated and _schema_less(p.slot):
            params.append(OpParam(name=p.name, role="fixed", default=p.default, keyword_only=p.keyword_only))
        else:
            op_param = _input(kernel, p)
            if p.name in mutated:
                op_param = OpParam(**{**op_param.__dict__, "mutated": True})
            params.append(op_param)
    if sum(p.role == "stream" for p in params) > 1:
        extra = [p.name for p in params if p.role == "stream"][1]
        raise _unsupported(
            kernel, by_name[extra], "a second stream parameter", "the op passes torch's current stream to one stream parameter"
        )
    return OpPlan(qualname=qualname, kernel=kernel, params=tuple(params), outputs=outs)
