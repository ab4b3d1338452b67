# Sourced by the before/after scripts (ab_bench.sh, stream_left_out_ab.sh), run from the project root:
#   ab_trees BASE_TAR
# unpacks the tree before the change into a fresh folder, sets $base to it, and builds the C fast
# paths of both trees (that one and this one, $PWD), so each side runs its own extensions.
ab_trees() {
  base=$(mktemp -d /tmp/cute-bind-base.XXXXXX)
  tar -xf "$1" -C "$base"
  for tree in "$base" "$PWD"; do
    (cd "$tree" && python3 setup.py -q build_ext --inplace > /dev/null 2>&1) || echo "build failed in $tree"
  done
}
