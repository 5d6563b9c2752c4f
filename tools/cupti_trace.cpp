// A kernel timeline for any CUDA program, with no change to it: the CUDA driver loads this
// library when CUDA_INJECTION64_PATH names it and calls InitializeInjection, which asks CUPTI
// for a record of every kernel (also those replayed inside CUDA graphs, and overlapping ones
// under programmatic dependent launch, which Nsight Compute's per-kernel replay serialises).
// At exit the records go to MYRIAD_TRACE_OUT (default cupti_trace.csv) as
//   start_ns,end_ns,graph_id,grid,block,registers,name
// sorted by start; tools/trace_summary.py turns them into per-step critical-path shares.
// A tool for gpu_run.sh (GPU_TRACE), not part of myriad.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Record {
    uint64_t start, end;
    uint32_t graph;
    int32_t grid, block;
    uint16_t regs;
    const std::string* name;  // in g_names
};

std::mutex g_mutex;
std::vector<Record> g_records;
std::unordered_map<std::string, std::string> g_names;  // mangled -> short
size_t g_dropped = 0;

std::string short_name(const char* mangled);

constexpr size_t kBufferBytes = size_t{8} << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* rec = nullptr;
    std::lock_guard<std::mutex> lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        const char* mangled = k->name ? k->name : "?";
        auto it = g_names.find(mangled);
        if (it == g_names.end()) it = g_names.emplace(mangled, short_name(mangled)).first;
        g_records.push_back({k->start, k->end, k->graphId, k->gridX * k->gridY * k->gridZ,
                             k->blockX * k->blockY * k->blockZ, k->registersPerThread,
                             &it->second});
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
        g_dropped += dropped;
    std::free(buffer);
}

}  // namespace

namespace {

// The kernel's name without its parameter list (template arguments kept: they name the variant).
std::string short_name(const char* mangled) {
    int status = 0;
    char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string s = status == 0 && d ? d : mangled;
    std::free(d);
    for (const char* drop : {"(anonymous namespace)::", "myriad::cuda::", "void "}) {
        for (size_t p; (p = s.find(drop)) != std::string::npos;) s.erase(p, std::strlen(drop));
    }
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<') ++depth;
        if (s[i] == '>') --depth;
        if (s[i] == '(' && depth == 0) {
            s.resize(i);
            break;
        }
    }
    std::replace(s.begin(), s.end(), ',', ';');  // one CSV field
    return s.empty() ? std::string(mangled) : s;
}

void write_trace() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(g_mutex);
    const char* path = std::getenv("MYRIAD_TRACE_OUT");
    if (!path || !*path) path = "cupti_trace.csv";
    FILE* f = std::fopen(path, "w");
    if (!f) {
        std::fprintf(stderr, "cupti_trace: cannot write %s\n", path);
        return;
    }
    std::sort(g_records.begin(), g_records.end(),
              [](const Record& a, const Record& b) { return a.start < b.start; });
    std::fprintf(f, "start_ns,end_ns,graph_id,grid,block,registers,name\n");
    for (const Record& r : g_records) {
        std::fprintf(f, "%llu,%llu,%u,%d,%d,%u,%s\n", (unsigned long long)r.start,
                     (unsigned long long)r.end, r.graph, r.grid, r.block, r.regs, r.name->c_str());
    }
    std::fclose(f);
    std::fprintf(stderr, "cupti_trace: %zu kernels (%zu records dropped) in %s\n", g_records.size(),
                 g_dropped, path);
}

}  // namespace

extern "C" int InitializeInjection() {
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        std::fprintf(stderr, "cupti_trace: CUPTI refused the kernel activity\n");
        return 0;
    }
    std::atexit(write_trace);
    return 1;
}
