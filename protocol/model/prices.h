// The committed price table (`gpool prices`), as the replicated log keeps it
// (UpdatePricesCmd). Money in micro-units, multipliers in permille
// (messages_usage.h explains the units).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/model/billing.h"

namespace gpool {

// The price of a GPU-hour of one device model.
struct ModelPrice {
  std::string model;             // as nodes report it ("A100"); "default" for any other
  int64_t gpu_hour_micro = 0;    // a whole GPU for an hour
  // A GPU-hour of shares' compute (gpu_mms of shares is already weighted by
  // their compute fraction); 0: the same as gpu_hour_micro.
  int64_t share_gpu_hour_micro = 0;
  template <typename V>
  void Fields(V& v) {
    v.Required("model", model);
    v.Optional("gpu_hour", gpu_hour_micro);
    v.Optional("share_gpu_hour", share_gpu_hour_micro);
  }
};

struct PriceTable {
  std::string currency = "USD";
  std::vector<ModelPrice> models;
  std::map<std::string, uint64_t> pool_permille;   // absent: 1000
  std::map<std::string, uint64_t> class_permille;  // by priority class; absent: 1000
  int64_t cpu_core_hour_micro = 0;
  int64_t memory_gib_hour_micro = 0;
  int64_t set_ms = 0;       // when it was committed (filled on apply)
  std::string set_by;       // who set it (filled by the gateway)
  BillingRules billing;     // issue 50: minimum periods and discounts (billing.h)
  template <typename V>
  void Fields(V& v) {
    v.Optional("currency", currency);
    v.Optional("models", models);
    v.Optional("pool_permille", pool_permille);
    v.Optional("class_permille", class_permille);
    v.Optional("cpu_core_hour", cpu_core_hour_micro);
    v.Optional("memory_gib_hour", memory_gib_hour_micro);
    v.Optional("set_ms", set_ms);
    v.Optional("set_by", set_by);
    v.Optional("billing", billing);
  }
};

}  // namespace gpool
