#include "workloads/serving/request_stream.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "topologies/input_file.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

double SplitMix64::normal() {
  const double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

double SplitMix64::gamma(double shape) {
  if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1 / shape);
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

namespace {

long draw_tokens(SplitMix64& rng, const TokenCount& t) {
  if (t.max == t.min) return t.min;
  return t.min + static_cast<long>(rng.next() % static_cast<std::uint64_t>(t.max - t.min + 1));
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

constexpr long kMaxTokens = 1L << 24;

/// One field of a trace line: a finite number in range, else the line's error.
double trace_number(const std::string& text, const std::string& name, int line, const std::string& field, double min,
                    double max, bool integer, const char* expected) {
  char* end = nullptr;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  const bool ok = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) && v >= min && v <= max &&
                  (!integer || v == std::floor(v));
  if (!ok) throw UserError(name, line, field, std::string("expected ") + expected + ", got '" + text + "'");
  return v;
}

}  // namespace

std::vector<Request> parse_request_trace(const std::string& text, const std::string& name, bool jsonl) {
  // The three required columns, then the optional pair naming a shared prefix.
  static const char* kCols[] = {"arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens"};
  std::vector<Request> out;
  std::map<std::string, std::size_t> index;
  std::map<long, std::pair<long, int>> prefix_seen;  // prefix id -> (its tokens, the line that first gave them)
  bool prefixed = false;  // CSV: the header names the prefix columns
  std::stringstream in(text);
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    const std::string content = trim(raw);
    if (content.empty() || content.front() == '#') continue;
    std::string fields[5];
    if (jsonl) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(content);
      } catch (const nlohmann::json::exception&) {
        throw UserError(name, line, "line", "expected one JSON object per line, got '" + content.substr(0, 60) + "'");
      }
      if (!j.is_object()) throw UserError(name, line, "line", "expected one JSON object per line");
      for (int c = 0; c < 3; ++c) {
        if (!j.contains(kCols[c]) || !j[kCols[c]].is_number())
          throw UserError(name, line, kCols[c], "expected a number for \"" + std::string(kCols[c]) + "\"");
        fields[c] = j[kCols[c]].dump();
      }
      if (j.contains(kCols[3]) != j.contains(kCols[4]))
        throw UserError(name, line, j.contains(kCols[3]) ? kCols[4] : kCols[3], "expected prefix_id and prefix_tokens together, or neither");
      for (int c = 3; c < 5; ++c)
        if (j.contains(kCols[c])) {
          if (!j[kCols[c]].is_number()) throw UserError(name, line, kCols[c], "expected a number for \"" + std::string(kCols[c]) + "\"");
          fields[c] = j[kCols[c]].dump();
        }
    } else {
      std::vector<std::string> cells;
      std::stringstream cs(content);
      for (std::string cell; std::getline(cs, cell, ',');) cells.push_back(trim(cell));
      if (index.empty()) {
        for (std::size_t i = 0; i < cells.size(); ++i) index.emplace(cells[i], i);
        for (int c = 0; c < 3; ++c)
          if (!index.count(kCols[c]))
            throw UserError(name, line, "header", "expected a header naming arrival_s, prompt_tokens and output_tokens");
        if (index.count(kCols[3]) != index.count(kCols[4]))
          throw UserError(name, line, "header", "expected prefix_id and prefix_tokens together, or neither");
        prefixed = index.count(kCols[3]) > 0;
        continue;
      }
      for (int c = 0; c < 3; ++c) {
        const std::size_t i = index.at(kCols[c]);
        if (i >= cells.size())
          throw UserError(name, line, kCols[c], "expected " + std::to_string(index.size()) + " fields as the header, got " +
                                                    std::to_string(cells.size()));
        fields[c] = cells[i];
      }
      // A row without a shared prefix leaves both cells empty (or the line ends before them).
      for (int c = 3; prefixed && c < 5; ++c)
        if (const std::size_t i = index.at(kCols[c]); i < cells.size()) fields[c] = cells[i];
      if (fields[3].empty() != fields[4].empty())
        throw UserError(name, line, fields[3].empty() ? kCols[3] : kCols[4], "expected prefix_id and prefix_tokens together, or neither");
    }
    Request r;
    r.line = line;
    r.arrival_s = trace_number(fields[0], name, line, kCols[0], 0, 1e7, false, "seconds from 0 to 1e7");
    r.prompt_tokens = long(trace_number(fields[1], name, line, kCols[1], 1, double(kMaxTokens), true, "an integer from 1 to 16777216 tokens"));
    r.output_tokens = long(trace_number(fields[2], name, line, kCols[2], 1, double(kMaxTokens), true, "an integer from 1 to 16777216 tokens"));
    if (!fields[3].empty()) {
      r.prefix_id = int(trace_number(fields[3], name, line, kCols[3], 0, 1e9, true, "an integer from 0 to 1e9"));
      r.prefix_tokens = long(trace_number(fields[4], name, line, kCols[4], 1, double(r.prompt_tokens), true,
                                          ("an integer from 1 to the prompt's " + std::to_string(r.prompt_tokens) + " tokens").c_str()));
      // One prefix is one token sequence: every row naming it gives it the same length.
      const auto [seen, fresh] = prefix_seen.emplace(r.prefix_id, std::make_pair(r.prefix_tokens, line));
      if (!fresh && seen->second.first != r.prefix_tokens)
        throw UserError(name, line, kCols[4],
                        "expected prefix " + std::to_string(r.prefix_id) + "'s " + std::to_string(seen->second.first) +
                            " tokens, as line " + std::to_string(seen->second.second) + " gives it; got " + fields[4]);
    }
    out.push_back(r);
  }
  if (out.empty()) throw UserError(name, 0, jsonl ? "line" : "header", "expected at least one request in the trace");
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (std::size_t i = 0; i < out.size(); ++i) out[i].id = long(i);
  return out;
}

std::vector<Request> request_stream(const RequestStreamSpec& spec) {
  if (spec.arrival == ArrivalKind::trace) {
    const std::string& f = spec.trace_file;
    const bool jsonl = f.size() >= 6 && f.substr(f.size() - 6) == ".jsonl";
    std::vector<Request> out = parse_request_trace(read_input_file(f, "serving.requests.trace"), f, jsonl);
    if (spec.time_scale != 1)
      for (Request& r : out) r.arrival_s *= spec.time_scale;
    return out;
  }
  SplitMix64 rng(spec.seed);
  SplitMix64 prefixes(spec.seed ^ 0x5eed0f9e4f1c0ULL);
  // Gamma inter-arrival times of mean 1/rate and the asked cv: shape 1/cv^2, scale 1/(rate shape).
  const double shape = 1 / (spec.cv * spec.cv);
  std::vector<Request> out;
  Seconds t = 0;
  for (long id = 0;; ++id) {
    const double gap = spec.arrival == ArrivalKind::poisson ? -std::log(rng.uniform()) / spec.rate_per_s
                                                            : rng.gamma(shape) / (spec.rate_per_s * shape);
    t += gap;
    if (t >= spec.duration_s) break;
    Request r;
    r.id = id;
    r.arrival_s = t;
    r.prompt_tokens = draw_tokens(rng, spec.prompt_tokens);
    r.output_tokens = draw_tokens(rng, spec.output_tokens);
    if (spec.shared_prefix.tokens > 0) {
      r.prefix_id = int(prefixes.next() % std::uint64_t(spec.shared_prefix.count));
      r.prefix_tokens = spec.shared_prefix.tokens;
      r.prompt_tokens += spec.shared_prefix.tokens;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace clustersim
