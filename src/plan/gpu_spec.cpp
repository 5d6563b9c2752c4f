#include "plan/gpu_spec.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "util/error.h"

namespace myriad::plan {

namespace {

std::string canonical(std::string_view s) {
    std::string out;
    for (char ch : s) {
        if (ch == '-' || ch == '_' || ch == ' ') continue;
        out += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    return out;
}

std::string preset_names() {
    std::string out;
    for (const auto& p : gpu_presets()) out += (out.empty() ? "" : ", ") + std::string(p.name);
    return out;
}

}  // namespace

// Memory totals as nvidia-smi prints them ("<used>MiB / <total>MiB"); the sources are public
// nvidia-smi outputs pasted in GitHub issues and logs.
const std::vector<GpuPreset>& gpu_presets() {
    static const std::vector<GpuPreset> presets = {
        // H200 SXM 141 GB: 143771 MiB (issue 8 of myriad quotes it; many public nvidia-smi logs).
        {"H200", 143771},
        // H100 80GB HBM3 (SXM) and H100 PCIe: "0MiB / 81559MiB" in public nvidia-smi tables.
        {"H100", 81559},
        {"H100-80GB", 81559},
        // B200: "0MiB / 183359MiB" (nvidia-smi tables in vLLM and training-log READMEs on GitHub).
        {"B200", 183359},
        // RTX PRO 6000 Blackwell (Workstation and Server Edition): "0MiB / 97887MiB" (AWS G7e
        // and workstation nvidia-smi outputs on GitHub).
        {"RTX-PRO-6000", 97887},
    };
    return presets;
}

uint64_t parse_size(std::string_view text, std::string_view flag) {
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + i, value);
    if (i == 0 || ec != std::errc() || end != text.data() + i || !std::isfinite(value) ||
        value <= 0)
        bad_input("{} {}: expected a size such as 96GB or 141GiB, or a preset ({})", flag, text,
                  preset_names());
    const std::string unit = canonical(text.substr(i));
    double scale = 0;
    if (unit == "GB" || unit == "G")
        scale = 1e9;
    else if (unit == "GIB")
        scale = 1073741824.0;
    else if (unit == "MB")
        scale = 1e6;
    else if (unit == "MIB")
        scale = 1048576.0;
    else if (unit == "TB" || unit == "T")
        scale = 1e12;
    else if (unit == "TIB")
        scale = 1099511627776.0;
    else
        bad_input("{} {}: unknown unit '{}'; use GB (10^9 bytes), GiB (2^30), MB, MiB, TB or TiB",
                  flag, text, text.substr(i));
    return static_cast<uint64_t>(std::llround(value * scale));
}

std::vector<Gpu> parse_gpu_spec(std::string_view text, std::string_view flag) {
    std::vector<Gpu> gpus;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view item = text.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty())
            bad_input("{} '{}': an empty item; write e.g. 8x96GB or 8xH200", flag, text);
        int64_t count = 1;
        size_t digits = 0;
        while (digits < item.size() && std::isdigit(static_cast<unsigned char>(item[digits])))
            ++digits;
        if (digits > 0 && digits < item.size() && (item[digits] == 'x' || item[digits] == 'X')) {
            std::from_chars(item.data(), item.data() + digits, count);
            if (count < 1 || count > 4096)
                bad_input("{} {}: the GPU count must be 1 to 4096", flag, item);
            item.remove_prefix(digits + 1);
        }
        Gpu gpu;
        const std::string key = canonical(item);
        for (const auto& p : gpu_presets()) {
            if (canonical(p.name) == key) {
                gpu.name = std::string(p.name);
                gpu.bytes = p.mib * 1048576ull;
            }
        }
        if (gpu.bytes == 0) {
            gpu.name = std::string(item);
            gpu.bytes = parse_size(item, flag);
        }
        for (int64_t k = 0; k < count; ++k) gpus.push_back(gpu);
        start = comma + 1;
    }
    return gpus;
}

std::string describe_gpus(const std::vector<Gpu>& gpus) {
    std::string out;
    for (size_t i = 0; i < gpus.size();) {
        size_t j = i;
        while (j < gpus.size() && gpus[j].name == gpus[i].name && gpus[j].bytes == gpus[i].bytes)
            ++j;
        out += fmt::format("{}{} x {} ({:.1f} GB = {:.1f} GiB)", out.empty() ? "" : ", ", j - i,
                           gpus[i].name, gpus[i].bytes / 1e9, gpus[i].bytes / 1073741824.0);
        i = j;
    }
    return out;
}

}  // namespace myriad::plan
