#pragma once
// The requests a serving run receives, in arrival order: drawn from the spec's arrival process
// (Poisson, or gamma inter-arrival times with a coefficient of variation: bursty above 1) by our
// own splitmix64 generator, so a seed gives the same stream on any compiler and library; or read
// from a trace file of (arrival time, prompt tokens, output tokens).
#include <cstdint>
#include <string>
#include <vector>

#include "topologies/units.hpp"
#include "workloads/serving/serving_spec.hpp"

namespace clustersim {

struct Request {
  long id = 0;
  Seconds arrival_s = 0;
  long prompt_tokens = 0;
  long output_tokens = 0;
  int prefix_id = -1;       // which shared prefix its prompt starts with; -1: none
  long prefix_tokens = 0;   // that prefix's tokens, part of prompt_tokens
  int line = 0;  // its line in a trace file; 0 when generated
};

/// The stream of `spec`: generated, or the trace file's rows sorted by arrival (stable). With a
/// shared prefix, each generated prompt is one of its `count` prefixes (drawn uniformly from a
/// generator of its own, so the stream's arrivals and lengths are those without it) followed by
/// the drawn prompt tokens.
std::vector<Request> request_stream(const RequestStreamSpec& spec);

/// A trace: CSV with a header naming arrival_s, prompt_tokens and output_tokens (any order, other
/// columns ignored), or JSON Lines with those keys (a file ending .jsonl). Optionally prefix_id and
/// prefix_tokens: the prompt starts with that shared prefix (its tokens part of prompt_tokens, the
/// same for every row that names it), what prefix caching reuses; a row without one leaves both
/// empty. Blank lines and lines starting with '#' are skipped. A bad line is a UserError naming the
/// file and the line.
std::vector<Request> parse_request_trace(const std::string& text, const std::string& name, bool jsonl);

/// splitmix64 (Steele et al. 2014): the generator behind every draw of a serving run.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// Uniform in (0, 1): never 0, so a logarithm of it is finite.
  double uniform();
  /// Standard normal (Box-Muller).
  double normal();
  /// Gamma with `shape` and scale 1 (Marsaglia and Tsang 2000; shape < 1 by the u^(1/shape) boost).
  double gamma(double shape);

 private:
  std::uint64_t state_;
};

}  // namespace clustersim
