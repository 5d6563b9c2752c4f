// Collectives as kernels over the ranks' registered device buffers: ranks are threads of one
// process, on one GPU or on GPUs with peer access, so every rank's kernel reads the others'
// buffers directly. Nothing waits on the host: each call enqueues one kernel per round on the
// rank's stream, so a decode step with its collectives can be captured in a CUDA graph.
//
// The protocol. A kernel runs kPeerBlocks blocks; block b always handles the same 8-element
// vectors of a message (v = b + kPeerBlocks * k), whatever its size, and keeps its own epoch
// counter in device memory, so a graph replay needs no host-set argument. A round: block b takes
// epoch e = epoch[b] + 1, writes its vectors of this rank's input into the buffer of parity e & 1,
// publishes flag[phase 0][b] = e, and waits until every rank's flag[0][b] has reached e; then it
// reads every rank's vectors in rank order and sums them in F32 (every rank adds the same values
// in the same order: bitwise the same result everywhere). No end barrier: a buffer of parity p is
// written again two rounds later, when this rank's block b has seen every rank's block b start the
// round between — which each began only after finishing its reads of this one (stream order).
// Two-shot adds a phase: each rank sums only its segment, publishes it (flag[1]), and gathers the
// other segments from their owners. A wait longer than the bound stops, writes which rank, round
// and flag it waited for into host-mapped memory, and lets the step end; the communicator turns
// that into an error naming them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace myriad::cuda {

constexpr int kPeerMaxRanks = 16;
constexpr int kPeerBlocks = 32;
constexpr int kPeerPhases = 2;

// Written by a kernel whose wait ran past the bound (the first one only), read by the host.
struct PeerFailure {
    uint32_t failed;    // 0: none
    int32_t rank;       // who waited
    int32_t peer;       // for whose flag
    int32_t phase;      // 0: inputs posted, 1: two-shot sums posted
    uint32_t expected;  // the epoch it waited for
    uint32_t seen;      // the flag's value when it gave up
    int32_t op;         // PeerOp
};

enum PeerOp : int32_t { kPeerAllReduce = 0, kPeerGatherColumns = 1 };

// What a rank's kernels see of the group, passed by value (a captured graph keeps it).
struct PeerView {
    int world = 0;
    int rank = 0;
    uint8_t* data[kPeerMaxRanks] = {};    // each rank's input buffer: 2 parities of `data_bytes`
    float* sums[kPeerMaxRanks] = {};      // each rank's two-shot sums: 2 parities of `sum_floats`
    uint32_t* flags[kPeerMaxRanks] = {};  // each rank's flags: [kPeerPhases][kPeerBlocks]
    uint32_t* epoch = nullptr;            // this rank's [kPeerBlocks] round counters
    size_t data_bytes = 0;
    size_t sum_floats = 0;
    PeerFailure* failure = nullptr;  // device address of the host-mapped record
    uint64_t timeout_ns = 0;
};

enum class PeerAlgo { OneShot, TwoShot };

// Elements of one round of an all-reduce (the rest goes in further rounds).
int64_t peer_round_elems(const PeerView& v, bool bf16_wire);

// out = the sum over ranks of `in` (n floats; out may be in). bf16_wire: each rank's values are
// rounded to BF16 before they cross (half the bytes); the sum is F32 either way.
void peer_all_reduce(const PeerView& v, PeerAlgo algo, const float* in, float* out, int64_t n,
                     bool bf16_wire, cudaStream_t stream);

// The widest row the fused kernel takes (its row lives in shared memory).
constexpr int64_t kPeerFusedMaxWidth = 8192;

// Whether peer_all_reduce_add_rmsnorm takes y [rows, d] with `algo`: whole vectors of 8 per row,
// a row in shared memory, the message in one round (two-shot: h and x in the sums buffer).
bool peer_fuses_add_rmsnorm(const PeerView& v, PeerAlgo algo, int64_t rows, int64_t d,
                            bool bf16_wire);

// The all-reduce of y [rows, d] fused with the residual add and the norm that follow it, in one
// launch: h += the sum over ranks (rank order, F32), then, where w is set, x = w * h /
// sqrt(mean(h^2) + eps) per row (w: d values, BF16 or F32). One-shot: every rank does every row;
// two-shot: each rank a share of the rows, which the others copy. Either gives the bits of
// peer_all_reduce then the ops' add_rmsnorm. y, h and x 16-byte aligned; y is not written.
void peer_all_reduce_add_rmsnorm(const PeerView& v, PeerAlgo algo, const float* y, float* h,
                                 const void* w, bool w_bf16, int64_t rows, int64_t d, float eps,
                                 float* x, bool bf16_wire, cudaStream_t stream);

// out[i][r * cols + j] = rank r's in[i][j]: rows x cols floats from each rank, F32 on the wire.
void peer_gather_columns(const PeerView& v, const float* in, float* out, int64_t rows, int64_t cols,
                         cudaStream_t stream);

// Loads the kernels above into the current device's context now. Under CUDA's lazy module loading
// (the default) a kernel's first launch may wait for every kernel on its device; a rank whose
// kernel waits on another rank's flag on the same GPU would then never be joined. Call it on
// each rank before its first collective.
void peer_load_kernels();

// Each rank's probe array: [world] uint32 in that rank's device memory.
struct PeerProbes {
    uint32_t* slot[kPeerMaxRanks] = {};
};
// Writes `value ^ p` into slot `rank` of rank p's probe array, for every p: proof at start that
// this rank's writes reach each peer (read back by the owner).
void peer_probe(const PeerProbes& probes, int world, int rank, uint32_t value, cudaStream_t stream);

}  // namespace myriad::cuda
