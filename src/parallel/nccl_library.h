// NCCL, loaded with dlopen: myriad never links libnccl, so a CUDA build starts (and serves on one
// GPU, or through device buffers) where NCCL is missing. The ABI subset used is declared here, so
// the build needs no nccl.h either (tests/gpu/nccl_test.cpp checks it against nccl.h).
//
// Search order: $MYRIAD_NCCL_LIBRARY alone when set (a path); else libnccl.so.2 from the loader
// path, then the CUDA library folder ($CUDA_HOME, /usr/local/cuda: lib64, lib), then the
// nvidia-nccl-cu13 Python package (nvidia/nccl/lib/libnccl.so.2 under the site-packages or
// dist-packages of $VIRTUAL_ENV, ~/.local, /usr/local/lib/python3*, /usr/lib/python3*).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace myriad::nccl {

using Result = int;  // ncclResult_t
constexpr Result kSuccess = 0;
using Comm = void*;    // ncclComm_t
using Stream = void*;  // cudaStream_t
struct UniqueId {      // ncclUniqueId
    char internal[128];
};
enum class DataType : int { Uint8 = 1, Float32 = 7, Bfloat16 = 9 };  // ncclDataType_t
enum class RedOp : int { Sum = 0 };                                  // ncclRedOp_t

struct Library {
    std::string path;  // what was loaded, as dlopen was given it
    int version = 0;   // ncclGetVersion: 22809 is 2.28.9

    Result (*get_version)(int*) = nullptr;
    Result (*get_unique_id)(UniqueId*) = nullptr;
    Result (*comm_init_all)(Comm*, int, const int*) = nullptr;
    Result (*comm_init_rank)(Comm*, int, UniqueId, int) = nullptr;
    Result (*group_start)() = nullptr;
    Result (*group_end)() = nullptr;
    Result (*all_reduce)(const void*, void*, size_t, DataType, RedOp, Comm, Stream) = nullptr;
    Result (*all_gather)(const void*, void*, size_t, DataType, Comm, Stream) = nullptr;
    Result (*broadcast)(const void*, void*, size_t, DataType, int, Comm, Stream) = nullptr;
    Result (*comm_destroy)(Comm) = nullptr;
    Result (*comm_abort)(Comm) = nullptr;
    const char* (*error_string)(Result) = nullptr;
    const char* (*last_error)(Comm) = nullptr;  // null before NCCL 2.13

    Library() = default;
    ~Library();  // closes the library (only the uncached loads of load_library are ever closed)
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;

    // "2.28.9"
    std::string version_string() const;
    // The message of `r`, with NCCL's last error on `comm` when it has one.
    std::string error(Result r, Comm comm = nullptr) const;

    void* handle = nullptr;
};

// What the search looks at, taken from the environment by search_from_environment().
struct Search {
    std::string explicit_path;  // $MYRIAD_NCCL_LIBRARY
    std::string cuda_home;      // $CUDA_HOME
    std::string home;           // $HOME
    std::string virtual_env;    // $VIRTUAL_ENV
};
Search search_from_environment();

// The paths to try, in order (see the top of this file). `glob` expands a pattern to the files
// that exist (glob(3) when empty).
std::vector<std::string> candidate_paths(
    const Search& s, const std::function<std::vector<std::string>(const std::string&)>& glob = {});

// Loads the first candidate that is an NCCL with every function used; null with `why` naming
// each path tried, what failed, and what to set or install.
std::unique_ptr<Library> load_library(const Search& s, std::string* why);

// The process's NCCL: loaded once from the environment, never unloaded; null (with `why`) when
// none was found.
const Library* library(std::string* why = nullptr);

}  // namespace myriad::nccl
