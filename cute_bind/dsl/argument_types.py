"""A compiled function's C argument types, read from its IR (issue 11): the LLVM type of each
marshalled argument, and what a tensor argument's descriptor holds.
"""

from __future__ import annotations

import re
from typing import Union

from .compiled import is_executor

__all__ = [
    "entry_argument_types",
    "descriptor_fields",
    "tensor_argument_groups",
    "compiled_argument_types",
    "why_no_argument_types",
    "symbol_reference",
]


#: An LLVM type as a tree: a struct is a list of its fields, a scalar its name (``ptr``, ``i32``...).
_TypeTree = Union[str, list["_TypeTree"]]

_BARE_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def symbol_reference(name: str) -> str:
    """``name`` as MLIR prints a reference to the symbol: ``@name``, or ``@"..."`` quoted.

    A symbol that is not a bare identifier is printed quoted, with ``\\`` for a
    backslash and ``\\XX`` (two upper-case hex digits) for a quote or any
    byte that is not printable ASCII (LLVM's ``printEscapedString``). The DSL
    builds a function's symbol from its arguments' text, so a float printed
    as ``2.0494e+00`` puts a ``+`` in it, and the entry is printed quoted.
    """
    if _BARE_SYMBOL.fullmatch(name):
        return "@" + name
    out = []
    for byte in name.encode():
        ch = chr(byte)
        if ch == "\\":
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F and ch != '"':
            out.append(ch)
        else:
            out.append(f"\\{byte:02X}")
    return '@"' + "".join(out) + '"'


def entry_argument_types(obj: object) -> list[str] | None:
    """The LLVM types of the compiled entry function's arguments, one per marshalled C argument.

    Read from the compiled module's IR (``ir_module``): a tensor argument is
    ``!llvm.struct<(ptr, struct<(i32, ...)>)>``, its dynamic extents and strides
    in order. ``None`` when the IR is not available (e.g. a function loaded
    from a binary).
    """
    types, _why = _read_entry(obj)
    return types


def _read_entry(obj: object) -> tuple[list[str] | None, str]:
    """The entry's argument types, or ``None`` and why not (as a diagnostic's "got" states it)."""
    module = getattr(obj, "ir_module", None)
    if module is None:
        return None, "without IR"
    name = getattr(obj, "function_name", None)
    if not name:
        return None, "without a function name"
    try:
        text = str(module)
    except Exception as exc:  # noqa: BLE001 - any printer failure means no types; the reason is reported
        return None, f"whose IR cannot be printed ({type(exc).__name__})"
    reference = symbol_reference(name)
    head = f"llvm.func {reference}("
    start = text.find(head)
    if start < 0:
        return None, f"whose IR has no entry function {reference}"
    i, depth, current, args = start + len(head), 0, "", []
    while i < len(text):
        ch = text[i]
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current)
            current = ""
        else:
            current += ch
        i += 1
    if current.strip():
        args.append(current)
    return [a.split(":", 1)[1].strip() if ":" in a else a.strip() for a in args], ""


def descriptor_fields(llvm_type: str) -> list[str]:
    """The scalar fields of an LLVM struct type, flattened: ``ptr``, ``i32``, ``i64``..."""
    return re.findall(r"\b(ptr|i\d+|f\d+)\b", llvm_type)


def _llvm_type_tree(text: str) -> _TypeTree:
    """An LLVM type as a :data:`_TypeTree`."""
    tokens = re.findall(r"struct<\(|\)>|[A-Za-z_][A-Za-z0-9_.]*|,", text.strip().removeprefix("!llvm."))
    pos = 0

    def node() -> _TypeTree:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"truncated LLVM type {text!r}")
        tok: str = tokens[pos]
        pos += 1
        if tok != "struct<(":
            return tok
        fields: list[_TypeTree] = []
        while pos < len(tokens) and tokens[pos] != ")>":
            fields.append(node())
            if pos < len(tokens) and tokens[pos] == ",":
                pos += 1
        if pos >= len(tokens):
            raise ValueError(f"unbalanced LLVM type {text!r}")
        pos += 1
        return fields

    tree = node()
    if pos != len(tokens):
        raise ValueError(f"trailing tokens in LLVM type {text!r}")
    return tree


def _int_widths(group: _TypeTree) -> tuple[int, ...] | None:
    """The widths of a descriptor group: a bare ``iN`` (one dynamic mode) or a struct of them."""
    items = group if isinstance(group, list) else [group]
    widths = []
    for item in items:
        if not isinstance(item, str) or not re.fullmatch(r"i\d+", item):
            return None
        widths.append(int(item[1:]))
    return tuple(widths)


def tensor_argument_groups(llvm_type: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """What a compiled tensor argument holds besides its data pointer.

    The DSL lowers a tensor argument to ``!llvm.struct<(ptr, struct<(S, D)>)>``:
    ``S`` the dynamic extents, ``D`` the dynamic strides, each group a bare
    ``iN`` when it has one member and a struct otherwise (``struct<()>`` when
    empty). Returns ``(extent widths, stride widths)`` in bits, or ``None``
    when the type is not a tensor descriptor. This is the compiled function's
    own argument type: unlike the entry's symbol it is never cut or respelled.
    """
    try:
        tree = _llvm_type_tree(llvm_type)
    except ValueError:
        return None
    if not (isinstance(tree, list) and len(tree) == 2 and tree[0] == "ptr" and isinstance(tree[1], list) and len(tree[1]) == 2):
        return None
    shape, stride = (_int_widths(g) for g in tree[1])
    if shape is None or stride is None:
        return None
    return shape, stride


def compiled_argument_types(obj: object) -> list[str] | None:
    """The LLVM types of a compiled function's C arguments, from its IR; ``None`` without IR.

    A ``.to(device)`` executor holds no IR (only its module), nor does a
    function loaded from a binary.
    """
    return None if is_executor(obj) else entry_argument_types(obj)


def why_no_argument_types(obj: object) -> str:
    """Why :func:`compiled_argument_types` found nothing for ``obj``, as a diagnostic's "got" states it."""
    return "without IR" if is_executor(obj) else _read_entry(obj)[1]
