"""The public surface: names, typing marker, version."""

import importlib.resources

import cute_bind

EXPECTED = {
    "CacheSettingError",
    "CacheWarning",
    "CATALOG",
    "CudaLaunchError",
    "CuteBindError",
    "DSLCompatibilityError",
    "DSLVersionWarning",
    "Diagnostic",
    "Graph",
    "Kernel",
    "KernelCompileError",
    "KernelDefinitionError",
    "LaunchArgumentError",
    "LaunchRuntimeError",
    "LaunchValueError",
    "OptionalDependencyError",
    "Pointer",
    "PointerSpec",
    "PreparedLaunch",
    "PreparedLaunchError",
    "SpecializationError",
    "SpecializationWarning",
    "Tensor",
    "TensorSpec",
    "__version__",
    "check_function",
    "compile",  # cute.compile through the disk cache (issue 41)
    "error",
    "graph",
    "kernel",
    "lookup",
    "prepare",
}


def test_all_is_explicit_and_complete():
    assert set(cute_bind.__all__) == EXPECTED
    assert len(cute_bind.__all__) == len(set(cute_bind.__all__))
    for name in cute_bind.__all__:
        assert hasattr(cute_bind, name), name


def test_py_typed_shipped():
    assert importlib.resources.files("cute_bind").joinpath("py.typed").is_file()


def test_public_callables_have_docstrings():
    for name in cute_bind.__all__:
        obj = getattr(cute_bind, name)
        if callable(obj) and not name.startswith("_"):
            assert obj.__doc__, name


_INTERNAL_ATTRS = {
    "_default_executor", "execution_args", "capi_func", "cuda_result", "_desc", "_dtype", "_addr_space",
    "_assumed_align", "_kernel_ptrs", "jit_module", "_get_invoke_packed_args", "generate_execution_args",
    "_meta", "_unloaded", "_executor_lock", "total_added_arguments", "_decorator_kind", "_dsl_cls",
    "transform_function", "check_decorator",
}  # fmt: skip


def test_only_dsl_module_touches_dsl_internals():
    """One package, and only one (``cute_bind/dsl/``), touches nvidia-cutlass-dsl internals (imports and attributes)."""
    import ast
    import pathlib

    pkg = pathlib.Path(cute_bind.__file__).parent
    offenders = []
    for path in sorted(pkg.rglob("*.py")):
        if path.relative_to(pkg).parts[0] == "dsl":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for m in mods:
                    if m.startswith("cutlass.") and m not in ("cutlass.cute", "cutlass.cute.runtime"):
                        offenders.append(f"{path.name}:{node.lineno}: imports {m}")
            elif isinstance(node, ast.Attribute) and node.attr in _INTERNAL_ATTRS:
                offenders.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not offenders, "DSL internals used outside cute_bind/dsl/:\n" + "\n".join(offenders)


def test_public_names_report_the_package_path():
    """No user-facing repr or traceback names a private module (``cute_bind.launch.prepared``...)."""
    for name in cute_bind.__all__:
        obj = getattr(cute_bind, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__module__ == "cute_bind", (name, obj.__module__)
    assert repr(cute_bind.PreparedLaunch) == "<class 'cute_bind.PreparedLaunch'>"
