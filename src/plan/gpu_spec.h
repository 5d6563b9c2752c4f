// The GPUs a plan is made for: `--gpus` specs such as "8x96GB", "8xH200", "4x141GB,4xH100", sizes
// in GB (10^9 bytes), GiB (2^30), MB, MiB, TB, TiB, and card presets that carry the memory
// nvidia-smi reports for the card.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace myriad::plan {

struct Gpu {
    std::string name;    // the preset or size as written ("H200", "96GB")
    uint64_t bytes = 0;  // memory of one card
};

struct GpuPreset {
    std::string_view name;  // matched case-insensitively, '-' and '_' and ' ' ignored
    uint64_t mib;           // total memory as nvidia-smi prints it (MiB)
};

const std::vector<GpuPreset>& gpu_presets();

// "96GB" -> 96e9, "141GiB" -> 141 * 2^30, "143771MiB", "1.5TB". A number without a unit or
// an unknown unit is bad input naming `flag`.
uint64_t parse_size(std::string_view text, std::string_view flag);

// A comma-separated list of [COUNTx](SIZE|PRESET); the GPUs in order. Bad input names `flag`
// and lists the presets.
std::vector<Gpu> parse_gpu_spec(std::string_view text, std::string_view flag = "--gpus");

// "8 x H200 (143771 MiB = 150.8 GB)" style summary of a list of GPUs.
std::string describe_gpus(const std::vector<Gpu>& gpus);

}  // namespace myriad::plan
