"""Static eligibility rules: the runtime's classification, read from source text.

``@cute_bind.kernel`` classifies each parameter's *evaluated* annotation at
decoration time (:func:`cute_bind.slots.classify`). The two static tools,
``cute-bind check`` (:mod:`cute_bind.static.checker`) and the mypy plugin
(:mod:`cute_bind.mypy`), cannot evaluate anything: they read the source with
:mod:`ast`, resolve each annotation's names through the file's own imports and
module-level assignments to qualified names (``cute.Tensor`` after
``import cutlass.cute as cute`` is ``cutlass.cute.Tensor``) and look those up
in the same tables, :mod:`cute_bind._whitelist`. Messages are rendered from
the same catalog entries, so all three report the same code, parameter and
text for the same function.

Both tools use this module and nothing else for the rules, so they agree by
construction; ``tests/static/test_agreement.py`` checks them against the
runtime on ``tests/static/corpus``.

What a name-based reading cannot know, and how it is handled:

- a name bound by ``from m import *`` is assumed to be ``m.<name>``;
- a module-level alias (``Ptr = cute_bind.Pointer[cutlass.Float32]``) is
  followed to its value; a value that is a call or any other expression is
  unknown and classified as unsupported (CB102), as the runtime would do for
  anything that is not a whitelisted type;
- a NamedTuple or dataclass (a structure slot) is read from its ``class``
  statement, in the file or in the source of the installed module it is
  imported from (found on ``sys.path``, never imported); a class whose source
  cannot be read that way (a star import, a C extension, a module not found)
  is classified as unsupported (CB102);
- whether an attribute exists is not checked (``cutlass.Int3`` is CB102
  statically, CB107 at run time under postponed annotations);
- the parameters of ``cute_bind.Pointer[...]`` and ``cute_bind.Tensor[...]``
  are not checked: an invalid one raises CB109/CB112 when the annotation is
  evaluated, which fails the module's import before the decorator runs (or,
  in a string annotation, makes it unresolvable: CB107 at run time).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import sys
import typing
from dataclasses import dataclass

from .. import _whitelist as W
from ..diagnostics import CATALOG, CuteBindError
from . import names as _names, report as _report
from .names import MAX_ALIAS_DEPTH, Binding, NameResolver, Scope, Site, module_name_for_path
from .report import NOT_CHECKED, StaticDiagnostic, not_checked, refused, too_deep
from .source import read_source

__all__ = [
    "KERNEL_DECORATORS",
    "SUBSCRIPTED_POINTERS",
    "SUBSCRIPTED_TENSORS",
    "REPORTED_CODES",
    "DECORATOR_CODES",
    "StaticDiagnostic",
    "ModuleAnalysis",
    "Site",
    "SlotReading",
    "analyze_source",
    "check_source",
    "not_checked",
    "refused",
    "too_deep",
    "refresh_modules",
    "modules_generation",
    "NOT_CHECKED",
    "module_name_for_path",
    "rules_fingerprint",
]

#: Qualified names of the decorator (``cute_bind.kernel`` is re-exported from ``cute_bind.jit.decorator``).
KERNEL_DECORATORS: frozenset[str] = frozenset({"cute_bind.kernel", "cute_bind.jit.decorator.kernel"})

#: Pointer names that are only a pointer when subscripted: bare ``cute_bind.Pointer``
#: is the helper class itself, which the runtime rejects as CB102. Derived from
#: the whitelist so a renamed helper needs no change here.
SUBSCRIPTED_POINTERS: frozenset[str] = frozenset(n for n in W.POINTER_NAMES if n.partition(".")[0] == "cute_bind")

#: The same for tensors: ``cute_bind.Tensor[dtype, rank]`` is a tensor, bare ``cute_bind.Tensor`` is CB102.
SUBSCRIPTED_TENSORS: frozenset[str] = frozenset(n for n in W.TENSOR_NAMES if n.partition(".")[0] == "cute_bind")

#: Catalog codes the static tools report. The other definition-time codes are
#: not about one parameter's annotation (CB108 not a function, CB110 options,
#: CB111 compiling) or need the annotation's values, which only evaluating it
#: gives (CB109/CB112: the parameters of ``cute_bind.Pointer[...]``/``Tensor[...]``,
#: raised at run time where the annotation is evaluated, before the decorator runs).
REPORTED_CODES: frozenset[str] = frozenset({"CB101", "CB102", "CB104", "CB106", "CB107", "CB113", "CB114", "CB125"})

#: Catalog codes the static tools report about a kernel's decorators (on the
#: decorator's line, without a parameter): a DSL decorator above
#: ``@cute_bind.kernel`` (CB116) or ``@cute.kernel`` under it (CB117).
DECORATOR_CODES: frozenset[str] = frozenset({"CB116", "CB117", "CB127"})

_ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})
# Kinds ``classify`` accepts, and those it accepts as a sequence's elements.
_ELEMENT_KINDS = frozenset({"pointer", "scalar", "stream", "tensor"})
_ELIGIBLE = _ELEMENT_KINDS | {"constexpr", "sequence", "optional", "structure"}
# Kinds a union with None may hold (``slots/optional.py``: any runtime kind but another optional).
_OPTIONAL_MEMBERS = _ELEMENT_KINDS | {"sequence", "structure"}
# Top-level packages whose names are never structures (the whitelist decides them): their sources are not read.
_NOT_STRUCTURES = frozenset(
    {"cutlass", "cuda", "builtins", "typing", "typing_extensions", "cute_bind", "collections", "dataclasses", "enum"}
)
# Top-level packages whose classes are never a client's own (``slots/optional.py``'s ``_NOT_CLIENT``).
_NOT_CLIENT = frozenset({"builtins", "cutlass", "cuda", "typing", "typing_extensions", "types", "collections", "enum", "abc", "cute_bind"})
# The CB125 detail for a stream field of a NamedTuple (``slots/structure.py`` spells it the same).
_NAMEDTUPLE_STREAM = "field '{name}': a stream inside a NamedTuple is not passed by the DSL (it adapts nothing inside one); use a dataclass"
# Class-body annotations that are not fields (dataclasses skip them; a NamedTuple refuses them).
_NOT_FIELDS = frozenset({"typing.ClassVar", "typing_extensions.ClassVar", "dataclasses.InitVar", "dataclasses.KW_ONLY"})
# Sequence origins whose parameters are one annotation per element (``tuple[X, Y]``,
# ``tuple[X, ...]``); every other sequence origin takes its first parameter as the
# annotation of all elements (``list[X]``, ``Sequence[X]``).
_TUPLES = frozenset({"builtins.tuple", "typing.Tuple"})
_PY_SCALARS = frozenset(f"builtins.{n}" for n in W.PYTHON_SCALARS)

# The runtime (cute_bind.jit.signature._analyse) fills these fields with fixed
# texts for these two cases; tests/static/test_agreement.py pins them to it.
_GOT_NO_ANNOTATION = "no annotation"
_EXPECTED_VARIADIC = "named parameters, one per slot"


@dataclass(frozen=True)
class SlotReading:
    """What the rules make of one parameter: the slot kind the runtime gives it
    (``pointer``, ``scalar``, ``stream``, ``tensor``, ``sequence``, ``optional``,
    ``structure``, ``constexpr``) or the catalog code that rejects it, and its
    annotation spelled as the runtime spells it (``None`` without one)."""

    kind: str
    annotation: str | None
    qualname: str | None = None  # the annotation's qualified name when it is a plain name (``cutlass.Int32``)


@dataclass(frozen=True)
class _Verdict:
    code: str
    got: str
    detail: str | None = None


@dataclass(frozen=True)
class _Kind:
    """What the runtime's ``classify`` makes of one annotation: an eligible kind
    (one of ``_ELIGIBLE``) or the catalog code that rejects it, with CB113's detail."""

    kind: str
    detail: str | None = None


class ModuleAnalysis(NameResolver):
    """One source file: its scopes, its ``def`` statements and their eligibility.

    :meth:`kernels` finds functions decorated with ``@cute_bind.kernel`` in any
    of its spellings, resolved through the file's imports;
    :meth:`check_def` checks one ``def`` whatever its decorator (the mypy
    plugin finds decorated functions through mypy's own name resolution).
    """

    def __init__(self, tree: ast.Module, module: str | None = None, source: str | None = None) -> None:
        #: the text the tree was parsed from, when known (quick fixes quote it)
        self.source = source
        #: the package relative imports start from (known for modules read from an installed source)
        self.package: str | None = None
        self.future_annotations = any(
            isinstance(st, ast.ImportFrom) and st.module == "__future__" and any(a.name == "annotations" for a in st.names)
            for st in tree.body
        )
        super().__init__(tree, module)
        self._module_body = tree.body
        self._registrations: dict[tuple[str, int], tuple[str, int]] | None = None

    # ------------------------------------------------------------------ classification

    def _classify(self, node: ast.expr, scope: Scope, before: int | None) -> _Verdict | None:
        """Mirror of :func:`cute_bind.slots.classify` on an (evaluable) annotation expression."""
        node, scope, before = self._expand(node, scope, before)
        found = self._kind(node, scope, before)
        if found.kind in _ELIGIBLE:
            return None
        return _Verdict(found.kind, self._render(node, scope, before), found.detail)

    def _kind(self, node: ast.expr, scope: Scope, before: int | None) -> _Kind:
        """What ``classify`` makes of ``node``: its rules in their order (Constexpr, pointer,
        scalar, stream, tensor, sequence, then CB104/CB102)."""
        node, scope, before = self._expand(node, scope, before)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._union_kind(_union_members(node), scope, before, node)
        if isinstance(node, ast.Subscript):
            head = self._qualname(node.value, scope, before)
            if head in W.OPTIONAL_NAMES:
                members = _union_items(node.slice)
                if head.endswith(".Optional"):
                    members = members[:1] + [ast.Constant(None)]
                return self._union_kind(members, scope, before, node)
            if head in W.CONSTEXPR_NAMES:
                return _Kind("constexpr")
            return self._subscripted_kind(head, node.slice, scope, before)
        q = self._qualname(node, scope, before) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if q is None:
            # a class of this file (a NamedTuple or dataclass is a structure slot)
            local = self._structure_kind(node, scope, before) if isinstance(node, ast.Name) else None
            return local if local is not None else _Kind("CB102")
        if q in W.CONSTEXPR_NAMES:
            return _Kind("constexpr")
        if q in W.POINTER_NAMES and q not in SUBSCRIPTED_POINTERS:
            return _Kind("pointer")
        if q in _PY_SCALARS or (_in_cutlass(q) and _last(q) in W.SCALAR_FORMATS):
            return _Kind("scalar")
        if q in W.STREAM_NAMES:
            return _Kind("stream")
        if q in W.TENSOR_NAMES and q not in SUBSCRIPTED_TENSORS:
            return _Kind("tensor")
        if q in W.SEQUENCE_NAMES:
            return _Kind("sequence")  # unparameterized: the element kinds come from the values at bind
        structure = self._structure_kind(node, scope, before)
        if structure is not None:
            return structure
        return _Kind(_rejection(q))

    def _union_kind(self, members: list[ast.expr], scope: Scope, before: int | None, node: ast.expr) -> _Kind:
        """``Optional[X]``, ``Union[X, Y, None]``, ``X | Y | None``: optional when every member besides
        ``None`` is an eligible runtime kind; CB114 naming the first member that is not; else (no
        ``None``) CB102, as ``OptionalKind.recognize``/``rejection`` decide."""
        flat: list[ast.expr] = []
        for m in members:  # Union[Union[a, b], c] and (a | b) | c are flattened by typing
            m, _, _ = self._expand(m, scope, before)
            if isinstance(m, ast.BinOp) and isinstance(m.op, ast.BitOr):
                flat.extend(_union_members(m))
            elif isinstance(m, ast.Subscript) and (head := self._qualname(m.value, scope, before)) in W.OPTIONAL_NAMES:
                inner = _union_items(m.slice)
                flat.extend(inner[:1] + [ast.Constant(None)] if str(head).endswith(".Optional") else inner)
            else:
                flat.append(m)
        rest = [m for m in flat if not _is_none(m)]
        nullable = len(rest) != len(flat)
        kinds = [self._kind(element, scope, before) for element in rest]
        if not nullable and not any(k.kind == "tensor" for k in kinds):
            return _Kind("CB102")  # a union of numbers without None
        for element, found in zip(rest, kinds):
            if not nullable and found.kind not in _OPTIONAL_MEMBERS and self._client_class(element, scope, before):
                continue  # a client's own class beside a tensor: its values are read by their own kind
            if found.kind not in _OPTIONAL_MEMBERS:
                spelled_element = self._render(element, scope, before)
                return _Kind("CB114", f"{spelled_element} is not a pointer, scalar, stream, tensor, sequence or structure of those")
        return _Kind("optional")

    def _client_class(self, node: ast.expr, scope: Scope, before: int | None) -> bool:
        """Whether a union member names a client's own class (``optional.client_class``): a class
        statement of this file or an installed module, or a name outside the DSL, ``cuda``, the
        standard typing modules and the builtins."""
        node, scope, before = self._expand(node, scope, before)
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        q = self._qualname(node, scope, before)
        if q is None:
            return isinstance(self._class_of(node, scope, before, 0), tuple)
        return q.partition(".")[0] not in _NOT_CLIENT

    # ------------------------------------------------------------------ structures
    def _structure_kind(self, node: ast.expr, scope: Scope, before: int | None) -> _Kind | None:
        """A NamedTuple or dataclass (``slots/structure.py``): "structure" when every field is
        eligible or None, CB125 naming the first field that is not; ``None`` when ``node`` names
        no such class, or one whose source cannot be read (CB102 follows, as before structures)."""
        found = self._class_of(node, scope, before, 0)
        if found is None or isinstance(found, _Kind):
            return found
        owner, cls, cls_scope = found
        return owner._class_kind(cls, cls_scope, self._render(node, scope, before))

    def _class_of(self, node: ast.expr, scope: Scope, before: int | None, depth: int) -> _ClassFound:
        """The ``class`` statement ``node`` names (here or in an installed module's source),
        ``None`` when it names no class or its source cannot be read (a star import, a C
        extension, a module not found), or the kind of what another module's alias stands for."""
        if depth > MAX_ALIAS_DEPTH:
            return None
        node, scope, before = self._expand(node, scope, before)
        if isinstance(node, ast.Name):
            found = scope.lookup(node.id, before)
            if isinstance(found, Binding) and found.kind == "local":
                if found.cls is not None:
                    return (self, found.cls, found.scope)
                if found.target is not None:  # a relative import: read it when this module's package is known
                    return self._relative_class(found.target, depth)
                return None
        q = self._qualname(node, scope, before) if isinstance(node, (ast.Name, ast.Attribute)) else None
        return _external_class(q, depth + 1) if q is not None else None

    def _relative_class(self, target: str, depth: int) -> _ClassFound:
        if self.package is None:
            return None
        rest = target.lstrip(".")
        level = len(target) - len(rest)
        base = self.package.split(".")
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return _external_class(".".join([*base, rest]), depth + 1) if base else None

    def _class_kind(self, cls: ast.ClassDef, scope: Scope, spelled: str) -> _Kind | None:
        """What ``structure_fields`` makes of a class (``None``: not a structure)."""
        key = id(cls)
        if key in _ACTIVE_CLASSES:
            return _Kind("CB125", f"{spelled} holds itself")
        _ACTIVE_CLASSES.add(key)
        try:
            namedtuple = dataclass_ = False
            inherited: list[_Kind] = []  # the verdicts of base classes that are structures
            for base in cls.bases:
                head = base.value if isinstance(base, ast.Subscript) else base  # Generic[T]
                q = self._qualname(head, scope, cls.lineno)
                if q in W.NAMEDTUPLE_BASES:
                    namedtuple = True
                elif q not in ("builtins.object", "typing.Generic"):
                    found = self._structure_kind(base, scope, cls.lineno)
                    if found is not None:
                        inherited.append(found)
            for d in cls.decorator_list:
                if self._qualname(d.func if isinstance(d, ast.Call) else d, scope, cls.lineno) in W.DATACLASS_DECORATORS:
                    dataclass_ = True
            if not (namedtuple or dataclass_):
                # a subclass of a NamedTuple or dataclass is one, with its base's fields only
                return inherited[0] if inherited else None
            for verdict in inherited:  # a dataclass lists its bases' fields first
                if verdict.kind != "structure":
                    return verdict
            return self._fields_kind(cls, scope, namedtuple)
        finally:
            _ACTIVE_CLASSES.discard(key)

    def _is_stream(self, ann: ast.expr, scope: Scope, before: int | None) -> bool:
        """A stream annotation, or a union with a stream member (``structure._is_stream``)."""
        ann, scope, before = self._expand(ann, scope, before)
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return any(self._is_stream(m, scope, before) for m in _union_members(ann))
        if isinstance(ann, ast.Subscript) and self._qualname(ann.value, scope, before) in W.OPTIONAL_NAMES:
            return any(self._is_stream(m, scope, before) for m in _union_items(ann.slice))
        return self._kind(ann, scope, before).kind == "stream"

    def _fields_kind(self, cls: ast.ClassDef, scope: Scope, namedtuple: bool) -> _Kind:
        # Field annotations are evaluated by ``typing.get_type_hints`` in the module's globals
        # (and a non-string one when the class body runs): names bound before the class.
        module = scope.module_scope()
        fields: list[tuple[str, ast.expr]] = []
        for st in cls.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            ann = st.annotation
            head = ann.value if isinstance(ann, ast.Subscript) else ann
            if self._qualname(head, scope, cls.lineno) in _NOT_FIELDS:
                continue
            fields.append((st.target.id, ann))
        for name, ann in fields:
            field_scope, field_before = scope, cls.lineno if scope.at_import else None
            if self.future_annotations or (isinstance(ann, ast.Constant) and isinstance(ann.value, str)):
                raw = ann.value if isinstance(ann, ast.Constant) else ast.unparse(ann)
                try:
                    ann = ast.parse(str(raw).strip(), mode="eval").body
                except SyntaxError as exc:
                    return _Kind("CB125", f"its field annotations cannot be resolved (SyntaxError: {exc.msg})")
                except ValueError as exc:  # a lone surrogate in the string
                    return _Kind("CB125", f"its field annotations cannot be resolved ({type(exc).__name__}: {exc})")
                field_scope, field_before = module, None
            missing = self._first_unbound(ann, field_scope, field_before)
            if missing is not None:
                return _Kind("CB125", f"its field annotations cannot be resolved (NameError: name '{missing}' is not defined)")
            if _is_none(ann):
                continue
            found = self._kind(ann, field_scope, field_before)
            if found.kind == "constexpr":
                continue  # a constant of the compiled code (no C argument), in a NamedTuple as in a dataclass
            if namedtuple and self._is_stream(ann, field_scope, field_before):
                return _Kind("CB125", _NAMEDTUPLE_STREAM.format(name=name))
            if found.kind in _ELIGIBLE:
                continue
            why = found.detail or CATALOG[found.kind].summary.rstrip(".")
            return _Kind("CB125", f"field '{name}': {self._render(ann, field_scope, field_before)} is not eligible ({why})")
        return _Kind("structure")

    def _subscripted_kind(self, head: str | None, params: ast.expr, scope: Scope, before: int | None) -> _Kind:
        """``head[params]`` for the heads an annotation and an ``Annotated`` base share: ``cute_bind.Pointer[...]``,
        ``cute_bind.Tensor[...]``, ``Annotated[...]`` (``Annotated[Annotated[x, a], b]`` is ``Annotated[x, a, b]``)
        and sequences; any other head is CB102."""
        if head in SUBSCRIPTED_POINTERS:
            return _Kind("pointer")
        if head in SUBSCRIPTED_TENSORS:
            return _Kind("tensor")
        if head in _ANNOTATED:
            return self._annotated_kind(_first_item(params), scope, before)
        if head is not None and head in W.SEQUENCE_NAMES:
            return self._sequence_kind(head, params, scope, before)
        return _Kind("CB102")

    def _annotated_kind(self, base: ast.expr, scope: Scope, before: int | None) -> _Kind:
        """``Annotated[base, ...]``: the runtime looks through it for pointers and tensors (the
        form ``cute_bind.Pointer[...]``/``Tensor[...]`` evaluate to), sequences and CB104, not
        for scalars, streams or Constexpr, so ``Annotated[cutlass.Int32, ...]`` is CB102."""
        base, scope, before = self._expand(base, scope, before)
        if isinstance(base, ast.Subscript):
            return self._subscripted_kind(self._qualname(base.value, scope, before), base.slice, scope, before)
        q = self._qualname(base, scope, before) if isinstance(base, (ast.Name, ast.Attribute)) else None
        if q is None:
            return _Kind("CB102")
        if q in W.POINTER_NAMES and q not in SUBSCRIPTED_POINTERS:
            return _Kind("pointer")
        if q in W.TENSOR_NAMES and q not in SUBSCRIPTED_TENSORS:
            return _Kind("tensor")
        if q in W.SEQUENCE_NAMES:
            return _Kind("sequence")
        return _Kind(_rejection(q))

    def _sequence_kind(self, head: str, params: ast.expr, scope: Scope, before: int | None) -> _Kind:
        """``tuple[X, Y]``, ``tuple[X, ...]``, ``list[X]``, ``Sequence[X]``, ``tuple[()]``:
        eligible when every element is a pointer, scalar, stream or tensor, else CB113
        naming the first element that is not (``_sequence_slot.element_problem``)."""
        items = params.elts if isinstance(params, ast.Tuple) else [params]  # ``tuple[()]``: no items
        if head not in _TUPLES:
            items = items[:1]  # ``list[X]``: X is every element's annotation
        elif len(items) == 2 and _is_ellipsis(items[1]):
            items = items[:1]  # ``tuple[X, ...]``: X repeated
        for index, item in enumerate(items):
            found = self._kind(item, scope, before)
            if found.kind in _ELEMENT_KINDS:
                continue
            expanded, item_scope, item_before = self._expand(item, scope, before)
            spelled = self._render(expanded, item_scope, item_before)
            # A sequence element is "a sequence" whether or not its own elements are eligible.
            what = "is a sequence" if found.kind in ("sequence", "CB113") else "is not a pointer, scalar, stream or tensor"
            return _Kind("CB113", f"element {index}: {spelled} {what}")
        return _Kind("sequence")

    def _annotation(self, ann: ast.expr, site: Site) -> _Verdict | None:
        """Mirror of ``_signature._resolve`` + ``classify`` for one annotation."""
        resolved = self._resolved(ann, site)
        if isinstance(resolved, _Verdict):
            return resolved
        return self._classify(*resolved)

    def _resolved(self, ann: ast.expr, site: Site) -> _Verdict | tuple[ast.expr, Scope, int | None]:
        """The expression an annotation evaluates, where (``_signature._resolve``), or CB107."""
        if self.future_annotations:
            raw = ast.unparse(ann)  # PEP 563 stores the annotation's source as this string
        elif isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            raw = ann.value
        else:
            # Evaluated when the ``def`` runs, in the enclosing scope. A name that is
            # not bound makes the module fail to import; CB107 is still the fitting report.
            missing = self._first_unbound(ann, site.scope, site.before)
            if missing is not None:
                return _Verdict("CB107", repr(ast.unparse(ann)), f"NameError: name '{missing}' is not defined")
            return ann, site.scope, site.before
        # A string: cute_bind evaluates it with eval() in the module's globals.
        source = raw.lstrip(" \t")  # eval() strips leading blanks of a string source
        try:
            compile(source, "<string>", "eval")  # the same parser, so the same message, as eval()
            expr = ast.parse(source, mode="eval").body
        except SyntaxError as exc:
            return _Verdict("CB107", repr(raw), f"SyntaxError: {exc}")
        except ValueError as exc:  # a lone surrogate (UnicodeEncodeError), a null byte: eval() raises the same
            return _Verdict("CB107", repr(raw), f"{type(exc).__name__}: {exc}")
        module = site.scope.module_scope()
        missing = self._first_unbound(expr, module, site.before)
        if missing is not None:
            return _Verdict("CB107", repr(raw), f"NameError: name '{missing}' is not defined")
        return expr, module, site.before

    def slot(self, site: Site, param: ast.arg) -> SlotReading:
        """What ``@cute_bind.kernel`` makes of one parameter of ``site`` (hover text is built on it)."""
        a = site.node.args
        if param is a.vararg or param is a.kwarg:
            return SlotReading("CB106", None)
        if param.annotation is None:
            return SlotReading("CB101", None)
        resolved = self._resolved(param.annotation, site)
        if isinstance(resolved, _Verdict):
            return SlotReading(resolved.code, resolved.got)
        node, scope, before = self._expand(*resolved)
        found = self._kind(node, scope, before)
        q = self._qualname(node, scope, before) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if isinstance(node, ast.Subscript):
            q = self._qualname(node.value, scope, before)
        return SlotReading(found.kind, self._render(node, scope, before), q)

    def kind_at(self, node: ast.expr, site: Site) -> str:
        """What ``classify`` makes of ``node``, a part of one of ``site``'s annotations: a kind or a code."""
        return self._kind(node, site.scope, site.before).kind

    # ------------------------------------------------------------------ functions
    def kernel_name(self, site: Site) -> str | None:
        """The kernel's name in messages if ``site`` is decorated with ``@cute_bind.kernel``, or is a
        module-level function that a module-level ``cute_bind.kernel(fn)`` call makes a kernel of;
        else ``None``."""
        for dec in site.node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            target = call.func if call is not None else dec
            if self._qualname(target, site.scope, site.before) not in KERNEL_DECORATORS:
                continue
            return option_name(call) or site.node.name
        return self._registered_name(site)

    def _registered_name(self, site: Site) -> str | None:
        """The kernel name of a ``cute_bind.kernel(fn)`` call form naming ``site``'s function."""
        if site.scope is not self.root:
            return None
        # the def's binding line: its own ``def`` line, or where the language server's context
        # stands the def parsed apart (Site.position)
        line = site.position if site.position is not None else site.node.lineno
        found = self._call_forms().get((site.node.name, line))
        return found[0] if found is not None else None

    def call_form_kernel(self, call_line: int, name: str, def_line: int) -> str | None:
        """The kernel name when the ``cute_bind.kernel(...)`` call on ``call_line`` is the first of the
        module's statements to make the ``def name`` on ``def_line`` a kernel (the mypy plugin reports
        that def's diagnostics at that call only, as ``cute-bind check`` reports them once)."""
        found = self._call_forms().get((name, def_line))
        return found[0] if found is not None and found[1] == call_line else None

    def _call_forms(self) -> dict[tuple[str, int], tuple[str, int]]:
        """``cute_bind.kernel(fn[, name=...])`` and ``cute_bind.kernel(**options)(fn)`` calls among the module's own statements (not inside a
        function or class body), ``fn`` a name: (the function's name, the line of the ``def`` the name
        is bound by there) -> (the kernel's name in messages, the first such call's line). Read once
        per analysis."""
        if self._registrations is None:
            found: dict[tuple[str, int], tuple[str, int]] = {}
            for call in sorted(_module_level_calls(self._module_body), key=lambda c: (c.lineno, c.col_offset)):
                first = call.args[0] if call.args else None
                # cute_bind.kernel(fn, name=...), or with options first: cute_bind.kernel(checked=True)(fn)
                options = call.func if isinstance(call.func, ast.Call) and not call.func.args else call
                if not isinstance(first, ast.Name) or self._qualname(options.func, self.root, call.lineno) not in KERNEL_DECORATORS:
                    continue
                bound = self.root.lookup(first.id, call.lineno)
                if isinstance(bound, Binding) and bound.kind == "local" and bound.cls is None:
                    found.setdefault((first.id, bound.line), (option_name(options) or first.id, call.lineno))
            self._registrations = found
        return self._registrations

    def check_site(self, site: Site, kernel: str) -> list[StaticDiagnostic]:
        """Every eligibility diagnostic of one function, in parameter order (as the runtime lists them)."""
        a = site.node.args
        params: list[tuple[ast.arg, str]] = [(p, "") for p in a.posonlyargs + a.args]
        if a.vararg is not None:
            params.append((a.vararg, "*"))
        params += [(p, "") for p in a.kwonlyargs]
        if a.kwarg is not None:
            params.append((a.kwarg, "**"))
        found: list[StaticDiagnostic] = self._decorator_forms(site, kernel)
        if _is_method(site):
            params = params[1:]  # its object: CB127 at the decorator (_decorator_forms), not a parameter
        for param, star in params:
            expected = W.ELIGIBLE_SUMMARY
            verdict: _Verdict | None
            if star:
                verdict, expected = _Verdict("CB106", f"{star}{param.arg}"), _EXPECTED_VARIADIC
            elif param.annotation is None:
                verdict = _Verdict("CB101", _GOT_NO_ANNOTATION)
            else:
                verdict = self._annotation(param.annotation, site)
            if verdict is None:
                continue
            if not star:
                expected = W.expected_for(verdict.code)
            found.append(
                StaticDiagnostic(
                    code=verdict.code,
                    kernel=kernel,
                    parameter=param.arg,
                    line=param.lineno,
                    column=param.col_offset,
                    end_line=param.end_lineno or param.lineno,
                    end_column=param.end_col_offset if param.end_col_offset is not None else param.col_offset,
                    expected=expected,
                    got=verdict.got,
                    detail=verdict.detail,
                )
            )
        return found

    def _decorator_forms(self, site: Site, kernel: str) -> list[StaticDiagnostic]:
        """CB116 for a DSL decorator above ``@cute_bind.kernel``, CB117 for ``@cute.kernel`` under it."""
        names = []
        for dec in site.node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            names.append(self._qualname(target, site.scope, site.before) or "")
        ours = [i for i, q in enumerate(names) if q in KERNEL_DECORATORS]
        if not ours:
            # the call form: cute_bind.kernel(fn) on a device kernel is CB117 too, at its decorator
            if self._registered_name(site) is None:
                return []
            return [
                _at_decorator(dec, "CB117", kernel, W.DEVICE_KERNEL[1], W.DEVICE_KERNEL[0])
                for dec, q in zip(site.node.decorator_list, names)
                if _in_cutlass(q) and _last(q) == "kernel"
            ]
        found = []
        if _is_method(site):
            found.append(_at_decorator(site.node.decorator_list[ours[0]], "CB127", kernel, W.METHOD_EXPECTED, W.method_got(site.node.name)))
        for i, (dec, q) in enumerate(zip(site.node.decorator_list, names)):
            if not (_in_cutlass(q) and _last(q) in ("jit", "kernel")):
                continue
            if i < ours[0]:
                code, (got, expected) = "CB116", W.DECORATOR_ORDER
            elif _last(q) == "kernel":
                code, (got, expected) = "CB117", W.DEVICE_KERNEL
            else:
                continue
            found.append(_at_decorator(dec, code, kernel, expected, got))
        return found

    def kernels(self, sites: list[Site] | None = None) -> list[tuple[Site, str]]:
        """Every ``@cute_bind.kernel`` function in the file (or among ``sites``) and its kernel name, in source order."""
        out = []
        for site in self.sites if sites is None else sites:
            name = self.kernel_name(site)
            if name is not None:
                out.append((site, name))
        return out

    def diagnostics(self) -> list[StaticDiagnostic]:
        """Every diagnostic of every kernel in the file, sorted by position."""
        found = [d for site, name in self.kernels() for d in self.check_site(site, name)]
        return sorted(found, key=lambda d: (d.line, d.column, d.code))

    def check_def(self, line: int, name: str, kernel: str | None = None) -> list[StaticDiagnostic] | None:
        """Diagnostics of the ``def name`` on ``line`` (its ``def`` keyword's line).

        ``kernel`` is the name used in messages (default: the decorator's ``name=``
        option when this file's imports show it, else the function name).
        ``None`` when there is no such definition (the file changed).
        """
        for site in self.sites:
            if site.node.lineno == line and site.node.name == name:
                return self.check_site(site, kernel or self.kernel_name(site) or name)
        return None


def option_name(call: ast.Call | None) -> str | None:
    """The literal ``name=`` option of ``@cute_bind.kernel(name=...)``, if any."""
    if call is None:
        return None
    for kw in call.keywords:
        if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value or None  # the runtime falls back to the function name for ""
    return None


def _in_cutlass(qualname: str) -> bool:
    return qualname.partition(".")[0] == "cutlass"


def _last(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def _rejection(qualname: str) -> str:
    """The code for a name no slot kind recognises: CB104 for a DSL numeric type without runtime storage."""
    return "CB104" if _in_cutlass(qualname) and _last(qualname) in W.BITCAST_SCALARS else "CB102"


def _union_items(params: ast.expr) -> list[ast.expr]:
    """The members of ``Union[a, b]`` / ``Optional[a]``."""
    return list(params.elts) if isinstance(params, ast.Tuple) else [params]


def _union_members(node: ast.expr) -> list[ast.expr]:
    """The members of ``a | b | c``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    return [node]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _first_item(params: ast.expr) -> ast.expr:
    """``X`` of ``Annotated[X, ...]``."""
    return params.elts[0] if isinstance(params, ast.Tuple) and params.elts else params


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


#: ``try`` and, from Python 3.11, ``try``/``except*``
_TRY_STATEMENTS: tuple[type[ast.stmt], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _module_level_calls(stmts: list[ast.stmt]) -> typing.Iterator[ast.Call]:
    """Every call in the module's own statements, not descending into function or class bodies (a
    def's decorators and defaults, which run at module level, included) or ``try`` bodies."""
    pending: list[ast.AST] = list(stmts)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            continue
        if isinstance(node, ast.ClassDef):
            pending += node.decorator_list + node.bases
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, _TRY_STATEMENTS):
            # a call the module guards with ``try`` expects it may raise (a tutorial showing the error):
            # its handlers, ``else`` and ``finally`` are read, its body is not
            guarded = typing.cast("ast.Try", node)
            pending += [*guarded.handlers, *guarded.orelse, *guarded.finalbody]
            continue
        if isinstance(node, ast.Call):
            yield node
        pending += ast.iter_child_nodes(node)


def _at_decorator(dec: ast.expr, code: str, kernel: str, expected: str, got: str) -> StaticDiagnostic:
    """A decorator form's diagnostic (CB116, CB117, CB127), on the decorator's own span."""
    return StaticDiagnostic(
        code=code,
        kernel=kernel,
        parameter="",
        line=dec.lineno,
        column=dec.col_offset,
        end_line=dec.end_lineno or dec.lineno,
        end_column=dec.end_col_offset if dec.end_col_offset is not None else dec.col_offset,
        expected=expected,
        got=got,
    )


def _is_method(site: Site) -> bool:
    """A ``def`` in a class body whose first parameter is an unannotated ``self`` (the runtime's CB127)."""
    a = site.node.args
    first = (a.posonlyargs + a.args)[:1]
    return site.scope.is_class and bool(first) and first[0].arg == "self" and first[0].annotation is None


#: What a name resolves to when it may be a structure (see ``ModuleAnalysis._class_of``).
_ClassFound = typing.Union[tuple["ModuleAnalysis", ast.ClassDef, Scope], _Kind, None]

#: ``class`` statements being classified (a structure holding itself ends as CB125, as at run time).
_ACTIVE_CLASSES: set[int] = set()


def _module_source(module: str) -> str | None:
    """The file of an installed module, found on ``sys.path`` without importing anything."""
    parts = module.split(".")
    for entry in sys.path:
        base = os.path.join(entry or os.getcwd(), *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    return None


def _signature(path: str | None) -> tuple[int, int, int, int] | None:
    """What says a file changed: its inode, size and modification time (``None``: no file)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)


#: Modules read for their classes: module -> (its file, that file's signature when read, the analysis).
#: Checked against the files by :func:`refresh_modules`, so a module fixed and saved is read again.
_MODULES: dict[str, tuple[str | None, tuple[int, int, int, int] | None, ModuleAnalysis | None]] = {}
_MAX_MODULES = 256
_generation = 0


def modules_generation() -> int:
    """A number that changes whenever :func:`refresh_modules` found an imported module changed."""
    return _generation


def refresh_modules() -> bool:
    """Forget every module read for its classes whose file changed, appeared or went since (a
    module fixed and saved, or created); returns whether any did. The language server calls it
    before each check and on every save; the command line and mypy read each module once a run."""
    global _generation
    stale = [m for m, (path, sig, _) in _MODULES.items() if _signature(path) != sig or (path is None and _module_source(m) is not None)]
    for module in stale:
        del _MODULES[module]
    if stale:
        _generation += 1
    return bool(stale)


def _module_analysis(module: str) -> ModuleAnalysis | None:
    cached = _MODULES.get(module)
    if cached is not None:
        return cached[2]
    path = _module_source(module)
    signature = _signature(path)
    analysis: ModuleAnalysis | None = None
    if path is not None:
        try:
            analysis = analyze_source(read_source(path), path, module)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError, CuteBindError):
            analysis = None  # a module that cannot be read names no class (CB126 is its own file's report)
        else:
            analysis.package = module if os.path.basename(path) == "__init__.py" else module.rpartition(".")[0]
    if len(_MODULES) >= _MAX_MODULES:
        del _MODULES[next(iter(_MODULES))]
    _MODULES[module] = (path, signature, analysis)
    return analysis


def _external_class(qualname: str, depth: int) -> _ClassFound:
    """The ``class`` statement behind an imported name, read from its module's source:
    ``None`` when the name is no class or its source cannot be read, the kind of the
    expression when the name is an alias of one (``MaybeX = Optional[X]``)."""
    if qualname.partition(".")[0] in _NOT_STRUCTURES:
        return None
    module, _, name = qualname.rpartition(".")
    analysis = _module_analysis(module) if module else None
    if analysis is None:
        return None
    found = analysis.root._own(name, None)
    if found is None or found.kind == "star":
        return None
    if found.kind == "alias" and found.value is not None and not isinstance(found.value, (ast.Name, ast.Attribute)):
        return analysis._kind(found.value, found.scope, found.line)
    return analysis._class_of(ast.Name(id=name), analysis.root, None, depth)


def analyze_source(source: str | bytes, filename: str = "<unknown>", module: str | None = None) -> ModuleAnalysis:
    """Parse ``source`` and analyse it; raises :class:`SyntaxError` like :func:`ast.parse`."""
    text = source if isinstance(source, str) else None
    return ModuleAnalysis(ast.parse(source, filename=filename), module=module, source=text)


def check_source(source: str | bytes, filename: str = "<unknown>", module: str | None = None) -> list[StaticDiagnostic]:
    """The diagnostics of ``source``, by position; CB126 for the file where it is nested too deeply
    for :mod:`ast` or the rules (a ``RecursionError``) or too large to analyse (``MemoryError``).
    Raises :class:`SyntaxError` (and :class:`ValueError`, a null byte) like :func:`ast.parse`."""
    try:
        return analyze_source(source, filename, module).diagnostics()
    except (RecursionError, MemoryError) as exc:
        return [too_deep(filename, exc)]


@functools.lru_cache(maxsize=None)
def rules_fingerprint() -> str:
    """Digest of everything the static verdicts depend on (whitelist, catalog texts, this module
    and the two it is built on, :mod:`~cute_bind.static.names` and :mod:`~cute_bind.static.report`).

    The mypy plugin reports it as its config data, so mypy's cache is refreshed
    when an upgrade of cute_bind changes the rules.
    """
    h = hashlib.sha256()
    for name in sorted(W.__all__):
        h.update(
            f"{name}={sorted(getattr(W, name)) if isinstance(getattr(W, name), (set, frozenset, dict)) else getattr(W, name)}".encode()
        )
    for code in sorted(CATALOG):
        h.update(f"{code}:{CATALOG[code].message}".encode())
    for module in (__file__, _names.__file__, _report.__file__):  # the rules, the name resolver, the reports
        with open(module, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
