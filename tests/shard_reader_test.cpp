// The shard reader (format/shard_reader.h) and the ranks loading through it (model/shard_load.h):
// every byte of a file read once however many ranks of the process need it, each rank's bytes
// exactly its shard's (checked against the safetensors headers and the Layout), the weights equal
// bit for bit to the plain load's at TP 1, 2, 4 and under expert parallelism, and the pages
// dropped once every rank has copied them.
#include "format/shard_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>
#include <vector>

#include "format/checkpoint.h"
#include "model/model_config.h"
#include "model/shard_load.h"
#include "model/tensor_layout.h"
#include "model/weights.h"
#include "ops/cpu/cpu_ops.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/mmap_file.h"

namespace myriad {
namespace {

using testing::TempDir;

// The read log sorted, with each read disjoint from the next; returns the bytes read.
uint64_t check_reads_disjoint(std::vector<ByteSpan> log) {
    std::sort(log.begin(), log.end(), [](const ByteSpan& a, const ByteSpan& b) {
        return a.file != b.file ? a.file < b.file : a.begin < b.begin;
    });
    uint64_t bytes = 0;
    for (size_t i = 0; i < log.size(); ++i) {
        bytes += log[i].end - log[i].begin;
        if (i > 0 && log[i].file == log[i - 1].file) {
            EXPECT_GE(log[i].begin, log[i - 1].end)
                << "file " << log[i].file << " byte " << log[i].begin << " read twice";
        }
    }
    return bytes;
}

// Whether [s.begin, s.end) of s.file lies inside the reads.
bool covered(const std::vector<ByteSpan>& log, const ByteSpan& s) {
    uint64_t at = s.begin;
    bool moved = true;
    while (at < s.end && moved) {
        moved = false;
        for (const ByteSpan& r : log)
            if (r.file == s.file && r.begin <= at && at < r.end) {
                at = r.end;
                moved = true;
            }
    }
    return at >= s.end;
}

TEST(ShardReader, ReadsEachByteOnceForOverlappingConsumers) {
    TempDir dir;
    const size_t size = (size_t{1} << 20) + 1234;  // not a whole number of pages
    std::vector<ReadFile> files;
    std::vector<std::unique_ptr<MappedFile>> maps;
    for (int f = 0; f < 2; ++f) {
        std::ofstream out(dir.file("f" + std::to_string(f)), std::ios::binary);
        for (size_t i = 0; i < size; ++i) out.put(static_cast<char>((i * 7 + f) & 0xff));
        out.close();
        maps.push_back(std::make_unique<MappedFile>(dir.file("f" + std::to_string(f))));
        files.push_back({maps.back()->path(), maps.back()->data(), maps.back()->size()});
    }
    // Two consumers that share most bytes, one reading file 1 first, one span at the file's end.
    std::vector<std::vector<ByteSpan>> spans = {
        {{0, 0, 300000}, {0, 300000, 700000}, {1, 10, 20}, {1, size - 5, size}},
        {{1, 0, 500000}, {0, 200000, 900000}, {0, 950000, size}},
    };
    for (bool pread : {false, true}) {
        ShardReaderOptions o;
        o.threads = 3;
        o.chunk_bytes = 64 << 10;
        o.window_bytes = 128 << 10;  // far less than a consumer's reach: the window moves
        o.use_pread = pread;
        ShardReader reader(files, spans, o);
        uint64_t seen = 0;
        std::mutex mu;
        reader.start([&](uint64_t b) {
            std::lock_guard lock(mu);
            seen += b;
        });
        std::vector<std::thread> threads;
        for (int c = 0; c < 2; ++c)
            threads.emplace_back([&, c] {
                for (size_t i = 0; i < spans[c].size(); ++i) {
                    reader.wait(c, i);
                    const ByteSpan& s = spans[c][i];
                    for (uint64_t b = s.begin; b < s.end; b += 4099)
                        ASSERT_EQ(files[s.file].map[b],
                                  static_cast<uint8_t>((b * 7 + s.file) & 0xff));
                    reader.release(c, i);
                }
                reader.finish(c);
            });
        for (auto& t : threads) t.join();
        const ShardReadStats st = reader.stats();
        EXPECT_EQ(check_reads_disjoint(st.read_log), st.bytes_read);
        EXPECT_EQ(st.bytes_read, st.bytes_planned);
        EXPECT_EQ(seen, st.bytes_read);
        for (const auto& list : spans)
            for (const ByteSpan& s : list) EXPECT_TRUE(covered(st.read_log, s)) << s.begin;
        // File 0 is needed up to its end save [900000, 950000) (rounded to pages), file 1 at
        // [0, 500000) and its last page: not every byte of the files was read.
        EXPECT_LT(st.bytes_read, 2 * size);
        // Every span was released: every chunk read was dropped.
        EXPECT_EQ(st.drops, st.reads);
        EXPECT_EQ(st.bytes_dropped, st.bytes_read);
    }
}

TEST(ShardReader, SequentialConsumersDoNotDeadlockOnASmallWindow) {
    TempDir dir;
    {
        std::ofstream out(dir.file("f"), std::ios::binary);
        out << std::string(1 << 20, 'x');
    }
    MappedFile map(dir.file("f"));
    ShardReaderOptions o;
    o.threads = 2;
    o.chunk_bytes = 4096;
    o.window_bytes = 8192;
    // Consumer 1 waits at the start while consumer 0 runs to the end, on one thread.
    ShardReader reader({{map.path(), map.data(), map.size()}},
                       {{{0, 0, 1 << 20}}, {{0, 0, 100}, {0, 500000, 600000}}}, o);
    reader.start();
    reader.wait(0, 0);
    reader.release(0, 0);
    reader.finish(0);
    reader.wait(1, 0);
    reader.wait(1, 1);
    EXPECT_EQ(reader.stats().bytes_read, uint64_t{1} << 20);
    // Consumer 1 keeps its spans (a zero-copy weight): their chunks stay.
    EXPECT_LT(reader.stats().drops, reader.stats().reads);
}

TEST(ShardReader, AMissingFileIsNamed) {
    TempDir dir;
    {
        std::ofstream out(dir.file("f"), std::ios::binary);
        out << "0123456789";
    }
    MappedFile map(dir.file("f"));
    std::vector<ReadFile> files = {{dir.file("gone.safetensors"), map.data(), map.size()}};
    try {
        ShardReader reader(files, {{{0, 0, 10}}}, {});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::BadInput);
        EXPECT_NE(std::string(e.what()).find("gone.safetensors"), std::string::npos) << e.what();
    }
}

// ---- the ranks of a process loading golden checkpoints through one reader ----

std::vector<const Weight*> all_weights(const ModelWeights& m) {
    std::vector<const Weight*> out = {&m.embed, &m.final_norm, &m.lm_head};
    auto mlp = [&](const MlpWeights& w) { out.insert(out.end(), {&w.gate, &w.up, &w.down}); };
    for (const LayerWeights& l : m.layers) {
        const AttentionWeights& a = l.attn;
        out.insert(out.end(),
                   {&l.input_norm, &l.post_attention_norm, &a.q_a, &a.q_a_norm, &a.q_b, &a.q,
                    &a.kv_a, &a.kv_a_norm, &a.kv_b, &a.o, &l.router, &l.router_bias});
        mlp(l.dense);
        mlp(l.shared);
        for (const MlpWeights& e : l.experts) mlp(e);
    }
    return out;
}

void expect_same_weights(const ModelWeights& a, const ModelWeights& b, const std::string& what) {
    const auto wa = all_weights(a), wb = all_weights(b);
    ASSERT_EQ(wa.size(), wb.size()) << what;
    EXPECT_EQ(a.bytes, b.bytes) << what;
    for (size_t i = 0; i < wa.size(); ++i) {
        const Weight &x = *wa[i], &y = *wb[i];
        ASSERT_EQ(x.format, y.format) << what << " weight " << i;
        ASSERT_EQ(x.rows, y.rows) << what << " weight " << i;
        ASSERT_EQ(x.cols, y.cols) << what << " weight " << i;
        if (x.format == WeightFormat::Dense) {
            ASSERT_EQ(x.data.data == nullptr, y.data.data == nullptr) << what << " weight " << i;
            if (x.data.data == nullptr) continue;  // not held (another rank's expert, unused)
            ASSERT_EQ(x.data.nbytes(), y.data.nbytes()) << what << " weight " << i;
            EXPECT_EQ(std::memcmp(x.data.data, y.data.data, x.data.nbytes()), 0)
                << what << " weight " << i << " differs";
        } else {  // zero copy on the CPU: the same window of the same mapping
            EXPECT_EQ(x.quant.codes, y.quant.codes) << what << " weight " << i;
            EXPECT_EQ(x.quant.scales, y.quant.scales) << what << " weight " << i;
            EXPECT_EQ(x.quant.row_offset, y.quant.row_offset) << what << " weight " << i;
            EXPECT_EQ(x.quant.col_offset, y.quant.col_offset) << what << " weight " << i;
        }
    }
}

struct Case {
    std::string dir;
    int tp;
    bool ep;
};

// The routed expert a tensor name belongs to, or -1.
int64_t expert_of(const std::string& name) {
    static const std::regex re(R"(\.experts\.(\d+)\.)");
    std::smatch m;
    return std::regex_search(name, m, re) ? std::stoll(m[1]) : -1;
}

void check_case(const Case& k) {
    const std::string what = k.dir + " tp " + std::to_string(k.tp) + (k.ep ? "+EP" : "");
    SCOPED_TRACE(what);
    const ModelConfig config = load_model_config(k.dir);
    const Checkpoint ckpt = Checkpoint::open(k.dir);
    ASSERT_TRUE(ShardLoad::applies(ckpt));
    std::vector<Layout> layouts;
    for (int r = 0; r < k.tp; ++r) layouts.emplace_back(k.tp, k.ep, r);
    validate_checkpoint(config, ckpt, layouts[0]);

    // The plain load of every rank, straight from the mapping.
    std::vector<std::unique_ptr<CpuOps>> plain_ops;
    std::vector<ModelWeights> plain;
    for (const Layout& l : layouts) {
        plain_ops.push_back(std::make_unique<CpuOps>(1));
        plain.push_back(load_weights(config, ckpt, *plain_ops.back(), l));
    }

    ShardReaderOptions o;
    o.threads = 3;
    o.chunk_bytes = 64 << 10;  // many chunks even for these small files
    o.window_bytes = 256 << 10;
    ShardLoad load(config, ckpt, layouts, o);
    ShardReader& reader = load.reader();
    reader.start();
    std::vector<std::unique_ptr<CpuOps>> fed_ops(layouts.size());
    std::vector<ModelWeights> fed(layouts.size());
    std::vector<std::thread> ranks;
    for (int r = 0; r < k.tp; ++r)
        ranks.emplace_back([&, r] {
            fed_ops[r] = std::make_unique<CpuOps>(1);
            fed[r] = load_weights(config, ckpt, *fed_ops[r], layouts[r], WeightFeed{&load, r});
        });
    for (auto& t : ranks) t.join();
    for (int r = 0; r < k.tp; ++r)
        expect_same_weights(plain[r], fed[r], "rank " + std::to_string(r));

    const ShardReadStats st = reader.stats();
    // Each file's bytes read once, all ranks together.
    EXPECT_EQ(check_reads_disjoint(st.read_log), st.bytes_read);
    EXPECT_EQ(st.bytes_read, st.bytes_planned);
    for (int r = 0; r < k.tp; ++r)
        for (const ByteSpan& s : reader.spans(r)) EXPECT_TRUE(covered(st.read_log, s));

    // Against the headers: every tensor the model reads (its scalars aside, read at planning) is
    // covered by the ranks' spans; under expert parallelism a rank touches only its experts.
    std::vector<ByteSpan> all;
    for (int r = 0; r < k.tp; ++r)
        for (const ByteSpan& s : reader.spans(r)) all.push_back(s);
    int64_t tensors = 0;
    for (size_t f = 0; f < ckpt.files().size(); ++f) {
        const SafetensorsFile& file = *ckpt.files()[f];
        for (const TensorInfo& t : file.tensors()) {
            std::string n = t.name;
            if (n.starts_with("language_model.")) n = n.substr(15);
            if (t.numel() <= 2 || is_ignored_tensor(config, n)) continue;  // scalars, shapes
            ++tensors;
            const auto at = static_cast<uint64_t>(file.view(t).data - file.map_data());
            const ByteSpan whole{static_cast<int>(f), at, at + (t.end - t.begin)};
            // `all` as a log of reads: the ranks' spans cover the tensor.
            EXPECT_TRUE(covered(all, whole)) << t.name << " not wholly read by the ranks";
            const int64_t e = expert_of(t.name);
            if (!k.ep || e < 0) continue;
            for (int r = 0; r < k.tp; ++r) {
                bool touches = false;
                for (const ByteSpan& s : reader.spans(r))
                    touches |= s.file == whole.file && s.begin < whole.end && whole.begin < s.end;
                EXPECT_EQ(touches, layouts[r].holds_expert(e, config.n_routed_experts))
                    << t.name << " rank " << r;
            }
        }
    }
    EXPECT_GT(tensors, 10);
    // The pages of copied weights were dropped; those the CPU keeps reading (quantised) stay.
    EXPECT_GT(st.drops, 0);
    bool any_quant = false;
    for (const Weight* w : all_weights(fed[0])) any_quant |= w->format != WeightFormat::Dense;
    if (any_quant) {
        EXPECT_LT(st.drops, st.reads);
    } else {
        EXPECT_EQ(st.drops, st.reads);
    }
}

TEST(ShardLoad, BitForBitWithThePlainLoad) {
    const std::string g = std::string(MYRIAD_GOLDENS_ROOT);
    const std::vector<Case> cases = {
        {g + "/goldens/tp8_bf16", 1, false},
        {g + "/goldens/tp8_bf16", 2, false},
        {g + "/goldens/tp8_bf16", 4, false},
        {g + "/goldens/tp8_bf16", 4, true},
        {g + "/goldens/kimi_k2", 1, false},
        {g + "/goldens/kimi_k2", 2, true},
        {g + "/goldens_quant/tp8_nvfp4", 2, false},
        {g + "/goldens_quant/tp8_nvfp4", 4, true},
        {g + "/goldens_quant/tp8_fp8_block", 4, false},
        {g + "/goldens_quant/tp8_int4", 2, false},
    };
    for (const Case& k : cases) check_case(k);
}

}  // namespace
}  // namespace myriad
