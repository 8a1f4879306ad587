#include "control/scheduler/unit_lp.h"

#include <cstddef>

namespace gpool::scheduler {

namespace {

constexpr double kEpsilon = 1e-12;

}  // namespace

std::vector<double> MaximizeUnderUnitRows(const std::vector<double>& objective,
                                          const std::vector<std::vector<double>>& rows, int max_pivots) {
  const size_t n = objective.size();
  const size_t m = rows.size();
  const size_t width = n + m + 1;  // variables, slacks, right-hand side
  // tableau[i]: row i in the current basis; reduced[j]: what raising column j gains.
  std::vector<std::vector<double>> tableau(m, std::vector<double>(width, 0.0));
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n && j < rows[i].size(); ++j) tableau[i][j] = rows[i][j];
    tableau[i][n + i] = 1;
    tableau[i][width - 1] = 1;
  }
  std::vector<double> reduced(width, 0.0);
  for (size_t j = 0; j < n; ++j) reduced[j] = objective[j];
  std::vector<size_t> basis(m);
  for (size_t i = 0; i < m; ++i) basis[i] = n + i;

  for (int pivot = 0; pivot < max_pivots; ++pivot) {
    size_t entering = width;
    for (size_t j = 0; j + 1 < width; ++j) {
      if (reduced[j] > kEpsilon) {
        entering = j;
        break;
      }
    }
    if (entering == width) break;  // optimal
    size_t leaving = m;
    double best_ratio = 0;
    for (size_t i = 0; i < m; ++i) {
      const double a = tableau[i][entering];
      if (a <= kEpsilon) continue;
      const double ratio = tableau[i][width - 1] / a;
      if (leaving == m || ratio < best_ratio - kEpsilon ||
          (ratio <= best_ratio + kEpsilon && basis[i] < basis[leaving])) {
        leaving = i;
        best_ratio = ratio;
      }
    }
    if (leaving == m) break;  // unbounded: cannot happen with A >= 0 rows covering every variable
    auto& row = tableau[leaving];
    const double scale = row[entering];
    for (double& value : row) value /= scale;
    for (size_t i = 0; i < m; ++i) {
      if (i == leaving) continue;
      const double factor = tableau[i][entering];
      if (factor == 0) continue;
      for (size_t j = 0; j < width; ++j) tableau[i][j] -= factor * row[j];
    }
    const double gain = reduced[entering];
    for (size_t j = 0; j < width; ++j) reduced[j] -= gain * row[j];
    basis[leaving] = entering;
  }

  std::vector<double> solution(n, 0.0);
  for (size_t i = 0; i < m; ++i) {
    if (basis[i] < n) solution[basis[i]] = tableau[i][width - 1];
  }
  return solution;
}

}  // namespace gpool::scheduler
