#pragma once
// Reading an input file with a size bound: an endless or huge file (/dev/zero, a disk image given
// by mistake) is a clear error, not a read that runs until memory is gone.
#include <optional>
#include <string>

namespace clustersim {

/// Larger than any hand-written cluster, model, scenario or kernel table (the shipped ones are
/// under 64 KiB); small enough that parsing it stays well under a second and a GiB.
inline constexpr std::size_t kMaxInputBytes = std::size_t{4} << 20;

/// Why `path` cannot be read as an input, in a few words ("no such file", "a directory, not a
/// file", larger than kMaxInputBytes), or nothing. Cheap: it stats the file and reads nothing; a stream (a pipe, a device) passes and is
/// bounded by read_input_file.
std::optional<std::string> input_file_problem(const std::string& path);

/// The whole file, at most kMaxInputBytes; a UserError naming the file (and `named_by`, the field or
/// option that named it, when given) otherwise.
std::string read_input_file(const std::string& path, const std::string& named_by = "");

}  // namespace clustersim
