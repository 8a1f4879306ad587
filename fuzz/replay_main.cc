// A stand-in for libFuzzer's main, so every fuzz target also builds with GCC
// and runs as an ordinary ctest test under the sanitizers of the normal
// build. It is no fuzzer (no coverage feedback): it runs each corpus file,
// then deterministic mutations of the corpus (bit flips, interesting bytes,
// truncations, erased and repeated chunks, splices of two files) until its
// time is up. That catches a regression of a crash the real fuzzer once
// found, and shallow ones, in seconds of CI time.
//
//   fuzz_<target>_replay [--seconds S] [--seed N] [--max-len N] PATH...
//
// A PATH is a corpus directory (every regular file in it) or one file, so a
// crash file from libFuzzer replays with `fuzz_<target>_replay crash-...`.
// A crash (sanitizer report, abort, failed FUZZ_CHECK) ends the process;
// the input that caused it is first written to replay-crash-<pid> in the
// working directory and its origin printed. An input that runs longer than
// --slow-ms (default 5000) is written the same way and fails the run: hostile
// bytes must not stall a decoder.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// Weak: present only when a sanitizer runtime is linked (the header alone,
// which every GCC install has, does not make it so; a plain Release build
// failed to link when it was called unconditionally).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

struct Options {
  double seconds = 2.0;
  uint64_t seed = 1;
  size_t max_len = 64 * 1024;
  int64_t slow_ms = 5000;
  std::vector<std::string> paths;
};

// The input being run, for the crash handlers; set before each run.
const std::string* g_current = nullptr;
char g_crash_path[64] = {0};

// Async-signal-safe: open/write/close only.
void SaveCurrentInput() {
  static volatile sig_atomic_t saved = 0;
  if (saved || g_current == nullptr) return;
  saved = 1;
  int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const char* p = g_current->data();
  size_t left = g_current->size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  static const char kNote[] = "replay: the crashing input is saved in the working directory as replay-crash-<pid>\n";
  (void)!::write(2, kNote, sizeof(kNote) - 1);
}

void OnFatalSignal(int sig) {
  SaveCurrentInput();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void InstallCrashHandlers() {
  std::snprintf(g_crash_path, sizeof(g_crash_path), "replay-crash-%d", static_cast<int>(::getpid()));
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, OnFatalSignal);
  // Without abort_on_error a sanitizer exits instead of raising SIGABRT.
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(SaveCurrentInput);
}

// splitmix64: small, fast and the same sequence everywhere, so a failing
// run repeats with the same --seed.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
};

// Bytes that sit on the edges decoders branch on: msgpack type markers
// (nil, false/true, bin/str/array/map with 8-32 bit sizes, fixmap/fixarray),
// YAML and JSON syntax, integer extremes.
constexpr uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xc0, 0xc2, 0xc3, 0xc4, 0xc6, 0xcf, 0xd3,
                                    0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0x90, 0x9f, 0x8f, 0xa0, 0xbf, '&',
                                    '*', '!', '{', '[', ':', '-', '"', '\n', '#', '\\', '|', '>'};

std::string Mutate(const std::vector<std::string>& corpus, Rng& rng, size_t max_len) {
  std::string s = corpus[rng.Below(corpus.size())];
  int rounds = 1 + static_cast<int>(rng.Below(4));
  for (int r = 0; r < rounds; ++r) {
    switch (rng.Below(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng.Below(s.size())] ^= static_cast<char>(1u << rng.Below(8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) s[rng.Below(s.size())] = static_cast<char>(kInteresting[rng.Below(sizeof(kInteresting))]);
        break;
      case 2:  // a random byte inserted
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(rng.Below(s.size() + 1)),
                 static_cast<char>(rng.Next() & 0xff));
        break;
      case 3:  // truncate
        s.resize(rng.Below(s.size() + 1));
        break;
      case 4: {  // erase a chunk
        if (s.empty()) break;
        size_t at = rng.Below(s.size());
        s.erase(at, 1 + rng.Below(std::min<size_t>(16, s.size() - at)));
        break;
      }
      case 5: {  // repeat a chunk a few times (deep nesting, long lists)
        if (s.empty()) break;
        size_t at = rng.Below(s.size());
        std::string chunk = s.substr(at, 1 + rng.Below(std::min<size_t>(32, s.size() - at)));
        size_t times = 1 + rng.Below(64);
        std::string repeated;
        for (size_t i = 0; i < times && repeated.size() < max_len; ++i) repeated += chunk;
        s.insert(at, repeated);
        break;
      }
      case 6: {  // splice: a prefix of this one, a suffix of another
        const std::string& other = corpus[rng.Below(corpus.size())];
        s = s.substr(0, rng.Below(s.size() + 1)) + other.substr(rng.Below(other.size() + 1));
        break;
      }
      default: {  // copy a chunk over another place
        if (s.size() < 2) break;
        size_t from = rng.Below(s.size());
        size_t to = rng.Below(s.size());
        size_t n = 1 + rng.Below(std::min(s.size() - from, s.size() - to));
        std::memmove(s.data() + to, s.data() + from, n);
        break;
      }
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int Usage() {
  std::fprintf(stderr, "usage: fuzz_<target>_replay [--seconds S] [--seed N] [--max-len N] [--slow-ms N] PATH...\n");
  return 2;
}

// Runs one input, timed; false when it was too slow.
bool RunOne(const std::string& input, const Options& options, const std::string& origin) {
  g_current = &input;
  auto start = std::chrono::steady_clock::now();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (ms > options.slow_ms) {
    SaveCurrentInput();
    std::fprintf(stderr, "replay: %s took %lld ms (limit %lld ms)\n", origin.c_str(), static_cast<long long>(ms),
                 static_cast<long long>(options.slow_ms));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--seconds" && (v = value())) {
      options.seconds = std::atof(v);
    } else if (arg == "--seed" && (v = value())) {
      options.seed = std::strtoull(v, nullptr, 10);
    } else if (arg == "--max-len" && (v = value())) {
      options.max_len = std::strtoull(v, nullptr, 10);
    } else if (arg == "--slow-ms" && (v = value())) {
      options.slow_ms = std::strtoll(v, nullptr, 10);
    } else if (arg.starts_with("--")) {
      return Usage();
    } else {
      options.paths.push_back(arg);
    }
  }
  if (options.paths.empty()) return Usage();
  InstallCrashHandlers();

  // Sorted, so the mutation sequence for a seed does not depend on the
  // order the file system lists a directory in.
  std::vector<std::filesystem::path> files;
  for (const auto& p : options.paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(p)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.emplace_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> corpus;
  for (const auto& f : files) {
    std::string data;
    if (!ReadFile(f, &data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    if (!RunOne(data, options, f.string())) return 1;
    corpus.push_back(std::move(data));
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "replay: no inputs in the given paths\n");
    return 2;
  }

  Rng rng{options.seed};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.seconds);
  uint64_t mutations = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string input = Mutate(corpus, rng, options.max_len);
    ++mutations;
    if (!RunOne(input, options, "mutation " + std::to_string(mutations) + " of seed " +
                                    std::to_string(options.seed))) {
      return 1;
    }
  }
  g_current = nullptr;
  std::printf("replay: %zu corpus files and %llu mutations (seed %llu) ran without a crash\n", corpus.size(),
              static_cast<unsigned long long>(mutations), static_cast<unsigned long long>(options.seed));
  return 0;
}
