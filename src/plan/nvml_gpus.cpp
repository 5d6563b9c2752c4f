#include "plan/nvml_gpus.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace myriad::plan {

namespace {

// The few NVML entry points used, with the ABI of nvml.h (NVML_SUCCESS is 0; nvmlMemory_t is
// three unsigned long long: total, free, used).
struct NvmlMemory {
    unsigned long long total, free, used;
};
using InitFn = int (*)();
using CountFn = int (*)(unsigned*);
using HandleFn = int (*)(unsigned, void**);
using MemoryFn = int (*)(void*, NvmlMemory*);
using NameFn = int (*)(void*, char*, unsigned);
using ErrorStringFn = const char* (*)(int);

}  // namespace

GpuProbe probe_gpus() {
    GpuProbe probe;
    const char* env = std::getenv("MYRIAD_NVML_LIBRARY");
    const std::string lib = env && *env ? env : "libnvidia-ml.so.1";
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        probe.note = fmt::format("{} could not be loaded (no NVIDIA driver here?)", lib);
        return probe;
    }
    auto sym = [&](const char* name) { return dlsym(handle, name); };
    auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
    auto shutdown = reinterpret_cast<InitFn>(sym("nvmlShutdown"));
    auto count_fn = reinterpret_cast<CountFn>(sym("nvmlDeviceGetCount_v2"));
    auto handle_fn = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
    auto memory_fn = reinterpret_cast<MemoryFn>(sym("nvmlDeviceGetMemoryInfo"));
    auto name_fn = reinterpret_cast<NameFn>(sym("nvmlDeviceGetName"));
    auto error_fn = reinterpret_cast<ErrorStringFn>(sym("nvmlErrorString"));
    if (!init || !shutdown || !count_fn || !handle_fn || !memory_fn || !name_fn) {
        probe.note = fmt::format("{} lacks the NVML functions myriad needs (driver too old?)", lib);
        dlclose(handle);
        return probe;
    }
    auto why = [&](int rc) {
        return error_fn ? std::string(error_fn(rc)) : fmt::format("NVML error {}", rc);
    };
    if (int rc = init(); rc != 0) {
        probe.note = fmt::format("NVML did not start: {}", why(rc));
        dlclose(handle);
        return probe;
    }
    unsigned count = 0;
    if (int rc = count_fn(&count); rc != 0) probe.note = fmt::format("NVML: {}", why(rc));
    for (unsigned i = 0; i < count; ++i) {
        void* dev = nullptr;
        NvmlMemory mem{};
        char name[96] = {};
        if (handle_fn(i, &dev) != 0 || memory_fn(dev, &mem) != 0) continue;
        if (name_fn(dev, name, sizeof(name)) != 0) std::snprintf(name, sizeof(name), "GPU %u", i);
        probe.gpus.push_back({name, mem.total});
    }
    if (probe.gpus.empty() && probe.note.empty()) probe.note = "NVML reports no GPUs";
    shutdown();
    dlclose(handle);
    return probe;
}

}  // namespace myriad::plan
