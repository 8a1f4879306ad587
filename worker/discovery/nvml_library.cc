#include "worker/discovery/nvml_library.h"

namespace gpool::worker {

NvmlLibrary::NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) shutdown_();
  dlclose(handle_);
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return Status::NotFound("NVML library " + path + " not loadable: " + (err ? err : "unknown error"));
  }
  // Owned from here on, so every return path closes it.
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  auto init = lib->Symbol<nvml::InitFn>("nvmlInit_v2");
  lib->shutdown_ = lib->Symbol<nvml::ShutdownFn>("nvmlShutdown");
  lib->get_count_ = lib->Symbol<nvml::GetCountFn>("nvmlDeviceGetCount_v2");
  lib->get_handle_ = lib->Symbol<nvml::GetHandleFn>("nvmlDeviceGetHandleByIndex_v2");
  lib->error_string_ = lib->Symbol<nvml::ErrorStringFn>("nvmlErrorString");
  if (init == nullptr || lib->shutdown_ == nullptr || lib->get_count_ == nullptr || lib->get_handle_ == nullptr) {
    return Status::Unavailable("NVML library " + path + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2");
  }
  const nvml::Return rc = init();
  if (rc != nvml::kSuccess) return Status::Unavailable("nvmlInit failed: " + lib->Describe(rc));
  lib->initialised_ = true;
  return lib;
}

nvml::MigApi NvmlLibrary::ResolveMigApi() const {
  nvml::MigApi mig;
  mig.get_uuid = Symbol<nvml::GetStringFn>("nvmlDeviceGetUUID");
  mig.get_mig_mode = Symbol<nvml::GetMigModeFn>("nvmlDeviceGetMigMode");
  mig.get_max_mig_count = Symbol<nvml::GetUintFn>("nvmlDeviceGetMaxMigDeviceCount");
  mig.get_mig_handle = Symbol<nvml::GetMigHandleFn>("nvmlDeviceGetMigDeviceHandleByIndex");
  mig.get_attributes = Symbol<nvml::GetAttributesFn>("nvmlDeviceGetAttributes_v2");
  mig.get_gpu_instance_id = Symbol<nvml::GetUintFn>("nvmlDeviceGetGpuInstanceId");
  mig.get_gpu_instance = Symbol<nvml::GetGpuInstanceByIdFn>("nvmlDeviceGetGpuInstanceById");
  mig.get_gpu_instance_info = Symbol<nvml::GpuInstanceGetInfoFn>("nvmlGpuInstanceGetInfo");
  mig.get_profile_info = Symbol<nvml::GetProfileInfoVFn>("nvmlDeviceGetGpuInstanceProfileInfoV");
  return mig;
}

std::string NvmlLibrary::Describe(nvml::Return rc) const {
  const char* text = error_string_ != nullptr ? error_string_(rc) : nullptr;
  return std::string(text != nullptr ? text : "NVML error") + " (" + std::to_string(rc) + ")";
}

}  // namespace gpool::worker
