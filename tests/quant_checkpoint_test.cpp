// Quantised checkpoints users get wrong, through the myriad executable: scales of the wrong dtype
// or shape, missing scales, configs that disagree with the files, malformed quantisation configs,
// and tensor-parallel splits off the format's blocks. Each ends with exit status 2 and one message
// naming the file, the tensor or field, and what was expected. Also `myriad inspect`'s formats.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "format/safetensors.h"
#include "format/safetensors_writer.h"
#include "model/linear_format.h"
#include "run_myriad.h"
#include "temp_dir.h"
#include "util/error.h"

namespace myriad::testing {
namespace {

namespace fs = std::filesystem;

Result myriad(const std::string& args) {
    return run_myriad(args);
}

std::string golden(const std::string& name) {
    return std::string(MYRIAD_GOLDENS_ROOT) + "/goldens_quant/" + name;
}

// A copy of golden `name` in `dir` whose model.safetensors went through `edit`.
void copy_with(const std::string& name, const TempDir& dir,
               const std::function<void(std::vector<TensorToWrite>&)>& edit) {
    for (const auto& e : fs::directory_iterator(golden(name)))
        if (e.path().filename() != "model.safetensors")
            fs::copy_file(e.path(), dir.file(e.path().filename().string()));
    SafetensorsFile f(golden(name) + "/model.safetensors");
    std::vector<TensorToWrite> tensors;
    for (const TensorInfo& info : f.tensors()) {
        TensorView v = f.view(info);
        tensors.push_back(
            {info.name, info.dtype, info.shape, std::vector<uint8_t>(v.data, v.data + v.nbytes())});
    }
    edit(tensors);
    write_safetensors(dir.file("model.safetensors"), tensors, {{"format", "pt"}});
}

TensorToWrite& find(std::vector<TensorToWrite>& ts, const std::string& name) {
    for (auto& t : ts)
        if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
}

void expect_bad(const std::string& dir, const std::vector<std::string>& parts) {
    Result r = myriad("inspect " + dir);
    EXPECT_EQ(r.status, 2) << r.err;
    for (const auto& p : parts)
        EXPECT_NE(r.err.find(p), std::string::npos) << r.err << "\nwant: " << p;
}

const std::string kExpert = "model.layers.1.mlp.experts.0.";

TEST(QuantCheckpoint, Nvfp4ScaleOfTheWrongDtype) {
    TempDir dir;
    copy_with("nvfp4_experts", dir, [](auto& ts) {
        TensorToWrite& t = find(ts, kExpert + "gate_proj.weight_scale");
        t.dtype = DType::U8;
    });
    expect_bad(dir.path(), {dir.file("model.safetensors"), kExpert + "gate_proj.weight_scale",
                            "has dtype U8, expected F8_E4M3", "nvfp4 weights, as",
                            "hf_quant_config.json says"});
}

TEST(QuantCheckpoint, Nvfp4ScaleOfTheWrongShape) {
    TempDir dir;
    copy_with("nvfp4_experts", dir, [](auto& ts) {
        TensorToWrite& t = find(ts, kExpert + "down_proj.weight_scale");  // [288, 12]
        t.shape = {288, 6};
        t.bytes.resize(288 * 6);
    });
    expect_bad(dir.path(),
               {kExpert + "down_proj.weight_scale", "has shape [288, 6]", "expected [288, 12]"});
}

TEST(QuantCheckpoint, Nvfp4GlobalScaleMissingOrNotAScalar) {
    TempDir a, b, c;
    copy_with("nvfp4_experts", a, [](auto& ts) {
        std::erase_if(ts,
                      [](const auto& t) { return t.name == kExpert + "up_proj.weight_scale_2"; });
    });
    expect_bad(a.path(), {kExpert + "up_proj.weight_scale_2 is missing"});
    copy_with("nvfp4_experts", b, [](auto& ts) {
        TensorToWrite& t = find(ts, kExpert + "up_proj.weight_scale_2");
        t.shape = {2};
        t.bytes.resize(8);
    });
    expect_bad(b.path(), {kExpert + "up_proj.weight_scale_2 has shape [2], expected a scalar"});
    copy_with("nvfp4_experts", c, [](auto& ts) {
        const float neg = -1.0f;
        std::memcpy(find(ts, kExpert + "up_proj.weight_scale_2").bytes.data(), &neg, 4);
    });
    expect_bad(c.path(), {kExpert + "up_proj.weight_scale_2 is -1, expected a positive"});
}

TEST(QuantCheckpoint, Fp8ScaleInvOfTheWrongShapeAndWeightOfTheWrongDtype) {
    TempDir a, b;
    copy_with("fp8_block", a, [](auto& ts) {
        TensorToWrite& t = find(ts, "model.layers.0.mlp.up_proj.weight_scale_inv");  // [2, 3]
        t.shape = {2, 2};
        t.bytes.resize(16);
    });
    expect_bad(a.path(), {"model.layers.0.mlp.up_proj.weight_scale_inv", "has shape [2, 2]",
                          "expected [2, 3]", "fp8-block weights, as", "config.json says"});
    copy_with("fp8_block", b, [](auto& ts) {
        find(ts, "model.layers.1.self_attn.o_proj.weight").dtype = DType::U8;
    });
    expect_bad(b.path(), {"model.layers.1.self_attn.o_proj.weight has dtype U8, expected F8_E4M3"});
}

TEST(QuantCheckpoint, Int4ShapeRecordAndScales) {
    TempDir a, b;
    copy_with("int4_kimi", a, [](auto& ts) {
        const int32_t wrong[2] = {288, 64};
        std::memcpy(find(ts, kExpert + "down_proj.weight_shape").bytes.data(), wrong, 8);
    });
    expect_bad(a.path(), {kExpert + "down_proj.weight_shape holds [288, 64], expected [288, 128]"});
    copy_with("int4_kimi", b, [](auto& ts) {
        TensorToWrite& t = find(ts, kExpert + "gate_proj.weight_scale");
        t.dtype = DType::I16;
    });
    expect_bad(b.path(), {kExpert + "gate_proj.weight_scale has dtype I16",
                          "expected one of BF16, F16, F32", "int4-group weights"});
}

TEST(QuantCheckpoint, ConfigThatDisagreesWithTheFiles) {
    // An empty exclude list asks for NVFP4 attention, but the files hold BF16 there.
    TempDir dir;
    copy_with("nvfp4_experts", dir, [](auto&) {});
    std::ofstream(dir.file("hf_quant_config.json"))
        << R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4",
              "kv_cache_quant_algo": null, "group_size": 16, "exclude_modules": ["lm_head"]}})";
    expect_bad(dir.path(), {"model.layers.0.self_attn.", "has dtype BF16, expected U8",
                            "hf_quant_config.json says"});
}

TEST(QuantCheckpoint, MalformedQuantisationConfigs) {
    TempDir a, b;
    copy_with("nvfp4_experts", a, [](auto&) {});
    std::ofstream(a.file("hf_quant_config.json"))
        << R"({"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": null,
              "group_size": 32, "exclude_modules": []}})";
    expect_bad(a.path(), {a.file("hf_quant_config.json"), "field quantization.group_size is 32"});
    copy_with("fp8_block", b, [](auto&) {});
    std::string cfg = slurp(b.file("config.json"));
    cfg.replace(cfg.find("\"e4m3\""), 6, "\"e5m2\"");
    std::ofstream(b.file("config.json")) << cfg;
    expect_bad(b.path(), {b.file("config.json"), "field quantization_config.fmt is \"e5m2\""});
}

TEST(QuantCheckpoint, TensorParallelSplitsOffTheBlocksNameTheTensorAndTp) {
    ModelConfig c = load_model_config(golden("nvfp4_experts"));
    ExpectedTensor down{kExpert + "down_proj.weight", {288, 192}, ShardKind::Cols};
    check_quantized_sharding(c, down, WeightFormat::Nvfp4, Layout(4, false), "");  // 3 x 16
    try {
        check_quantized_sharding(c, down, WeightFormat::Nvfp4, Layout(8, false), "");  // 24 cols
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.exit_status(), 2);
        const std::string m = e.what();
        EXPECT_NE(m.find(kExpert + "down_proj.weight: --tp 8 gives each rank 24 of its 192"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("values that keep whole blocks for it: 1, 2, 4"), std::string::npos) << m;
    }
    ModelConfig i = load_model_config(golden("int4_kimi"));
    ExpectedTensor down4{kExpert + "down_proj.weight", {288, 128}, ShardKind::Cols};
    EXPECT_THROW(check_quantized_sharding(i, down4, WeightFormat::Int4Group, Layout(8, false), ""),
                 Error);
    ExpectedTensor rows{kExpert + "gate_proj.weight", {128, 288}, ShardKind::Rows};
    check_quantized_sharding(i, rows, WeightFormat::Int4Group, Layout(8, false), "");  // rows
    // Whole experts under expert parallelism: nothing is cut.
    down4.expert = 0;
    check_quantized_sharding(i, down4, WeightFormat::Int4Group, Layout(8, true), "");
}

TEST(QuantCheckpoint, InspectShowsFormatsAndBytesPerRank) {
    Result r = myriad("inspect " + golden("nvfp4_experts") + " --tp 2");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("quantised    ModelOpt NVFP4, from"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nvfp4 12"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("per rank at tp 2:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("model.layers.*.mlp.experts.*.gate_proj.weight"), std::string::npos)
        << r.out;
    Result f = myriad("inspect " + golden("nvfp4_all_linear"));
    EXPECT_NE(f.out.find("auto stores FP8 e4m3"), std::string::npos) << f.out;
}

TEST(QuantCheckpoint, GenerateRunsEveryFormatWithEachKvCacheDtype) {
    for (const char* m : {"nvfp4_experts", "fp8_block", "int4_kimi"}) {
        Result r = myriad(std::string("--quiet generate ") + golden(m) +
                          " --prompt-ids 1,2,3 --max-tokens 4 --temperature 0 --ids --tp 2");
        EXPECT_EQ(r.status, 0) << m << r.err;
    }
    for (const char* kv : {"bf16", "fp8", "auto"}) {
        Result r = myriad(std::string("--quiet generate ") + golden("nvfp4_all_linear") +
                          " --prompt-ids 1,2,3 --max-tokens 4 --temperature 0 --ids "
                          "--kv-cache-dtype " +
                          kv);
        EXPECT_EQ(r.status, 0) << kv << r.err;
    }
    Result bad =
        myriad("generate " + golden("fp8_block") + " --prompt-ids 1,2 --kv-cache-dtype int8");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--kv-cache-dtype int8"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace myriad::testing
