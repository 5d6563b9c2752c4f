#include "ops/kernel_plan.h"

#include <fmt/format.h>

#include <cctype>

namespace myriad {

namespace {

struct BuiltArch {
    int cc = 0;
    bool specific = false;  // "90a": runs on exactly that capability
    bool ptx = true;        // CMake adds PTX unless "-real"
    bool sass = true;       // and SASS unless "-virtual"
};

BuiltArch parse_arch(const std::string& s) {
    BuiltArch a;
    size_t i = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
        a.cc = a.cc * 10 + (s[i++] - '0');
    if (i < s.size() && (s[i] == 'a' || s[i] == 'f')) {
        a.specific = true;
        ++i;
    }
    const std::string rest = s.substr(i);
    if (rest == "-real") a.ptx = false;
    if (rest == "-virtual") a.sass = false;
    return a;
}

std::string sm(int cc) {
    return fmt::format("sm_{}", cc);
}

}  // namespace

GpuKernelPlan plan_gpu_kernels(const GpuInfo& gpu, const std::vector<std::string>& built,
                               const KernelChoices& choices) {
    GpuKernelPlan p;
    std::string built_list;
    for (const auto& b : built) built_list += (built_list.empty() ? "sm_" : ", sm_") + b;
    const std::string rebuild = fmt::format(
        "rebuild with -DCMAKE_CUDA_ARCHITECTURES={}a (`make release` builds sm_90a, sm_100a and "
        "sm_120a) or use --device cpu",
        gpu.cc);
    if (gpu.cc < 80) {
        p.stop = fmt::format(
            "GPU {} ({}, {}) is older than sm_80: myriad's CUDA kernels need BF16 tensor cores; "
            "use --device cpu",
            gpu.index, gpu.name, sm(gpu.cc));
        return p;
    }
    // SASS for an arch-specific target runs on exactly its capability, plain SASS on the same
    // major version at an equal or higher minor; PTX would be compiled by the driver at start.
    bool sass = false, ptx = false;
    for (const auto& b : built) {
        const BuiltArch a = parse_arch(b);
        if (a.sass && (a.specific ? a.cc == gpu.cc : a.cc / 10 == gpu.cc / 10 && a.cc <= gpu.cc))
            sass = true;
        if (a.ptx && (a.specific ? a.cc == gpu.cc : a.cc <= gpu.cc)) ptx = true;
    }
    if (!sass && !ptx) {
        p.stop = fmt::format("GPU {} ({}, {}) cannot run this build's kernels (built for {}): {}",
                             gpu.index, gpu.name, sm(gpu.cc), built_list, rebuild);
        return p;
    }
    std::string size;
    if (gpu.sms > 0) size += fmt::format(", {} multiprocessors", gpu.sms);
    if (gpu.memory > 0) size += fmt::format(", {:.0f} GiB", gpu.memory / double(1ull << 30));
    p.lines.push_back(fmt::format("GPU {}: {}, {}{}; kernels built for {}{}", gpu.index, gpu.name,
                                  sm(gpu.cc), size, built_list,
                                  sass ? ""
                                       : " (no machine code for this GPU: the driver compiles "
                                         "the PTX at start, which takes minutes; " +
                                             rebuild + ")"));
    for (const std::string& line : choices.lines()) p.lines.push_back(line);
    p.choices = choices;
    return p;
}

}  // namespace myriad
