// The ranks' meeting point: a rank that never comes, or one that failed, makes the others throw
// naming themselves and the collective instead of waiting forever; reset makes it usable again.
#include "parallel/rank_barrier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "parallel/cpu_communicator.h"
#include "util/error.h"

namespace myriad {
namespace {

TEST(RankBarrier, AllArriveAndPass) {
    RankBarrier b(3, std::chrono::seconds(60));
    std::thread t1([&] { b.arrive_and_wait(1, "x"); });
    std::thread t2([&] { b.arrive_and_wait(2, "x"); });
    b.arrive_and_wait(0, "x");
    t1.join();
    t2.join();
}

TEST(RankBarrier, AMissingRankFailsAfterTheBoundNamingRankAndOp) {
    RankBarrier b(2, std::chrono::milliseconds(200));
    const auto start = std::chrono::steady_clock::now();
    try {
        b.arrive_and_wait(1, "all_reduce_sum");
        FAIL() << "passed without rank 0";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("rank 1"), std::string::npos) << m;
        EXPECT_NE(m.find("all_reduce_sum"), std::string::npos) << m;
        EXPECT_NE(m.find("MYRIAD_COLLECTIVE_TIMEOUT"), std::string::npos) << m;
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
    // Later arrivals fail at once until reset; then the barrier works again.
    EXPECT_THROW(b.arrive_and_wait(0, "all_gather"), Error);
    b.reset();
    std::thread t([&] { b.arrive_and_wait(1, "barrier"); });
    b.arrive_and_wait(0, "barrier");
    t.join();
}

TEST(RankBarrier, AbortWakesTheWaitingRanks) {
    RankBarrier b(3, std::chrono::seconds(600));
    std::string seen;
    std::thread t([&] {
        try {
            b.arrive_and_wait(2, "all_gather");
        } catch (const Error& e) {
            seen = e.what();
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.abort("rank 0 failed: token id 999 is outside the vocabulary");
    t.join();
    EXPECT_NE(seen.find("rank 2: all_gather abandoned: rank 0 failed"), std::string::npos) << seen;
}

// The CPU communicator's collectives go through it.
TEST(RankBarrier, CpuAllReduceWithAMissingRankFails) {
    setenv("MYRIAD_COLLECTIVE_TIMEOUT", "0.2", 1);
    auto group = std::make_shared<CpuCommGroup>(2);
    unsetenv("MYRIAD_COLLECTIVE_TIMEOUT");
    CpuCommunicator c(group, 0);
    float v[4] = {1, 2, 3, 4};
    try {
        c.all_reduce_sum(Tensor(v, DType::F32, {4}));
        FAIL() << "reduced without rank 1";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 0 waited over 0.2 s in all_reduce_sum"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace myriad
