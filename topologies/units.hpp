#pragma once
// The unit vocabulary shared by every module. A value that crosses a module boundary carries its
// unit in its type alias and, where it is a field, in its name (size_bytes, latency_s, ...).
#include <cstdint>

namespace clustersim {

using Bytes = std::uint64_t;
using Seconds = double;
using BytesPerSecond = double;

inline constexpr double kGiga = 1e9;
inline constexpr double kMicro = 1e-6;

/// Link speeds quoted in Gb/s (network ports) versus GB/s (NVLink, PCIe).
constexpr BytesPerSecond gbit_per_s(double gbit) { return gbit * kGiga / 8.0; }
constexpr BytesPerSecond gbyte_per_s(double gbyte) { return gbyte * kGiga; }
constexpr Seconds microseconds(double us) { return us * kMicro; }

}  // namespace clustersim
