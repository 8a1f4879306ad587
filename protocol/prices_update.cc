// UpdatePrices's reading and its keep_billing (messages_usage.h): what needs
// the msgpack reader is here, out of the header.
#include "protocol/messages_usage.h"
#include "protocol/wire.h"

namespace gpool {
namespace {

// Whether the "table" map has a "billing" key (read beside the table).
struct BillingKeyPresence {
  bool present = false;
  void Unpack(wire::ObjectReader& reader) { present = reader.Has("billing"); }
};

}  // namespace

void UpdatePrices::Unpack(wire::ObjectReader& reader) {
  wire::FieldReader fields{reader};
  Fields(fields);
  if (!reader.status().ok() || op != PricesOp::kSet || !reader.Has("table")) return;
  BillingKeyPresence billing;
  reader.Optional("table", &billing);
  keep_billing = !billing.present;
}

}  // namespace gpool
