// A small linear program solver for the one shape the scheduler needs:
// maximise c.y subject to A y <= 1 row by row and y >= 0, with c >= 0 and
// A >= 0. The origin is feasible, so the simplex method starts there with no
// first phase. Dense and exact-enough for tens of variables and a few
// hundred rows (share prices: control/scheduler/share_prices.h). Pure.
#pragma once

#include <vector>

namespace gpool::scheduler {

// A maximiser of c.y within the rows, Bland's rule (degenerate programs are
// the rule here: many packings of the same devices tie). Stops after
// `max_pivots` with the feasible point reached so far.
std::vector<double> MaximizeUnderUnitRows(const std::vector<double>& objective,
                                          const std::vector<std::vector<double>>& rows, int max_pivots = 20000);

}  // namespace gpool::scheduler
