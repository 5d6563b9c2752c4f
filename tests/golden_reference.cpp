#include "golden_reference.h"

#include <cstring>

#include "format/safetensors.h"

namespace myriad::testing {

const char* const kGoldenModels[6] = {
    "v3_grouped_yarn",     "moonlight_plain", "yarn_params_mscale",
    "v2lite_yarn_noqlora", "kimi_k2",         "kimi_k25"};

std::string golden_dir(const std::string& name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens/" + name;
}

GoldenReference load_golden_reference(const std::string& name) {
    return load_reference_in(golden_dir(name));
}

namespace {

std::vector<int32_t> read_ints(const SafetensorsFile& f, const std::string& key) {
    TensorView v = f.view(*f.find(key));
    std::vector<int32_t> out(v.nbytes() / 8);
    for (size_t i = 0; i < out.size(); ++i) {
        int64_t x;
        std::memcpy(&x, v.data + 8 * i, 8);
        out[i] = static_cast<int32_t>(x);
    }
    return out;
}

std::vector<float> read_floats(const SafetensorsFile& f, const std::string& key) {
    TensorView v = f.view(*f.find(key));
    std::vector<float> out(v.nbytes() / 4);
    std::memcpy(out.data(), v.data, v.nbytes());
    return out;
}

}  // namespace

std::string mtp_golden_dir() {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_mtp/v3_mtp";
}

MtpReference load_mtp_reference() {
    SafetensorsFile f(mtp_golden_dir() + "/reference.safetensors");
    MtpReference r;
    r.prompt = read_ints(f, "prompt_ids");
    r.g0 = read_ints(f, "g0").at(0);
    r.chain = read_ints(f, "chain_ids");
    r.hidden = read_floats(f, "hidden");
    r.logits = read_floats(f, "mtp_logits");
    r.chain_logits = read_floats(f, "chain_logits");
    return r;
}

std::string eagle3_golden_dir(const std::string& name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_eagle3/" + name;
}

Eagle3Reference load_eagle3_reference(const std::string& name) {
    SafetensorsFile f(eagle3_golden_dir(name) + "/reference.safetensors");
    Eagle3Reference r;
    r.prompt = read_ints(f, "prompt_ids");
    r.g0 = read_ints(f, "g0").at(0);
    r.chain = read_ints(f, "chain_ids");
    r.aux = read_floats(f, "aux_hidden");
    r.logits = read_floats(f, "logits");
    r.chain_logits = read_floats(f, "chain_logits");
    return r;
}

GoldenReference load_reference_in(const std::string& dir) {
    SafetensorsFile f(dir + "/reference.safetensors");
    GoldenReference r;
    auto ints = [&](const std::string& key) {
        TensorView v = f.view(*f.find(key));
        std::vector<int32_t> out(v.nbytes() / 8);
        for (size_t i = 0; i < out.size(); ++i) {
            int64_t x;
            std::memcpy(&x, v.data + 8 * i, 8);
            out[i] = static_cast<int32_t>(x);
        }
        return out;
    };
    auto floats = [&](const std::string& key, int64_t* vocab) {
        TensorView v = f.view(*f.find(key));
        if (vocab) *vocab = v.shape().back();
        std::vector<float> out(v.nbytes() / 4);
        std::memcpy(out.data(), v.data, v.nbytes());
        return out;
    };
    for (int i = 0; i < 2; ++i) {
        const std::string k = "p" + std::to_string(i) + ".";
        r.p[i].ids = ints(k + "prompt_ids");
        r.p[i].generated = ints(k + "generated_ids");
        r.p[i].prefill = floats(k + "prefill_logits", &r.vocab);
        r.p[i].decode = floats(k + "decode_logits", nullptr);
    }
    return r;
}

}  // namespace myriad::testing
