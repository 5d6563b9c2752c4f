// Where myriad looks for NCCL (parallel/nccl_library.h): $MYRIAD_NCCL_LIBRARY alone when set, else
// the loader path, the CUDA folder, then the nvidia-nccl-cu13 Python package; a path that is not
// a library fails naming it and what to set.
#include "parallel/nccl_library.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace myriad {
namespace {

// Makes `rel` (and its folders) under `root`, holding text.
std::string touch(const testing::TempDir& dir, const std::string& rel) {
    const std::filesystem::path p = std::filesystem::path(dir.path()) / rel;
    std::filesystem::create_directories(p.parent_path());
    dir.write(rel, "not a library\n");
    return p.string();
}

TEST(NcclLibrary, ExplicitPathIsTheOnlyCandidate) {
    nccl::Search s;
    s.explicit_path = "/opt/nccl/libnccl.so.2";
    s.home = "/home/x";
    EXPECT_EQ(nccl::candidate_paths(s), std::vector<std::string>{"/opt/nccl/libnccl.so.2"});
}

TEST(NcclLibrary, SearchOrderLoaderPathCudaFolderThenPythonPackages) {
    testing::TempDir dir;
    const std::string venv =
        touch(dir, "venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2");
    const std::string local =
        touch(dir, "home/.local/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
    touch(dir, "home/.local/lib/python3.11/site-packages/nvidia/other/lib/libnccl.so.2");
    nccl::Search s;
    s.cuda_home = dir.path() + "/cuda";
    s.home = dir.path() + "/home";
    s.virtual_env = dir.path() + "/venv";
    const std::vector<std::string> c = nccl::candidate_paths(s);
    ASSERT_GE(c.size(), 7u);
    EXPECT_EQ(c[0], "libnccl.so.2");  // the loader path (LD_LIBRARY_PATH, ld.so.cache) first
    EXPECT_EQ(c[1], s.cuda_home + "/lib64/libnccl.so.2");
    EXPECT_EQ(c[2], s.cuda_home + "/lib/libnccl.so.2");
    EXPECT_EQ(c[3], "/usr/local/cuda/lib64/libnccl.so.2");
    EXPECT_EQ(c[4], "/usr/local/cuda/lib/libnccl.so.2");
    EXPECT_EQ(c[5], venv);   // the active virtual environment before the user's packages
    EXPECT_EQ(c[6], local);  // only nvidia/nccl/lib, not another package's file of that name
    for (size_t i = 7; i < c.size(); ++i) {
        EXPECT_TRUE(c[i].rfind("/usr/local/lib/python3", 0) == 0 ||
                    c[i].rfind("/usr/lib/python3", 0) == 0)
            << c[i];
        EXPECT_NE(c[i].find("-packages/nvidia/nccl/lib/libnccl.so.2"), std::string::npos) << c[i];
    }
}

TEST(NcclLibrary, SystemFoldersAreGlobbedForDistAndSitePackages) {
    std::vector<std::string> patterns;
    nccl::Search s;
    s.home = "/h";
    nccl::candidate_paths(s, [&](const std::string& p) {
        patterns.push_back(p);
        return std::vector<std::string>{};
    });
    const std::vector<std::string> want = {
        "/h/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/h/.local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2"};
    EXPECT_EQ(patterns, want);
}

TEST(NcclLibrary, ANonLibraryNamedByTheVariableFailsNamingItAndTheFix) {
    testing::TempDir dir;
    nccl::Search s;
    s.explicit_path = dir.write("libnccl.so.2", "this is text, not an ELF library\n");
    std::string why;
    EXPECT_EQ(nccl::load_library(s, &why), nullptr);
    EXPECT_NE(why.find("MYRIAD_NCCL_LIBRARY=" + s.explicit_path), std::string::npos) << why;
    EXPECT_NE(why.find("is not a usable NCCL"), std::string::npos) << why;
    EXPECT_NE(why.find("unset it"), std::string::npos) << why;
    // It does not go on to another NCCL the machine may have.
    s.explicit_path = dir.file("missing.so");
    EXPECT_EQ(nccl::load_library(s, &why), nullptr);
    EXPECT_NE(why.find(s.explicit_path), std::string::npos) << why;
}

TEST(NcclLibrary, VersionString) {
    nccl::Library lib;
    lib.version = 22809;
    EXPECT_EQ(lib.version_string(), "2.28.9");
    lib.version = 2804;  // before 2.9: major * 1000 + minor * 100 + patch
    EXPECT_EQ(lib.version_string(), "2.8.4");
}

}  // namespace
}  // namespace myriad
