#include "parallel/nccl_library.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <glob.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>

namespace myriad::nccl {

namespace {

constexpr const char* kSoname = "libnccl.so.2";
constexpr const char* kPackageLib = "nvidia/nccl/lib/libnccl.so.2";  // in nvidia-nccl-cu13

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::vector<std::string> system_glob(const std::string& pattern) {
    std::vector<std::string> out;
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    globfree(&g);
    return out;
}

// Resolves every function used from `lib`; false with the first missing name.
bool bind_all(Library& lib, std::string* missing) {
    auto bind = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib.handle, name));
        if (!fn && missing->empty()) *missing = name;
    };
    bind(lib.get_version, "ncclGetVersion");
    bind(lib.get_unique_id, "ncclGetUniqueId");
    bind(lib.comm_init_all, "ncclCommInitAll");
    bind(lib.comm_init_rank, "ncclCommInitRank");
    bind(lib.group_start, "ncclGroupStart");
    bind(lib.group_end, "ncclGroupEnd");
    bind(lib.all_reduce, "ncclAllReduce");
    bind(lib.all_gather, "ncclAllGather");
    bind(lib.broadcast, "ncclBroadcast");
    bind(lib.comm_destroy, "ncclCommDestroy");
    bind(lib.comm_abort, "ncclCommAbort");
    bind(lib.error_string, "ncclGetErrorString");
    if (!missing->empty()) return false;
    lib.last_error = reinterpret_cast<const char* (*)(Comm)>(dlsym(lib.handle, "ncclGetLastError"));
    return true;
}

}  // namespace

Library::~Library() {
    if (handle) dlclose(handle);
}

std::string Library::version_string() const {
    // Since 2.9 the code is major * 10000 + minor * 100 + patch; before, major * 1000 + minor *
    // 100.
    if (version >= 10000)
        return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
    return fmt::format("{}.{}.{}", version / 1000, version / 100 % 10, version % 100);
}

std::string Library::error(Result r, Comm comm) const {
    std::string s = error_string ? error_string(r) : fmt::format("NCCL error {}", r);
    if (comm && last_error) {
        const char* last = last_error(comm);
        if (last && *last) s += fmt::format(" ({})", last);
    }
    return s;
}

Search search_from_environment() {
    return {env("MYRIAD_NCCL_LIBRARY"), env("CUDA_HOME"), env("HOME"), env("VIRTUAL_ENV")};
}

std::vector<std::string> candidate_paths(
    const Search& s, const std::function<std::vector<std::string>(const std::string&)>& glob) {
    if (!s.explicit_path.empty()) return {s.explicit_path};
    std::vector<std::string> out = {kSoname};
    auto add = [&](const std::string& p) {
        for (const std::string& q : out)
            if (q == p) return;
        out.push_back(p);
    };
    for (const std::string& root : {s.cuda_home, std::string("/usr/local/cuda")}) {
        if (root.empty()) continue;
        add(root + "/lib64/" + kSoname);
        add(root + "/lib/" + kSoname);
    }
    std::vector<std::string> prefixes;
    if (!s.virtual_env.empty()) prefixes.push_back(s.virtual_env + "/lib/python3*");
    if (!s.home.empty()) prefixes.push_back(s.home + "/.local/lib/python3*");
    prefixes.push_back("/usr/local/lib/python3*");
    prefixes.push_back("/usr/lib/python3*");
    for (const std::string& prefix : prefixes)
        for (const char* packages : {"site-packages", "dist-packages"})
            for (const std::string& p :
                 (glob ? glob : system_glob)(prefix + "/" + packages + "/" + kPackageLib))
                add(p);
    return out;
}

std::unique_ptr<Library> load_library(const Search& s, std::string* why) {
    std::vector<std::string> tried;
    for (const std::string& path : candidate_paths(s)) {
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* e = dlerror();
            // Missing files are the common case of a search: said once at the end, not per path.
            const std::string what = e ? e : "cannot be loaded";
            if (!s.explicit_path.empty() || what.find("No such file") == std::string::npos)
                tried.push_back(fmt::format("{} ({})", path, what));
            else
                tried.push_back(path);
            continue;
        }
        auto lib = std::make_unique<Library>();
        lib->handle = handle;
        lib->path = path;
        std::string missing;
        if (!bind_all(*lib, &missing)) {
            tried.push_back(fmt::format("{} (no {}: not NCCL, or too old)", path, missing));
            continue;
        }
        if (Result r = lib->get_version(&lib->version); r != kSuccess) {
            tried.push_back(fmt::format("{} (ncclGetVersion: {})", path, lib->error(r)));
            continue;
        }
        return lib;
    }
    if (why) {
        std::string list;
        for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
        if (!s.explicit_path.empty())
            *why = fmt::format(
                "MYRIAD_NCCL_LIBRARY={} is not a usable NCCL: {}; point it at a libnccl.so.2, or "
                "unset it to search the loader path, the CUDA folder and the nvidia-nccl-cu13 "
                "Python package",
                s.explicit_path, list);
        else
            *why = fmt::format(
                "NCCL ({}) was not found: tried {}, and no nvidia-nccl-cu13 Python package is "
                "under $VIRTUAL_ENV, ~/.local, /usr/local/lib/python3* or /usr/lib/python3*; "
                "install one (pip install nvidia-nccl-cu13, or the libnccl2 package) or set "
                "MYRIAD_NCCL_LIBRARY to a libnccl.so.2",
                kSoname, list);
    }
    return nullptr;
}

const Library* library(std::string* why) {
    static std::once_flag once;
    static std::unique_ptr<Library> lib;
    static std::string failure;
    std::call_once(once, [] {
        lib = load_library(search_from_environment(), &failure);
        if (lib) lib->handle = nullptr;  // never closed: communicators may outlive main's locals
    });
    if (!lib && why) *why = failure;
    return lib.get();
}

}  // namespace myriad::nccl
