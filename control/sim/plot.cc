#include "control/sim/plot.h"

#include <cstdio>
#include <sstream>

namespace gpool::sim {

namespace {

// gnuplot strings are single-quoted; a quote inside is doubled.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

Status RunGnuplot(const std::string& script, const std::string& png) {
  FILE* pipe = popen("gnuplot 2>&1", "w");
  if (pipe == nullptr) return Status::FailedPrecondition("cannot start gnuplot");
  const size_t written = std::fwrite(script.data(), 1, script.size(), pipe);
  const int rc = pclose(pipe);
  if (written != script.size() || rc != 0) {
    return Status::FailedPrecondition("gnuplot failed drawing " + png +
                                      " (is gnuplot installed? deploy/install-deps.sh installs gnuplot-nox)");
  }
  return Status::Ok();
}

}  // namespace

std::string ArrivalCurvesScript(const std::vector<PolicyResult>& results, uint32_t arrival_pct, const std::string& png) {
  std::ostringstream s;
  s << "set terminal pngcairo size 1000,640 noenhanced\nset output " << Quoted(png) << "\n";
  s << "set title 'GPU allocation vs arrived GPU demand (mean over seeds)'\n";
  s << "set xlabel 'arrived GPU demand, % of capacity'\nset ylabel 'GPU allocated, % of capacity'\n";
  s << "set key left top\nset grid\n";
  s << "plot ";
  for (size_t i = 0; i < results.size(); ++i) {
    s << (i ? ", " : "") << "'-' using 1:2 with lines lw 2 title " << Quoted(results[i].policy);
  }
  s << "\n";
  for (const auto& result : results) {
    for (uint32_t pct = 0; pct <= arrival_pct; ++pct) s << pct << ' ' << result.MeanAllocAt(pct) << '\n';
    s << "e\n";
  }
  return s.str();
}

std::string TimeSeriesScript(const EventRun& run, const std::string& title, const std::string& png) {
  std::ostringstream s;
  s << "set terminal pngcairo size 1000,640 noenhanced\nset output " << Quoted(png) << "\n";
  s << "set title " << Quoted("gpool-sim: " + title) << "\n";
  s << "set xlabel 'simulated time, hours'\nset ylabel '%'\nset y2label 'waiting jobs'\nset y2tics\nset ytics nomirror\n";
  s << "set key left top\nset grid\n";
  s << "plot '-' using 1:2 with lines lw 2 title 'GPU allocated %', "
       "'-' using 1:2 with lines lw 2 title 'fragmentation %', "
       "'-' using 1:2 axes x1y2 with lines title 'waiting jobs'\n";
  for (int column = 0; column < 3; ++column) {
    for (const auto& p : run.series) {
      const double value = column == 0 ? p.alloc_pct : column == 1 ? p.frag_pct : static_cast<double>(p.waiting);
      s << static_cast<double>(p.t_ms) / 3.6e6 << ' ' << value << '\n';
    }
    s << "e\n";
  }
  return s.str();
}

Status PlotArrivalCurves(const std::vector<PolicyResult>& results, uint32_t arrival_pct, const std::string& png) {
  return RunGnuplot(ArrivalCurvesScript(results, arrival_pct, png), png);
}

Status PlotTimeSeries(const EventRun& run, const std::string& title, const std::string& png) {
  return RunGnuplot(TimeSeriesScript(run, title, png), png);
}

}  // namespace gpool::sim
