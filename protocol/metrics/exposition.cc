#include "protocol/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace gpool::metrics {

namespace {

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

void AppendEscaped(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void AppendNumber(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buffer[32];
  std::to_chars_result result;
  if (value == std::floor(value) && std::fabs(value) < 9.0e15) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<int64_t>(value));
  } else {
    result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  }
  out.append(buffer, result.ptr);
}

void Exposition::Family(std::string_view name, Type type, std::string_view help) {
  family_.assign(name);
  ++families_;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  // HELP text escapes only \ and newlines.
  for (char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

void Exposition::Write(const Label* begin, const Label* end, double value, std::string_view suffix,
                       const Label* extra) {
  out_ += family_;
  out_ += suffix;
  if (begin != end || extra != nullptr) {
    out_ += '{';
    bool first = true;
    auto label = [&](const Label& l) {
      if (!first) out_ += ',';
      first = false;
      out_ += l.first;
      out_ += "=\"";
      AppendEscaped(out_, l.second);
      out_ += '"';
    };
    for (const Label* l = begin; l != end; ++l) label(*l);
    if (extra != nullptr) label(*extra);
    out_ += '}';
  }
  out_ += ' ';
  AppendNumber(out_, value);
  out_ += '\n';
}

void Exposition::Sample(Labels labels, double value, std::string_view suffix) {
  Write(labels.begin(), labels.end(), value, suffix);
}

void Exposition::Sample(const std::vector<Label>& labels, double value, std::string_view suffix) {
  Write(labels.data(), labels.data() + labels.size(), value, suffix);
}

void Exposition::Observe(Labels labels, const Histogram& histogram) {
  uint64_t cumulative = 0;
  std::string bound;
  for (size_t i = 0; i < histogram.counts().size(); ++i) {
    cumulative += histogram.counts()[i];
    bound.clear();
    if (i < histogram.bounds().size()) {
      AppendNumber(bound, histogram.bounds()[i]);
    } else {
      bound = "+Inf";
    }
    const Label le{"le", bound};
    Write(labels.begin(), labels.end(), static_cast<double>(cumulative), "_bucket", &le);
  }
  Write(labels.begin(), labels.end(), histogram.sum(), "_sum");
  Write(labels.begin(), labels.end(), static_cast<double>(histogram.count()), "_count");
}

void Exposition::Single(std::string_view name, Type type, std::string_view help, double value) {
  Family(name, type, help);
  Sample({}, value);
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  ++count_;
  sum_ += value;
}

std::vector<double> LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 100};
}

std::vector<double> WaitBounds() { return {0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 3 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400}; }

std::vector<double> CountBounds() {
  std::vector<double> bounds;
  for (double decade = 1; decade <= 100000; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (decade * m <= 100000) bounds.push_back(decade * m);
    }
  }
  return bounds;
}

}  // namespace gpool::metrics
