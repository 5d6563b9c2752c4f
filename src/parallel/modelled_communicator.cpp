#include "parallel/modelled_communicator.h"

#include <chrono>
#include <cstring>

#include "util/error.h"

namespace myriad {

ModelledCommunicator::ModelledCommunicator(int world, int rank, double wait_us)
    : world_(world), rank_(rank), wait_us_(wait_us) {
    MYRIAD_CHECK(world > 1 && rank >= 0 && rank < world, "a modelled rank {} of {}", rank, world);
    if (wait_us < 0) bad_input("--collective-us {} must not be negative", wait_us);
}

void ModelledCommunicator::all_reduce_sum(Tensor) {
    ++all_reduces_;
    wait();
}

void ModelledCommunicator::all_gather(Tensor in, Tensor out) {
    count_gathered(out);
    MYRIAD_CHECK(out.nbytes() == in.nbytes() * static_cast<size_t>(world_),
                 "all_gather: output holds {} bytes, need {}", out.nbytes(),
                 in.nbytes() * static_cast<size_t>(world_));
    ++gathers_;
    place(in, out, false);
    wait();
}

void ModelledCommunicator::all_gather_columns(Tensor in, Tensor out) {
    count_gathered(out);
    MYRIAD_CHECK(in.ndim == 2 && out.ndim == 2 && out.dim(0) == in.dim(0) &&
                     out.dim(1) == in.dim(1) * world_,
                 "all_gather_columns: [{}, {}] from {} ranks of [{}, {}]", out.dim(0), out.dim(1),
                 world_, in.dim(0), in.dim(1));
    ++gathers_;
    place(in, out, true);
    wait();
}

void ModelledCommunicator::wait() {
    if (wait_us_ <= 0) return;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::nanoseconds(static_cast<int64_t>(wait_us_ * 1e3));
    while (std::chrono::steady_clock::now() < until) {
    }
}

void ModelledCommunicator::place(Tensor in, Tensor out, bool columns) {
    auto* dst = static_cast<char*>(out.data);
    const auto* src = static_cast<const char*>(in.data);
    if (!columns) {
        std::memcpy(dst + in.nbytes() * static_cast<size_t>(rank_), src, in.nbytes());
        return;
    }
    const size_t row = in.nbytes() / static_cast<size_t>(in.dim(0));
    for (int64_t r = 0; r < in.dim(0); ++r)
        std::memcpy(dst + (static_cast<size_t>(r) * static_cast<size_t>(world_) +
                           static_cast<size_t>(rank_)) *
                              row,
                    src + static_cast<size_t>(r) * row, row);
}

}  // namespace myriad
