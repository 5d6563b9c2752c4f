// ShardLoad: the ranks of one process loading a safetensors checkpoint through one ShardReader
// (format/shard_reader.h). Before a weight is read it asks the Layout, through the loader's own
// sources (model/weights.h), which bytes of which file every rank will copy: dense rows and
// columns, quantised codes and the scale blocks the shard touches, whole experts under expert
// parallelism. Each rank then loads its weights in file order (consumer = its index here), so
// the reader streams every file front to back, once, ahead of all of them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/checkpoint.h"
#include "format/shard_reader.h"
#include "model/model_config.h"
#include "ops/weight.h"
#include "parallel/layout.h"

namespace myriad {

// One weight of a rank's load order, its source (made once, at planning: its scalars are not
// read again from pages the reader may have dropped), and its spans in the reader (consumer's
// indices [first_span, first_span + spans)).
struct LoadStep {
    std::string name;
    WeightSource source;
    size_t first_span = 0, spans = 0;
};

// The memory a source reads of the mapping it points into, as (pointer, bytes): a dense shard's
// rows (first to last byte), a quantised shard's codes and scale blocks; none when synthetic.
std::vector<std::pair<const uint8_t*, size_t>> source_spans(const WeightSource& source);

class ShardLoad {
  public:
    // Whether `checkpoint`'s weights come from mapped safetensors files (not GGUF, not synthetic).
    static bool applies(const Checkpoint& checkpoint);

    // The ranks `ranks` (each its Layout) load in this process; reader().start() starts reading.
    ShardLoad(const ModelConfig& config, const Checkpoint& checkpoint,
              const std::vector<Layout>& ranks, ShardReaderOptions options);

    ShardReader& reader() { return *reader_; }
    const std::vector<LoadStep>& order(int consumer) const {
        return orders_[static_cast<size_t>(consumer)];
    }

  private:
    std::vector<std::vector<LoadStep>> orders_;
    std::unique_ptr<ShardReader> reader_;
};

}  // namespace myriad
