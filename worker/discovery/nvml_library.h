// NvmlLibrary: NVML loaded with dlopen and initialised, for as long as the
// object lives. Shared by the one-shot GPU probe (nvml_probe.h) and the
// usage sampler (nvml_usage_sampler.h), which keeps NVML initialised for the
// worker's lifetime so each sample costs only the per-device queries.
//
// Open resolves the entry points every user needs (init, shutdown, device
// count, handle by index) and calls nvmlInit_v2; anything else is looked up
// with Symbol, which returns nullptr for what an older driver lacks. The
// destructor calls nvmlShutdown (NVML counts init/shutdown pairs, so two
// objects may coexist) and dlcloses the library.
//
// Thread-safety: one thread at a time.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>

#include "protocol/base/status.h"
#include "worker/discovery/nvml_api.h"

namespace gpool::worker {

class NvmlLibrary {
 public:
  // NotFound when the library cannot be loaded; Unavailable when it lacks
  // the core entry points or NVML cannot initialise (no driver).
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // nullptr when the library does not export `name`.
  template <typename Fn>
  Fn Symbol(const char* name) const {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

  // The MIG entry points (nvml::MigApi), each null where the driver lacks it.
  nvml::MigApi ResolveMigApi() const;

  // "Driver Not Loaded (9)": nvmlErrorString's text and the code.
  std::string Describe(nvml::Return rc) const;

  const std::string& path() const { return path_; }
  nvml::GetCountFn get_count() const { return get_count_; }
  nvml::GetHandleFn get_handle() const { return get_handle_; }

 private:
  NvmlLibrary(void* handle, std::string path);

  void* handle_;
  std::string path_;
  bool initialised_ = false;
  nvml::ShutdownFn shutdown_ = nullptr;
  nvml::ErrorStringFn error_string_ = nullptr;
  nvml::GetCountFn get_count_ = nullptr;
  nvml::GetHandleFn get_handle_ = nullptr;
};

}  // namespace gpool::worker
