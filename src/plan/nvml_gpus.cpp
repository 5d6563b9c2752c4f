#include "plan/nvml_gpus.h"

#include <fmt/format.h>

#include <cstdio>

#include "util/nvml_library.h"

namespace myriad::plan {

GpuProbe probe_gpus() {
    GpuProbe probe;
    std::unique_ptr<NvmlLibrary> nvml = NvmlLibrary::open(&probe.note);
    if (!nvml) return probe;
    unsigned count = 0;
    if (int rc = nvml->device_count(&count); rc != 0)
        probe.note = fmt::format("NVML: {}", nvml->error(rc));
    for (unsigned i = 0; i < count; ++i) {
        NvmlDevice dev = nullptr;
        NvmlMemory mem{};
        char name[96] = {};
        if (nvml->device_by_index(i, &dev) != 0 || nvml->memory_info(dev, &mem) != 0) continue;
        if (nvml->device_name(dev, name, sizeof(name)) != 0)
            std::snprintf(name, sizeof(name), "GPU %u", i);
        probe.gpus.push_back({name, mem.total});
    }
    if (probe.gpus.empty() && probe.note.empty()) probe.note = "NVML reports no GPUs";
    return probe;
}

}  // namespace myriad::plan
