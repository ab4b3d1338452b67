#!/bin/bash
# one device call: build, GPU tests on both paths, the tensor and torch workloads, the op's pieces
set -u
mkdir -p "$OUT/logs"
L="$OUT/logs"
python3 setup.py -q build_ext --inplace > "$L/build.txt" 2>&1
python3 -c "import cute_bind.launch as p; print('launch fast path:', p.fast_path())" >> "$L/build.txt" 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_calls.py tests/gpu/test_graph.py tests/launch/test_forms.py > "$L/gpu_tests.txt" 2>&1; echo "rc=$?" >> "$L/gpu_tests.txt"
CUTE_BIND_PURE_PYTHON=1 timeout 120 python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_calls.py tests/launch/test_forms.py > "$L/gpu_tests_pure.txt" 2>&1; echo "rc=$?" >> "$L/gpu_tests_pure.txt"
timeout 150 python3 -m cute_bind bench --workload torch --repeats 11 --iters 2000 > "$L/bench_torch.txt" 2>&1
timeout 100 python3 benchmarks/torch_op_overhead.py --device cuda --repeats 11 --iters 20000 > "$L/torch_pieces.txt" 2>&1
timeout 120 python3 -m cute_bind bench --workload tensors --repeats 11 --iters 2000 > "$L/bench_tensors.txt" 2>&1
CUTE_BIND_PURE_PYTHON=1 timeout 100 python3 -m cute_bind bench --workload tensors --repeats 11 --iters 2000 > "$L/bench_tensors_pure.txt" 2>&1
timeout 150 python3 -m cute_bind bench --workload torch --repeats 11 --iters 2000 > "$L/bench_torch_2.txt" 2>&1
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"
