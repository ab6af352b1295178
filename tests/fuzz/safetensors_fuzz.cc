// libFuzzer target: arbitrary bytes as a safetensors file image. parse_safetensors must return a
// Status for every input (never crash, never read out of bounds), and whatever it accepts must
// satisfy the format's invariants, checked here.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/check.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
  auto r = moe::io::parse_safetensors(file, "fuzz.safetensors");
  if (!r.ok()) {
    MOE_CHECK(!r.status().message().empty());
    return 0;
  }
  // Accepted: tensors tile [data_offset, size) exactly, and each range matches its shape.
  const moe::io::SafetensorsHeader& h = *r;
  MOE_CHECK(h.data_offset >= 8 && h.data_offset <= size);
  uint64_t expect = 0;
  for (const moe::io::TensorInfo& t : h.tensors) {
    MOE_CHECK_EQ(t.begin, expect);
    MOE_CHECK(t.end >= t.begin);
    uint64_t nbytes = moe::dtype_size(t.dtype);
    for (int64_t d : t.shape) {
      MOE_CHECK(d >= 0);
      nbytes *= static_cast<uint64_t>(d);
    }
    MOE_CHECK_EQ(nbytes, t.end - t.begin);
    expect = t.end;
  }
  MOE_CHECK_EQ(h.data_offset + expect, uint64_t{size});
  return 0;
}
