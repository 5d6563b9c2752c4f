// bench-model --dataset: the code-editing workload (bench/data/code_edit.jsonl, made by
// tools/make_code_edit_dataset.py) through the engine, with and without ngram speculation, at
// each concurrency: accepted tokens per step and tok/s per sequence. A model with random weights
// is forced through the dataset's answers (it would never copy its prompt), so the drafts meet
// real edits; a trained model generates greedily.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/worker_group.h"
#include "ops/step_input.h"

namespace myriad::cli {

struct CodeEditRecord {
    std::string id;
    std::vector<TokenId> prompt, answer;
};

// The records' token ids of tokenizer `tokens` (a key of each record's "tokens"); bad input names
// the file, the line and the field, or an id outside `vocab`.
std::vector<CodeEditRecord> load_code_edit_dataset(const std::string& file,
                                                   const std::string& tokens, int64_t vocab);

struct DatasetBenchOptions {
    std::vector<int64_t> concurrencies;  // requests in flight at most, one run each
    int64_t spec_len = 3;                // ngram's longest draft
    bool force = false;                  // force the dataset's answers (random weights)
    bool json = false;
};

// Runs every record at each concurrency without and with speculation, prints the table (unless
// json) and returns the figures. Forced runs must reproduce the answers, and greedy runs with
// drafts the tokens of the runs without (on the CPU exactly; a GPU run reports how many differ,
// since a near-tie may flip between kernels, and how many of those differ first where the run
// without had a top-2 margin below 1e-3, from another run without, with logprobs).
nlohmann::ordered_json run_dataset_bench(WorkerGroup& workers,
                                         const std::vector<CodeEditRecord>& records,
                                         const DatasetBenchOptions& options);

}  // namespace myriad::cli
