// A fresh folder under /tmp for one test, removed with its contents when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace myriad::testing {

class TempDir {
  public:
    TempDir() {
        char tmpl[] = "/tmp/myriad-test-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    // The path of `name` inside the folder (not created).
    std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }
    // Writes `content` to `name` inside the folder and returns its path.
    std::string write(std::string_view name, std::string_view content) const {
        std::string p = file(name);
        std::ofstream out(p, std::ios::binary);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        if (!out) throw std::runtime_error("cannot write " + p);
        return p;
    }

  private:
    std::string path_;
};

}  // namespace myriad::testing
