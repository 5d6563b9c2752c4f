#include "ops/kernel_choices.h"

#include <fmt/format.h>

#include <cstdlib>
#include <functional>

#include "util/error.h"

namespace myriad {

namespace {

// One overridable field: its name, the values it takes (for the error), how it is read from
// the text and how it is printed.
struct Field {
    const char* name;
    const char* values;
    // Sets the field from `v`; false if `v` is not one of its values.
    std::function<bool(KernelChoices&, const std::string&)> set;
    std::function<std::string(const KernelChoices&)> get;
};

bool parse_int(const std::string& v, int64_t min, int64_t* out) {
    if (v.empty() || v.size() > 12) return false;
    int64_t n = 0;
    for (char c : v) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + (c - '0');
    }
    if (n < min) return false;
    *out = n;
    return true;
}

Field flag(const char* name, bool KernelChoices::*m) {
    return {name, "0 or 1",
            [m](KernelChoices& k, const std::string& v) {
                if (v != "0" && v != "1") return false;
                k.*m = v == "1";
                return true;
            },
            [m](const KernelChoices& k) { return std::string(k.*m ? "1" : "0"); }};
}

Field count(const char* name, int64_t KernelChoices::*m, int64_t min, const char* values) {
    return {name, values,
            [m, min](KernelChoices& k, const std::string& v) { return parse_int(v, min, &(k.*m)); },
            [m](const KernelChoices& k) { return std::to_string(k.*m); }};
}

const char* variant_name(KernelVariant v) {
    switch (v) {
        case KernelVariant::Auto:
            return "auto";
        case KernelVariant::V1:
            return "v1";
        case KernelVariant::V2:
            return "v2";
        case KernelVariant::V3:
            return "v3";
    }
    return "?";
}

// A variant field taking the versions in `allowed` ("auto" when Auto is one of them).
Field variant(const char* name, KernelVariant KernelChoices::*m, std::vector<KernelVariant> allowed,
              const char* values) {
    return {name, values,
            [m, allowed](KernelChoices& k, const std::string& v) {
                for (KernelVariant a : allowed)
                    if (v == variant_name(a)) {
                        k.*m = a;
                        return true;
                    }
                return false;
            },
            [m](const KernelChoices& k) { return std::string(variant_name(k.*m)); }};
}

const std::vector<Field>& fields() {
    using K = KernelChoices;
    using V = KernelVariant;
    static const std::vector<Field> f = {
        flag("exact", &K::exact),
        flag("graphs", &K::graphs),
        flag("sync", &K::sync),
        flag("profile", &K::profile),
        flag("pdl", &K::pdl),
        count("skinny_rows", &K::skinny_rows, 0, "a number of rows, 0 or more"),
        variant("skinny", &K::skinny, {V::V1, V::V2}, "v1 or v2"),
        flag("skinny_single_load", &K::skinny_single_load),
        count("narrow_product_blocks", &K::narrow_product_blocks, 0, "a number of blocks"),
        count("skinny_split_blocks", &K::skinny_split_blocks, 0, "a number of blocks (0: off)"),
        count("skinny_max_split", &K::skinny_max_split, 1, "a number of shares, 1 or more"),
        count("skinny_split_full_rounds", &K::skinny_split_full_rounds, 2,
              "a number of rounds, 2 or more"),
        count("moe_mma_rows", &K::moe_mma_rows, 0, "a number of rows"),
        count("moe_mma_tokens", &K::moe_mma_tokens, 1, "a number of tokens, 1 or more"),
        variant("grouped_mma", &K::grouped_mma, {V::V1, V::V2}, "v1 or v2"),
        count("mma_short_tile_rows", &K::mma_short_tile_rows, 0, "a number of rows"),
        flag("moe_sort_fused", &K::moe_sort_fused),
        variant("prefill_attention", &K::prefill_attention, {V::V1, V::V2}, "v1 or v2"),
        variant("decode_attention", &K::decode_attention, {V::Auto, V::V2, V::V3},
                "auto, v2 or v3"),
        count("decode_mma_blocks", &K::decode_mma_blocks, 1, "a number of blocks, 1 or more"),
        count("decode_long_context", &K::decode_long_context, 0, "a number of tokens (0: never)"),
        {"decode_threads", "auto, 128 or 256",
         [](K& k, const std::string& v) {
             if (v != "auto" && v != "128" && v != "256") return false;
             k.decode_threads = v == "auto" ? 0 : std::atoi(v.c_str());
             return true;
         },
         [](const K& k) {
             return k.decode_threads == 0 ? std::string("auto") : std::to_string(k.decode_threads);
         }},
        count("decode_wide_pairs", &K::decode_wide_pairs, 0, "a number of (row, head) pairs"),
        count("decode_split_blocks", &K::decode_split_blocks, 1, "a number of blocks, 1 or more"),
        count("decode_mma_split_blocks", &K::decode_mma_split_blocks, 1,
              "a number of blocks, 1 or more"),
        count("decode_max_splits", &K::decode_max_splits, 1, "a number of splits, 1 or more"),
    };
    return f;
}

std::string field_list() {
    std::string s;
    for (const Field& f : fields()) s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
}

std::string trim(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
    return s.substr(b, e - b);
}

}  // namespace

std::vector<std::string> kernel_choice_fields() {
    std::vector<std::string> names;
    for (const Field& f : fields()) names.emplace_back(f.name);
    return names;
}

KernelChoices KernelChoices::choose(const GpuInfo& gpu, const KernelShapes& shapes) {
    KernelChoices k;
    k.gpu = gpu;
    k.shapes = shapes;
    const int64_t sms = gpu.sms > 0 ? gpu.sms : 132;
    // Early launch needs sm_90 (griddepcontrol); an unknown capability keeps the default.
    k.pdl = gpu.cc == 0 || gpu.cc >= 90;
    k.narrow_product_blocks = 2 * sms;
    k.skinny_split_blocks = 2 * sms;
    k.decode_wide_pairs = sms;
    k.decode_split_blocks = 4 * sms;
    k.decode_mma_split_blocks = 2 * sms;
    return k;
}

void KernelChoices::apply_overrides(const std::string& spec, const std::string& source) {
    KernelChoices next = *this;
    std::string applied = overrides;  // the items as name=value, comma-separated
    size_t at = 0;
    while (at <= spec.size()) {
        size_t end = spec.find(',', at);
        if (end == std::string::npos) end = spec.size();
        const std::string item = trim(spec.substr(at, end - at));
        at = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        const std::string name = trim(item.substr(0, eq));
        const Field* field = nullptr;
        for (const Field& f : fields())
            if (name == f.name) field = &f;
        if (!field)
            bad_input("{}: unknown field '{}'; the fields are {}", source, name, field_list());
        if (eq == std::string::npos)
            bad_input("{}: field '{}' has no value; write {}=VALUE ({})", source, name, name,
                      field->values);
        const std::string value = trim(item.substr(eq + 1));
        if (!field->set(next, value))
            bad_input("{}: {}={} is not a value of {}; it takes {}", source, name, value, name,
                      field->values);
        applied += (applied.empty() ? "" : ",") + name + "=" + value;
    }
    *this = next;
    overrides = applied;
}

namespace {
// The variables MYRIAD_KERNELS replaced, and the field each now is: one that is still set stops
// the run rather than being ignored (a comparison would silently measure the default).
struct Replaced {
    const char* variable;
    const char* field;
};
constexpr Replaced kReplaced[] = {
    {"MYRIAD_CUDA_EXACT", "exact"},
    {"MYRIAD_CUDA_GRAPHS", "graphs"},
    {"MYRIAD_CUDA_SYNC", "sync"},
    {"MYRIAD_CUDA_PROFILE", "profile"},
    {"MYRIAD_CUDA_PDL", "pdl"},
    {"MYRIAD_CUDA_SKINNY", "skinny"},
    {"MYRIAD_CUDA_SKINNY_UNROLL", "skinny_single_load"},
    {"MYRIAD_CUDA_MMA", "grouped_mma"},
    {"MYRIAD_CUDA_SORT", "moe_sort_fused"},
    {"MYRIAD_CUDA_PREFILL_ATTN", "prefill_attention"},
    {"MYRIAD_CUDA_ATTN", "decode_attention"},
};
}  // namespace

KernelChoices KernelChoices::from_environment(const GpuInfo& gpu, const KernelShapes& shapes) {
    for (const Replaced& r : kReplaced)
        if (std::getenv(r.variable))
            bad_input(
                "{} is no longer read: the kernel choices take MYRIAD_KERNELS={}=VALUE "
                "(bench/README.md lists the fields); unset {}",
                r.variable, r.field, r.variable);
    KernelChoices k = choose(gpu, shapes);
    if (const char* e = std::getenv("MYRIAD_KERNELS")) k.apply_overrides(e, "MYRIAD_KERNELS");
    return k;
}

std::vector<std::string> KernelChoices::lines() const {
    std::vector<std::string> out;
    const KernelShapes& s = shapes;
    const std::string skinny_kernel =
        skinny_single_load ? "skinny kernel (one load a lane)"
                           : (skinny == KernelVariant::V1 ? "skinny kernel v1" : "skinny kernel");
    const std::string rows = exact ? "at every size (exact mode: F32 inputs)"
                                   : fmt::format("up to {} rows", skinny_rows);
    const std::string split =
        skinny_split_blocks > 0 && skinny_max_split > 1 && skinny == KernelVariant::V2 &&
                !skinny_single_load
            ? fmt::format(
                  " (K in up to {} shares where a product has fewer than {} blocks, "
                  "from {} blocks only at {} rounds or more)",
                  skinny_max_split, skinny_split_blocks, gpu.sms > 0 ? gpu.sms : 132,
                  skinny_split_full_rounds)
            : "";
    if (s.bf16)
        out.push_back(fmt::format("BF16 linears: {}{} {}{}", skinny_kernel, split, rows,
                                  exact ? "" : ", cuBLASLt BF16 GEMM (F32 out) above"));
    const std::string tiles = exact ? "" : ", expanded to BF16 by tiles for cuBLASLt above";
    if (s.fp8_block)
        out.push_back(fmt::format("FP8-block linears: dequantised in registers {}{}", rows, tiles));
    if (s.nvfp4)
        out.push_back(
            fmt::format("NVFP4 linears: dequantised in registers (W4A16) {}{}", rows, tiles));
    if (s.int4)
        out.push_back(
            fmt::format("INT4 linears: dequantised in registers (W4A16) {}{}", rows, tiles));
    if (s.gguf)
        out.push_back(
            "GGUF block-quantised linears: dequantised to BF16 at load (no CUDA kernel reads "
            "ggml blocks; they take the BF16 kernels and their memory)");

    // Routed experts (every format): grouped by expert on the device.
    std::string experts = "routed experts";
    if (s.local_experts > 0 && s.expert_rows > 0)
        experts += fmt::format(" ({} here of {}, {} rows each, top {})", s.local_experts, s.experts,
                               s.expert_rows, s.top_k);
    const std::string mma =
        grouped_mma == KernelVariant::V1
            ? "tensor cores (v1, 64-row tiles)"
            : fmt::format("tensor cores (v2: 16-row tiles up to {} rows an expert, 64 above)",
                          mma_short_tile_rows);
    out.push_back(exact ? experts + ": grouped, skinny kernel at every size (exact mode)"
                        : fmt::format("{}: grouped{}, {} past {} rows an expert or from {} tokens",
                                      experts, moe_sort_fused ? " in one block" : "", mma,
                                      moe_mma_rows, moe_mma_tokens));

    // Attention: the decode kernel by batch size at this rank's heads.
    const char* cache = s.kv_bytes == 1   ? "FP8 e4m3 (dequantised in the kernel)"
                        : s.kv_bytes == 4 ? "F32"
                                          : "BF16";
    // Version 3 reads a BF16 cache of latent widths that are a multiple of 64 up to 512.
    const bool v3_shape =
        s.kv_bytes == 2 && (s.latent == 0 || (s.latent % 64 == 0 && s.latent <= 512));
    std::string decode;
    if (decode_attention == KernelVariant::V2 || !v3_shape) {
        decode = "version 2 (CUDA cores) at every batch";
    } else if (decode_attention == KernelVariant::V3) {
        decode = "version 3 (tensor cores, 16 heads a block) at every batch";
    } else if (s.heads > 0) {
        int64_t from = 1;
        while (!decode_v3(from, s.heads)) ++from;
        decode = from == 1
                     ? fmt::format(
                           "version 3 (tensor cores, 16 heads a block) at every "
                           "batch ({} heads here)",
                           s.heads)
                     : fmt::format(
                           "version 2 (CUDA cores) below batch {}, version 3 "
                           "(tensor cores, 16 heads a block) from it{} ({} heads here)",
                           from,
                           decode_long_context > 0
                               ? fmt::format(" or from {} tokens of context", decode_long_context)
                               : "",
                           s.heads);
    } else {
        decode = fmt::format(
            "version 3 (tensor cores, 16 heads a block) from {} blocks a step, else version 2",
            decode_mma_blocks);
    }
    out.push_back(fmt::format(
        "attention: MLA prefill {}; absorbed decode over the paged latent cache in {}: {}",
        prefill_attention == KernelVariant::V1 ? "(v1: a block per row and head)"
                                               : "(32-row tiles)",
        cache, decode));
    out.push_back("MoE routing: one kernel (sigmoid, bias, group-limited top-k)");
    if (!overrides.empty()) {
        std::string set;
        for (const Field& f : fields())
            if (f.get(*this) != f.get(choose(gpu, shapes)))
                set += (set.empty() ? "" : ", ") + std::string(f.name) + "=" + f.get(*this);
        out.push_back(fmt::format("kernel overrides (MYRIAD_KERNELS={}): {}", overrides,
                                  set.empty() ? "all as the defaults" : set));
    }
    return out;
}

}  // namespace myriad
