#include "topologies/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "topologies/user_error.hpp"

namespace clustersim {

namespace {
std::string too_large() {
  return "larger than " + std::to_string(kMaxInputBytes >> 20) + " MiB, more than any hand-written input";
}
}  // namespace

std::optional<std::string> input_file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return std::string("no such file");
  if (fs::is_directory(st)) return std::string("a directory, not a file");
  if (fs::is_regular_file(st)) {
    const auto size = fs::file_size(path, ec);
    if (!ec && size > kMaxInputBytes) return too_large();
  }
  if (!std::ifstream(path)) return std::string(std::strerror(errno));
  return std::nullopt;
}

std::string read_input_file(const std::string& path, const std::string& named_by) {
  if (auto why = input_file_problem(path)) throw UserError(path, 0, named_by, "cannot open file (" + *why + ")");
  // In 64 KiB pieces until the end or past the bound: an endless file (/dev/zero) stops at the
  // bound, and a small one costs its size, not a 4 MiB buffer (which was most of a fuzzed
  // scenario's load: 16 MiB zeroed for its four files).
  std::ifstream in(path, std::ios::binary);
  std::string text;
  char piece[1 << 16];
  while (text.size() <= kMaxInputBytes && in.read(piece, sizeof piece).gcount() > 0)
    text.append(piece, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw UserError(path, 0, named_by, "cannot read file");
  if (text.size() > kMaxInputBytes) throw UserError(path, 0, named_by, "cannot read file (" + too_large() + ")");
  return text;
}

}  // namespace clustersim
