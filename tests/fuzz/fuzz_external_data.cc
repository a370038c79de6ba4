// libFuzzer target: a TensorProto whose data is external, with a fuzzed location, offset, length,
// dtype and dims, resolved against a model folder holding data files and symlinks that lead out
// of it. Either lumen::Error, or a tensor read from a regular file inside the folder.
#include <fuzzer/FuzzedDataProvider.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lumen/error.h"
#include "onnx/tensor_proto.h"

namespace fs = std::filesystem;

namespace {

// The model folder, made once: data.bin (256 bytes), sub/more.bin, and links that escape it.
const fs::path &model_dir() {
  static const fs::path dir = [] {
    char name[] = "/tmp/lumen_fuzz_external_XXXXXX";
    if (!mkdtemp(name)) std::abort();
    const fs::path d = name;
    fs::create_directories(d / "sub");
    for (const char *file : {"data.bin", "sub/more.bin"}) {
      std::ofstream out(d / file, std::ios::binary);
      for (int i = 0; i < 256; ++i) out.put(static_cast<char>(i));
    }
    fs::create_symlink("/etc/hostname", d / "out.bin");
    fs::create_directory_symlink("..", d / "sub" / "up");
    fs::create_directory_symlink("/", d / "root");
    return d;
  }();
  return dir;
}

bool inside(const fs::path &dir, const fs::path &p) {
  const fs::path root = fs::canonical(dir), full = fs::weakly_canonical(p);
  auto [r, f] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  return r == root.end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(in.ConsumeIntegralInRange<int>(0, 26));
  const int rank = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < rank; ++i) proto.add_dims(in.ConsumeIntegralInRange<int64_t>(-1, 40));
  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  const std::string location = in.ConsumeRandomLengthString(64);
  for (const char *key : {"location", "offset", "length"}) {
    if (!in.ConsumeBool()) continue;
    auto *entry = proto.add_external_data();
    entry->set_key(key);
    entry->set_value(key == std::string("location") ? location : in.ConsumeRandomLengthString(24));
  }
  try {
    const lumen::Tensor t =
        lumen::onnx_import::tensor_from_proto(proto, model_dir(), "initializer 'w'");
    if (t.numel() == 0) return 0;  // nothing to read
  } catch (const lumen::Error &) {
    return 0;  // refused, with a reason
  }
  // Read: the file must be a regular file inside the folder.
  const fs::path full = model_dir() / location;
  if (!inside(model_dir(), full) || !fs::is_regular_file(full)) {
    std::fprintf(stderr, "external data '%s' was read from outside the model folder\n",
                 location.c_str());
    std::abort();
  }
  return 0;
}
