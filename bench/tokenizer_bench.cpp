// Encode throughput of one tokenizer on one thread: every document of a JSON-lines corpus,
// several rounds, the best round reported as MB/s (bytes of UTF-8 in per second of this
// thread's CPU time, so that other work on the machine does not count).
// Usage: tokenizer_bench TOKENIZER_DIR CORPUS.jsonl [ROUNDS]   (bench/tokenizer_bench.py runs it)
#include <time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

static double thread_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER_DIR CORPUS.jsonl [ROUNDS]\n");
        return 2;
    }
    try {
        auto t0 = std::chrono::steady_clock::now();
        auto tok = myriad::Tokenizer::load(argv[1]);
        double load_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::vector<std::string> docs;
        size_t bytes = 0;
        std::ifstream in(argv[2]);
        for (std::string line; std::getline(in, line);) {
            docs.push_back(nlohmann::json::parse(line).get<std::string>());
            bytes += docs.back().size();
        }
        int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
        double best = 1e30, first = 0;
        size_t tokens = 0;
        for (int r = 0; r < rounds; ++r) {
            tokens = 0;
            double start = thread_seconds();
            for (const auto& d : docs) tokens += tok->encode(d).size();
            double s = thread_seconds() - start;
            if (r == 0) first = s;
            best = std::min(best, s);
        }
        std::printf(
            "{\"bytes\": %zu, \"tokens\": %zu, \"load_s\": %.3f, \"first_s\": %.4f, "
            "\"best_s\": %.4f, \"mb_per_s\": %.2f, \"first_mb_per_s\": %.2f}\n",
            bytes, tokens, load_s, first, best, bytes / best / 1e6, bytes / first / 1e6);
    } catch (const myriad::Error& e) {
        std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
        return e.exit_status();
    }
    return 0;
}
