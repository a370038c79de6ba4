#!/usr/bin/env bash
# Collects what tools/gpu_check.sh needs to build Lumen on the GPU machine, which has CUDA, cmake
# and Python with numpy/onnx/onnxruntime/torch/nanobind but no network and no Debian -dev
# packages: OpenBLAS, Protobuf (with protoc) and GoogleTest, headers and libraries, from this
# machine's Debian packages (./run.sh installs them), into gpu-deps/ (git-ignored; carry it).
#
#   tools/gpu_deps.sh            then, on the GPU machine:   tools/gpu_check.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/gpu-deps}
ARCH=$(gcc -print-multiarch)
rm -rf "$DEST" && mkdir -p "$DEST"/{include,lib/"$ARCH"/cmake,bin}
cp -L /usr/include/"$ARCH"/openblas-pthread/*.h "$DEST/include/"
cp -L /usr/lib/"$ARCH"/openblas-pthread/libopenblas.so.0 "$DEST/lib/"
ln -s libopenblas.so.0 "$DEST/lib/libopenblas.so"
# OpenBLAS' own dependencies, which a machine without Fortran may lack.
cp -L /usr/lib/"$ARCH"/libgfortran.so.5 /usr/lib/"$ARCH"/libquadmath.so.0 "$DEST/lib/"
cp -r /usr/include/google "$DEST/include/"
for lib in protobuf protobuf-lite protoc; do
  cp -L /usr/lib/"$ARCH"/lib$lib.so.32 "$DEST/lib/"
  ln -s lib$lib.so.32 "$DEST/lib/lib$lib.so"
done
cp -L /usr/bin/protoc "$DEST/bin/"
cp -r /usr/include/gtest /usr/include/gmock "$DEST/include/"
# GTest in Debian's layout, which its CMake files locate themselves from.
cp -L /usr/lib/"$ARCH"/libgtest*.a /usr/lib/"$ARCH"/libgmock*.a "$DEST/lib/$ARCH/"
cp -r /usr/lib/"$ARCH"/cmake/GTest "$DEST/lib/$ARCH/cmake/"
strip --strip-unneeded "$DEST"/lib/*.so.* 2>/dev/null || true
du -sh "$DEST"
