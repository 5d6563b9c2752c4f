// `--gpus auto`: the GPUs of this machine through NVML, loaded with dlopen so that myriad runs
// (and plans) on machines without the NVIDIA driver.
#pragma once

#include <string>
#include <vector>

#include "plan/gpu_spec.h"

namespace myriad::plan {

struct GpuProbe {
    std::vector<Gpu> gpus;  // empty when none were found
    std::string note;       // why none: the library is absent, NVML failed, no devices
};

// Lists each device's name and total memory through NVML (util/nvml_library.h).
GpuProbe probe_gpus();

}  // namespace myriad::plan
