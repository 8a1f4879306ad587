// What a device's free share is worth to the shares still to come.
//
// The workload's one-GPU share sizes, each with its frequency as demand, are
// packed into devices by the fractional bin-packing LP (Gilmore and Gomory's
// cutting-stock program: the fewest devices whose fillings cover every
// size's demand). Its dual prices say what one task of each size costs in
// devices when the workload is packed as well as it can be; a device with f
// free can still collect V(f), the most the prices of any filling of f add
// up to. Stranded(f) = f - 1000 V(f) is the share an optimal packing would
// leave unused there (negative where the room completes an optimal filling
// with share to spare). A share placed where V drops by exactly its price
// follows an optimal packing and the measure falls by its size; anywhere
// else it falls by less, by what the placement wastes.
//
// On the trace this sees what expected-fill measures miss: a 320 beside a 650
// (30 left) follows the packing, a 230 there (120 left, which only the rare
// small shares fill) does not, and a 320 beside a 470 spoils the room a 470
// or 460 would take (docs/simulator.md). Pure; the LP is solved once per
// share mix (SharePricesFor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "topology/cluster_view.h"

namespace gpool::scheduler {

class SharePrices {
 public:
  SharePrices() = default;  // no shares: a partly used device strands all its room
  explicit SharePrices(const std::vector<topology::WorkloadShape>& workload);

  // Thousandths of a device that an optimal packing of the workload's
  // shares leaves unused on a device with `free_milli` free; an idle device
  // strands none.
  double Stranded(uint32_t free_milli) const;
  // Devices one task of the size costs, by size in thousandths (0 for a
  // size the LP did not price).
  double PriceOf(uint32_t size_milli) const;

 private:
  std::map<uint32_t, double> price_by_size_;
  std::vector<double> stranded_;  // by free thousandths, 0 to 1000
};

// The LP prices this many share sizes, most frequent first; a remnant only
// rarer sizes fit counts as stranded. The solver is dense: a few dozen sizes
// keep it to milliseconds.
inline constexpr size_t kMaxPricedShareSizes = 32;

// SharePrices of `workload`, solved once per share mix: the scheduler builds
// a session per placement in the simulator and per cycle in the coordinator,
// and the mix rarely changes between them. Thread-safe.
std::shared_ptr<const SharePrices> SharePricesFor(const std::vector<topology::WorkloadShape>& workload);

}  // namespace gpool::scheduler
