#include "model/shard_load.h"

#include <algorithm>

#include "model/weights.h"
#include "util/error.h"

namespace myriad {

std::vector<std::pair<const uint8_t*, size_t>> source_spans(const WeightSource& s) {
    std::vector<std::pair<const uint8_t*, size_t>> out;
    if (s.synthetic.seed != 0 || s.row_end <= s.row_begin || s.col_end <= s.col_begin) return out;
    auto add = [&](const void* base, int64_t begin, int64_t end) {
        if (base != nullptr && end > begin)
            out.emplace_back(static_cast<const uint8_t*>(base) + begin,
                             static_cast<size_t>(end - begin));
    };
    if (s.format == WeightFormat::Dense) {
        const auto es = static_cast<int64_t>(dtype_size(s.dtype));
        add(s.data, (s.row_begin * s.src_cols + s.col_begin) * es,
            ((s.row_end - 1) * s.src_cols + s.col_end) * es);
        return out;
    }
    const QuantizedData& q = s.quant;
    // Codes: a row of src_cols inputs is code_row_bytes (whole bytes at block-aligned cuts).
    const int64_t cb0 = s.col_begin * q.code_row_bytes / s.src_cols;
    const int64_t cb1 = (s.col_end * q.code_row_bytes + s.src_cols - 1) / s.src_cols;
    add(q.codes, s.row_begin * q.code_row_bytes + cb0, (s.row_end - 1) * q.code_row_bytes + cb1);
    if (s.format == WeightFormat::GgufBlock) return out;  // scales inside the blocks
    const int64_t sr0 = s.row_begin / q.block_rows, sr1 = (s.row_end - 1) / q.block_rows + 1;
    const int64_t sc0 = s.col_begin / q.block_cols, sc1 = (s.col_end - 1) / q.block_cols + 1;
    const auto es = static_cast<int64_t>(dtype_size(q.scale_dtype));
    add(q.scales, (sr0 * q.scale_row_stride + sc0) * es,
        ((sr1 - 1) * q.scale_row_stride + sc1) * es);
    return out;
}

bool ShardLoad::applies(const Checkpoint& ckpt) {
    return ckpt.synthetic_seed() == 0 && ckpt.gguf() == nullptr && !ckpt.files().empty();
}

ShardLoad::ShardLoad(const ModelConfig& config, const Checkpoint& ckpt,
                     const std::vector<Layout>& ranks, ShardReaderOptions options) {
    MYRIAD_CHECK(applies(ckpt), "ShardLoad on a checkpoint without mapped safetensors files");
    std::vector<ReadFile> files;
    // The mappings by address, to find the file and offset of each span.
    std::vector<std::pair<const uint8_t*, int>> bases;
    for (const auto& f : ckpt.files()) {
        bases.emplace_back(f->map_data(), static_cast<int>(files.size()));
        files.push_back({f->path(), f->map_data(), f->map_size()});
    }
    std::sort(bases.begin(), bases.end());
    auto locate = [&](const std::string& name, const uint8_t* p, size_t n) {
        auto it = std::upper_bound(
            bases.begin(), bases.end(), p,
            [](const uint8_t* v, const std::pair<const uint8_t*, int>& b) { return v < b.first; });
        MYRIAD_CHECK(it != bases.begin(), "{}: its bytes are in no file of {}", name, ckpt.path());
        --it;
        const ReadFile& f = files[static_cast<size_t>(it->second)];
        const auto off = static_cast<uint64_t>(p - f.map);
        MYRIAD_CHECK(off + n <= f.size, "{}: its bytes run past the end of {}", name, f.path);
        return ByteSpan{it->second, off, off + n};
    };
    std::vector<std::vector<ByteSpan>> spans(ranks.size());
    orders_.resize(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r) {
        struct Entry {
            std::string name;
            WeightSource source;
            std::vector<ByteSpan> spans;
        };
        std::vector<Entry> entries;
        for (PlannedWeight& w : planned_weights(config, ckpt, ranks[r])) {
            Entry e{std::move(w.name), w.source, {}};
            for (const auto& [p, n] : source_spans(w.source))
                e.spans.push_back(locate(e.name, p, n));
            entries.push_back(std::move(e));
        }
        // File order: the reader streams each file front to back, and every rank follows it.
        auto key = [](const Entry& e) {
            return e.spans.empty() ? std::make_pair(-1, uint64_t{0})
                                   : std::make_pair(e.spans[0].file, e.spans[0].begin);
        };
        std::stable_sort(entries.begin(), entries.end(),
                         [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
        for (Entry& e : entries) {
            orders_[r].push_back({e.name, e.source, spans[r].size(), e.spans.size()});
            for (const ByteSpan& s : e.spans) spans[r].push_back(s);
        }
    }
    reader_ = std::make_unique<ShardReader>(std::move(files), std::move(spans), std::move(options));
}

}  // namespace myriad
