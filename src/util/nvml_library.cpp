#include "util/nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <type_traits>

namespace myriad {

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(std::string* why) {
    const char* env = std::getenv("MYRIAD_NVML_LIBRARY");
    const std::string lib = env && *env ? env : "libnvidia-ml.so.1";
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        if (why) *why = fmt::format("{} could not be loaded (no NVIDIA driver here?)", lib);
        return nullptr;
    }
    std::unique_ptr<NvmlLibrary> nvml(new NvmlLibrary());
    nvml->handle_ = handle;
    auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
        return fn != nullptr;
    };
    int (*init)() = nullptr;
    const bool complete = bind(init, "nvmlInit_v2") & bind(nvml->shutdown_, "nvmlShutdown") &
                          bind(nvml->device_count, "nvmlDeviceGetCount_v2") &
                          bind(nvml->device_by_index, "nvmlDeviceGetHandleByIndex_v2") &
                          bind(nvml->memory_info, "nvmlDeviceGetMemoryInfo") &
                          bind(nvml->device_name, "nvmlDeviceGetName");
    bind(nvml->error_string_, "nvmlErrorString");
    bind(nvml->device_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    bind(nvml->pci_info, "nvmlDeviceGetPciInfo_v3");
    bind(nvml->common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    bind(nvml->p2p_status, "nvmlDeviceGetP2PStatus");
    if (!complete) {
        if (why)
            *why = fmt::format("{} lacks the NVML functions myriad needs (driver too old?)", lib);
        nvml->shutdown_ = nullptr;  // never initialised
        return nullptr;
    }
    if (int rc = init(); rc != 0) {
        if (why) *why = fmt::format("NVML did not start: {}", nvml->error(rc));
        nvml->shutdown_ = nullptr;
        return nullptr;
    }
    return nvml;
}

NvmlLibrary::~NvmlLibrary() {
    if (shutdown_) shutdown_();
    if (handle_) dlclose(handle_);
}

std::string NvmlLibrary::error(int rc) const {
    return error_string_ ? std::string(error_string_(rc)) : fmt::format("NVML error {}", rc);
}

}  // namespace myriad
