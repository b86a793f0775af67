#pragma once
// `clustersim serve --validate FILE`: every row of a serving rows file (simulator/serve_validation.hpp)
// predicted and set beside its published figure, then each set's mean and largest |error|.
#include <string>

namespace clustersim::cli {

void print_serve_validation(const std::string& rows_file);

}  // namespace clustersim::cli
