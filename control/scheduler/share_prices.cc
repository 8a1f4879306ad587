#include "control/scheduler/share_prices.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "control/scheduler/unit_lp.h"

namespace gpool::scheduler {

namespace {

using SizeMix = std::vector<std::pair<uint32_t, double>>;  // share size, weight

constexpr uint32_t kDevice = 1000;
// Cutting planes added before the prices are taken as they are (scaled to
// feasibility); the trace's mixes converge in about 25.
constexpr int kMaxCuts = 400;
constexpr double kTolerance = 1e-9;

SizeMix MixOf(const std::vector<topology::WorkloadShape>& workload) {
  std::map<uint32_t, double> weight_by_size;
  for (const auto& shape : workload) {
    if (shape.gpus == 1 && shape.gpu_milli > 0 && shape.gpu_milli < kDevice && shape.weight > 0) {
      weight_by_size[shape.gpu_milli] += shape.weight;
    }
  }
  SizeMix mix(weight_by_size.begin(), weight_by_size.end());
  std::stable_sort(mix.begin(), mix.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (mix.size() > kMaxPricedShareSizes) mix.resize(kMaxPricedShareSizes);
  std::sort(mix.begin(), mix.end());
  return mix;
}

// The most the prices of a filling of each room, 0 to a device, collect,
// and for the whole device the filling itself (tasks per size).
struct Fillings {
  std::vector<double> value;
  std::vector<double> device_filling;
};

Fillings BestFillings(const SizeMix& mix, const std::vector<double>& prices) {
  Fillings fillings{std::vector<double>(kDevice + 1, 0.0), std::vector<double>(mix.size(), 0.0)};
  std::vector<int> last(kDevice + 1, -1);  // the size a best filling of the room ends with; -1: room left
  // The DP runs up to kMaxCuts times per mix solved, and a coordinator's
  // observed mix changes every cycle: it reads plain arrays, which an
  // unoptimised (Debug) build does not turn into a call per element (the
  // sharing property test spent most of its scheduling time here). The
  // arithmetic and its order are the same as ever, so are the prices.
  double* value = fillings.value.data();
  int* ends_with = last.data();
  const double* price = prices.data();
  std::vector<uint32_t> sizes(mix.size());
  for (size_t i = 0; i < mix.size(); ++i) sizes[i] = mix[i].first;
  const uint32_t* size_of = sizes.data();
  const size_t count = sizes.size();
  for (uint32_t room = 1; room <= kDevice; ++room) {
    value[room] = value[room - 1];
    for (size_t i = 0; i < count; ++i) {
      const uint32_t size = size_of[i];
      if (size <= room && value[room - size] + price[i] > value[room] + kTolerance) {
        value[room] = value[room - size] + price[i];
        ends_with[room] = static_cast<int>(i);
      }
    }
  }
  for (uint32_t room = kDevice; room > 0;) {
    if (last[room] < 0) {
      --room;
      continue;
    }
    fillings.device_filling[last[room]] += 1;
    room -= mix[last[room]].first;
  }
  return fillings;
}

// The dual of the cutting-stock LP: maximise the weighted prices subject to
// every filling of a device costing at most one device. Fillings are too
// many to list, so they are added as cuts: the best filling at the current
// prices, while it costs more than a device.
std::vector<double> SolvePrices(const SizeMix& mix) {
  std::vector<double> weights;
  std::vector<std::vector<double>> fillings;
  for (size_t i = 0; i < mix.size(); ++i) {
    weights.push_back(mix[i].second);
    std::vector<double> alone(mix.size(), 0.0);
    alone[i] = kDevice / mix[i].first;
    fillings.push_back(std::move(alone));
  }
  std::vector<double> prices;
  for (int cut = 0; cut <= kMaxCuts; ++cut) {
    prices = MaximizeUnderUnitRows(weights, fillings);
    Fillings best = BestFillings(mix, prices);
    if (best.value[kDevice] <= 1 + kTolerance) return prices;
    fillings.push_back(std::move(best.device_filling));
  }
  // Not converged: the prices scaled down until no filling costs more than a device.
  const double most = BestFillings(mix, prices).value[kDevice];
  for (double& price : prices) price /= most;
  return prices;
}

}  // namespace

SharePrices::SharePrices(const std::vector<topology::WorkloadShape>& workload) : stranded_(kDevice + 1) {
  const SizeMix mix = MixOf(workload);
  std::vector<double> prices = mix.empty() ? std::vector<double>{} : SolvePrices(mix);
  for (size_t i = 0; i < mix.size(); ++i) price_by_size_[mix[i].first] = prices[i];
  const Fillings fillings = BestFillings(mix, prices);
  for (uint32_t room = 0; room < kDevice; ++room) stranded_[room] = room - kDevice * fillings.value[room];
  stranded_[kDevice] = 0;  // whole-GPU tasks take an idle device too
}

double SharePrices::Stranded(uint32_t free_milli) const {
  if (free_milli >= kDevice) return 0;
  return stranded_.empty() ? free_milli : stranded_[free_milli];
}

double SharePrices::PriceOf(uint32_t size_milli) const {
  const auto it = price_by_size_.find(size_milli);
  return it == price_by_size_.end() ? 0 : it->second;
}

std::shared_ptr<const SharePrices> SharePricesFor(const std::vector<topology::WorkloadShape>& workload) {
  // A handful of mixes at a time (one per GPU model); an unbounded map would
  // grow with every change of the coordinator's observed workload.
  constexpr size_t kRemembered = 16;
  static std::mutex mutex;
  static std::map<SizeMix, std::shared_ptr<const SharePrices>> remembered;
  SizeMix key = MixOf(workload);
  {
    std::lock_guard lock(mutex);
    if (auto it = remembered.find(key); it != remembered.end()) return it->second;
  }
  auto prices = std::make_shared<const SharePrices>(workload);
  std::lock_guard lock(mutex);
  if (remembered.size() >= kRemembered) remembered.clear();
  remembered.emplace(std::move(key), prices);
  return prices;
}

}  // namespace gpool::scheduler
